// Datasets: the filesystems of one pool, named POOL/PATH, with properties
// inherited down their tree (`poolfs dataset ...`).
//
// The pool's root dataset is named after the pool ("tank"); every other
// dataset is a child of one ("tank/home", "tank/home/alice"). A name is
// components of 1..255 bytes joined by '/', without NUL, '@', '%' or a
// component "." or ".."; a full name is at most 1024 bytes. The first
// component is always the pool's name.
//
// Properties. Settable ones are stored per dataset when set (source
// "local") and otherwise inherited from the nearest ancestor that sets
// them ("inherited from tank/home"), or take their default ("default"):
//   compression  off | lz4 | zstd | zstd-1..zstd-19   (default lz4)
//   recordsize   4K..1M, a power of two                (default 128K)
//   atime        on | off | relatime                   (default relatime)
//   readonly     on | off                              (default off)
//   quota        bytes, or none (0)                    (default none)
//   reservation  bytes, or none (0)                    (default none)
//   copies       1 | 2 | 3                             (default 1)
//   snapdir      hidden | visible: .poolfs (the snapshots) listed in the
//                dataset's root directory, or only reachable by name
//                                                      (default hidden)
//   mountpoint   (read-only here: where the dataset appears in a mount)
// quota and reservation are not inherited (as in ZFS); a child's source
// for them is "default" unless set on it. Read-only properties (source
// "-"): used, available, referenced, objects, creation, compressratio,
// type, name, usedbysnapshots, usedbydataset, origin. Byte values are
// given as plain numbers or with binary units (K, M, G, T; "1.5G"), and
// printed exactly (`-p`) or human-readable.
//
// Clones. A clone is a writable dataset made from a snapshot (its
// `origin`): it starts as the snapshot and shares every block with it, so
// it costs nothing until it is written to. The origin cannot be destroyed
// while the clone exists; promoting the clone makes it the owner of the
// origin and the snapshots before it, and the origin's dataset a clone of
// the origin, so that the old dataset can then be destroyed.
//
// Thread safety: a DatasetAdmin may be called from any thread; calls are
// serialized inside.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "poolfs/replication.h"
#include "poolfs/status.h"

namespace poolfs {

// One property of one dataset, as `poolfs dataset get` shows it.
struct DatasetProperty {
  std::string name;   // "compression"
  std::string value;  // "lz4", "131072", "on"; byte values exact
  // "local", "default", "inherited from POOL/PATH", or "-" (read-only).
  std::string source;
};

// A dataset and its space, as `poolfs dataset list` shows it.
struct DatasetInfo {
  std::string name;            // "tank/home"
  uint64_t id = 0;             // unique within the pool, never reused
  uint64_t creation_txg = 0;   // the txg that created it
  int64_t creation_time = 0;   // seconds since the epoch
  uint64_t used = 0;           // bytes held by it and its descendants
  uint64_t referenced = 0;     // bytes its own blocks take
  uint64_t available = 0;      // bytes it may still write (quota, reservations)
  uint64_t objects = 0;        // live objects in it
  double compressratio = 1.0;  // logical / stored bytes of its data
  std::string mountpoint;      // path inside the pool's mount ("/home")
  // Bytes its snapshots hold that it no longer references (in `used`).
  uint64_t usedbysnapshots = 0;
  // Bytes it references of its own (in `used`): `referenced`, less for a
  // clone what it still shares with its origin.
  uint64_t usedbydataset = 0;
  std::string origin;  // a clone's origin ("tank/a@monday"); else empty
};

// A snapshot, as `poolfs dataset list -t snapshot` shows it.
struct SnapshotInfo {
  std::string name;           // "tank/home@monday"
  uint64_t id = 0;            // from the datasets' id space, never reused
  uint64_t txg = 0;           // the txg whose state it keeps
  int64_t creation_time = 0;  // seconds since the epoch
  // Bytes only it holds: what destroying it would free.
  uint64_t used = 0;
  uint64_t referenced = 0;  // bytes of every block it holds
  // Bytes it holds that were written since the snapshot before it (all it
  // holds for the first).
  uint64_t written = 0;
  // Its identity across pools (a replication stream names its base by
  // it): random when taken, or its sender's when received; nonzero,
  // distinct among its dataset's snapshots; kept by rename and promote.
  uint64_t guid = 0;
};

// One change between a snapshot and a later state of its dataset, as
// `poolfs diff` shows it (DatasetAdmin::Diff).
struct DiffEntry {
  enum class Type : char {
    kModified = 'M',  // contents or attributes changed (a directory: its entries)
    kCreated = '+',
    kRemoved = '-',
    kRenamed = 'R',  // the same file under another name or directory
  };
  Type type = Type::kModified;
  // From the dataset's root ("/dir/file"; the root itself is "/"): where
  // the file is in the later state, or was in the earlier one (removed,
  // and the old name of a renamed file).
  std::string path;
  std::string new_path;  // kRenamed: where it is now
  bool operator==(const DiffEntry&) const = default;
};

// A property assignment: `poolfs dataset create -o` and `set`.
struct PropertyAssignment {
  std::string name;
  std::string value;
};

class DatasetAdmin {
 public:
  virtual ~DatasetAdmin() = default;

