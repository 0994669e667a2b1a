#include "vdev/vdev_layout.h"

#include <string>

namespace poolfs::core::vdev {

Result<VdevLayout> ComputeVdevLayout(uint64_t device_size) {
  if (device_size < kMinVdevSize) {
    return Status::InvalidArgument("device of " + std::to_string(device_size) +
                                   " bytes is too small for a vdev (minimum " +
                                   std::to_string(kMinVdevSize) + " bytes)");
  }
  VdevLayout l;
  l.device_size = device_size;
  l.vdev_size = device_size / kLabelSize * kLabelSize;
  l.label_offset = {0, kLabelSize, l.vdev_size - 2 * kLabelSize, l.vdev_size - kLabelSize};
  l.alloc_start = kFrontReserved;
  l.alloc_size = l.vdev_size - kFrontReserved - kBackReserved;
  return l;
}

}  // namespace poolfs::core::vdev
