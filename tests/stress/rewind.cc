// Runner::DamageNewestUberblock: the rewind step of a cycle.
//
// After a crash at the end of txg T, the newest older uberblock P must still
// be importable with its whole tree: frees are deferred kTxgDeferSize txgs,
// so nothing P references is reused before T + 1's sync could finish, and a
// crash ends that sync. One cycle in five checks it: the uberblock of T is
// garbled in every label of every vdev, and the import must open exactly P,
// which is then verified like any import (the model replays through P).
#include <algorithm>
#include <cstring>

#include "stress/runner.h"
#include "vdev/file_device.h"
#include "vdev/label.h"
#include "vdev/uberblock.h"

namespace poolfs::stress {

Status Runner::DamageNewestUberblock(uint64_t* newest, uint64_t* previous) {
  using namespace core::vdev;
  *newest = *previous = 0;
  std::vector<std::unique_ptr<FileDevice>> devs;
  std::vector<VdevLayout> layouts;
  for (const std::string& path : paths_) {
    POOLFS_ASSIGN_OR_RETURN(auto dev, FileDevice::Open(path, {false, false}));
    POOLFS_ASSIGN_OR_RETURN(VdevLabelInfo info, ReadLabels(*dev));
    for (const FoundUberblock& f : info.uberblocks) *newest = std::max(*newest, f.ub.txg.value());
    layouts.push_back(info.layout);
    devs.push_back(std::move(dev));
  }
  // The previous uberblock: the newest one older than `newest`, anywhere.
  for (size_t i = 0; i < devs.size(); i++) {
    POOLFS_ASSIGN_OR_RETURN(VdevLabelInfo info, ReadLabels(*devs[i]));
    for (const FoundUberblock& f : info.uberblocks)
      if (f.ub.txg.value() < *newest) *previous = std::max(*previous, f.ub.txg.value());
  }
  // Nothing to fall back to, or nothing synced since the last verified
  // state (falling back would go behind the model): leave the pool alone.
  if (*previous == 0 || *newest <= verified_txg_) {
    *previous = 0;
    return Status::Ok();
  }
  uint8_t garbage[kUberblockSlotSize];
  for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = uint8_t(0xA5 ^ (i * 7));
  const uint64_t slot = UberblockSlot(Txg(*newest));
  for (size_t i = 0; i < devs.size(); i++) {
    for (int label = 0; label < kLabelCount; label++)
      POOLFS_RETURN_IF_ERROR(
          devs[i]->Write(layouts[i].SlotOffset(label, slot), garbage, sizeof garbage));
    POOLFS_RETURN_IF_ERROR(devs[i]->Flush());
  }
  return Status::Ok();
}

}  // namespace poolfs::stress
