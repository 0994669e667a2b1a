// `poolfs dataset ...` apart from its command line: what a command asks
// (DatasetCommand), running it on a DatasetAdmin (a mounted pool's, in its
// daemon; or an OfflinePool's, in the command itself), the answer carried
// over the control socket, and the answer printed as `zfs list` and `zfs
// get` print theirs.
//
// Over the control socket the request is "dataset " + a JSON object, and
// the reply a JSON object: {"code": N, "message": "..."} for a failure (N
// a poolfs::StatusCode), or {"code": 0, "datasets": [...], "snapshots":
// [...], "properties": [...]} with the data; the command renders it, so
// that the same table can gather the datasets of several pools.
//
// Snapshots ("POOL/PATH@NAME") are taken by the verb `snapshot` (`poolfs
// snapshot`), rolled back to by `rollback` (`poolfs rollback`), destroyed
// by `destroy` (one, or a range @FIRST%LAST), renamed by `rename`, read by
// `get` and listed by `list -t snapshot|all`; a snapshot row leaves "-" in
// the columns it has no value for (available, mountpoint, properties).
// A clone of a snapshot is made by the verb `clone` (`poolfs clone`) and
// promoted by `promote` (`poolfs promote`).
// `diff` (`poolfs diff`) lists what changed since a snapshot: the reply's
// "diffs" are {"type": "M"|"+"|"-"|"R", "path": ..., "new_path": ...},
// printed one line each, as `zfs diff` prints them.
//
// Thread safety: values and free functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "poolfs/dataset.h"
#include "poolfs/status.h"

