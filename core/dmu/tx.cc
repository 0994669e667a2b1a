#include "dmu/tx.h"

#include <string>

namespace poolfs::core::dmu {

Status Tx::Abandon(const Status& cause) {
  if (!assigned_) return cause;
  assigned_ = false;
  if (!assigner_) return cause;
  Status st = cause;
  // The txg is abandoned before it is left: once released it could quiesce
  // and sync with the half-done change.
  if (changes_ != 0) st = assigner_->Abandon(txg_, cause);
  assigner_->Release(txg_, dirtied_);
  return st;
}

void Tx::EndWithoutCommit() {
  (void)Abandon(Status(StatusCode::kAborted, "a transaction that made " + std::to_string(changes_) +
                                                 " changes ended without Commit"));
}

}  // namespace poolfs::core::dmu
