// Helpers shared by the zio tests: byte patterns, random valid block
// pointers, and a one- or two-vdev pool on memory devices.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "space/allocator.h"
#include "vdev/fault_injecting_device.h"
#include "vdev/memory_device.h"
#include "vdev/vdev_layout.h"
#include "zio/block_ptr.h"
#include "zio/zio.h"

namespace poolfs::core::zio::testing {

// What a level-0 data block is written with (one copy, compression `c`).
inline WriteProps Data(util::Compression c = util::Compression::kLz4) {
  return {BlockType::kData, 0, c, 1};
}

// `len` random (incompressible) bytes.
inline std::string RandomBytes(size_t len, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(len, '\0');
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = rng();
    std::memcpy(s.data() + i, &v, std::min<size_t>(8, len - i));
  }
  return s;
}

// `len` bytes of text-like records that compress well with lz4 and zstd.
inline std::string CompressibleBytes(size_t len, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s;
  s.reserve(len + 64);
  while (s.size() < len) {
    const uint64_t object = rng() % 1000;  // sequenced: the same bytes with any compiler
    const uint64_t offset = rng() % 64;
    s += "object " + std::to_string(object) + " offset " + std::to_string(offset) + " txg 17\n";
  }
  s.resize(len);
  return s;
}

// A random pointer that satisfies every rule of ValidateBlockPtr; a hole about
// one time in five.
inline BlockPtr RandomValidBlockPtr(std::mt19937_64& rng) {
  auto pick = [&](uint64_t n) { return rng() % n; };
  if (pick(5) == 0) {
    return MakeHole(BlockType(pick(kMaxBlockType + 1)), uint8_t(pick(kMaxLevel + 1)),
                    uint32_t(pick(kMaxBlockSize + 1)), Txg(rng()));
  }
  BlockPtr bp;
  bp.level = pick(3) == 0 ? uint8_t(1 + pick(kMaxLevel)) : 0;
  bp.type =
      bp.level > 0 ? BlockType::kIndirect : BlockType(1 + pick(kMaxBlockType));  // never kNone
  if (bp.type == BlockType::kIndirect && bp.level == 0) bp.level = 1;
  bp.lsize = uint32_t(1 + pick(pick(2) ? kMaxBlockSize : 1 << 18));
  bp.compression = util::Compression(pick(3));
  if (bp.compression == util::Compression::kOff || bp.lsize < 8) {
    bp.compression = util::Compression::kOff;
    bp.psize = bp.lsize;
  } else {
    bp.psize = uint32_t(1 + pick(util::CompressLimit(bp.lsize)));
  }
  uint64_t min_asize = (bp.psize + 511) / 512 * 512;
  bp.dva.size = min_asize + 512 * pick((kMaxBlockSize - min_asize) / 512 + 1) * (pick(4) == 0);
  bp.dva.vdev = uint32_t(pick(4) == 0 ? rng() : pick(4));
  bp.dva.offset = vdev::kFrontReserved + 512 * pick(uint64_t{1} << 40);
  bp.birth = Txg(1 + pick(1u << 30));
  if (bp.type == BlockType::kData && bp.level == 0)
    bp.fill = 1;
  else if (bp.type == BlockType::kDnodes && bp.level == 0)
    bp.fill = pick(bp.lsize / kDnodeSlotSize + 1);
  else
    bp.fill = rng() >> pick(64);
  bp.checksum = {rng(), rng()};
  if (pick(8) == 0) {  // a gang: a header of 512 B .. 64 KiB, children of psize + slack
    bp.dva.size = 512 * (1 + pick(kMaxGangHeaderSize / 512));
    bp.gang_asize = min_asize + 512 * pick(kMaxGangHeaderSize / 512 - 1);
    if (bp.gang_asize - bp.psize >= kMaxGangHeaderSize) bp.gang_asize = min_asize;
  }
  REQUIRE(ValidateBlockPtr(bp).ok());
  return bp;
}

// RandomValidBlockPtr with, for a stored block that is not a gang, one to
// three copies (a format 2 pointer): each further copy on a random vdev,
// never overlapping another.
inline BlockPtr RandomValidBlockPtrV2(std::mt19937_64& rng) {
  BlockPtr bp = RandomValidBlockPtr(rng);
  if (bp.IsHole() || bp.IsGang()) return bp;
  const int copies = 1 + int(rng() % kMaxCopies);
  for (int c = 1; c < copies; c++) {
    space::Dva d{uint32_t(rng() % 4), 0, bp.dva.size};
    // Past every earlier copy: no overlap.
    uint64_t end = 0;
    for (int k = 0; k < c; k++) end = std::max(end, bp.copy(k).offset + bp.copy(k).size);
    d.offset = end + 512 * (rng() % 1024);
    bp.ditto[c - 1] = d;
  }
  REQUIRE(ValidateBlockPtr(bp).ok());
  return bp;
}

