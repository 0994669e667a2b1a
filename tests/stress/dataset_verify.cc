// Runner::ReconcileDatasets: the dataset tree a txg must hold after a crash.
//
// Theory
// ------
// The workload's thread 0 makes the dataset operations (create, clone,
// rename, destroy; here a clone is a create, and snapshot_verify.cc checks
// its origin) one at a time, each logged before the call (with a = the open
// txg and b = the txg after the last synced one, then) and after it
// returned (with T = the txg it returned); see op_log.h. The pool makes each
// change in memory at one instant, under its lock, with a Tx of txg T, and
// writes the whole in-memory tree with the directory of every txg it syncs
// (pool.h, "Datasets"). So the directory of the imported txg I is the tree
// after the first k operations, for some k, where
//   - every operation with T <= I is among the k (I's sync began after T's
//     Txs committed, and wrote the directory after that);
//   - none that began after I had synced (b > I) is;
// and of that tree, the directory lists
//   - a dataset created in txg C only when C <= I (its root is first
//     written in C's sync);
//   - a dataset destroyed in txg T only when I < T (the destroy takes
//     effect in exactly that txg, frees included).
// A rename has no txg of its own on disk: it is in the directories of the
// txgs after those the k rule excludes. The operation in flight at the
// crash (no second record) has no T: it may be among the k, and a create
// or destroy then shows from a on or not at all, the whole subtree of a
// destroy together (all or nothing).
//
// ReconcileDatasets tries k = 0, 1, ..., n and takes the first whose tree,
// by these rules, is exactly the pool's dataset list (full names, which
// encode every dataset's index, parent and generation, so a dataset found
// under another name is a mismatch). None: Corruption listing the operations
// and the pool's datasets. The tree verified is then the run's: datasets
// created but not shown are forgotten (their indices are handed out again,
// and must be the newest), datasets destroyed are dead and their models
// emptied, and object operations must fit: none at or before I on a dataset
// not shown, none after its destroying txg on a destroyed one (the
// workload's handshake, workload.h).
//
// Thread safety: the runner's thread.
#include <algorithm>
#include <map>
#include <set>

#include "stress/runner.h"

