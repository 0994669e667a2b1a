// Model: what the stressed object set must hold, rebuilt from the op log.
//
// The model is the verified state of the root dataset after the last cycle
// (empty for a new pool) plus the logged operations of the txgs that the
// pool imported after the crash, replayed in (txg, seq) order (see
// op_log.h). Object data is kept sparse, in 64 KiB pages; a missing page is
// zeros, and bytes at or past an object's length are always zero (as in the
// DMU).
//
// Block clones. A clone copies the bytes of another object, maybe of
// another dataset, as they were at the clone's place in the (txg, seq)
// order. Each dataset's model replays only its own records, so the sources
// are found first, by one replay of every dataset that clones touch
// (CaptureCloneSources): each clone's source object as that replay finds
// it just before the clone, kept by the clone's seq (CloneSources), for
// every replay that meets the clone (the dataset's, and those of its
// snapshots). That replay may start a dataset made in the same cycle
// empty, even a clone of a snapshot: the workload clones only objects it
// owns, which are, in such a dataset, objects it created there.
//
// Rollbacks. A rollback of a dataset in txg R (op_log.h) makes its model
// that of the snapshot rolled back to, after the records of txg R and
// before those of R + 1 (Rollbacks). A replay knows that model either as
// the one of a snapshot verified before, or as its own state after the
// records of the snapshot's txg, when the snapshot was taken in the
// records it replays: it keeps a copy then. After the rollback, the
// dataset's objects are nobody's until the next workload starts (the
// workload drops them), so a clone's source is still an object its thread
// created after the rollback, and a replay that started the dataset empty
// finds it too.
//
// Verify compares the model with an imported object set: every object's
// attributes, its bytes (all of them when the object is at most 16 MiB
// long, otherwise every page the model holds plus random samples of the
// holes and the tail), that no other object id is allocated, and the live
// object count. A difference is reported with the object, the offset and the
// expected and found stamps (stamp.h).
//
// Thread safety: none; one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dmu/objset.h"
#include "poolfs/status.h"
#include "stress/op_log.h"
#include "stress/stamp.h"

namespace poolfs::stress {

namespace dmu = ::poolfs::core::dmu;

struct ModelObject {
  uint32_t block_size = 0;
  uint8_t compression = 0;
  uint64_t length = 0;
  uint8_t bonus_type = 0;
  std::string bonus;
  std::map<uint64_t, std::string> pages;  // page index -> kPage bytes
};

// Block clones' sources as the log order finds them: a kCloneBlocks
// record's seq -> its source object, with only the pages its range covers.
using CloneSources = std::map<uint64_t, ModelObject>;

class Model;

// The rollbacks that replays of one dataset's records make.
struct Rollbacks {
  // Each one's txg R and the number of the snapshot, by txg.
  std::vector<std::pair<uint64_t, uint64_t>> at;
  // The snapshots rolled back to that the records take: number -> the txg
  // whose sync took it. A replay keeps its model after that txg's records.
  std::map<uint64_t, uint64_t> taken;
  // The others, verified before: number -> its model.
  std::map<uint64_t, std::shared_ptr<const Model>> known;
};
// Rollbacks by dataset index.
using DatasetRollbacks = std::map<uint16_t, Rollbacks>;

struct VerifyStats {
  uint64_t objects = 0;
  uint64_t bytes = 0;
};

class Model {
 public:
  static constexpr uint64_t kPage = 64 * 1024;
  static constexpr uint64_t kFullReadLimit = 16 << 20;

  // Applies the records with txg <= `through_txg` (kSynced ones aside), in
  // (txg, seq) order, and the `rollbacks` (nullptr: none) with txg <=
  // `through_txg` (see the top of the file); a block clone takes its source
  // from `sources`. Fails with Corruption naming the record when the
  // history is impossible: a create of an allocated id (the DMU handed out
  // an id still in use), an operation on an object that does not exist, a
  // clone whose source is not in `sources` or does not fit it, a rollback
  // to a snapshot whose model it does not know. *bad_object is then the
  // object concerned (0 for a rollback).
  Status Replay(std::vector<OpRecord> records, uint64_t through_txg, const CloneSources& sources,
                const Rollbacks* rollbacks, uint64_t* bad_object);

  // The sources of the block clones among `records` with txg <=
  // `through_txg`, into *out (see the top of the file): one replay, in
  // (txg, seq) order, of the object records of every dataset a clone
  // reads or writes, each starting from start[dataset] (empty when the
  // index is past the end or nullptr), with its `rollbacks`. Corruption as
  // for Replay, *bad the record (a rollback's: kind kRollback, txg R,
  // object the snapshot).
  static Status CaptureCloneSources(const std::vector<const Model*>& start,
                                    const std::vector<OpRecord>& records, uint64_t through_txg,
                                    const DatasetRollbacks& rollbacks, CloneSources* out,
                                    OpRecord* bad);

  // Compares the model with `os` (see above). Fails with Corruption saying
  // what differs; *bad_object is the object concerned (0 for a count).
  Status Verify(dmu::ObjectSet* os, uint64_t seed, VerifyStats* stats, uint64_t* bad_object) const;

  const std::map<uint64_t, ModelObject>& objects() const { return objects_; }
  uint64_t bytes_held() const;

  // For a workload thread's own running model (the objects it owns):
  // applies one record as it is made (Corruption as for Replay); a block
  // clone copies from `clone_source`, its source object now (nullptr: it
  // has none, which is impossible).
  Status Apply(const OpRecord& r, const ModelObject* clone_source = nullptr);
  // Takes `o` as object `id`.
  void Adopt(uint64_t id, const ModelObject& o) { objects_[id] = o; }
  // Compares object `id`'s attributes and bytes [off, off + n) (clipped to
  // its length) with `os`, now. Corruption saying what differs.
  Status CheckObject(dmu::ObjectSet* os, uint64_t id, uint64_t off, uint64_t n,
                     VerifyStats* stats) const;

 private:
  static Status CheckAttributes(dmu::ObjectSet* os, uint64_t id, const ModelObject& o);
  static void WriteBytes(ModelObject& o, const WriteSpec& w);
  static void ZeroBytes(ModelObject& o, uint64_t off, uint64_t len);
  // A block clone of record r into `o` from `src` (op_log.h, CloneRange).
  static Status Clone(const OpRecord& r, ModelObject& o, const ModelObject* src);
  // What a clone of `r` needs of `src`: its attributes and the pages of its
  // range.
  static ModelObject CloneSource(const OpRecord& r, const ModelObject& src);
  // The bytes [off, off + n) of `o` as the model has them.
  static std::string Expected(const ModelObject& o, uint64_t off, uint64_t n);
  Status CompareRange(dmu::ObjectSet* os, uint64_t id, const ModelObject& o, uint64_t off,
                      uint64_t n, VerifyStats* stats) const;

  std::map<uint64_t, ModelObject> objects_;
};

}  // namespace poolfs::stress