namespace poolfs::daemon {

struct DatasetCommand {
  enum class Verb : uint8_t {
    kCreate,
    kDestroy,
    kRename,
    kList,
    kGet,
    kSet,
    kInherit,
    kSnapshot,
    kRollback,
    kClone,
    kPromote,
    kDiff,
  };
  // What `list -t` lists: datasets, snapshots, or both (each dataset
  // followed by its snapshots, as `zfs list -t all` orders them).
  enum class ListType : uint8_t { kFilesystem, kSnapshot, kAll };
  Verb verb = Verb::kList;
  // create, set, inherit: one dataset; destroy: one dataset, snapshot or
  // range of snapshots; rename: from and to (two datasets, or two
  // snapshots of one); list: roots (none: every dataset); get: the
  // datasets or snapshots; snapshot: the snapshots to take, all of one
  // pool; rollback: the snapshot; clone: the snapshot and the new dataset,
  // of one pool; promote: the clone; diff: the snapshot and what to
  // compare it with (a later snapshot or the dataset; none: the dataset).
  std::vector<std::string> names;
  bool parents = false;                   // create -p
  bool recursive = false;                 // destroy -r, list -r, snapshot -r, rollback -r
  ListType type = ListType::kFilesystem;  // list -t
  // create -o, clone -o and set; inherit: one with an empty value.
  std::vector<PropertyAssignment> props;
  // list -o: the columns; get: the properties ("all" for every one).
  std::vector<std::string> columns;
  // Output only: -H (no header, tab-separated), -p (exact numbers), --json.
  bool scripted = false;
  bool exact = false;
  bool json = false;
};

// The verb's name as typed ("create", ...).
std::string_view VerbName(DatasetCommand::Verb v);
// `list -t`'s names ("filesystem", "snapshot", "all"); ParseListType takes
// them (and "fs", "snap") or a comma-separated pair, InvalidArgument
// naming anything else.
std::string_view ListTypeName(DatasetCommand::ListType t);
Result<DatasetCommand::ListType> ParseListType(std::string_view s);

// "PROP=VALUE" as -o and `set` take it: InvalidArgument otherwise.
Result<PropertyAssignment> ParsePropertyAssignment(std::string_view a);

// The pool a dataset or snapshot name belongs to: its first component
// ("tank" for "tank/home@monday").
std::string PoolOf(std::string_view name);
// Checks a snapshot name, POOL/PATH@NAME: the dataset as
// ValidateDatasetPath checks it, and NAME of 1..255 bytes without NUL,
// '/', '@' or '%', not "." or "..". With `range`, NAME may also be
// FIRST%LAST (either part empty: from the oldest, to the newest; "%":
// all), as destroy takes. InvalidArgument naming the argument.
Status ValidateSnapshotName(std::string_view name, bool range = false);

// What a command returns: the datasets and snapshots listed (list), or
// per dataset its properties (get; list with property columns).
struct DatasetProperties {
  std::string dataset;
  std::vector<DatasetProperty> props;
};
struct DatasetResult {
  std::vector<DatasetInfo> datasets;
  std::vector<SnapshotInfo> snapshots;  // list -t snapshot|all
  std::vector<DatasetProperties> properties;
  std::vector<DiffEntry> diffs;  // diff
};

// The columns `list` shows by default and the names it takes for them
// (any property name is a column too; "space" stands for
// kSpaceListColumns: usedsnap is usedbysnapshots, usedds what the dataset's
// own blocks take: its referenced, less for a clone what it shares with its
// origin).
inline constexpr const char* kDefaultListColumns = "name,used,avail,refer,mountpoint";
inline constexpr const char* kDefaultSnapshotColumns = "name,used,refer,written,creation";
inline constexpr const char* kSpaceListColumns = "name,avail,used,usedsnap,usedds";

// Checks a command before it is sent (names, counts, columns):
// InvalidArgument saying what is wrong.
Status ValidateDatasetCommand(const DatasetCommand& c);

// Runs `c` on `admin`.
Result<DatasetResult> ExecuteDatasetCommand(DatasetAdmin& admin, const DatasetCommand& c);

// The wire forms (see above). Decoders refuse anything malformed with
// InvalidArgument (a request) or Corruption (a reply), saying what.
std::string EncodeDatasetCommand(const DatasetCommand& c);
Result<DatasetCommand> DecodeDatasetCommand(std::string_view json);
std::string EncodeDatasetResult(const Result<DatasetResult>& r);
Result<DatasetResult> DecodeDatasetResult(std::string_view json);

// The daemon's side: decodes a request's JSON (after "dataset "), runs
// it on `admin` (nullptr: the mount has no datasets to offer) and returns
// the reply's JSON.
std::string HandleDatasetRequest(DatasetAdmin* admin, std::string_view json);

// `poolfs mount POOL/PATH MNT` while POOL is mounted: what it asks the
// pool's daemon to mount beside the pool's own mount (dataset_mounts.h),
// carried as "mount-dataset " + JSON; the reply is EncodeStatus's.
struct DatasetMountRequest {
  std::string dataset;     // POOL/PATH
  std::string mountpoint;  // canonical
  bool read_only = false;  // -o ro
  // libfuse's -o options as `poolfs mount` made them (default_permissions,
  // nodev/dev, nosuid/suid, allow_other, ...), and poolfs's cache timeouts.
  std::vector<std::string> fuse_options;
  double entry_timeout = 0, attr_timeout = 0, negative_timeout = 0;
};
std::string EncodeDatasetMountRequest(const DatasetMountRequest& r);
// InvalidArgument, saying what, for anything but a request EncodeDatasetMountRequest made.
Result<DatasetMountRequest> DecodeDatasetMountRequest(std::string_view json);
// A bare status as a reply: {"code": N, "message": "..."}; decoded back to
// the status (Corruption for a reply that is not one).
std::string EncodeStatus(const Status& st);
Status DecodeStatus(std::string_view json);

// The text the command prints for `r` (a table, or JSON with c.json).
std::string RenderDatasetResult(const DatasetCommand& c, const DatasetResult& r);

// "1.50G", "128K", "0B": bytes as `zfs list` shows them (binary units, three
// significant digits).
std::string HumanBytes(uint64_t bytes);

}  // namespace poolfs::daemon
