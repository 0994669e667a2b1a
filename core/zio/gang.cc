#include "zio/gang.h"

#include <cstring>

#include "util/check.h"
#include "util/checksum.h"
#include "util/endian.h"
#include "zio/block_ptr.h"

namespace poolfs::core::zio {

std::string EncodeGangHeader(const std::vector<space::Dva>& children, size_t size) {
  POOLFS_CHECK_GE(children.size(), 2u);
  POOLFS_CHECK_LE(children.size(), kMaxGangChildren);
  POOLFS_CHECK_LE(GangHeaderBytes(children.size()), size);
  std::string out(size, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  util::PutLE64(p, kGangMagic);
  util::PutLE32(p + 8, uint32_t(children.size()));
  for (size_t i = 0; i < children.size(); i++) {
    const space::Dva& c = children[i];
    POOLFS_CHECK_NE(c.size, 0u);
    POOLFS_CHECK_LE(c.size, kMaxBlockSize);
    uint8_t* e = p + kGangHeaderFixed + i * kGangChildSize;
    util::PutLE32(e, c.vdev);
    util::PutLE32(e + 4, uint32_t(c.size));
    util::PutLE64(e + 8, c.offset);
  }
  const util::Checksum128 sum =
      util::Xxh3_128(p + kGangHeaderFixed, kGangChildSize * children.size());
  util::PutLE64(p + 16, sum.lo);
  util::PutLE64(p + 24, sum.hi);
  return out;
}

Result<std::vector<space::Dva>> DecodeGangHeader(std::string_view bytes, std::string_view where) {
  auto bad = [&](const std::string& what) {
    return Status::Corruption(std::string(where) + (where.empty() ? "" : ": ") + "gang header " +
                              what);
  };
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < GangHeaderBytes(2))
    return bad("of " + std::to_string(bytes.size()) + " bytes is too short");
  if (util::GetLE64(p) != kGangMagic) return bad("has a bad magic number");
  const uint32_t n = util::GetLE32(p + 8);
  if (n < 2 || n > kMaxGangChildren || GangHeaderBytes(n) > bytes.size())
    return bad("names " + std::to_string(n) + " children (2 .. " +
               std::to_string(kMaxGangChildren) + " that fit its " + std::to_string(bytes.size()) +
               " bytes)");
  if (util::GetLE32(p + 12) != 0) return bad("has nonzero reserved bytes");
  const util::Checksum128 want{util::GetLE64(p + 16), util::GetLE64(p + 24)};
  if (util::Xxh3_128(p + kGangHeaderFixed, kGangChildSize * n) != want)
    return bad("checksum mismatch");
  for (size_t i = GangHeaderBytes(n); i < bytes.size(); i++)
    if (p[i] != 0) return bad("has nonzero bytes after its children");
  std::vector<space::Dva> children(n);
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t* e = p + kGangHeaderFixed + i * kGangChildSize;
    space::Dva& c = children[i];
    c.vdev = util::GetLE32(e);
    c.size = util::GetLE32(e + 4);
    c.offset = util::GetLE64(e + 8);
    if (c.size == 0 || c.size % kMinSectorSize != 0 || c.offset % kMinSectorSize != 0 ||
        c.size > kMaxBlockSize)
      return bad("child " + std::to_string(i) + " has offset " + std::to_string(c.offset) +
                 " size " + std::to_string(c.size) + " (nonzero multiples of " +
                 std::to_string(kMinSectorSize) + " expected)");
  }
  return children;
}

}  // namespace poolfs::core::zio
