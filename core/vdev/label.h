// Vdev labels: the self-description of every device of a pool.
//
// Theory. Each vdev carries four copies of a label (vdev_layout.h has where):
// a header naming the pool and the vdev, an opaque config payload the pool
// layer owns (its list of vdevs, paths and so on), and a ring of uberblocks
// (uberblock.h). Everything the pool needs to find its data again after a
// crash starts here, so every write is ordered to leave at least one complete,
// checksummed copy of the old or the new state at every instant:
//
//   - WriteLabels (header + config, rare: create, config change) writes
//     labels 0 and 2, flushes, writes 1 and 3, flushes. A crash before the
//     first flush leaves 1 and 3 as they were; after it, 0 and 2 are new and
//     durable. The uberblock rings are not touched.
//   - WriteUberblock (every txg) writes one ring slot in the same two halves;
//     the previous txg's slot is never the one written.
//   - ReadLabels validates all four labels (checksums, fields, position) and
//     returns the newest valid header and config (by config_txg) and every
//     valid uberblock from all four rings, newest first. A damaged copy is
//     recorded and skipped; the pool opens as long as one copy is valid.
//
// How the pool layer uses it:
//   create:  FileDevice::CreateSparse, Open (exclusive); ComputeVdevLayout(size);
//            WipeLabels (stale rings of an earlier pool must not survive);
//            WriteLabels on every vdev (config_txg = the creating txg); write
//            the first txg's blocks; Flush all; WriteUberblock on all; Flush
//            all. A crash before the first uberblock leaves labels with an
//            empty ring: import must say that creation never completed.
//   import:  ReadLabels on every device; check the pool GUID, vdev GUIDs,
//            index/count and guid_sum across devices; merge the uberblock
//            lists and open the newest (a rewind import: the newest within
//            the free deferral window whose tree verifies; see
//            pool/uberblock_choice.h). Then continue at txg max(txg seen in
//            any ring) + 1, so a txg number is never written twice with
//            different content. A read-write import calls WriteLabels on a
//            vdev whose labels_need_repair, so a damaged copy is rewritten.
//   sync:    Flush all vdevs; WriteUberblock on each; Flush all.
//   config:  WriteLabels with a higher config_txg. After a crash ReadLabels
//            returns either the old or the new config, each complete.
//
// Format versions: a label or uberblock whose checksum is valid but whose
// version is outside kOldestFormatVersion..kFormatVersion makes ReadLabels
// fail with NotSupported "pool format version N is not supported by this
// poolfs (supports 1 to 2)". Future
// versions must keep the magic, version, config_len and checksum fields where
// they are (and the checksum rule) so that this check stays meaningful.
//
// Thread safety: free functions over a BlockDevice; the caller must not write
// labels of the same device from two threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "poolfs/status.h"
#include "poolfs/types.h"
#include "vdev/block_device.h"
#include "vdev/uberblock.h"
#include "vdev/vdev_layout.h"

