// Tx: a transaction — a group of changes that lands in exactly one txg.
//
// Open context: construct with the pool's TxAssigner, Assign() (which may
// wait for the write throttle), make changes through ObjectSet calls that take
// the Tx, then Commit(). Every change made under the Tx belongs to txg(); the
// txg cannot quiesce until Commit, so either all of them reach disk in that
// txg or, after a crash before it syncs, none do.
//
// Sync context: Tx::ForSync(t) makes a Tx already in txg t without a hold,
// for the pool's own changes while it syncs t (the MOS).
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
      : assigner_(o.assigner_), txg_(o.txg_), assigned_(o.assigned_), dirtied_(o.dirtied_) {
    o.assigned_ = false;
  }
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;
  ~Tx() { Commit(); }

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
  // Counts bytes this Tx dirtied (reported to the throttle at Commit).
  void Dirtied(uint64_t bytes) { dirtied_ += bytes; }
  void Commit() {
    if (!assigned_) return;
    assigned_ = false;
    if (assigner_) assigner_->Release(txg_, dirtied_);
  }

 private:
  TxAssigner* assigner_;
  Txg txg_;
  bool assigned_ = false;
  uint64_t dirtied_ = 0;
};

}  // namespace poolfs::core::dmu
