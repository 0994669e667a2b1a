// TxAssigner: how a transaction joins a txg, seen from the DMU.
//
// The txg state machine lives above the DMU (core/txg), so the DMU states
// what it needs as this interface and the txg layer implements it
// (txg::TxgManager). A Tx holds the open txg from Assign until Commit: the
// txg cannot finish quiescing while any hold remains, so everything a Tx
// dirties belongs wholly to that txg.
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
};

}  // namespace poolfs::core::dmu
