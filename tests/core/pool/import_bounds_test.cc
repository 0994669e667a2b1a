// Import against a MOS whose checksums all verify but whose content is
// hostile: an object length taken from a dnode must not size an allocation
// (a space map object claiming 2 TiB once made import ask for 1 TiB and die
// of std::bad_alloc).
#include "pool/pool.h"

#include <catch2/catch.hpp>

#include <string>

#include "dmu/dnode_phys.h"
#include "pool/pool_phys.h"
#include "util/checksum.h"
#include "util/compress.h"
#include "vdev/label.h"
#include "vdev/memory_device.h"
#include "vdev/uberblock.h"
#include "zio/zio.h"

namespace poolfs::core::pool {
namespace {

constexpr uint64_t kBoundsDevSize = 64ull << 20;

// Stores `data` as a new version of the block `old` names, at `offset`
// (space no block of the pool uses), compressed as `old` was, in one copy;
// returns its pointer.
zio::BlockPtr StoreCopy(vdev::BlockDevice& dev, const zio::BlockPtr& old, const std::string& data,
                        uint64_t offset) {
  zio::BlockPtr bp = old;
  bp.ditto = {};
  std::string stored = data;
  if (old.compression != util::Compression::kOff) {
    std::string buf(data.size(), '\0');
    auto n = util::Compress(old.compression, data.data(), data.size(), buf.data(), buf.size());
    REQUIRE(n.ok());
    stored = buf.substr(0, *n);
  }
  bp.dva.offset = offset;
  bp.dva.size = (stored.size() + 4095) / 4096 * 4096;
  bp.psize = uint32_t(stored.size());
  bp.checksum = util::Xxh3_128(stored.data(), stored.size());
  REQUIRE(zio::ValidateBlockPtr(bp).ok());
  stored.resize(bp.dva.size, '\0');
  REQUIRE(dev.Write(offset, stored.data(), stored.size()).ok());
  return bp;
}

// Gives MOS object `id` the length `length` in a new uberblock (txg + 1)
// whose changed blocks are copies near the end of the device, so that the
// tree of the previous uberblock stays intact. Returns the previous txg.
Txg SetMosObjectLength(vdev::MemoryDevice& dev, uint64_t id, uint64_t length) {
  auto info = vdev::ReadLabels(dev);
  REQUIRE(info.ok());
  const vdev::Uberblock ub = info->uberblocks.front().ub;
  const zio::BpFormat format = zio::BpFormat(ub.version);
  zio::Zio zio({{&dev, 12}}, nullptr, format);
  zio::BlockPtr root = DecodeRootPayload(ub.root, format).value().mos_root;
  dmu::ObjsetPhys mos = dmu::DecodeObjset(zio.Read(root).value(), "MOS", format).value();
  REQUIRE(mos.metadnode.nlevels == 1);  // a small MOS: one dnode block
  std::string dnodes = zio.Read(mos.metadnode.bp).value();
  auto* slot = reinterpret_cast<uint8_t*>(dnodes.data()) + id * dmu::kDnodeSize;
  dmu::DnodePhys d = dmu::DecodeDnode(slot, "object", format).value();
  REQUIRE_FALSE(d.free());
  d.length = length;
  dmu::EncodeDnode(d, slot, format);
  const uint64_t spare = info->layout.alloc_start + info->layout.alloc_size - (1 << 20);
  mos.metadnode.bp = StoreCopy(dev, mos.metadnode.bp, dnodes, spare);
  zio::BlockPtr new_root = StoreCopy(dev, root, dmu::EncodeObjset(mos, format), spare + (64 << 10));
  vdev::Uberblock next = ub;
  next.txg = Txg(ub.txg.value() + 1);
  next.root = EncodeRootPayload(new_root, format);
  REQUIRE(vdev::WriteUberblock(dev, info->layout, next).ok());
  return ub.txg;
}

TEST_CASE("Import refuses a MOS object of implausible length without allocating it", "[pool]") {
  vdev::MemoryDevice dev(kBoundsDevSize, "tank");
  REQUIRE(Pool::CreateOnDevices({&dev}, {"tank"}, CreateOptions{"tank"}).ok());
  // MOS object 1 is the pool directory, 2 the first space map.
  const uint64_t object = GENERATE(1, 2);
  const Txg good = SetMosObjectLength(dev, object, uint64_t{1} << 41);
  PoolOptions options;
  options.space.allocators = 1;
  auto refused = Pool::ImportDevices({&dev}, options);
  INFO(refused.status().ToString());
  REQUIRE(refused.status().code() == StatusCode::kCorruption);
  REQUIRE(refused.status().message().find("implausible length") != std::string::npos);
  // A rewind refuses it too, and opens the one before.
  options.read_only = true;
  options.rewind = true;
  auto p = Pool::ImportDevices({&dev}, options);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  CHECK((*p)->imported_txg() == good);
  REQUIRE((*p)->Export().ok());
}

}  // namespace
}  // namespace poolfs::core::pool
