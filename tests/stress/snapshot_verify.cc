// Runner::ReconcileSnapshots and VerifySnapshots: the snapshots a txg must
// hold after a crash, and what each must read back as.
//
// Theory
// ------
// The workload's thread 0 takes and destroys snapshots one at a time,
// between its dataset operations, each logged before the call (a = the open
// txg then) and after it returned (txg T, the txg the call returned); see
// op_log.h. The pool makes a snapshot of txg T in T's sync: the directory
// of txg I lists it exactly when T <= I (before T's sync it is not taken,
// pool.h). A destroy of txg T takes it out of the directories of T and
// later. So for the imported txg I, snapshot n is
//   - there, when it was verified in an earlier cycle or its take returned
//     T <= I, and no destroy of it returned a txg <= I nor began after
//     I's txg was open (a > I);
//   - gone, when its take returned T > I or began after I (a > I), or
//     its destroy returned a txg <= I;
//   - either, when its take was in flight (no second record) and a <= I,
//     or its destroy was in flight and a <= I;
// and the pool has no other snapshot: every snapshot name it lists is
// "<a live dataset of the run>@s<n>[r<g>]" for a number n the log or the last
// verified state has, below the dataset the log says (the dataset tree is
// reconciled first, renames included, dataset_verify.cc). One that is
// there must have the txg its take returned, or, in flight, one from a to
// I.
//
// Content. A snapshot of dataset d taken in txg T holds d's objects as
// T's sync left them: every object operation of a txg <= T and none later.
// So its model is d's model of the last verified txg (before this cycle's
// replay) advanced by the log's operations of d of txgs <= T, as the
// dataset's own model is for I (a block clone among them copies its
// source as Advance captured it, model.h). Snapshots verified in an earlier cycle keep
// their model: nothing changes a snapshot. VerifySnapshots reads each one
// whole (Model::Verify: attributes, bonus, bytes, the set of ids), and,
// for one whose read-back digest the workload logged, computes the digest
// again (snapshot_digest.h): the pool must show after the crash what it
// showed while live.
//
// Renames. A snapshot rename changes the pool's in-memory name at once,
// under its lock, with a Tx of the txg T it returns, and every directory
// synced after that has the new name (pool.h): as a dataset rename
// (dataset_verify.cc), it must show in txg I when T <= I, cannot when it
// began after I had synced (b > I), and may otherwise. So snapshot n is
// named SnapshotName(n, g) with g from the generation of its last rename
// with T <= I (or the one verified before) to that of its last rename
// with b <= I. Its content is not touched by a rename.
//
// A snapshot pins its dataset: the workload destroys a dataset's snapshots
// before the dataset, so no snapshot outlives its dataset's verified tree.
//
// Clones. A clone made in this cycle (a dataset creation of the log,
// dataset_verify.cc) that txg I holds starts with its origin's model; its
// own operations are then replayed on it as on any dataset. Its origin
// must be there (the pool destroys no origin while a clone lives), and the
// pool's list must give every dataset the origin the log says (none for a
// dataset that is no clone). A snapshot of a clone is taken after the
// clone, whose origin has a smaller number: its model is computed first.
//
// Rollbacks. A rollback of dataset d to snapshot n returns the txg R whose
// sync makes it (op_log.h): the directory of txg I holds it when R <= I,
// and d's objects are then n's content, with d's operations of txgs after
// R on top (model.h). One that began after I was open (a > I) is not made.
// One in flight at the crash that began while I was open or before may
// have been made or not: no operation on d comes between its first record
// and its txg, so d at txg I is either its replay without the rollback, or
// n's content; ResolveRollback compares the second with the pool and takes
// the rollback when it matches (the usual check of d then judges the
// first). The later snapshots a rollback destroys have destroy records of
// their own, judged as above.
//
// Thread safety: the runner's thread.
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "stress/runner.h"
#include "stress/snapshot_digest.h"

