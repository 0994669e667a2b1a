#include "vdev/uberblock.h"

#include <algorithm>
#include <cstring>
#include <string>

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

constexpr size_t kChecked = offsetof(UberblockPhys, checksum_lo);

}  // namespace

UberblockBytes EncodeUberblock(const Uberblock& ub) {
  UberblockBytes b{};
  uint8_t* p = b.data();
  PutLE64(p + offsetof(UberblockPhys, magic), kUberblockMagic);
  POOLFS_CHECK(ub.version >= kOldestFormatVersion && ub.version <= kFormatVersion);
  PutLE32(p + offsetof(UberblockPhys, version), ub.version);
  PutLE64(p + offsetof(UberblockPhys, txg), ub.txg.value());
  PutLE64(p + offsetof(UberblockPhys, pool_guid), ub.pool_guid);
  PutLE64(p + offsetof(UberblockPhys, guid_sum), ub.guid_sum);
  PutLE64(p + offsetof(UberblockPhys, timestamp_ns), ub.timestamp_ns);
  std::memcpy(p + offsetof(UberblockPhys, root), ub.root.data(), kUberblockRootSize);
  util::Checksum128 sum = util::Xxh3_128(p, kChecked);
  PutLE64(p + offsetof(UberblockPhys, checksum_lo), sum.lo);
  PutLE64(p + offsetof(UberblockPhys, checksum_hi), sum.hi);
  return b;
}

Result<Uberblock> DecodeUberblock(const uint8_t* data, size_t len) {
  const uint8_t* p = data;
  if (len < kUberblockSlotSize) {
    return Status::Corruption("uberblock truncated: " + std::to_string(len) + " of " +
                              std::to_string(kUberblockSlotSize) + " bytes");
  }
  if (std::all_of(p, p + kUberblockSlotSize, [](uint8_t b) { return b == 0; })) {
    return Status::NotFound("empty uberblock slot");
  }
  uint64_t magic = GetLE64(p + offsetof(UberblockPhys, magic));
  if (magic != kUberblockMagic)
    return Status::Corruption("bad uberblock magic " + util::HexPadded(magic));
  util::Checksum128 want{GetLE64(p + offsetof(UberblockPhys, checksum_lo)),
                         GetLE64(p + offsetof(UberblockPhys, checksum_hi))};
  util::Checksum128 got = util::Xxh3_128(p, kChecked);
  if (!(got == want)) {
    return Status::Corruption("uberblock checksum mismatch (stored " + util::HexPadded(want.hi) +
                              util::HexPadded(want.lo).substr(2) + ", computed " +
                              util::HexPadded(got.hi) + util::HexPadded(got.lo).substr(2) + ")");
  }
  uint32_t version = GetLE32(p + offsetof(UberblockPhys, version));
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    return Status::NotSupported("uberblock format version " + std::to_string(version) +
                                " is not supported by this poolfs (supports " +
                                std::to_string(kOldestFormatVersion) + " to " +
                                std::to_string(kFormatVersion) + ")");
  }
  Uberblock ub;
  ub.version = version;
  ub.txg = Txg(GetLE64(p + offsetof(UberblockPhys, txg)));
  ub.pool_guid = GetLE64(p + offsetof(UberblockPhys, pool_guid));
  ub.guid_sum = GetLE64(p + offsetof(UberblockPhys, guid_sum));
  ub.timestamp_ns = GetLE64(p + offsetof(UberblockPhys, timestamp_ns));
  std::memcpy(ub.root.data(), p + offsetof(UberblockPhys, root), kUberblockRootSize);
  if (ub.pool_guid == 0) return Status::Corruption("uberblock has pool GUID 0");
  return ub;
}

Status WriteUberblock(BlockDevice& dev, const VdevLayout& layout, const Uberblock& ub) {
  if (ub.pool_guid == 0) return Status::InvalidArgument("uberblock with pool GUID 0");
  if (layout.vdev_size == 0 || layout.vdev_size > dev.size()) {
    return Status::InvalidArgument("vdev layout of " + std::to_string(layout.vdev_size) +
                                   " bytes does not fit " + dev.name() + " (" +
                                   std::to_string(dev.size()) + " bytes)");
  }
  const UberblockBytes bytes = EncodeUberblock(ub);
  const uint64_t slot = UberblockSlot(ub.txg);
  auto write = [&](int label) -> Status {
    return dev.Write(layout.SlotOffset(label, slot), bytes.data(), bytes.size())
        .WithContext("uberblock txg " + std::to_string(ub.txg.value()) + " label " +
                     std::to_string(label));
  };
  POOLFS_RETURN_IF_ERROR(write(0));
  POOLFS_RETURN_IF_ERROR(write(2));
  POOLFS_RETURN_IF_ERROR(dev.Flush());
  POOLFS_RETURN_IF_ERROR(write(1));
  POOLFS_RETURN_IF_ERROR(write(3));
  return Status::Ok();
}

}  // namespace poolfs::core::vdev
