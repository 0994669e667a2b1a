// Tests for FaultInjectingDevice: the volatile-cache model (pending writes,
// flush, power cuts that drop, reorder and tear), injected I/O failures, bit
// flips and counters.

#include "vdev/fault_injecting_device.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "vdev/memory_device.h"
#include "vdev_test_util.h"

namespace poolfs::core::vdev {
namespace {

using testing::Contains;
using testing::Pattern;
using testing::ReadBytes;

constexpr uint64_t kSmallDevSize = 1 * kMiB;

TEST_CASE("FaultInjectingDevice: pending writes are readable but lost at a power cut", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem);
  std::vector<uint8_t> a = Pattern(3000, 1);
  REQUIRE(dev.Write(100, a.data(), a.size()).ok());
  CHECK(ReadBytes(dev, 100, a.size()) == a);                              // the cache serves it
  CHECK(ReadBytes(mem, 100, a.size()) == std::vector<uint8_t>(3000, 0));  // not on "disk"
  CHECK(dev.counters().pending_writes == 1);
  REQUIRE(dev.CutPower().ok());
  CHECK(ReadBytes(dev, 100, a.size()) == std::vector<uint8_t>(3000, 0));
  CHECK(dev.counters().pending_writes == 0);
  CHECK(dev.counters().power_cuts == 1);
  // The device works again after the cut.
  REQUIRE(dev.Write(100, a.data(), a.size()).ok());
  CHECK(ReadBytes(dev, 100, a.size()) == a);
}

TEST_CASE("FaultInjectingDevice: flushed writes survive a power cut", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem);
  std::vector<uint8_t> a = Pattern(4096, 1), b = Pattern(4096, 2);
  REQUIRE(dev.Write(0, a.data(), a.size()).ok());
  REQUIRE(dev.Flush().ok());
  REQUIRE(dev.Write(0, b.data(), b.size()).ok());  // overwrites, not flushed
  CHECK(ReadBytes(dev, 0, 4096) == b);
  REQUIRE(dev.CutPower(PowerCut::DropAll()).ok());
  CHECK(ReadBytes(dev, 0, 4096) == a);
  CHECK(ReadBytes(mem, 0, 4096) == a);
  CHECK(mem.flushes() >= 1);
}

TEST_CASE("FaultInjectingDevice: later overlapping writes win in reads and at flush", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem);
  std::vector<uint8_t> a(1000, 0xAA), b(100, 0xBB);
  REQUIRE(dev.Write(0, a.data(), a.size()).ok());
  REQUIRE(dev.Write(450, b.data(), b.size()).ok());
  std::vector<uint8_t> want = a;
  std::fill(want.begin() + 450, want.begin() + 550, 0xBB);
  CHECK(ReadBytes(dev, 0, 1000) == want);
  REQUIRE(dev.Flush().ok());
  CHECK(ReadBytes(mem, 0, 1000) == want);
}

TEST_CASE("FaultInjectingDevice: DropRandom keeps, drops and tears writes per sector", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem, 512);
  constexpr int kWrites = 64;
  constexpr size_t kLen = 4 * 512;
  for (int i = 0; i < kWrites; i++) {
    std::vector<uint8_t> d = Pattern(kLen, i);
    REQUIRE(dev.Write(uint64_t(i) * 8192, d.data(), d.size()).ok());
  }
  REQUIRE(dev.CutPower(PowerCut::DropRandom(42)).ok());
  int whole = 0, lost = 0, torn = 0;
  for (int i = 0; i < kWrites; i++) {
    std::vector<uint8_t> d = Pattern(kLen, i);
    std::vector<uint8_t> got = ReadBytes(dev, uint64_t(i) * 8192, kLen);
    int kept = 0;
    for (size_t s = 0; s < kLen; s += 512) {
      bool is_new = std::equal(got.begin() + s, got.begin() + s + 512, d.begin() + s);
      bool is_old =
          std::all_of(got.begin() + s, got.begin() + s + 512, [](uint8_t b) { return b == 0; });
      REQUIRE((is_new || is_old));  // sectors are atomic
      kept += is_new;
    }
    if (kept == 4)
      whole++;
    else if (kept == 0)
      lost++;
    else
      torn++;
  }
  CHECK(whole > 0);
  CHECK(lost > 0);
  CHECK(torn > 0);
  // The same seed gives the same outcome.
  MemoryDevice mem2(kSmallDevSize);
  FaultInjectingDevice dev2(&mem2, 512);
  for (int i = 0; i < kWrites; i++) {
    std::vector<uint8_t> d = Pattern(kLen, i);
    REQUIRE(dev2.Write(uint64_t(i) * 8192, d.data(), d.size()).ok());
  }
  REQUIRE(dev2.CutPower(PowerCut::DropRandom(42)).ok());
  CHECK(mem2.Contents() == mem.Contents());
}

