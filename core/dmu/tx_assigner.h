// TxAssigner: how a transaction joins a txg, seen from the DMU.
//
// The txg state machine lives above the DMU (core/txg), so the DMU states
// what it needs as this interface and the txg layer implements it
// (txg::TxgManager). A Tx holds the open txg from Assign until Commit: the
// txg cannot finish quiescing while any hold remains, so everything a Tx
// dirties belongs wholly to that txg.
//
// A txg that holds half of an operation (a change the operation could
// neither finish nor undo) must never reach the disk: Abandon says so, and
// the implementation stops syncing for good (it suspends the pool), so the
// last synced txg stays the pool's state on disk.
//
// Thread safety: implementations are called from any thread.
#pragma once

#include <cstdint>

#include "poolfs/status.h"
#include "poolfs/types.h"

namespace poolfs::core::dmu {

class TxAssigner {
 public:
  virtual ~TxAssigner() = default;
  // Joins the open txg and returns it. May block: the write throttle delays
  // a caller as dirty data nears the maximum and blocks it at the maximum.
  // `estimated_bytes` is what the caller expects to dirty. Fails only when
  // the pool can no longer accept changes (suspended after an I/O failure,
  // or closing): then the status says why.
  virtual Result<Txg> Hold(uint64_t estimated_bytes) = 0;
  // Leaves `txg`, reporting the bytes actually dirtied in it.
  virtual void Release(Txg txg, uint64_t dirtied_bytes) = 0;
  // Txg `txg`, which the caller holds (Abandon comes before its Release),
  // has a change that an operation failed halfway through, for `cause`:
  // that txg must never sync. Suspends the pool (nothing more syncs; every
  // later Hold fails) and returns the suspension's status, an IOError whose
  // message says why ("pool suspended: an operation failed halfway in txg
  // T: <cause>"), or that of an earlier suspension.
  virtual Status Abandon(Txg txg, const Status& cause) = 0;
};

}  // namespace poolfs::core::dmu
