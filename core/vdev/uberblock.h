// Uberblocks: the root of the pool's tree at the end of one txg, kept in a
// ring of 128 one-KiB slots in each of the four labels of every vdev.
//
// The txg sync writes one uberblock per synced txg, into slot txg % 128 of
// every label. Because consecutive txgs use different slots, writing txg T
// never touches the slot holding T-1: whatever a crash does to T's slot, T-1
// (and older txgs, while their blocks are still intact — frees are deferred
// kTxgDeferSize txgs) remain readable. The caller must therefore write
// uberblocks for increasing txgs without skipping 128 or more at once.
//
// Import (ReadLabels in label.h) collects every valid uberblock of every ring;
// the pool opens the newest, or with a rewind the newest within the deferral
// window whose tree verifies (pool/uberblock_choice.h).
//
// Encoding: UberblockPhys below, little-endian, written field by field. The
// checksum is XXH3-128 of bytes [0, 1008) of the slot. An all-zero slot is
// empty (NotFound), not damage.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "poolfs/status.h"
#include "poolfs/types.h"
#include "vdev/block_device.h"
#include "vdev/vdev_layout.h"

namespace poolfs::core::vdev {

inline constexpr uint64_t kUberblockMagic = 0x4252454255534650ull;  // "PFSUBERB"
inline constexpr size_t kUberblockRootSize = 512;

// The on-disk layout of one ring slot. It documents the format: the codec
// writes each field at its offsetof() position in little-endian and never
// copies this struct to or from disk as a whole.
struct UberblockPhys {
  uint64_t magic;                    // kUberblockMagic
  uint32_t version;                  // the pool's format version (its labels')
  uint32_t reserved0;                // zero
  uint64_t txg;                      // the txg this uberblock closes
  uint64_t pool_guid;                // the pool it belongs to
  uint64_t guid_sum;                 // sum (mod 2^64) of every vdev GUID in the pool
  uint64_t timestamp_ns;             // wall clock at sync, ns since the epoch
  uint8_t root[kUberblockRootSize];  // opaque to this layer: the MOS root block pointer
  uint8_t reserved[448];             // zero
  uint64_t checksum_lo;              // XXH3-128 of bytes [0, 1008)
  uint64_t checksum_hi;
};
static_assert(sizeof(UberblockPhys) == kUberblockSlotSize);
static_assert(offsetof(UberblockPhys, root) == 48);
static_assert(offsetof(UberblockPhys, checksum_lo) == 1008);

// An uberblock in memory. A plain value.
struct Uberblock {
  uint32_t version = kFormatVersion;  // the pool's format; what was read, what is written
  Txg txg;
  uint64_t pool_guid = 0;
  uint64_t guid_sum = 0;
  uint64_t timestamp_ns = 0;
  std::array<uint8_t, kUberblockRootSize> root{};  // the pool layer's root payload
  bool operator==(const Uberblock&) const = default;
};

using UberblockBytes = std::array<uint8_t, kUberblockSlotSize>;

// Encodes `ub` as one ring slot (its version, checksum filled in). CHECKs
// that the version is one this build writes.
UberblockBytes EncodeUberblock(const Uberblock& ub);

// Decodes one ring slot of `len` bytes (only the first kUberblockSlotSize are
// used). Fails with:
//   NotFound      the slot is all zeros (never written, or wiped);
//   Corruption    fewer than kUberblockSlotSize bytes, a bad magic, or a
//                 checksum mismatch — the message says which;
//   NotSupported  a well-formed (checksum-valid) uberblock of another format
//                 version: "uberblock format version N is not supported by
//                 this poolfs (supports 1 to 2)".
// The caller adds where the slot was (label and slot index).
Result<Uberblock> DecodeUberblock(const uint8_t* data, size_t len);

// The ring slot of a txg: txg % kUberblockSlots.
inline uint64_t UberblockSlot(Txg txg) { return txg.value() % kUberblockSlots; }

// Writes `ub` into slot UberblockSlot(ub.txg) of the four labels of the vdev
// laid out as `layout` on `dev`, in two halves with a flush between them:
// labels 0 and 2, Flush, labels 1 and 3. A power cut while one half is in
// flight can only damage that half (even a whole garbled sector, neighbouring
// slots included), while the other half holds intact either the previous txg
// (first half in flight) or this one, durable (second half in flight).
//
// Caller's protocol (the txg sync): Flush every vdev so that the txg's blocks
// are durable, then WriteUberblock on every vdev, then Flush every vdev before
// reporting the txg synced. When WriteUberblock returns OK the uberblock is
// already durable in labels 0 and 2.
// Fails with InvalidArgument when ub.pool_guid is 0 or the layout does not fit
// the device, and with the device's error otherwise (the uberblock may then be
// in some labels and not others; the previous txg's is intact).
Status WriteUberblock(BlockDevice& dev, const VdevLayout& layout, const Uberblock& ub);

}  // namespace poolfs::core::vdev
