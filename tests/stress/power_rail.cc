#include "stress/power_rail.h"

#include <mutex>

namespace poolfs::stress {

Status PowerRail::Cut(uint64_t seed) {
  std::unique_lock l(mu_);
  if (off_.load()) return Status::Ok();
  off_ = true;
  countdown_ = -1;
  cuts_++;
  Status first;
  for (size_t i = 0; i < devs_.size(); i++) {
    Status st = devs_[i]->CutPower(core::vdev::PowerCut::DropRandom(seed * 7919 + i, true));
    if (first.ok() && !st.ok()) first = st;
  }
  return first;
}

void PowerRail::ArmAfter(uint64_t n, uint64_t seed) {
  std::unique_lock l(mu_);
  armed_seed_ = seed;
  countdown_ = int64_t(n);
}

void PowerRail::On() {
  std::unique_lock l(mu_);
  off_ = false;
  countdown_ = -1;
}

Status RailDevice::Read(uint64_t off, void* buf, size_t len) {
  return rail_->Io(false, [&] { return dev_->Read(off, buf, len); });
}

Status RailDevice::Write(uint64_t off, const void* buf, size_t len) {
  return rail_->Io(true, [&] { return dev_->Write(off, buf, len); });
}

Status RailDevice::Flush() {
  return rail_->Io(true, [&] { return dev_->Flush(); });
}

}  // namespace poolfs::stress