namespace poolfs::stress {

namespace {

using core::pool::Pool;

// What one cycle's log says of snapshot n.
struct SnapshotOps {
  uint16_t dataset = 0;
  bool taking = false;     // a take began (a: take_open)
  uint64_t take_open = 0;  // the open txg when it began
  uint64_t taken = 0;      // the txg the take returned (0: in flight or none)
  bool read_back = false;  // the workload logged its digest
  uint64_t digest = 0;
  uint64_t digest_objects = 0;
  bool destroying = false;  // a destroy began
  uint64_t destroy_open = 0;
  uint64_t destroyed = 0;  // the txg the destroy returned (0: in flight or none)
  // Its renames, in the order made (generations one up each time).
  struct Rename {
    uint32_t generation = 0;
    uint64_t after_synced = 0;  // b: the txg after the last synced one when it began
    uint64_t done = 0;          // the txg it returned (0: in flight)
  };
  std::vector<Rename> renames;
};

enum class Shown { kMust, kNever, kEither };

const char* ShownName(Shown v) {
  return v == Shown::kMust ? "must be there" : v == Shown::kNever ? "must be gone" : "may be there";
}

}  // namespace

Status Runner::ReconcileSnapshots(Pool* pool, const std::vector<OpRecord>& records,
                                  uint64_t imported) {
  const uint64_t I = imported;
  // Thread 0's order (a snapshot's renames pair up in it).
  std::vector<OpRecord> sorted;
  for (const OpRecord& r : records) {
    if (r.kind == OpKind::kListSnapshots) stats_.snapshot_listings++;
    if (IsSnapshotOp(r.kind)) sorted.push_back(r);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const OpRecord& a, const OpRecord& b) { return a.seq < b.seq; });
  std::map<uint64_t, SnapshotOps> ops;
  for (const OpRecord& r : sorted) {
    next_snapshot_ = std::max(next_snapshot_, r.object + 1);
    SnapshotOps& o = ops[r.object];
    o.dataset = r.dataset;
    if (r.kind == OpKind::kRenameSnapshot) {
      if (r.aux == 0) o.renames.push_back({uint32_t(r.c), r.b, 0});
      if (r.aux == 1) {
        if (o.renames.empty() || o.renames.back().done || o.renames.back().generation != r.c)
          return Status::Corruption("the log has " + DescribeRecord(r) + " without its start");
        o.renames.back().done = r.txg;
      }
    } else if (r.kind == OpKind::kSnapshot) {
      if (r.aux == 0) o.taking = true, o.take_open = r.a;
      if (r.aux == 1) o.taken = r.txg;
      if (r.aux == 2) o.read_back = true, o.digest = r.a, o.digest_objects = r.b;
    } else {
      if (r.aux == 0) o.destroying = true, o.destroy_open = r.a;
      if (r.aux == 1) o.destroyed = r.txg;
    }
  }

  // The pool's snapshots, by number.
  auto listed = pool->ListSnapshots("", /*recursive=*/true);
  if (!listed.ok())
    return listed.status().WithContext("listing the snapshots at txg " + std::to_string(I));
  std::map<std::string, uint16_t> by_name;
  for (uint16_t d : tree_.Live()) by_name[tree_.Name(d)] = d;
  struct Found {
    uint16_t dataset;
    uint64_t txg;
    std::string name;
    uint32_t generation;
  };
  std::map<uint64_t, Found> found;
  for (const core::pool::SnapshotFigures& f : *listed) {
    const size_t at = f.name.find('@');
    auto d = at == std::string::npos ? by_name.end() : by_name.find(f.name.substr(0, at));
    uint32_t generation = 0;
    const uint64_t n =
        at == std::string::npos ? 0 : SnapshotNumber(f.name.substr(at + 1), &generation);
    if (d == by_name.end() || n == 0 || found.count(n))
      return Status::Corruption("the pool has snapshot " + f.name + " at txg " + std::to_string(I) +
                                ", which the run never took");
    found[n] = {d->second, f.txg.value(), f.name, generation};
  }

  // The clones this cycle made that txg I holds: their objects start as
  // their origins'.
  std::map<uint16_t, uint64_t> new_clones;
  for (const OpRecord& r : records)
    if (r.kind == OpKind::kCloneDataset && r.aux == 0 && tree_.live(r.dataset))
      new_clones[r.dataset] = r.object;

