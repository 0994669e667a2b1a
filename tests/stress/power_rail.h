// PowerRail: one power supply for all the vdevs of a pool under test.
//
// FaultInjectingDevice cuts the power of one device; a machine loses power
// for all its disks at once. The rail wraps each FaultInjectingDevice in a
// RailDevice that the pool uses: Cut() stops every I/O on every device at one
// instant (it waits for I/Os in flight, then refuses new ones with IOError),
// and then cuts each device's power. The seed picks how: three cuts in five
// are PowerCut::DropRandom with torn-sector garbage (each device keeps,
// loses or tears each unflushed write independently), one DropAll, one
// GarbleAll (every unflushed write lost, its sectors garbage). ArmAfter(n) cuts
// instead just before the n-th next write or flush, whichever device it
// goes to, so the cut can land at any step of a txg sync.
//
// After a cut every I/O fails until On(); the devices are then as freshly
// started over what survived.
//
// Thread safety: all methods from any thread; I/Os share a reader lock that
// Cut takes exclusively.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "poolfs/status.h"
#include "vdev/block_device.h"
#include "vdev/fault_injecting_device.h"

namespace poolfs::stress {

class PowerRail {
 public:
  explicit PowerRail(std::vector<core::vdev::FaultInjectingDevice*> devs)
      : devs_(std::move(devs)) {}

  // Cuts the power of every device now, as `seed` picks (see above).
  // Returns the first device failure to take the surviving writes.
  Status Cut(uint64_t seed);
  // "drop-random", "drop-all" or "garble-all": what Cut(seed) does.
  static const char* CutKind(uint64_t seed);
  // Cuts just before the n-th next write or flush (1 = the next one).
  void ArmAfter(uint64_t n, uint64_t seed);
  void On();
  bool armed() const { return countdown_.load() >= 0; }
  bool off() const { return off_.load(); }
  uint64_t cuts() const { return cuts_.load(); }

  // Runs one I/O under the rail (RailDevice's methods).
  template <typename F>
  Status Io(bool mutation, F&& io);

 private:
  std::vector<core::vdev::FaultInjectingDevice*> devs_;
  std::shared_mutex mu_;
  std::atomic<bool> off_{false};
  std::atomic<int64_t> countdown_{-1};  // < 0: not armed
  std::atomic<uint64_t> armed_seed_{0};
  std::atomic<uint64_t> cuts_{0};
};

// A BlockDevice that passes I/O to a FaultInjectingDevice through a rail.
class RailDevice final : public core::vdev::BlockDevice {
 public:
  RailDevice(PowerRail* rail, core::vdev::FaultInjectingDevice* dev) : rail_(rail), dev_(dev) {}
  uint64_t size() const override { return dev_->size(); }
  std::string name() const override { return dev_->name(); }
  uint32_t sector_size() const override { return dev_->sector_size(); }
  Status Read(uint64_t off, void* buf, size_t len) override;
  Status Write(uint64_t off, const void* buf, size_t len) override;
  Status Flush() override;

 private:
  PowerRail* const rail_;
  core::vdev::FaultInjectingDevice* const dev_;
};

// A pool's vdev files under fault-injecting devices, all on one rail: what
// a power-cut cycle imports (`devs`). The files are opened unlocked, so
// that another process or the offline check may open them between cycles.
struct RailedFiles {
  std::vector<std::unique_ptr<core::vdev::FaultInjectingDevice>> faults;
  std::vector<core::vdev::FaultInjectingDevice*> fault_ptrs;  // faults, in order
  std::unique_ptr<PowerRail> rail;
  std::vector<std::unique_ptr<RailDevice>> rail_devs;
  std::vector<core::vdev::BlockDevice*> devs;  // rail_devs, in order
};
// Opens `paths` so (a FileDevice's errors).
Result<std::unique_ptr<RailedFiles>> OpenOnRail(const std::vector<std::string>& paths);

template <typename F>
Status PowerRail::Io(bool mutation, F&& io) {
  bool fire = false;
  {
    std::shared_lock l(mu_);
    if (off_.load()) return Status::IOError("power is off");
    if (mutation && countdown_.load() >= 0) fire = countdown_.fetch_sub(1) == 1;
    if (!fire) return io();
  }
  // This I/O is the one the armed cut stops: it does not happen.
  (void)Cut(armed_seed_.load());
  return Status::IOError("power is off (cut before this I/O)");
}

}  // namespace poolfs::stress
