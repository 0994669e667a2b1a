// The pool layer's own on-disk records: the config payload of every vdev
// label, the pool directory (MOS object 1), and the uberblock's root payload.
//
//   PoolConfig (in each label's config area; the label checksums it)
//     0  u64 magic "PFSCONF1"   8 u32 vdev count   12 u16 name length
//     14 name bytes, then per vdev: u64 guid, u32 ashift, u32 metaslab shift,
//        u16 path length, path bytes (where the vdev was at creation;
//        informational)
//
//   PoolDirectory (the data of MOS object 1, inside checksummed blocks)
//     0  u64 magic "PFSPDIR1"   8 u32 version (8; 1 to 7 are read too)
//     12 u32 deferred free count (version 1: reserved, zero)
//     16 u64 next dataset id    24 u32 dataset count   28 u32 space map count
//     32 datasets, each (version 3):
//          u64 id (1..next id - 1, unique), u64 parent id (0: the root
//          dataset, exactly one; else another entry's id, no cycle),
//          u64 creation txg, i64 creation time (seconds since the epoch),
//          root block pointer (an object set block; a BlockPtrPhys of the
//          pool's format: 64 B in format 1, 128 B in format 2),
//          u16 name length, name bytes: the dataset's own component (the
//          root's is the pool's name; 1..255 bytes, no '/', NUL, '@', '%',
//          not "." or ".."; unique among one parent's children),
//          u16 local property count (at most 64), then per property:
//          u8 key length (1..64), key bytes (a settable property, keys in
//          strictly ascending byte order), u16 value length (0..1024),
//          value bytes (canonical: what the property's parser returns)
//        (versions 1 and 2: u64 id, u64 creation txg, root, u16 name
//        length, name; the entry with the lowest id is the root, every other
//        one its child, creation time 0, no properties)
//     then space maps, each: u32 vdev, u32 reserved (zero), u64 metaslab,
//        u64 MOS object id
//     then deferred frees, each a block pointer (never a hole)
//     then (version 4) the scrub record: u8 state (0 none, 1 running,
//        2 finished, 3 stopped), 3 B reserved, u32 error count (<= 32),
//        u64 start txg, i64 start time, i64 end time, u64 objset, u64
//        object, u64 block (the bookmark), u64 examined, u64 total, u64
//        blocks, u64 repaired, u64 errors (>= the count), then per listed
//        error: u64 objset, u64 object, u64 block, u8 level, 7 B reserved;
//        state 0: everything else zero
//     then (version 5) u32 snapshot count, u32 head deadlist count; the
//        snapshots, each: u64 id, u64 dataset id, u64 txg, i64 creation
//        time, u64 referenced, (version 8) u64 guid (nonzero, distinct
//        among one dataset's snapshots), root block pointer, u16 name
//        length, name bytes, deadlist; then the head deadlists, each: u64
//        dataset id,
//        deadlist. A deadlist: u32 bucket count, then per bucket: u64 key,
//        u64 bytes, u32 object count, u32 reserved (zero), then per
//        object: u64 MOS object id, u64 entries
//     then (version 6) u32 clone count, then per clone (a dataset made
//        from a snapshot, pool.h "Clones"), ascending by dataset id: u64
//        dataset id, u64 origin snapshot id. A bucket key of a clone's
//        deadlists may also be its origin's txg, and a clone may have a
//        head deadlist without snapshots (the origin's blocks it dropped)
//     then (version 7) u64 the MOS object of the block reference table
//        (zio/block_ref_table.h; type kRefTable; 0: none), not 1
//   Version 9 adds no field: a dataset may be named "%recv-ID" (ID its own
//   id, in decimal): the hidden dataset of a receive in progress, a child
//   of the root dataset without children or snapshots (pool.h, Receives),
//   whose properties may include kReceiveTargetKey and kReceiveTokenKey
//
//   Root payload (the uberblock's 512 opaque bytes): the MOS root block
//   pointer (64 or 128 bytes, by the pool's format), zeros to byte 128,
//   then the intent log's state (48 bytes, all zero when no log block is
//   needed): u64 magic "PFSSLOG1", u32 vdev (whose log area holds the
//   log), u32 reserved (zero), u64 chain id (not 0), u64 synced txg (the
//   log's records of later txgs are not in the pool), u64 tail offset (in
//   the log area, a multiple of 4 KiB), u64 tail sequence number (not 0),
//   u64 replayed seq (records up to it are in the pool already); the rest
//   is zero.
//
// Every decoder refuses damage with Corruption saying what and where.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "poolfs/status.h"
#include "poolfs/types.h"
#include "vdev/uberblock.h"
#include "zio/block_ptr.h"