  std::set<uint64_t> numbers;
  for (const auto& [n, s] : snaps_) numbers.insert(n);
  for (const auto& [n, o] : ops) numbers.insert(n);
  std::map<uint64_t, SnapshotState> next;
  for (uint64_t n : numbers) {
    const auto known = snaps_.find(n);
    const auto op = ops.find(n);
    const SnapshotOps* o = op == ops.end() ? nullptr : &op->second;
    const std::string what = "snapshot " + SnapshotName(n);
    if (known == snaps_.end() && !(o && o->taking))
      return Status::Corruption("the log destroys " + what + ", which the run does not have");
    if (known != snaps_.end() && o && o->taking)
      return Status::Corruption("the log takes " + what + " again");
    const uint16_t dataset = known != snaps_.end() ? known->second.dataset : o->dataset;
    if (o && o->dataset != dataset)
      return Status::Corruption("the log has " + what + " of dataset " +
                                std::to_string(o->dataset) + ", the run of dataset " +
                                std::to_string(dataset));
    Shown v = Shown::kMust;
    if (o && o->taking)
      v = o->taken ? (o->taken <= I ? Shown::kMust : Shown::kNever)
                   : (o->take_open <= I ? Shown::kEither : Shown::kNever);
    if (o && o->destroying && v != Shown::kNever) {
      if (o->destroyed && o->destroyed <= I) v = Shown::kNever;
      if (!o->destroyed && o->destroy_open <= I) v = Shown::kEither;
    }
    const auto it = found.find(n);
    const bool there = it != found.end();
    const std::string full = tree_.live(dataset)
                                 ? tree_.Name(dataset) + "@" + SnapshotName(n)
                                 : what + " of dead dataset " + std::to_string(dataset);
    if ((v == Shown::kMust && !there) || (v == Shown::kNever && there)) {
      std::string log;
      for (const OpRecord& r : records)
        if (IsSnapshotOp(r.kind) && r.object == n) log += "    " + DescribeRecord(r) + "\n";
      failure_detail_ = "  the log's records of " + what + ":\n" + log;
      return Status::Corruption(full + " " + ShownName(v) + " at txg " + std::to_string(I) +
                                ", but it is " + (there ? "there" : "not"));
    }
    if (!there) {
      if (known != snaps_.end()) stats_.snapshots_destroyed++;
      continue;
    }
    const std::pair<uint64_t, Found> f = *it;
    found.erase(it);  // accounted for
    if (f.second.dataset != dataset)
      return Status::Corruption(f.second.name + " is below dataset " +
                                std::to_string(f.second.dataset) + ", but the run took it of " +
                                std::to_string(dataset));
    const uint64_t txg = f.second.txg;
    // Its name: that of the last rename that returned a txg <= I at the
    // least, of the last one that began before I synced at the most.
    const uint32_t g0 = known != snaps_.end() ? known->second.generation : 0;
    uint32_t g_lo = g0, g_hi = g0;
    if (o)
      for (const SnapshotOps::Rename& rn : o->renames) {
        if (rn.done && rn.done <= I) g_lo = rn.generation;
        if (rn.after_synced <= I) g_hi = rn.generation;
      }
    if (f.second.generation < g_lo || f.second.generation > g_hi) {
      std::string log;
      for (const OpRecord& r : records)
        if (IsSnapshotOp(r.kind) && r.object == n) log += "    " + DescribeRecord(r) + "\n";
      failure_detail_ = "  the log's records of " + what + ":\n" + log;
      return Status::Corruption(
          f.second.name + " is there at txg " + std::to_string(I) + ", but its renames say " +
          (g_lo == g_hi ? "it is " + SnapshotName(n, g_lo)
                        : "it is " + SnapshotName(n, g_lo) + " to " + SnapshotName(n, g_hi)));
    }
    SnapshotState s;
    if (known != snaps_.end()) {
      s = std::move(known->second);
      if (txg != s.txg)
        return Status::Corruption(f.second.name + " has txg " + std::to_string(txg) +
                                  ", verified as txg " + std::to_string(s.txg) + " before");
    } else {
      const uint64_t lo = o->taken ? o->taken : o->take_open, hi = o->taken ? o->taken : I;
      if (txg < lo || txg > hi)
        return Status::Corruption(f.second.name + " has txg " + std::to_string(txg) +
                                  ", but its take " +
                                  (o->taken ? "returned txg " + std::to_string(o->taken)
                                            : "began in txg " + std::to_string(lo) +
                                                  " and the pool is at " + std::to_string(I)));
      // Its model: the dataset's as of the last verified txg, advanced to
      // the snapshot's txg.
      std::vector<OpRecord> mine;
      for (const OpRecord& r : records)
        if (IsObjectOp(r.kind) && r.dataset == dataset) mine.push_back(r);
      s.dataset = dataset;
      s.txg = txg;
      s.model = models_[dataset];
      // A clone's snapshot is taken after the clone, whose origin's number
      // is smaller: already in `next`.
      if (auto c = new_clones.find(dataset); c != new_clones.end()) {
        auto origin = next.find(c->second);
        if (origin == next.end())
          return Status::Corruption("dataset " + tree_.Name(dataset) + ", a clone of snapshot " +
                                    SnapshotName(c->second) + ", has snapshot " + f.second.name +
                                    ", but its origin is not there");
        s.model = origin->second.model;
      }
      uint64_t bad = 0;
      const auto rb = rollbacks_.find(dataset);
      Status st = s.model.Replay(std::move(mine), txg, clone_sources_,
                                 rb == rollbacks_.end() ? nullptr : &rb->second, &bad);
      if (!st.ok()) {
        failure_detail_ = History(records, dataset, bad);
        return st.WithContext(f.second.name + ": replaying the op log through its txg " +
                              std::to_string(txg));
      }
      stats_.snapshots_taken++;
      cycle_note_ += ", +snapshot " + f.second.name + " (txg " + std::to_string(txg) + ")";
    }
    if (f.second.generation != s.generation) {
      stats_.snapshots_renamed += f.second.generation - s.generation;
      cycle_note_ += ", snapshot " + SnapshotName(n) + " renamed to " + f.second.name;
    }
    s.generation = f.second.generation;
    if (o && o->read_back) {
      s.digest_pending = true;
      s.digest = o->digest;
      s.digest_objects = o->digest_objects;
    }
    next[n] = std::move(s);
  }
  if (!found.empty())
    return Status::Corruption("the pool has snapshot " + found.begin()->second.name + " at txg " +
                              std::to_string(I) + ", which the run never took");
  snaps_ = std::move(next);
  return ReconcileClones(pool, new_clones);
}

