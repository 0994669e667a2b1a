#include "vdev/label.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "util/check.h"
#include "util/checksum.h"
#include "util/endian.h"
#include "util/text.h"

namespace poolfs::core::vdev {
namespace {

using util::GetLE32;
using util::GetLE64;
using util::PutLE32;
using util::PutLE64;

constexpr size_t kHeaderChecked = offsetof(LabelHeaderPhys, checksum_lo);

std::string UnsupportedVersion(uint32_t version) {
  return "pool format version " + std::to_string(version) +
         " is not supported by this poolfs (supports " + std::to_string(kOldestFormatVersion) +
         " to " + std::to_string(kFormatVersion) + ")";
}

// XXH3-128 of header bytes [0, 496) followed by the config.
util::Checksum128 LabelChecksum(const uint8_t* header, const uint8_t* config, size_t config_len) {
  std::string buf(reinterpret_cast<const char*>(header), kHeaderChecked);
  buf.append(reinterpret_cast<const char*>(config), config_len);
  return util::Xxh3_128(buf.data(), buf.size());
}

// Returns what is wrong with a header's fields, or "" when they are valid.
std::string HeaderProblem(const LabelHeader& h) {
  if (h.pool_guid == 0) return "pool GUID is 0";
  if (h.vdev_guid == 0) return "vdev GUID is 0";
  if (h.vdev_count == 0) return "vdev count is 0";
  if (h.vdev_index >= h.vdev_count) {
    return "vdev index " + std::to_string(h.vdev_index) + " is not below the vdev count " +
           std::to_string(h.vdev_count);
  }
  if (h.ashift < kMinAshift || h.ashift > kMaxAshift) {
    return "ashift " + std::to_string(h.ashift) + " is outside " + std::to_string(kMinAshift) +
           ".." + std::to_string(kMaxAshift);
  }
  if (h.vdev_size % kLabelSize != 0 || h.vdev_size < kMinVdevSize) {
    return "vdev size " + std::to_string(h.vdev_size) + " is not a multiple of " +
           std::to_string(kLabelSize) + " of at least " + std::to_string(kMinVdevSize);
  }
  return "";
}

// One label as read from the device.
struct LabelRead {
  bool read_ok = false;                            // the bytes were read
  std::vector<uint8_t> bytes;                      // kLabelSize bytes when read_ok
  Status status = Status::Corruption("not read");  // of the header: OK, or why not
  DecodedLabel label;                              // when status is OK
};

LabelRead ReadOneLabel(BlockDevice& dev, uint64_t offset, int index) {
  LabelRead r;
  r.bytes.resize(kLabelSize);
  r.status = dev.Read(offset, r.bytes.data(), kLabelSize);
  if (!r.status.ok()) return r;
  r.read_ok = true;
  Result<DecodedLabel> d = DecodeLabel(r.bytes.data(), kRingOffset, index);
  if (!d.ok()) {
    r.status = d.status();
  } else {
    r.label = std::move(d).value();
  }
  return r;
}

// Returns the index of the valid label with the highest config_txg (the
// lowest index among equals), or -1.
int BestLabel(const std::array<LabelRead, kLabelCount>& reads) {
  int best = -1;
  for (int i = 0; i < kLabelCount; i++) {
    if (!reads[i].status.ok()) continue;
    if (best < 0 || reads[i].label.header.config_txg > reads[best].label.header.config_txg)
      best = i;
  }
  return best;
}

// Decodes label i's ring into `found`, recording damage in info->ring_errors.
// Returns NotSupported for an uberblock of another format version.
Status ScanRing(const LabelRead& r, int i, uint64_t pool_guid, VdevLabelInfo* info,
                std::vector<FoundUberblock>* found) {
  constexpr size_t kMaxErrors = 64;
  size_t dropped = 0;
  for (uint64_t s = 0; s < kUberblockSlots; s++) {
    const uint8_t* slot = r.bytes.data() + kRingOffset + s * kUberblockSlotSize;
    std::string where = "label " + std::to_string(i) + " slot " + std::to_string(s);
    Result<Uberblock> ub = DecodeUberblock(slot, kUberblockSlotSize);
    std::string problem;
    if (ub.status().IsNotFound()) continue;
    if (ub.status().code() == StatusCode::kNotSupported) return ub.status().WithContext(where);
    if (!ub.ok()) {
      problem = ub.status().message();
    } else if (UberblockSlot(ub->txg) != s) {
      problem = "holds txg " + std::to_string(ub->txg.value()) + ", which belongs in slot " +
                std::to_string(UberblockSlot(ub->txg));
    } else if (ub->pool_guid != pool_guid) {
      problem = "uberblock of another pool (GUID " + util::HexPadded(ub->pool_guid) + ")";
    }
    if (problem.empty()) {
      found->push_back(FoundUberblock{std::move(ub).value(), uint8_t(1u << i)});
    } else if (info->ring_errors.size() < kMaxErrors) {
      info->ring_errors.push_back(where + ": " + problem);
    } else {
      dropped++;
    }
  }
  if (dropped > 0) info->ring_errors.push_back("... and " + std::to_string(dropped) + " more");
  return Status::Ok();
}

// Sorts newest first (txg, then timestamp), merging identical entries.
void SortAndMerge(std::vector<FoundUberblock>* found) {
  auto key = [](const FoundUberblock& f) {
    return std::tie(f.ub.txg, f.ub.timestamp_ns, f.ub.guid_sum, f.ub.root);
  };
  std::sort(found->begin(), found->end(),
            [&](const FoundUberblock& a, const FoundUberblock& b) { return key(a) > key(b); });
  std::vector<FoundUberblock> merged;
  for (FoundUberblock& f : *found) {
    if (!merged.empty() && merged.back().ub == f.ub) {
      merged.back().label_mask |= f.label_mask;
    } else {
      merged.push_back(f);
    }
  }
  *found = std::move(merged);
}

}  // namespace

std::vector<uint8_t> EncodeLabel(const LabelHeader& h, int label_index, std::string_view config) {
  POOLFS_CHECK_LE(config.size(), kMaxConfigSize);
  POOLFS_CHECK(label_index >= 0 && label_index < kLabelCount);
  Result<VdevLayout> layout = ComputeVdevLayout(h.vdev_size);
  POOLFS_CHECK(layout.ok());
  std::vector<uint8_t> b(kRingOffset, 0);
  uint8_t* p = b.data();
  PutLE64(p + offsetof(LabelHeaderPhys, magic), kLabelMagic);
  POOLFS_CHECK(h.version >= kOldestFormatVersion && h.version <= kFormatVersion);
  PutLE32(p + offsetof(LabelHeaderPhys, version), h.version);
  PutLE32(p + offsetof(LabelHeaderPhys, label_index), uint32_t(label_index));
  PutLE64(p + offsetof(LabelHeaderPhys, pool_guid), h.pool_guid);
  PutLE64(p + offsetof(LabelHeaderPhys, vdev_guid), h.vdev_guid);
  PutLE32(p + offsetof(LabelHeaderPhys, vdev_index), h.vdev_index);
  PutLE32(p + offsetof(LabelHeaderPhys, vdev_count), h.vdev_count);
  PutLE32(p + offsetof(LabelHeaderPhys, ashift), h.ashift);
  PutLE64(p + offsetof(LabelHeaderPhys, vdev_size), h.vdev_size);
  PutLE64(p + offsetof(LabelHeaderPhys, alloc_start), layout->alloc_start);
  PutLE64(p + offsetof(LabelHeaderPhys, alloc_size), layout->alloc_size);
  PutLE64(p + offsetof(LabelHeaderPhys, config_txg), h.config_txg.value());
  PutLE64(p + offsetof(LabelHeaderPhys, config_len), config.size());
  if (!config.empty()) std::memcpy(p + kConfigOffset, config.data(), config.size());
  util::Checksum128 sum = LabelChecksum(p, p + kConfigOffset, config.size());
  PutLE64(p + offsetof(LabelHeaderPhys, checksum_lo), sum.lo);
  PutLE64(p + offsetof(LabelHeaderPhys, checksum_hi), sum.hi);
  return b;
}

Result<DecodedLabel> DecodeLabel(const uint8_t* data, size_t len, int label_index) {
  const uint8_t* p = data;
  if (len < kLabelHeaderSize) {
    return Status::Corruption("label truncated: " + std::to_string(len) + " bytes");
  }
  if (std::all_of(p, p + kLabelHeaderSize, [](uint8_t b) { return b == 0; })) {
    return Status::Corruption("empty (all zeros)");
  }
  uint64_t magic = GetLE64(p + offsetof(LabelHeaderPhys, magic));
  if (magic != kLabelMagic) return Status::Corruption("bad magic " + util::HexPadded(magic));
  uint64_t config_len = GetLE64(p + offsetof(LabelHeaderPhys, config_len));
  if (config_len > kMaxConfigSize) {
    return Status::Corruption("config length " + std::to_string(config_len) + " exceeds " +
                              std::to_string(kMaxConfigSize));
  }
  if (len < kConfigOffset + config_len) {
    return Status::Corruption("label truncated: " + std::to_string(len) + " bytes, config needs " +
                              std::to_string(kConfigOffset + config_len));
  }
  util::Checksum128 want{GetLE64(p + offsetof(LabelHeaderPhys, checksum_lo)),
                         GetLE64(p + offsetof(LabelHeaderPhys, checksum_hi))};
  if (!(LabelChecksum(p, p + kConfigOffset, config_len) == want)) {
    return Status::Corruption("checksum mismatch");
  }
  uint32_t version = GetLE32(p + offsetof(LabelHeaderPhys, version));
  if (version < kOldestFormatVersion || version > kFormatVersion)
    return Status::NotSupported(UnsupportedVersion(version));
  uint32_t stored_index = GetLE32(p + offsetof(LabelHeaderPhys, label_index));
  if (stored_index != uint32_t(label_index)) {
    return Status::Corruption("holds label copy " + std::to_string(stored_index) + " where copy " +
                              std::to_string(label_index) + " belongs");
  }
  DecodedLabel d;
  LabelHeader& h = d.header;
  h.version = version;
  h.pool_guid = GetLE64(p + offsetof(LabelHeaderPhys, pool_guid));
  h.vdev_guid = GetLE64(p + offsetof(LabelHeaderPhys, vdev_guid));
  h.vdev_index = GetLE32(p + offsetof(LabelHeaderPhys, vdev_index));
  h.vdev_count = GetLE32(p + offsetof(LabelHeaderPhys, vdev_count));
  h.ashift = GetLE32(p + offsetof(LabelHeaderPhys, ashift));
  h.vdev_size = GetLE64(p + offsetof(LabelHeaderPhys, vdev_size));
  h.config_txg = Txg(GetLE64(p + offsetof(LabelHeaderPhys, config_txg)));
  std::string problem = HeaderProblem(h);
  if (!problem.empty()) return Status::Corruption(problem);
  Result<VdevLayout> layout = ComputeVdevLayout(h.vdev_size);
  if (GetLE64(p + offsetof(LabelHeaderPhys, alloc_start)) != layout->alloc_start ||
      GetLE64(p + offsetof(LabelHeaderPhys, alloc_size)) != layout->alloc_size) {
    return Status::Corruption("allocatable area does not match the vdev size " +
                              std::to_string(h.vdev_size));
  }
  d.config.assign(reinterpret_cast<const char*>(p + kConfigOffset), config_len);
  return d;
}

Status WriteLabels(BlockDevice& dev, const LabelHeader& header, std::string_view config) {
  std::string problem = HeaderProblem(header);
  if (!problem.empty()) return Status::InvalidArgument("label for " + dev.name() + ": " + problem);
  if (config.size() > kMaxConfigSize) {
    return Status::InvalidArgument("pool config of " + std::to_string(config.size()) +
                                   " bytes exceeds the label's " + std::to_string(kMaxConfigSize));
  }
  if (header.vdev_size > dev.size()) {
    return Status::InvalidArgument("vdev size " + std::to_string(header.vdev_size) + " exceeds " +
                                   dev.name() + " (" + std::to_string(dev.size()) + " bytes)");
  }
  POOLFS_ASSIGN_OR_RETURN(VdevLayout layout, ComputeVdevLayout(header.vdev_size));
  auto write = [&](int i) {
    std::vector<uint8_t> b = EncodeLabel(header, i, config);
    return dev.Write(layout.label_offset[i], b.data(), b.size())
        .WithContext("writing label " + std::to_string(i));
  };
  POOLFS_RETURN_IF_ERROR(write(0));
  POOLFS_RETURN_IF_ERROR(write(2));
  POOLFS_RETURN_IF_ERROR(dev.Flush());
  POOLFS_RETURN_IF_ERROR(write(1));
  POOLFS_RETURN_IF_ERROR(write(3));
  return dev.Flush();
}

Status WipeLabels(BlockDevice& dev, const VdevLayout& layout) {
  if (layout.vdev_size == 0 || layout.vdev_size > dev.size()) {
    return Status::InvalidArgument("vdev layout does not fit " + dev.name());
  }
  std::vector<uint8_t> zeros(kLabelSize, 0);
  for (int i = 0; i < kLabelCount; i++) {
    POOLFS_RETURN_IF_ERROR(dev.Write(layout.label_offset[i], zeros.data(), zeros.size()));
  }
  return dev.Flush();
}

Result<VdevLabelInfo> ReadLabels(BlockDevice& dev) {
  const std::string no_label = "no valid label on " + dev.name();
  Result<VdevLayout> dev_layout = ComputeVdevLayout(dev.size());
  if (!dev_layout.ok()) return Status::Corruption(no_label + ": " + dev_layout.status().message());

  std::array<LabelRead, kLabelCount> reads;
  reads[0] = ReadOneLabel(dev, 0, 0);
  reads[1] = ReadOneLabel(dev, kLabelSize, 1);
  // The end labels sit where the front labels say the vdev ends (a device
  // that grew keeps its vdev size); without a valid front label, at the end
  // of the device.
  uint64_t vdev_size = dev_layout->vdev_size;
  if (int front = BestLabel(reads); front >= 0) {
    vdev_size = reads[front].label.header.vdev_size;
    if (vdev_size > dev_layout->vdev_size) {
      return Status::Corruption(dev.name() + " is " + std::to_string(dev.size()) +
                                " bytes but its labels say the vdev is " +
                                std::to_string(vdev_size) + " bytes: the device was truncated");
    }
  }
  POOLFS_ASSIGN_OR_RETURN(VdevLayout layout, ComputeVdevLayout(vdev_size));
  layout.device_size = dev.size();
  for (int i = 2; i < kLabelCount; i++) {
    reads[i] = ReadOneLabel(dev, layout.label_offset[i], i);
    if (reads[i].status.ok() && reads[i].label.header.vdev_size != vdev_size) {
      reads[i].status = Status::Corruption(
          "says the vdev is " + std::to_string(reads[i].label.header.vdev_size) +
          " bytes but sits at the end of " + std::to_string(vdev_size) + " bytes");
    }
  }
  for (int i = 0; i < kLabelCount; i++) {
    if (reads[i].status.code() == StatusCode::kNotSupported) {
      return reads[i].status.WithContext(dev.name() + " label " + std::to_string(i));
    }
  }

  int best = BestLabel(reads);
  if (best < 0) {
    std::string why;
    bool all_io = true;
    for (int i = 0; i < kLabelCount; i++) {
      why += (i ? ", label " : ": label ") + std::to_string(i) + ": " + reads[i].status.message();
      all_io = all_io && reads[i].status.code() == StatusCode::kIOError;
    }
    return all_io ? Status::IOError(no_label + why) : Status::Corruption(no_label + why);
  }
  VdevLabelInfo info;
  info.header = reads[best].label.header;
  info.config = reads[best].label.config;
  info.header_label = best;
  info.layout = layout;
  for (int i = 0; i < kLabelCount; i++) {
    const LabelHeader& h = reads[i].label.header;
    if (reads[i].status.ok() &&
        (h.pool_guid != info.header.pool_guid || h.vdev_guid != info.header.vdev_guid)) {
      reads[i].status = Status::Corruption("belongs to another pool or vdev (pool GUID " +
                                           util::HexPadded(h.pool_guid) + ", vdev GUID " +
                                           util::HexPadded(h.vdev_guid) + ")");
    }
    info.label_status[i] = reads[i].status;
    if (!reads[i].status.ok() || !(h == info.header) || reads[i].label.config != info.config) {
      info.labels_need_repair = true;
    }
  }

  std::vector<FoundUberblock> found;
  for (int i = 0; i < kLabelCount; i++) {
    if (!reads[i].read_ok) continue;  // the rings of damaged headers still count
    POOLFS_RETURN_IF_ERROR(
        ScanRing(reads[i], i, info.header.pool_guid, &info, &found).WithContext(dev.name()));
  }
  SortAndMerge(&found);
  info.uberblocks = std::move(found);
  return info;
}

}  // namespace poolfs::core::vdev