TEST_CASE("FaultInjectingDevice: DropRandom never lets an older write beat a newer one",
          "[fault]") {
  for (uint64_t seed = 0; seed < 64; seed++) {
    MemoryDevice mem(kSmallDevSize);
    FaultInjectingDevice dev(&mem, 512);
    std::vector<uint8_t> a(512, 0xAA), b(512, 0xBB);
    REQUIRE(dev.Write(0, a.data(), 512).ok());
    REQUIRE(dev.Write(0, b.data(), 512).ok());
    REQUIRE(dev.CutPower(PowerCut::DropRandom(seed)).ok());
    std::vector<uint8_t> got = ReadBytes(mem, 0, 512);
    bool ok = got == a || got == b || got == std::vector<uint8_t>(512, 0);
    REQUIRE(ok);
  }
}

TEST_CASE("FaultInjectingDevice: a garbled torn sector loses bytes outside the write", "[fault]") {
  // One 1 KiB write inside a 4 KiB sector whose other bytes hold flushed data:
  // with garbling, some seed tears it and destroys the neighbours too.
  bool neighbours_hit = false;
  for (uint64_t seed = 0; seed < 64 && !neighbours_hit; seed++) {
    MemoryDevice mem(kSmallDevSize);
    FaultInjectingDevice dev(&mem, 4096);
    std::vector<uint8_t> old = Pattern(4096, 7), upd(2048, 0xCC);
    REQUIRE(dev.Write(0, old.data(), old.size()).ok());
    REQUIRE(dev.Flush().ok());
    REQUIRE(dev.Write(3072, upd.data(), upd.size()).ok());  // spans sectors 0 and 1
    REQUIRE(dev.CutPower(PowerCut::DropRandom(seed, true)).ok());
    std::vector<uint8_t> got = ReadBytes(mem, 0, 3072);
    if (!std::equal(got.begin(), got.end(), old.begin())) neighbours_hit = true;
  }
  CHECK(neighbours_hit);
}

TEST_CASE("FaultInjectingDevice: GarbleAll destroys every sector being written", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem, 4096);
  std::vector<uint8_t> old = Pattern(16384, 3), upd(100, 0xCC);
  REQUIRE(dev.Write(0, old.data(), old.size()).ok());
  REQUIRE(dev.Flush().ok());
  REQUIRE(dev.Write(5000, upd.data(), upd.size()).ok());  // inside sector 1
  REQUIRE(dev.CutPower(PowerCut::GarbleAll(1)).ok());
  std::vector<uint8_t> got = ReadBytes(mem, 0, 16384);
  CHECK(std::equal(got.begin(), got.begin() + 4096, old.begin()));  // sector 0 intact
  CHECK_FALSE(std::equal(got.begin() + 4096, got.begin() + 8192, old.begin() + 4096));
  CHECK(std::equal(got.begin() + 8192, got.end(), old.begin() + 8192));  // sectors 2, 3 intact
  CHECK_FALSE(std::equal(got.begin() + 5000, got.begin() + 5100, upd.begin()));
}

TEST_CASE("FaultInjectingDevice: CutPowerAfter stops an operation after n writes", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem);
  std::vector<uint8_t> d = Pattern(512, 1);
  dev.CutPowerAfter(3);
  REQUIRE(dev.Write(0, d.data(), 512).ok());
  REQUIRE(dev.Flush().ok());  // the write above is durable
  REQUIRE(dev.Write(512, d.data(), 512).ok());
  Status st = dev.Write(1024, d.data(), 512);  // the 4th: power goes out first
  CHECK(st.code() == StatusCode::kIOError);
  CHECK(Contains(st.message(), "power cut"));
  CHECK(dev.power_is_off());
  uint8_t b;
  CHECK(dev.Read(0, &b, 1).code() == StatusCode::kIOError);
  CHECK(dev.Flush().code() == StatusCode::kIOError);
  dev.PowerOn();
  CHECK(ReadBytes(dev, 0, 512) == d);
  CHECK(ReadBytes(dev, 512, 512) == std::vector<uint8_t>(512, 0));  // was pending: dropped
  CHECK(ReadBytes(dev, 1024, 512) == std::vector<uint8_t>(512, 0));
}

TEST_CASE("FaultInjectingDevice: FailNthIo fails the nth I/O of a kind once", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem);
  uint8_t b = 0;
  dev.FailNthIo(2, IoKind::kWrite);
  CHECK(dev.Read(0, &b, 1).ok());  // reads do not count
  b = 7;
  CHECK(dev.Write(0, &b, 1).ok());
  Status st = dev.Write(1, &b, 1);
  CHECK(st.code() == StatusCode::kIOError);
  CHECK(Contains(st.message(), "offset 1"));
  CHECK(dev.Write(2, &b, 1).ok());                               // once only
  CHECK(ReadBytes(dev, 0, 3) == std::vector<uint8_t>{7, 0, 7});  // the failed one did nothing
  CHECK(dev.counters().injected_failures == 1);

  dev.FailNthIo(1, IoKind::kFlush);
  CHECK(dev.Flush().code() == StatusCode::kIOError);
  CHECK(dev.counters().pending_writes == 2);  // still pending after the failed flush
  CHECK(dev.Flush().ok());
  CHECK(ReadBytes(mem, 0, 3) == std::vector<uint8_t>{7, 0, 7});
}