Status Runner::CollectRollbacks(const std::vector<OpRecord>& records, uint64_t imported,
                                std::map<uint16_t, uint64_t>* in_flight) {
  rollbacks_.clear();
  in_flight->clear();
  std::map<uint64_t, uint64_t> taken;  // snapshot -> the txg its take returned
  std::vector<OpRecord> sorted;
  for (const OpRecord& r : records) {
    if (r.kind == OpKind::kSnapshot && r.aux == 1) taken[r.object] = r.txg;
    if (r.kind == OpKind::kRollback) sorted.push_back(r);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const OpRecord& a, const OpRecord& b) { return a.seq < b.seq; });
  // What a replay of dataset d must know of snapshot n.
  auto need = [&](uint16_t d, uint64_t n) -> Status {
    Rollbacks& rb = rollbacks_[d];
    if (auto t = taken.find(n); t != taken.end()) {
      rb.taken[n] = t->second;
      return Status::Ok();
    }
    const auto s = snaps_.find(n);
    if (s == snaps_.end() || s->second.dataset != d)
      return Status::Corruption("the log rolls dataset " + std::to_string(d) +
                                " back to snapshot " + SnapshotName(n) +
                                ", which the run does not have of it");
    if (!rb.known.count(n)) rb.known[n] = std::make_shared<const Model>(s->second.model);
    return Status::Ok();
  };
  std::map<uint16_t, OpRecord> begun;  // dataset -> the first record of its rollback
  for (const OpRecord& r : sorted) {
    if (r.aux == 0) {
      begun[r.dataset] = r;
      continue;
    }
    const auto b = begun.find(r.dataset);
    if (b == begun.end() || b->second.object != r.object)
      return Status::Corruption("the log has " + DescribeRecord(r) + " without its start");
    begun.erase(b);
    if (r.txg > imported) continue;
    POOLFS_RETURN_IF_ERROR(need(r.dataset, r.object));
    rollbacks_[r.dataset].at.emplace_back(r.txg, r.object);
    stats_.rollbacks++;
    cycle_note_ += ", rollback of dataset " + std::to_string(r.dataset) + " to " +
                   SnapshotName(r.object) + " (txg " + std::to_string(r.txg) + ")";
  }
  for (const auto& [d, r] : begun)
    if (r.a <= imported) {
      POOLFS_RETURN_IF_ERROR(need(d, r.object));
      (*in_flight)[d] = r.object;
    }
  for (auto& [d, rb] : rollbacks_) std::sort(rb.at.begin(), rb.at.end());
  return Status::Ok();
}

