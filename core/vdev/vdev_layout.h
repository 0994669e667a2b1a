// Where things live on a vdev: the four labels, the reserved areas, and the
// allocatable area the space layer carves into metaslabs.
//
//   0        256K      512K                 4M                      E-512K  E-256K   E
//   | label 0 | label 1 | log area (3.5 MiB) | allocatable ...         | label 2 | label 3 |
//
// E is the device size rounded down to a multiple of 256 KiB (kLabelSize), so
// that the end labels sit at fixed, aligned offsets; the bytes past E are
// never used. Each label is 256 KiB:
//
//   label + 0      LabelHeaderPhys (512 B), then zeros
//   label + 16K    config payload (up to 112 KiB, owned by the pool layer)
//   label + 128K   uberblock ring: 128 slots of 1 KiB, slot = txg % 128
//
// Sections 2-4 of core/doc/on-disk-format.md have the byte-level
// description.
#pragma once

#include <array>
#include <cstdint>

#include "poolfs/status.h"

namespace poolfs::core::vdev {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;

inline constexpr int kLabelCount = 4;
inline constexpr uint64_t kLabelSize = 256 * kKiB;
// Label 0 and 1 and the log area.
inline constexpr uint64_t kFrontReserved = 4 * kMiB;
// The intent log's area: written and read only through the pool's log
// calls (pool.h), outside the txgs; the pool layer above owns its format.
inline constexpr uint64_t kLogAreaOffset = 2 * kLabelSize;
inline constexpr uint64_t kLogAreaSize = kFrontReserved - kLogAreaOffset;
// Labels 2 and 3.
inline constexpr uint64_t kBackReserved = 2 * kLabelSize;

// Within a label.
inline constexpr uint64_t kLabelHeaderSize = 512;
inline constexpr uint64_t kConfigOffset = 16 * kKiB;
inline constexpr uint64_t kMaxConfigSize = 112 * kKiB;
inline constexpr uint64_t kRingOffset = 128 * kKiB;
inline constexpr uint64_t kRingSize = 128 * kKiB;
inline constexpr uint64_t kUberblockSlotSize = 1 * kKiB;
inline constexpr uint64_t kUberblockSlots = kRingSize / kUberblockSlotSize;  // 128
static_assert(kConfigOffset + kMaxConfigSize == kRingOffset);
static_assert(kRingOffset + kRingSize == kLabelSize);

// The smallest device a vdev may live on: the reserved areas plus 4 MiB to
// allocate from.
inline constexpr uint64_t kMinVdevSize = kFrontReserved + kBackReserved + 4 * kMiB;

// The on-disk format version in every label and uberblock: what new pools
// are created with, and the oldest this build still reads and writes (a
// pool keeps its version for life). A pool of any other version is refused
// (see ReadLabels). Format 2 added block pointers of 128 bytes with up to
// three copies (zio/block_ptr.h).
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kOldestFormatVersion = 1;

// Sector sizes the format allows: 2^9 .. 2^16 bytes.
inline constexpr uint32_t kMinAshift = 9;
inline constexpr uint32_t kMaxAshift = 16;

// Where the labels and the allocatable area of one vdev are. A plain value.
struct VdevLayout {
  uint64_t device_size = 0;  // what the device reports
  uint64_t vdev_size = 0;    // device_size rounded down to kLabelSize
  std::array<uint64_t, kLabelCount> label_offset{};
  uint64_t alloc_start = 0;  // kFrontReserved
  uint64_t alloc_size = 0;   // vdev_size - kFrontReserved - kBackReserved

  // The device offset of ring slot `slot` of label `label`.
  uint64_t SlotOffset(int label, uint64_t slot) const {
    return label_offset[label] + kRingOffset + slot * kUberblockSlotSize;
  }
  bool operator==(const VdevLayout&) const = default;
};

// Returns the layout of a device of `device_size` bytes; InvalidArgument
// "device of N bytes is too small for a vdev (minimum M)" below kMinVdevSize.
Result<VdevLayout> ComputeVdevLayout(uint64_t device_size);

}  // namespace poolfs::core::vdev
