// Helpers shared by the vdev tests: a scratch directory, byte patterns, and a
// pool of labels + uberblocks on a device.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "vdev/block_device.h"
#include "vdev/label.h"
#include "vdev/memory_device.h"
#include "vdev/uberblock.h"

namespace poolfs::core::vdev::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/poolfs-vdev-XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `len` bytes that depend on `seed` and on the position.
inline std::vector<uint8_t> Pattern(size_t len, uint64_t seed) {
  std::vector<uint8_t> v(len);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = uint8_t(x);
  }
  return v;
}

inline std::vector<uint8_t> ReadBytes(BlockDevice& dev, uint64_t off, size_t len) {
  std::vector<uint8_t> v(len);
  Status st = dev.Read(off, v.data(), len);
  REQUIRE(st.ok());
  return v;
}

inline LabelHeader TestHeader(const BlockDevice& dev, uint64_t config_txg = 1) {
  LabelHeader h;
  h.pool_guid = 0x1111222233334444ull;
  h.vdev_guid = 0x5555666677778888ull;
  h.vdev_index = 0;
  h.vdev_count = 1;
  h.ashift = 12;
  h.vdev_size = dev.size() / kLabelSize * kLabelSize;
  h.config_txg = Txg(config_txg);
  return h;
}

// An uberblock of the TestHeader pool for `txg` whose root is a pattern of
// (txg, variant).
inline Uberblock TestUberblock(uint64_t txg, uint64_t variant = 0) {
  Uberblock ub;
  ub.txg = Txg(txg);
  ub.pool_guid = 0x1111222233334444ull;
  ub.guid_sum = 0x5555666677778888ull;
  ub.timestamp_ns = 1000 * txg + variant;
  std::vector<uint8_t> root = Pattern(kUberblockRootSize, txg * 1000 + variant);
  std::copy(root.begin(), root.end(), ub.root.begin());
  return ub;
}

inline VdevLayout LayoutOf(const BlockDevice& dev) {
  Result<VdevLayout> l = ComputeVdevLayout(dev.size());
  REQUIRE(l.ok());
  return *l;
}

// The size of most test devices: room for labels and a few uberblock rings.
inline constexpr uint64_t kDevSize = 16 * kMiB;

// A memory device of `size` bytes whose labels hold `config`.
inline std::unique_ptr<MemoryDevice> PoolDevice(uint64_t size = kDevSize,
                                                const std::string& config = "config-A") {
  auto dev = std::make_unique<MemoryDevice>(size, "mem0");
  REQUIRE(WriteLabels(*dev, TestHeader(*dev), config).ok());
  return dev;
}

// ReadLabels(dev), which must succeed.
inline VdevLabelInfo ReadOk(BlockDevice& dev) {
  Result<VdevLabelInfo> info = ReadLabels(dev);
  INFO(info.status().ToString());
  REQUIRE(info.ok());
  return std::move(info).value();
}

// True when `s` contains `part`.
inline bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace poolfs::core::vdev::testing