Status Runner::ResolveRollback(Pool* pool, const std::vector<OpRecord>& records, uint64_t imported,
                               uint16_t dataset, uint64_t number) {
  const std::string name = tree_.Name(dataset);
  Rollbacks with = rollbacks_[dataset];
  with.at.emplace_back(imported, number);
  std::vector<OpRecord> mine;
  for (const OpRecord& r : records)
    if (IsObjectOp(r.kind) && r.dataset == dataset) mine.push_back(r);
  Model made = models_[dataset];
  uint64_t bad = 0;
  Status st = made.Replay(std::move(mine), imported, clone_sources_, &with, &bad);
  if (!st.ok()) {
    failure_detail_ = History(records, dataset, bad);
    return st.WithContext("dataset '" + name + "': replaying the op log through txg " +
                          std::to_string(imported) + " with its rollback in flight");
  }
  dmu::ObjectSet* const os = pool->dataset(name);
  if (os == nullptr) return Status::Corruption("dataset '" + name + "' is missing");
  VerifyStats vs;
  if (made.Verify(os, rng_(), &vs, &bad).ok()) {
    rollbacks_[dataset] = std::move(with);
    stats_.rollbacks_in_flight_made++;
    cycle_note_ += ", rollback of dataset " + std::to_string(dataset) + " to " +
                   SnapshotName(number) + " in flight: made";
  } else {
    stats_.rollbacks_in_flight_not++;
    cycle_note_ += ", rollback of dataset " + std::to_string(dataset) + " to " +
                   SnapshotName(number) + " in flight: not made";
  }
  return Status::Ok();
}

Status Runner::ReconcileClones(Pool* pool, const std::map<uint16_t, uint64_t>& new_clones) {
  for (auto it = clone_origin_.begin(); it != clone_origin_.end();)
    it = tree_.live(it->first) ? std::next(it) : clone_origin_.erase(it);
  for (const auto& [d, n] : new_clones) {
    clone_origin_[d] = n;
    cycle_note_ += ", dataset " + tree_.Name(d) + " cloned from " + SnapshotName(n);
  }
  for (const auto& [d, n] : clone_origin_) {
    auto origin = snaps_.find(n);
    if (origin == snaps_.end())
      return Status::Corruption("dataset " + tree_.Name(d) + " is a clone of snapshot " +
                                SnapshotName(n) + ", which is not there");
    if (new_clones.count(d)) models_[d] = origin->second.model;
  }
  // Each dataset's origin, as the pool says.
  auto figures = pool->ListDatasets("", /*recursive=*/true);
  if (!figures.ok()) return figures.status().WithContext("listing the datasets");
  for (const core::pool::DatasetFigures& f : *figures) {
    std::string want;
    for (const auto& [d, n] : clone_origin_)
      if (tree_.Name(d) == f.name)
        want = tree_.Name(snaps_.at(n).dataset) + "@" + SnapshotName(n, snaps_.at(n).generation);
    if (f.origin != want)
      return Status::Corruption("dataset " + f.name + " has origin '" + f.origin +
                                "', the run made it " +
                                (want.empty() ? "as no clone" : "a clone of " + want));
  }
  return Status::Ok();
}

Status Runner::VerifySnapshots(Pool* pool, VerifyStats* stats) {
  for (auto& [n, s] : snaps_) {
    const std::string name = tree_.Name(s.dataset) + "@" + SnapshotName(n, s.generation);
    const std::string what =
        "snapshot '" + name + "' (txg " + std::to_string(s.txg) + "): verifying";
    auto os = pool->OpenSnapshot(name);
    if (!os.ok()) return os.status().WithContext(what);
    uint64_t bad = 0;
    Status st = s.model.Verify(os->get(), rng_(), stats, &bad);
    if (!st.ok()) return st.WithContext(what + " against the log's model at its txg");
    stats_.snapshots_verified++;
    if (!s.digest_pending) continue;
    auto digest = DigestObjectSet(os->get());
    if (!digest.ok()) return digest.status().WithContext(what);
    if (digest->hash != s.digest || digest->objects != s.digest_objects)
      return Status::Corruption(
          what + ": the workload read it back as " + std::to_string(s.digest_objects) +
          " objects, digest " + std::to_string(s.digest) + ", now it reads as " +
          std::to_string(digest->objects) + " objects, digest " + std::to_string(digest->hash));
    s.digest_pending = false;
    stats_.snapshot_digests++;
  }
  cycle_note_ += ", " + std::to_string(snaps_.size()) + " snapshots verified (" +
                 std::to_string(stats->objects) + " objects, " +
                 std::to_string(stats->bytes >> 10) + " KiB)";
  return Status::Ok();
}

}  // namespace poolfs::stress