TEST_CASE("FaultInjectingDevice: sticky failures persist until cleared", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem);
  uint8_t b = 0;
  dev.FailNthIo(2, IoKind::kAny, true);
  CHECK(dev.Read(0, &b, 1).ok());
  for (int i = 0; i < 3; i++) {
    CHECK_FALSE(dev.Read(0, &b, 1).ok());
    CHECK_FALSE(dev.Write(0, &b, 1).ok());
    CHECK_FALSE(dev.Flush().ok());
  }
  dev.ClearFaults();
  CHECK(dev.Read(0, &b, 1).ok());
  CHECK(dev.Flush().ok());
}

TEST_CASE("FaultInjectingDevice: FlipBitOnRead corrupts reads but not the data", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem);
  std::vector<uint8_t> d(16, 0x10);
  REQUIRE(dev.Write(0, d.data(), d.size()).ok());
  dev.FlipBitOnRead(5, 0x01);
  std::vector<uint8_t> got = ReadBytes(dev, 0, 16);
  CHECK(got[5] == 0x11);
  CHECK(got[4] == 0x10);
  CHECK(ReadBytes(dev, 5, 1)[0] == 0x11);
  CHECK(ReadBytes(dev, 6, 4) == std::vector<uint8_t>(4, 0x10));  // not covering it
  dev.ClearFaults();
  CHECK(ReadBytes(dev, 0, 16) == d);
}

TEST_CASE("FaultInjectingDevice: FlipBitsOnDisk corrupts persistently", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem);
  std::vector<uint8_t> d(16, 0x00);
  REQUIRE(dev.Write(0, d.data(), d.size()).ok());
  REQUIRE(dev.Flush().ok());
  REQUIRE(dev.FlipBitsOnDisk(2, 10).ok());  // byte 2 all bits, byte 3 the low two
  CHECK(ReadBytes(mem, 0, 4) == std::vector<uint8_t>{0, 0, 0xFF, 0x03});
  // A pending write over the bytes is damaged too, so the damage outlives a flush.
  std::vector<uint8_t> e(4, 0x00);
  REQUIRE(dev.Write(8, e.data(), 4).ok());
  REQUIRE(dev.FlipBitsOnDisk(9, 1).ok());
  REQUIRE(dev.Flush().ok());
  CHECK(ReadBytes(mem, 8, 4) == std::vector<uint8_t>{0, 1, 0, 0});
  CHECK(dev.FlipBitsOnDisk(kSmallDevSize, 1).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("FaultInjectingDevice serves concurrent writers, readers and flushes", "[fault]") {
  MemoryDevice mem(kSmallDevSize);
  FaultInjectingDevice dev(&mem);
  std::atomic<int> bad{0};  // Catch2 assertions are not thread-safe
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; i++) {
        uint64_t off = (uint64_t(t) * 50 + i) * 1024;
        std::vector<uint8_t> d = Pattern(1024, off), back(1024);
        if (!dev.Write(off, d.data(), d.size()).ok()) bad++;
        if (!dev.Read(off, back.data(), back.size()).ok() || back != d) bad++;
        if (i % 10 == t && !dev.Flush().ok()) bad++;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
  REQUIRE(dev.Flush().ok());
  for (uint64_t off = 0; off < 200 * 1024; off += 1024) {
    REQUIRE(ReadBytes(mem, off, 1024) == Pattern(1024, off));
  }
}

TEST_CASE("FaultInjectingDevice counts reads, writes and flushes", "[fault]") {
  FaultInjectingDevice dev(std::make_unique<MemoryDevice>(kSmallDevSize, "inner"));
  CHECK(dev.name() == "inner");
  CHECK(dev.size() == kSmallDevSize);
  uint8_t b[100] = {};
  REQUIRE(dev.Write(0, b, 100).ok());
  REQUIRE(dev.Write(100, b, 50).ok());
  REQUIRE(dev.Read(0, b, 10).ok());
  REQUIRE(dev.Flush().ok());
  FaultInjectingDevice::Counters c = dev.counters();
  CHECK(c.writes == 2);
  CHECK(c.reads == 1);
  CHECK(c.flushes == 1);
  CHECK(c.pending_writes == 0);
  REQUIRE(dev.Write(0, b, 100).ok());
  CHECK(dev.counters().pending_bytes == 100);
}

}  // namespace
}  // namespace poolfs::core::vdev