namespace poolfs::stress {

namespace {

using core::pool::Pool;

struct DatasetOp {
  OpRecord first;     // the record before the call
  uint64_t done = 0;  // the txg the call returned; 0: in flight
};

// Whether a dataset the tree has may be in the imported directory.
enum class Shown { kMust, kNever, kEither, kWithSubtree };

std::string Describe(const std::vector<DatasetOp>& ops, size_t from = 0) {
  std::string s;
  for (size_t j = from; j < ops.size(); j++)
    s += "    op " + std::to_string(j) + ": " + DescribeRecord(ops[j].first) +
         (ops[j].done ? ", returned txg " + std::to_string(ops[j].done) : ", in flight") + "\n";
  return s;
}

}  // namespace

Status Runner::ReconcileDatasets(Pool* pool, const std::vector<OpRecord>& records,
                                 uint64_t imported) {
  const uint64_t I = imported;
  // The operations in the order thread 0 made them.
  std::vector<OpRecord> sorted;
  for (const OpRecord& r : records)
    if (IsDatasetOp(r.kind)) sorted.push_back(r);
  std::sort(sorted.begin(), sorted.end(),
            [](const OpRecord& a, const OpRecord& b) { return a.seq < b.seq; });
  std::vector<DatasetOp> ops;
  for (const OpRecord& r : sorted) {
    if (r.aux == 0) {
      if (!ops.empty() && ops.back().done == 0)
        return Status::Corruption("the log has two dataset operations in flight: " +
                                  DescribeRecord(ops.back().first) + ", then " + DescribeRecord(r));
      ops.push_back({r, 0});
      continue;
    }
    if (ops.empty() || ops.back().done != 0 || ops.back().first.kind != r.kind ||
        ops.back().first.dataset != r.dataset)
      return Status::Corruption("the log has " + DescribeRecord(r) + " without its start");
    ops.back().done = r.txg;
  }

  const std::vector<std::string> listed = pool->datasets();
  const std::set<std::string> names(listed.begin(), listed.end());
  std::string why;  // why the last k tried did not fit
  for (size_t k = 0; k <= ops.size(); k++) {
    bool fits = true;
    for (size_t j = 0; j < ops.size() && fits; j++) {
      if (j < k && ops[j].first.b > I) fits = false;
      if (j >= k && ops[j].done != 0 && ops[j].done <= I) fits = false;
    }
    if (!fits) continue;
    // The in-memory tree after the first k operations.
    DatasetTree t = tree_;
    std::map<uint16_t, size_t> created_by, destroyed_by;
    for (size_t j = 0; j < k; j++) {
      const OpRecord& r = ops[j].first;
      Status st;
      if (IsDatasetCreation(r.kind)) {
        if (r.dataset != t.size())
          return Status::Corruption("the log creates dataset " + std::to_string(r.dataset) +
                                    " as index " + std::to_string(r.dataset) +
                                    ", but the run has " + std::to_string(t.size()) +
                                    " indices then");
        created_by[t.Add()] = j;
      } else if (r.kind == OpKind::kRenameDataset) {
        st = t.Rename(r.dataset, RenameParent(r.object), RenameGeneration(r.object));
      } else {
        if (t.live(r.dataset))
          for (uint16_t d : t.Subtree(r.dataset)) destroyed_by[d] = j;
        st = t.Destroy(r.dataset);
      }
      if (!st.ok())
        return st.WithContext("the log's dataset operations are impossible, at op " +
                              std::to_string(j) + " (" + DescribeRecord(r) + ")");
    }
    // What the directory of I shows of it.
    std::map<uint16_t, Shown> shown;
    for (size_t i = 0; i < t.size(); i++) {
      const uint16_t d = uint16_t(i);
      if (!t.live(d) && !destroyed_by.count(d)) continue;  // dead before the cycle
      Shown v = Shown::kMust;
      if (auto c = created_by.find(d); c != created_by.end()) {
        const DatasetOp& op = ops[c->second];
        v = op.done ? (op.done <= I ? Shown::kMust : Shown::kNever)
                    : (op.first.a <= I ? Shown::kEither : Shown::kNever);
      }
      if (auto x = destroyed_by.find(d); x != destroyed_by.end() && v != Shown::kNever) {
        const DatasetOp& op = ops[x->second];
        if (op.done && op.done <= I) v = Shown::kNever;
        if (!op.done && op.first.a <= I) v = Shown::kWithSubtree;
      }
      shown[d] = v;
    }
    std::set<std::string> accounted;
    int subtree_found = -1;  // the in-flight destroy's subtree: -1 unknown, 0 gone, 1 there
    why.clear();
    for (const auto& [d, v] : shown) {
      const std::string name = t.Name(d);
      const bool found = names.count(name) > 0;
      if (found) accounted.insert(name);
      if (v == Shown::kMust && !found) why = "dataset " + name + " is missing";
      if (v == Shown::kNever && found) why = "dataset " + name + " should not be there";
      if (v == Shown::kWithSubtree) {
        if (subtree_found >= 0 && subtree_found != int(found))
          why = "the destroy in flight left part of its subtree (" + name +
                (found ? " is there" : " is gone") + ")";
        subtree_found = int(found);
      }
      if (!why.empty()) break;
    }
    if (why.empty())
      for (const std::string& n : names)
        if (!accounted.count(n)) {
          why = "the pool has dataset " + n + ", which the tree does not explain";
          break;
        }
    if (!why.empty()) {
      why = "with the first " + std::to_string(k) + " operations: " + why;
      continue;
    }

    // k fits: the verified tree. The creations that did not reach txg I
    // (not shown, and not created and then destroyed by I) are the newest.
    size_t first_unshown = t.size();
    for (const auto& [d, j] : created_by) {
      const uint64_t c = ops[j].done;
      const bool reached = names.count(t.Name(d)) || (destroyed_by.count(d) && c != 0 && c <= I);
      if (!reached) first_unshown = std::min<size_t>(first_unshown, d);
    }
    for (const auto& [d, j] : created_by)
      if (d > first_unshown && names.count(t.Name(d)))
        return Status::Corruption("dataset " + t.Name(d) +
                                  " exists but an older new dataset does not (" +
                                  t.Name(uint16_t(first_unshown)) + ")");
    std::map<uint16_t, uint64_t> destroyed;  // index -> its destroying txg (0: in flight)
    for (const auto& [d, j] : destroyed_by) {
      if (d >= first_unshown) continue;
      if (names.count(t.Name(d))) {
        t.Revive(d);
      } else {
        destroyed[d] = ops[j].done;
        cycle_note_ += ", -dataset " + t.Name(d);
      }
    }
    std::set<uint16_t> renamed;
    for (size_t j = 0; j < k; j++)
      if (ops[j].first.kind == OpKind::kRenameDataset && t.live(ops[j].first.dataset) &&
          ops[j].first.dataset < std::min(first_unshown, tree_.size()))
        renamed.insert(ops[j].first.dataset);
    for (uint16_t d : renamed)
      cycle_note_ += ", dataset " + std::to_string(d) + " renamed to " + t.Name(d);
    for (size_t d = tree_.size(); d < first_unshown; d++)
      cycle_note_ += ", +dataset " + t.Name(uint16_t(d));
    t.Truncate(first_unshown);
    for (const OpRecord& r : records) {
      if (!IsObjectOp(r.kind)) continue;
      if (r.dataset >= t.size() && r.txg <= I)
        return Status::Corruption("dataset " + std::to_string(r.dataset) + " is missing at txg " +
                                  std::to_string(I) + " but the log has " + DescribeRecord(r));
      if (auto x = destroyed.find(r.dataset);
          x != destroyed.end() && x->second != 0 && r.txg > x->second)
        return Status::Corruption("the log has " + DescribeRecord(r) + " after the txg (" +
                                  std::to_string(x->second) + ") that destroyed its dataset");
      if (r.dataset < t.size() && !t.live(r.dataset) && !destroyed.count(r.dataset) && r.txg <= I)
        return Status::Corruption("the log has " + DescribeRecord(r) +
                                  " on a dataset destroyed in an earlier cycle");
    }
    for (size_t j = 0; j < k; j++) {
      const uint16_t d = ops[j].first.dataset;
      if (d >= first_unshown) continue;
      if (IsDatasetCreation(ops[j].first.kind)) stats_.datasets_created++;
      if (ops[j].first.kind == OpKind::kCloneDataset) stats_.datasets_cloned++;
      if (ops[j].first.kind == OpKind::kRenameDataset && t.live(d)) stats_.datasets_renamed++;
      if (ops[j].first.kind == OpKind::kDestroyDataset && destroyed.count(d))
        stats_.datasets_destroyed++;
    }
    tree_ = std::move(t);
    models_.resize(tree_.size());
    for (const auto& [d, txg] : destroyed) models_[d] = Model();
    return Status::Ok();
  }
  std::string pool_has;
  for (const std::string& n : listed) pool_has += " " + n;
  failure_detail_ = "  the cycle's dataset operations:\n" + Describe(ops) +
                    "  the pool's datasets at txg " + std::to_string(I) + ":" + pool_has + "\n";
  return Status::Corruption("no prefix of the log's " + std::to_string(ops.size()) +
                            " dataset operations explains the datasets at txg " +
                            std::to_string(I) + " (last tried: " + why + ")");
}

}  // namespace poolfs::stress