namespace poolfs::core::pool {

// The pool directory is MOS object 1; MOS objects use 16 KiB blocks.
inline constexpr uint64_t kDirectoryObject = 1;
inline constexpr uint32_t kMosBlockSize = 16 * 1024;
// No MOS object (the pool directory, a space map) is anywhere near this
// long: a dnode that says so is damaged, and reading it whole is refused
// before the length sizes a buffer (import and poolfs check alike).
inline constexpr uint64_t kMaxMosObjectBytes = uint64_t{1} << 30;
// The pool directory's version as this build writes it, and the oldest one
// EncodePoolDirectory can still write (tests and fuzz seeds of older
// pools); DecodePoolDirectory reads 1 to kPoolDirectoryVersion.
inline constexpr uint32_t kPoolDirectoryVersion = 9;
inline constexpr uint32_t kOldestEncodedDirectory = 5;

struct VdevConfig {
  uint64_t guid = 0;
  uint32_t ashift = 12;
  uint32_t ms_shift = 0;
  std::string path;
};

struct PoolConfig {
  std::string name;
  std::vector<VdevConfig> vdevs;
};

std::string EncodePoolConfig(const PoolConfig& c);
Result<PoolConfig> DecodePoolConfig(std::string_view in);

struct DatasetEntry {
  uint64_t id = 0;
  uint64_t parent = 0;  // 0: the pool's root dataset
  Txg created;
  int64_t creation_time = 0;  // seconds since the epoch
  zio::BlockPtr root;
  std::string name;  // its own component ("home" of "tank/home")
  // Properties set on it, canonical values (dataset_props.h).
  std::map<std::string, std::string, std::less<>> props;
  // A clone's origin: the id of the snapshot it was made from (0: none).
  uint64_t origin = 0;
  bool operator==(const DatasetEntry&) const = default;
};

struct SpaceMapEntry {
  uint32_t vdev = 0;
  uint64_t metaslab = 0;
  uint64_t object = 0;
};

// The scrub's state (scrub.h), kept in the pool directory from version 4.
struct ScrubError {
  uint64_t objset = 0;  // 0: the MOS; else a dataset id
  uint64_t object = 0;  // 0: the metadnode (or the root block, level 255)
  uint64_t blkid = 0;
  uint8_t level = 0;
  bool operator==(const ScrubError&) const = default;
};

struct ScrubPhys {
  enum class State : uint8_t { kNone = 0, kRunning = 1, kFinished = 2, kStopped = 3 };
  static constexpr size_t kMaxErrors = 32;  // errors listed; `errors` counts them all
  State state = State::kNone;
  uint64_t start_txg = 0;
  int64_t start_time = 0;  // seconds since the epoch
  int64_t end_time = 0;    // 0 while running
  // Where the walk goes on: everything before (objset, object, blkid) is
  // done (objset 0 is the MOS, walked first; then datasets by id).
  uint64_t objset = 0, object = 0, blkid = 0;
  uint64_t examined = 0;  // stored bytes read (every copy)
  uint64_t total = 0;     // allocated bytes of the pool when it started
  uint64_t blocks = 0;
  uint64_t repaired = 0;               // bad copies rewritten from good ones
  uint64_t errors = 0;                 // blocks no copy of which verifies
  std::vector<ScrubError> error_list;  // the first kMaxErrors of them
  bool operator==(const ScrubPhys&) const = default;
};

// Deadlists (pool.h, "Snapshots"): the blocks a dataset stopped
// referencing while one of its snapshots still held them, in buckets by
// birth txg. The bucket with key K holds blocks born after K and at most
// the next key (keys: 0, the txgs of the dataset's snapshots and, for a
// clone, its origin's txg). A bucket's block pointers lie in MOS objects
// of type kDeadlist, each an array of pointers in the pool's format
// holding `entries` of them.
struct DeadObject {
  uint64_t object = 0;
  uint64_t entries = 0;
  bool operator==(const DeadObject&) const = default;
};
struct DeadBucket {
  uint64_t bytes = 0;  // allocated bytes of its blocks
  std::vector<DeadObject> objects;
  uint64_t entries() const;
  bool operator==(const DeadBucket&) const = default;
};
using Deadlist = std::map<uint64_t, DeadBucket>;  // by key; no empty bucket
uint64_t DeadBytes(const Deadlist& d);

// A snapshot (directory version 5): the root of its dataset as the sync of
// `txg` left it.
struct SnapshotEntry {
  uint64_t id = 0;       // from the datasets' id space, never reused
  uint64_t dataset = 0;  // the id of its dataset
  Txg txg;
  int64_t creation_time = 0;  // seconds since the epoch
  uint64_t referenced = 0;    // allocated bytes of its tree, root included
  // Version 8: its identity across pools (a replication stream names its
  // base by it): random when taken, or given (a received snapshot keeps
  // its sender's); nonzero, distinct among one dataset's snapshots, kept
  // by a rename and a promote. 0 only as read from an older directory
  // (the import gives each such snapshot one).
  uint64_t guid = 0;
  zio::BlockPtr root;
  std::string name;   // after the '@': a name component
  Deadlist deadlist;  // blocks that died after the previous snapshot, up to this one
  bool operator==(const SnapshotEntry&) const = default;
};

struct PoolDirectory {
  uint64_t next_dataset_id = 1;
  std::vector<DatasetEntry> datasets;
  std::vector<SpaceMapEntry> space_maps;
  // Blocks the MOS sync of this txg freed from its second pass on: still
  // allocated in the space maps, freed by the next txg's sync (pool.h).
  std::vector<zio::BlockPtr> deferred_frees;
  ScrubPhys scrub;  // version 4
  // Version 5: every dataset's snapshots, oldest first per dataset; the
  // deadlists of datasets that have snapshots (by dataset id, none empty).
  std::vector<SnapshotEntry> snapshots;
  std::map<uint64_t, Deadlist> head_deadlists;
  // Version 7: the MOS object of the block reference table
  // (zio/block_ref_table.h; 0: none, no block is shared by clones).
  uint64_t ref_table_object = 0;
};

// Block pointers in the directory are in the pool's format. `version` is
// kPoolDirectoryVersion but for tests and fuzz seeds of older pools
// (kOldestEncodedDirectory up to it): what that version has no place for
// must be absent (clones below 6, a block reference table below 7), but
// for snapshot guids, which a version below 8 leaves out.
std::string EncodePoolDirectory(const PoolDirectory& d, zio::BpFormat format,
                                uint32_t version = kPoolDirectoryVersion);
Result<PoolDirectory> DecodePoolDirectory(std::string_view in, zio::BpFormat format);

// Returns OK for one component of a dataset name (also a pool's name):
// 1..255 bytes, no '/', NUL, '@' or '%', not "." or "..". InvalidArgument
// saying what is wrong otherwise.
Status ValidateDatasetName(std::string_view name);
// 'name': how the pool's messages quote a name.
std::string Quote(std::string_view name);
// Whether `name` is that of a receive's hidden dataset ("%recv-ID", from
// directory version 9): a child of the root dataset, named after its id.
bool IsReceiveName(std::string_view name);
std::string ReceiveName(uint64_t id);
// A resumable receive's state, kept as two properties of its hidden
// dataset (version 9): the target's full name, and the resume token.
inline constexpr std::string_view kReceiveTargetKey = "%receive_target";
inline constexpr std::string_view kReceiveTokenKey = "%receive_token";
bool IsReceiveStateKey(std::string_view key);

// Where the intent log stands as of a txg: the first log block that the
// pool as of `synced_txg` still needs (its records, and every later one's,
// may hold changes of later txgs), in the log area of `vdev`
// (vdev_layout.h). The zil layer owns what the log blocks hold; the pool
// only keeps this in each uberblock.
inline constexpr uint64_t kLogBlockAlign = 4096;
struct LogState {
  uint32_t vdev = 0;
  uint64_t chain = 0;  // 0: no log block is needed (every other field 0)
  uint64_t synced_txg = 0;
  uint64_t tail_offset = 0;
  uint64_t tail_seq = 0;
  // Records up to this seq have been replayed into the pool (0: none): a
  // replay interrupted by a crash goes on after them, never twice.
  uint64_t replayed_seq = 0;
  bool empty() const { return chain == 0; }
  bool operator==(const LogState&) const = default;
};

struct RootPayload {
  zio::BlockPtr mos_root;
  LogState log;
};

std::array<uint8_t, vdev::kUberblockRootSize> EncodeRootPayload(const zio::BlockPtr& mos_root,
                                                                zio::BpFormat format,
                                                                const LogState& log = {});
Result<RootPayload> DecodeRootPayload(const std::array<uint8_t, vdev::kUberblockRootSize>& in,
                                      zio::BpFormat format);

}  // namespace poolfs::core::pool