namespace poolfs::core::vdev {

inline constexpr uint64_t kLabelMagic = 0x4c4542414c534650ull;  // "PFSLABEL"

// The on-disk label header at offset 0 of each label (see UberblockPhys for
// how these structs are used). The checksum is XXH3-128 of bytes [0, 496) of
// the header followed by the config_len bytes of config at kConfigOffset.
struct LabelHeaderPhys {
  uint64_t magic;         // kLabelMagic
  uint32_t version;       // kFormatVersion
  uint32_t label_index;   // 0..3: which copy this is (catches misplaced labels)
  uint64_t pool_guid;     // nonzero
  uint64_t vdev_guid;     // nonzero, unique within the pool
  uint32_t vdev_index;    // this vdev's position in the pool, < vdev_count
  uint32_t vdev_count;    // vdevs in the pool, >= 1
  uint32_t ashift;        // log2 of the allocation unit, kMinAshift..kMaxAshift
  uint32_t reserved0;     // zero
  uint64_t vdev_size;     // bytes used: a multiple of kLabelSize, >= kMinVdevSize
  uint64_t alloc_start;   // kFrontReserved
  uint64_t alloc_size;    // vdev_size - kFrontReserved - kBackReserved
  uint64_t config_txg;    // the txg at which this config was written
  uint64_t config_len;    // bytes of config at kConfigOffset, <= kMaxConfigSize
  uint8_t reserved[408];  // zero
  uint64_t checksum_lo;
  uint64_t checksum_hi;
};
static_assert(sizeof(LabelHeaderPhys) == kLabelHeaderSize);
static_assert(offsetof(LabelHeaderPhys, config_len) == 80);
static_assert(offsetof(LabelHeaderPhys, checksum_lo) == 496);

// A label header in memory. A plain value. The allocatable area and label
// positions derive from vdev_size (ComputeVdevLayout(vdev_size)).
struct LabelHeader {
  uint32_t version = kFormatVersion;  // the pool's format; what was read, what is written
  uint64_t pool_guid = 0;
  uint64_t vdev_guid = 0;
  uint32_t vdev_index = 0;
  uint32_t vdev_count = 1;
  uint32_t ashift = 12;
  uint64_t vdev_size = 0;  // VdevLayout::vdev_size of the device at creation
  Txg config_txg;
  bool operator==(const LabelHeader&) const = default;
};

// One label's header and config, decoded.
struct DecodedLabel {
  LabelHeader header;
  std::string config;
};

// Encodes label `label_index`'s header and config as the first kRingOffset
// bytes of a label. CHECK-fails on a config longer than kMaxConfigSize or an
// invalid vdev_size (WriteLabels validates first).
std::vector<uint8_t> EncodeLabel(const LabelHeader& header, int label_index,
                                 std::string_view config);

// Decodes the header and config from the first `len` bytes of a label that
// should be copy `label_index`. Needs at least kConfigOffset + config_len
// bytes. Fails with Corruption (truncated, bad magic, oversized config_len,
// checksum mismatch, or a field out of range — the message names it) or
// NotSupported for a well-formed label of another format version.
Result<DecodedLabel> DecodeLabel(const uint8_t* data, size_t len, int label_index);

// Writes the four labels' headers and configs (not the rings) in the crash-
// safe order described above, ending with a Flush. The layout comes from
// header.vdev_size. InvalidArgument for a config over kMaxConfigSize, zero
// GUIDs, vdev_index >= vdev_count, an ashift out of range, or a vdev_size that
// is not a valid layout or exceeds the device. Device errors otherwise.
Status WriteLabels(BlockDevice& dev, const LabelHeader& header, std::string_view config);

// Zeroes all four labels entirely (headers, configs, rings) and flushes. For
// pool creation over a device that may hold an old pool.
Status WipeLabels(BlockDevice& dev, const VdevLayout& layout);

// A valid uberblock found in the rings, with the labels that hold it.
struct FoundUberblock {
  Uberblock ub;
  uint8_t label_mask = 0;  // bit i: found in label i
};

// What ReadLabels found on one device.
struct VdevLabelInfo {
  LabelHeader header;     // the newest valid header (highest config_txg)
  std::string config;     // its config
  int header_label = -1;  // which label it came from
  VdevLayout layout;      // from header.vdev_size, on this device
  // Per label: OK, or what is wrong with its header ("bad magic", ...).
  std::array<Status, kLabelCount> label_status;
  // True when some label is damaged or holds an older config: the pool may
  // rewrite the labels (WriteLabels) to repair them.
  bool labels_need_repair = false;
  // Every valid uberblock of this pool in the four rings, deduplicated (same
  // content in several labels: one entry), sorted by txg then timestamp,
  // newest first. Entries with the same txg but different content are all
  // kept: the pool tries each.
  std::vector<FoundUberblock> uberblocks;
  // Damaged or foreign ring slots, "label 2 slot 17: uberblock checksum
  // mismatch ...". Empty slots are not listed.
  std::vector<std::string> ring_errors;
};

// Reads and validates the four labels of `dev`. Fails with:
//   Corruption    "no valid label on <dev>: label 0: <why>, label 1: ..." when
//                 no header is valid (an empty, truncated or foreign file), or
//                 "<dev> is N bytes but its labels say M" when the device is
//                 smaller than the vdev it holds;
//   NotSupported  a label or uberblock of another format version;
//   IOError       when the device fails reads of every label.
// A device too small for any vdev is Corruption (no valid label).
Result<VdevLabelInfo> ReadLabels(BlockDevice& dev);

}  // namespace poolfs::core::vdev
