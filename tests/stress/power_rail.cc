#include "stress/power_rail.h"

#include <mutex>

#include "vdev/file_device.h"

namespace poolfs::stress {

namespace {

core::vdev::PowerCut CutFor(uint64_t seed, size_t dev) {
  using core::vdev::PowerCut;
  const uint64_t s = seed * 7919 + dev;
  switch (seed % 5) {
    case 0: return PowerCut::DropAll();
    case 1: return PowerCut::GarbleAll(s);
    default: return PowerCut::DropRandom(s, true);
  }
}

}  // namespace

Result<std::unique_ptr<RailedFiles>> OpenOnRail(const std::vector<std::string>& paths) {
  auto r = std::make_unique<RailedFiles>();
  for (const std::string& path : paths) {
    POOLFS_ASSIGN_OR_RETURN(auto file, core::vdev::FileDevice::Open(path, {false, false}));
    r->faults.push_back(std::make_unique<core::vdev::FaultInjectingDevice>(std::move(file), 512));
    r->fault_ptrs.push_back(r->faults.back().get());
  }
  r->rail = std::make_unique<PowerRail>(r->fault_ptrs);
  for (core::vdev::FaultInjectingDevice* f : r->fault_ptrs) {
    r->rail_devs.push_back(std::make_unique<RailDevice>(r->rail.get(), f));
    r->devs.push_back(r->rail_devs.back().get());
  }
  return r;
}

const char* PowerRail::CutKind(uint64_t seed) {
  switch (seed % 5) {
    case 0: return "drop-all";
    case 1: return "garble-all";
    default: return "drop-random";
  }
}

Status PowerRail::Cut(uint64_t seed) {
  std::unique_lock l(mu_);
  if (off_.load()) return Status::Ok();
  off_ = true;
  countdown_ = -1;
  cuts_++;
  Status first;
  for (size_t i = 0; i < devs_.size(); i++) {
    Status st = devs_[i]->CutPower(CutFor(seed, i));
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
