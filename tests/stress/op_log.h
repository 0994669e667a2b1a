// OpLog: the record of what a poolfs-stress workload did, the parent's oracle.
//
// Every operation the workload makes under a Tx is appended as one 64-byte
// record with the txg of its Tx, before that Tx commits. A txg cannot sync
// before its Txs commit, so for every txg T that reached disk the log holds
// every operation of T, even when the writer is SIGKILLed a moment later.
// Records also say "txg T is durable" (kSynced) whenever the writer learns it
// (WaitSynced returned, or last_synced() moved): the pool found after a crash
// must be at least that new.
//
// Each operation record names its dataset (an index into the run's list) and
// object. Dataset indices are never reused: a dataset keeps its index
// through renames (its name is derived from its parent's and its generation,
// dataset_tree.h), and a destroyed one's index stays dead.
//
// Dataset operations (create, clone, rename, destroy) are made by one workload
// thread, one at a time, outside any Tx; each is logged twice, before the
// call (aux 0) and after it returned (aux 1), so that a crash leaves the one
// in flight with only its first record. The first record carries a = the open
// txg then, b = the txg after the last synced one then (the oldest txg whose
// directory may hold the change); the second has txg = the txg the call
// returned, whose directory holds the change (create, destroy: exactly from
// that txg on; rename: from that txg on at the latest, dataset_verify.cc).
//
// Snapshot operations (take, destroy, rename) are made the same way by the
// same thread and logged the same way, with the snapshot's number in `object`
// (its name is SnapshotName(number, generation), below its dataset's name of
// the moment; a rename moves it one generation up). A snapshot taken in txg T
// is the state of its dataset's objects as T's sync left it: exactly the
// object operations of txgs <= T, which the log holds, so the verifier knows
// its content without any record of it. A third record, once T has synced,
// carries a digest of what the workload read back from it
// (snapshot_digest.h); the verifier reads the snapshot again after the crash
// and must find the same digest. A clone is a dataset creation
// (kCloneDataset) whose objects start as its origin snapshot's.
//
// A rollback (kRollback) is made and logged the same way, with the number
// of the snapshot rolled back to in `object`. The pool makes it in the sync
// of the txg R it returned: the dataset's objects become the snapshot's,
// and every object operation on it of a txg <= R is discarded. The
// workload keeps every thread off the dataset from before the first record
// until R has synced, so no operation on it falls between the two records,
// and one after them has a txg > R.
//
// Block clones (kCloneBlocks) copy a range of whole blocks of one object
// to another of the same block size, both owned by the thread that clones
// (dmu::ObjectSet::ShareBlocks / PutClones, the two objects in the same
// dataset or in two): the destination's blocks become the source's as the
// record's place in the log order finds them (its bytes at that point of
// the (txg, seq) replay below), and its length at least the end of the
// range, cut back to where the source's length falls in it (CloneRange).
//
// Order. Each record has a sequence number. Creates and frees take their
// number, do the operation and append under one lock (SerialSection), so an
// object id freed by one thread and reused by another is logged free-then-
// create. Every other operation touches an object owned by one thread, whose
// own numbers increase. So sorting by (txg, seq) replays every object's
// history in the order the DMU saw it.
//
// Storage: a file opened O_APPEND; each record is one write(2) (the kernel
// keeps whole small appends, and a killed process keeps what it wrote). The
// reader drops a torn last record and refuses any other damage.
//
// Thread safety: Append, NextSeq and SerialSection from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "poolfs/status.h"
#include "util/mutex.h"

