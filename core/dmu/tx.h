// Tx: a transaction — a group of changes that lands in exactly one txg.
//
// Open context: construct with the pool's TxAssigner, Assign() (which may
// wait for the write throttle), make changes through ObjectSet calls that take
// the Tx, then Commit(). Every change made under the Tx belongs to txg(); the
// txg cannot quiesce until the Tx ends, so either all of them reach disk in
// that txg or, after a crash before it syncs, none do.
//
// Ending without Commit. A copy-on-write DMU cannot take back a change, so a
// Tx that ends any other way — Abandon(cause), Finish(error), or its
// destructor on an early return — looks at what it did:
//   - nothing changed (changes() == 0: a failure before the first change):
//     it just leaves its txg, and the pool is as it was;
//   - something changed: its operation is half done, and that must not
//     reach the disk. The txg is abandoned (TxAssigner::Abandon): the pool
//     suspends, the txg never syncs, every later change fails with IOError,
//     and the last synced txg stays the pool's state on disk (ZFS's answer
//     to a failure it cannot undo).
// So forgetting Commit on a path that changed something is never silent:
// it suspends the pool. Operations check and read everything they can
// before their first change, so that their failures land in the first case.
// An operation that can undo a step itself (free the object it just
// created) does so and commits: the Tx then holds a complete change.
//
// Every change the DMU accepts under a Tx is counted (Dirtied), and each
// DMU call either makes its whole change or, failing, none; a caller that
// tries a step may compare changes() before and after it.
//
// Sync context: Tx::ForSync(t) makes a Tx already in txg t without a hold,
// for the pool's own changes while it syncs t (the MOS). Its end does
// nothing: a sync that fails suspends the pool on its own.
//
// Thread safety: a Tx belongs to one thread.
#pragma once

#include <cstdint>

#include "dmu/tx_assigner.h"
#include "poolfs/status.h"
#include "poolfs/types.h"

namespace poolfs::core::dmu {

class Tx {
 public:
  explicit Tx(TxAssigner* assigner) : assigner_(assigner) {}
  static Tx ForSync(Txg txg) {
    Tx tx(nullptr);
    tx.txg_ = txg;
    tx.assigned_ = true;
    return tx;
  }
  Tx(Tx&& o) noexcept
      : assigner_(o.assigner_),
        txg_(o.txg_),
        assigned_(o.assigned_),
        dirtied_(o.dirtied_),
        changes_(o.changes_) {
    o.assigned_ = false;
  }
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;
  // Still assigned here means the owner returned without Commit: see the
  // theory comment (released when nothing changed, else abandoned).
  ~Tx() {
    if (!assigned_) return;
    if (changes_ == 0 || assigner_ == nullptr) {
      Commit();  // nothing to lose: just leave the txg
      return;
    }
    EndWithoutCommit();
  }

  // Joins the open txg; `estimated_bytes` feeds the write throttle. Fails
  // when the pool cannot accept changes (its status says why).
  Status Assign(uint64_t estimated_bytes = 0) {
    auto t = assigner_->Hold(estimated_bytes);
    if (!t.ok()) return t.status();
    txg_ = *t;
    assigned_ = true;
    return Status::Ok();
  }
  bool assigned() const { return assigned_; }
  // False for a Tx of ForSync.
  bool open_context() const { return assigner_ != nullptr; }
  Txg txg() const { return txg_; }
  // Records one change the DMU accepted under this Tx, which dirtied
  // `bytes` (reported to the throttle at Commit; 0 for a block already
  // dirty in this txg).
  void Dirtied(uint64_t bytes) {
    dirtied_ += bytes;
    changes_++;
  }
  // How many changes the DMU accepted under this Tx so far.
  uint64_t changes() const { return changes_; }

  // Ends the Tx with its changes: they reach disk with txg().
  void Commit() {
    if (!assigned_) return;
    assigned_ = false;
    if (assigner_) assigner_->Release(txg_, dirtied_);
  }
  // Ends the Tx after `cause` stopped its operation. Returns `cause` when
  // the Tx changed nothing (or was never assigned, or is a sync context
  // Tx); otherwise abandons txg() and returns the pool's suspension status
  // (IOError, naming the txg and the cause).
  // Out of line (tx.cc), as the rest of the failure path: it stays out of
  // the code of every caller.
  Status Abandon(const Status& cause);
  // Commit() when `st` is OK, else Abandon(st); returns what that returns.
  Status Finish(Status st) {
    if (!st.ok()) return Abandon(st);
    Commit();
    return st;
  }

 private:
  // The destructor's Abandon, for a Tx that changed something.
  void EndWithoutCommit();

  TxAssigner* assigner_;
  Txg txg_;
  bool assigned_ = false;
  uint64_t dirtied_ = 0;
  uint64_t changes_ = 0;
};

}  // namespace poolfs::core::dmu