// Passes everything to `inner` and records each Write and WriteParts in
// `calls`, each Read and ReadParts in `reads` (offset, bytes, parts), so
// that tests see how the pipeline grouped its I/O.
class RecordingDevice final : public vdev::BlockDevice {
 public:
  struct Call {
    uint64_t off, len;
    size_t parts;
  };
  explicit RecordingDevice(vdev::BlockDevice* inner) : inner_(inner) {}
  uint64_t size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  uint32_t sector_size() const override { return inner_->sector_size(); }
  Status Read(uint64_t off, void* buf, size_t len) override {
    reads.push_back({off, len, 0});
    return inner_->Read(off, buf, len);
  }
  Status ReadParts(uint64_t off, std::span<const vdev::ReadPart> parts) override {
    uint64_t len = 0;
    for (const vdev::ReadPart& part : parts) len += part.len;
    reads.push_back({off, len, parts.size()});
    return inner_->ReadParts(off, parts);
  }
  Status Write(uint64_t off, const void* buf, size_t len) override {
    calls.push_back({off, len, 0});
    return inner_->Write(off, buf, len);
  }
  Status WriteParts(uint64_t off, std::span<const vdev::WritePart> parts) override {
    uint64_t len = 0;
    for (const vdev::WritePart& part : parts) len += part.len;
    calls.push_back({off, len, parts.size()});
    return inner_->WriteParts(off, parts);
  }
  Status Flush() override { return inner_->Flush(); }

  // Single calls have parts == 0; not thread-safe.
  std::vector<Call> calls;  // writes
  std::vector<Call> reads;

 private:
  vdev::BlockDevice* const inner_;
};

// A pool of `nvdevs` memory devices of `size` bytes (ashift 12) with a
// SpaceManager of `allocators` allocators and a Zio over them. With `faulty`,
// each device is wrapped in a FaultInjectingDevice (fault(i)); then, with
// `recording`, in a RecordingDevice (recorded(i)).
class TestPool {
 public:
  explicit TestPool(uint64_t size = 64 * vdev::kMiB, int nvdevs = 1, uint32_t allocators = 1,
                    bool faulty = false, bool recording = false) {
    std::vector<space::VdevSpaceConfig> configs;
    std::vector<Zio::Vdev> vdevs;
    for (int i = 0; i < nvdevs; i++) {
      mem_.push_back(std::make_unique<vdev::MemoryDevice>(size, "mem" + std::to_string(i)));
      vdev::BlockDevice* dev = mem_.back().get();
      if (faulty) {
        fault_.push_back(std::make_unique<vdev::FaultInjectingDevice>(dev, 4096));
        dev = fault_.back().get();
      }
      if (recording) {
        recorded_.push_back(std::make_unique<RecordingDevice>(dev));
        dev = recorded_.back().get();
      }
      vdev::VdevLayout layout = *vdev::ComputeVdevLayout(size);
      configs.push_back({uint32_t(i), layout.alloc_start, layout.alloc_size, 12, 0});
      vdevs.push_back({dev, 12});
    }
    space::SpaceOptions options;
    options.allocators = allocators;
    space_ = std::make_unique<space::SpaceManager>(configs, options);
    zio_ = std::make_unique<Zio>(vdevs, space_.get());
  }

  Zio& zio() { return *zio_; }
  space::SpaceManager& space() { return *space_; }
  vdev::MemoryDevice& mem(int i = 0) { return *mem_[i]; }
  vdev::FaultInjectingDevice& fault(int i = 0) { return *fault_[i]; }
  RecordingDevice& recorded(int i = 0) { return *recorded_[i]; }

  // Syncs and ends txgs first..last in the space manager.
  void SyncTxgs(uint64_t first, uint64_t last) {
    for (uint64_t t = first; t <= last; t++) {
      space_->Sync(Txg(t), [](const space::Metaslab&) {});
      space_->SyncDone(Txg(t));
    }
  }

 private:
  std::vector<std::unique_ptr<vdev::MemoryDevice>> mem_;
  std::vector<std::unique_ptr<vdev::FaultInjectingDevice>> fault_;
  std::vector<std::unique_ptr<RecordingDevice>> recorded_;
  std::unique_ptr<space::SpaceManager> space_;
  std::unique_ptr<Zio> zio_;
};

}  // namespace poolfs::core::zio::testing