  // Creates `name` with `props` set locally. With `parents`, missing
  // ancestors are created too (and an existing `name` is no error).
  // NotFound when the parent does not exist (without `parents`),
  // AlreadyExists, InvalidArgument for a bad name or property (naming it),
  // NoSpace. The dataset is on disk once this returns.
  virtual Status Create(std::string_view name, bool parents,
                        const std::vector<PropertyAssignment>& props) = 0;
  // Destroys `name` and frees every block it held. NotEmpty when it has
  // children (unless `recursive`, which destroys them first) or snapshots,
  // Busy when it or a descendant is in use (open files, a mount of it
  // alone), InvalidArgument for the root dataset, NotFound. A snapshot
  // name ("POOL/PATH@NAME") destroys that snapshot: the blocks no other
  // snapshot and not the dataset hold are freed (`recursive`: the snapshot
  // of that name of every descendant too).
  virtual Status Destroy(std::string_view name, bool recursive) = 0;
  // Takes snapshots `names` ("POOL/PATH@NAME"), all in one txg: each keeps
  // its dataset as that txg left it, read-only, sharing every block. With
  // `recursive`, every descendant of each gets a snapshot of the same
  // name. AlreadyExists, NotFound (the dataset), InvalidArgument (a bad
  // name, or two of one dataset). All or none; on disk once this returns.
  virtual Status Snapshot(const std::vector<std::string>& names, bool recursive) = 0;
  // Rolls a dataset back to its snapshot `name` ("POOL/PATH@NAME"): every
  // change made since is discarded. The snapshot must be the newest unless
  // `destroy_later`, which destroys the later ones (InvalidArgument naming
  // them otherwise); Busy when the dataset is in use (files of it open, or
  // the root of a mount). On disk once this returns.
  virtual Status Rollback(std::string_view name, bool destroy_later) = 0;
  // The snapshots of `root` (with `recursive`, of its descendants too;
  // empty: the whole pool), by dataset as List orders them, then oldest
  // first.
  virtual Result<std::vector<SnapshotInfo>> ListSnapshots(std::string_view root,
                                                          bool recursive) = 0;
  // Renames (and may move) a dataset within its pool; its descendants
  // follow. AlreadyExists for `to`, NotFound for `from` or to's parent,
  // InvalidArgument for the root, a different pool, or moving a dataset
  // below itself.
  virtual Status Rename(std::string_view from, std::string_view to) = 0;
  // `root` (and with `recursive` its descendants), parents before children,
  // children by name. An empty root: the whole pool.
  virtual Result<std::vector<DatasetInfo>> List(std::string_view root, bool recursive) = 0;
  // The named properties of `name` ({"all"}: every one, in a fixed order).
  // InvalidArgument for an unknown property.
  virtual Result<std::vector<DatasetProperty>> Get(std::string_view name,
                                                   const std::vector<std::string>& props) = 0;
  // Sets a property locally; it applies at once (recordsize and
  // compression to blocks written afterwards) and persists.
  // InvalidArgument for an unknown, read-only or bad value (naming it).
  virtual Status Set(std::string_view name, const PropertyAssignment& prop) = 0;
  // Removes a local setting: the property inherits again.
  virtual Status Inherit(std::string_view name, std::string_view prop) = 0;
  // Makes dataset `name` a clone of snapshot `origin` ("POOL/PATH@NAME"),
  // with `props` set locally; its parent must exist. NotFound,
  // AlreadyExists, InvalidArgument (a bad name or property, another pool).
  // On disk once this returns.
  virtual Status Clone(std::string_view origin, std::string_view name,
                       const std::vector<PropertyAssignment>& props) = 0;
  // Promotes clone `name`: it takes its origin and the snapshots of the
  // origin's dataset up to it, and that dataset becomes a clone of the
  // origin. InvalidArgument when `name` is no clone, AlreadyExists when a
  // snapshot to move has the name of one of the clone's (rename it
  // first), Busy while a moved snapshot is in use or another change of
  // either dataset is under way. On disk once this returns.
  virtual Status Promote(std::string_view name) = 0;
  // The files created, removed, renamed and modified between snapshot
  // `from` ("POOL/PATH@A") and `to`: a later snapshot of the same dataset
  // ("POOL/PATH@B"), or the dataset itself ("POOL/PATH": its state now,
  // once the changes made so far are synced), or a clone made from `from`
  // or a later snapshot of its dataset (through clones of clones too), or
  // a snapshot of such a clone. Sorted by path, then type.
  // Found from the blocks' birth txgs: only the parts of the dataset
  // written since `from` are read. A directory whose entries changed is
  // modified itself; a file reached only through a renamed directory is
  // not listed. A file's extended attributes changing shows as the file
  // modified (its change time moves). InvalidArgument for a bad name,
  // two unrelated datasets, or `to` older than `from`; NotFound for a
  // missing dataset or snapshot; Corruption naming the object for damage.
  virtual Result<std::vector<DiffEntry>> Diff(std::string_view from, std::string_view to) = 0;
  // Writes the stream of snapshot options.snapshot (poolfs/replication.h)
  // to `sink`; with no sink, writes nothing and reads no data block: the
  // summary is then an estimate of what it would write. NotFound for a
  // missing snapshot, InvalidArgument for a bad name or a base that is no
  // earlier snapshot of the same dataset, the sink's error as it gave it.
  virtual Result<SendSummary> Send(const SendOptions& options, const StreamSink& sink) = 0;
  // Reads a stream from `source` and applies it (poolfs/replication.h):
  // the received snapshot appears once the whole stream has arrived and
  // verified. Corruption naming the record for a damaged stream,
  // AlreadyExists (a full stream's target exists), NotFound (the
  // target's parent, or an incremental's target), InvalidArgument (the
  // target's newest snapshot is not the stream's base, or it changed
  // since, without options.force), NoSpace, Busy (the target is in use
  // when the snapshot is to be made), the source's error as it gave it.
  // Other calls of this admin are not held up while the stream is read.
  virtual Result<ReceiveSummary> Receive(const ReceiveOptions& options,
                                         const StreamSource& source) = 0;
};

// A pool opened for administration without a mount (`--pool FILE...`):
// imported for as long as the handle lives (Busy when another process has
// it), exported again when it is destroyed or Close is called.
class OfflinePool {
 public:
  static Result<std::unique_ptr<OfflinePool>> Open(const std::vector<std::string>& paths);
  virtual ~OfflinePool() = default;
  virtual const std::string& name() const = 0;
  virtual DatasetAdmin& datasets() = 0;
  // Syncs and exports; the first error. Idempotent.
  virtual Status Close() = 0;
};

// Checks a dataset name as described above (not whether it exists):
// InvalidArgument saying what is wrong.
Status ValidateDatasetPath(std::string_view name);

}  // namespace poolfs