namespace poolfs::stress {

enum class OpKind : uint8_t {
  kCreate = 1,    // object; a = block size, aux = compression
  kWrite = 2,     // object; a = offset, b = length, aux = Fill
  kTruncate = 3,  // object; a = new length
  kPunch = 4,     // object; a = offset, b = length
  kFree = 5,      // object
  kBonus = 6,     // object; a = bonus length, aux = bonus type (bytes: BonusBytes)
  kSynced = 7,    // txg is durable
  // Dataset `dataset` is being created as a child of the root dataset named
  // DatasetName(dataset) (aux 0) or was created (aux 1) in txg `txg`.
  kCreateDataset = 8,
  // Dataset `dataset` is being renamed (aux 0) or was renamed (aux 1) to
  // DatasetComponent(dataset, generation) below dataset `parent`: object =
  // parent | generation << 16 (RenameObject).
  kRenameDataset = 9,
  // Dataset `dataset` and every dataset below it is being destroyed (aux 0)
  // or was destroyed (aux 1) in txg `txg`.
  kDestroyDataset = 10,
  kBlockSize = 11,  // object; a = the block size it changed to (GrowBlockSize, SetBlockSize)
  // Snapshot SnapshotName(object) of dataset `dataset` is being taken
  // (aux 0), was taken in txg `txg` (aux 1: Pool::Snapshot returned it),
  // or was read back once that txg synced (aux 2: a = its digest, b = its
  // object count, DigestObjectSet).
  kSnapshot = 12,
  // Snapshot SnapshotName(object) of dataset `dataset` is being destroyed
  // (aux 0) or was destroyed in txg `txg` (aux 1).
  kDestroySnapshot = 13,
  // Dataset `dataset` is being created (aux 0) or was created (aux 1) in
  // txg `txg` as a clone of snapshot SnapshotName(object), named
  // DatasetName(dataset) below the root dataset (a dataset creation, as
  // kCreateDataset, whose objects start as the snapshot's).
  kCloneDataset = 14,
  // Object `object` of dataset `dataset` takes whole blocks cloned from
  // another object: the fields are a CloneRange's (PackCloneRange).
  kCloneBlocks = 15,
  // Snapshot `object` of dataset `dataset` is being renamed (aux 0) or was
  // renamed (aux 1) in txg `txg` to SnapshotName(object, c), c its next
  // generation (the snapshot keeps its number, and stays with its dataset).
  kRenameSnapshot = 16,
  // Thread 0 listed the pool's snapshots (Pool::ListSnapshots) and found
  // exactly the `object` snapshots it has, under the names it gave them
  // (one record, after the check; txg: the open txg then). It changes
  // nothing: the verifier only counts it.
  kListSnapshots = 17,
  // Dataset `dataset` is being rolled back (aux 0) or was rolled back
  // (aux 1) in txg `txg` to its snapshot SnapshotName(object) (Pool::
  // Rollback); its later snapshots, destroyed with it, have destroy records
  // of their own around it (before its first record and after its second,
  // with the same txg).
  kRollback = 18,
  // (The last kind: the log's decoder refuses a kind past it.)
};
inline constexpr OpKind kLastOpKind = OpKind::kRollback;

// True for the four dataset operations above (a clone is a creation).
inline bool IsDatasetOp(OpKind k) {
  return k == OpKind::kCreateDataset || k == OpKind::kRenameDataset ||
         k == OpKind::kDestroyDataset || k == OpKind::kCloneDataset;
}
inline bool IsDatasetCreation(OpKind k) {
  return k == OpKind::kCreateDataset || k == OpKind::kCloneDataset;
}
// True for the three snapshot operations above (take, destroy, rename).
inline bool IsSnapshotOp(OpKind k) {
  return k == OpKind::kSnapshot || k == OpKind::kDestroySnapshot || k == OpKind::kRenameSnapshot;
}
// True for the operations on one object (every kind but kSynced, the
// dataset and snapshot operations, the listings and the rollbacks).
inline bool IsObjectOp(OpKind k) {
  return k != OpKind::kSynced && !IsDatasetOp(k) && !IsSnapshotOp(k) &&
         k != OpKind::kListSnapshots && k != OpKind::kRollback;
}

// The name of the run's dataset `index` other than the first (the pool's
// own) when it is created: "ds<index>".
std::string DatasetName(uint16_t index);
// Its name component after its `generation`-th rename: "ds<index>r<generation>"
// (DatasetName for generation 0). Unique to the index and generation, so
// that no two datasets of a run, live or destroyed, ever share one.
std::string DatasetComponent(uint16_t index, uint32_t generation);
// The name (after the '@') of the run's snapshot `number` after its
// `generation`-th rename: "s<number>", then "s<number>r<generation>".
// Numbers are never reused within a run, whatever became of the snapshot.
std::string SnapshotName(uint64_t number, uint32_t generation = 0);
// The number of a snapshot named SnapshotName(n, g), and g in *generation;
// 0 for any other name.
uint64_t SnapshotNumber(std::string_view name, uint32_t* generation = nullptr);
// A kRenameDataset record's object field, and back.
inline uint64_t RenameObject(uint16_t parent, uint32_t generation) {
  return uint64_t(parent) | uint64_t(generation) << 16;
}
inline uint16_t RenameParent(uint64_t object) { return uint16_t(object); }
inline uint32_t RenameGeneration(uint64_t object) { return uint32_t(object >> 16); }

struct OpRecord {
  OpKind kind = OpKind::kSynced;
  uint8_t aux = 0;
  uint16_t dataset = 0;  // index into the run's dataset list
  uint64_t seq = 0;
  uint64_t txg = 0;
  uint64_t object = 0;
  uint64_t a = 0;
  uint64_t b = 0;
  uint64_t c = 0;
};

// A block clone (kCloneBlocks): `blocks` whole blocks of the destination
// (the record's dataset and object), from byte dst_off on, become those of
// object src_object of dataset src_dataset from byte src_off on; both
// offsets are multiples of the two objects' common block size, and the
// source's length passes the start of the last block. The destination's
// length becomes max(its length, min(dst_off + blocks x block size,
// dst_off + source length - src_off)): past the source's length its bytes
// are the source's zeros. Of the blocks, `shared` were shared (their
// pointers, ShareBlocks), `holes` were holes in the source (freed in the
// destination), the rest copied (changed since the last sync, gang blocks,
// a block stored at another size): figures for the run's summary, which
// the model does not need.
struct CloneRange {
  uint16_t src_dataset = 0;
  uint64_t src_object = 0;  // at most dmu::kMaxObjectId (48 bits)
  uint64_t src_off = 0;     // both offsets below kMaxCloneOffset
  uint64_t dst_off = 0;
  uint32_t blocks = 0;  // 1 to kMaxCloneBlocks
  uint32_t shared = 0;
  uint32_t holes = 0;
};
inline constexpr uint64_t kMaxCloneOffset = uint64_t{1} << 48;
inline constexpr uint32_t kMaxCloneBlocks = 255;
// Its record fields: a = src_object | src_dataset << 48, b = src_off |
// shared << 48, c = dst_off | holes << 48, aux = blocks.
void PackCloneRange(const CloneRange& c, OpRecord* r);
CloneRange UnpackCloneRange(const OpRecord& r);

std::string DescribeRecord(const OpRecord& r);

// Prints the log at `path` sorted by (txg, seq); when object != 0, only the
// records of objects with that id (in any dataset, a block clone's source
// too) and the kSynced ones.
// Returns an exit code.
int DumpLog(const std::string& path, uint64_t object);

class OpLog {
 public:
  static constexpr size_t kRecordSize = 64;

  // Opens the log at `path` for appending, creating it, and emptying it
  // when `truncate`. IOError on failure.
  static Result<std::unique_ptr<OpLog>> Open(const std::string& path, bool truncate);
  ~OpLog();
  OpLog(const OpLog&) = delete;
  OpLog& operator=(const OpLog&) = delete;

  uint64_t NextSeq() { return next_seq_.fetch_add(1, std::memory_order_relaxed); }
  // Appends one record. IOError on a failed or short write.
  Status Append(const OpRecord& r);
  // The lock creates and frees hold around (NextSeq, operation, Append).
  util::Mutex& serial_mu() { return serial_mu_; }

  // Reads a log; a torn last record is dropped (*torn set). Corruption for
  // a damaged record elsewhere, IOError when the file cannot be read.
  static Result<std::vector<OpRecord>> Read(const std::string& path, bool* torn);

 private:
  explicit OpLog(int fd) : fd_(fd) {}
  const int fd_;
  std::atomic<uint64_t> next_seq_{1};
  util::Mutex serial_mu_;
};

}  // namespace poolfs::stress
