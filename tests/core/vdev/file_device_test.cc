// Tests for FileDevice: I/O, sparse creation, refusal to overwrite, exclusive
// locking within and across processes, and error reporting.

#include "vdev/file_device.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "vdev_test_util.h"

namespace poolfs::core::vdev {
namespace {

using testing::Contains;
using testing::Pattern;
using testing::ReadBytes;
using testing::TempDir;

constexpr uint64_t kSize = 16 * kMiB;

std::unique_ptr<FileDevice> OpenOk(const std::string& path, FileDevice::OpenMode mode = {}) {
  Result<std::unique_ptr<FileDevice>> dev = FileDevice::Open(path, mode);
  INFO(dev.status().ToString());
  REQUIRE(dev.ok());
  return std::move(dev).value();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

TEST_CASE("FileDevice reads back what it wrote, across a reopen", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("a.pool");
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  std::vector<uint8_t> a = Pattern(12345, 1), b = Pattern(4096, 2);
  {
    auto dev = OpenOk(path);
    CHECK(dev->size() == kSize);
    CHECK(dev->name() == path);
    CHECK_FALSE(dev->is_block_device());
    REQUIRE(dev->Write(777, a.data(), a.size()).ok());           // unaligned
    REQUIRE(dev->Write(kSize - 4096, b.data(), b.size()).ok());  // the last bytes
    CHECK(ReadBytes(*dev, 777, a.size()) == a);
    REQUIRE(dev->Flush().ok());
  }
  auto dev = OpenOk(path, {.read_only = true, .exclusive = false});
  CHECK(ReadBytes(*dev, 777, a.size()) == a);
  CHECK(ReadBytes(*dev, kSize - 4096, b.size()) == b);
  CHECK(ReadBytes(*dev, 0, 777) == std::vector<uint8_t>(777, 0));
}

TEST_CASE("FileDevice::CreateSparse makes a sparse file of the given size", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("sparse.pool");
  REQUIRE(FileDevice::CreateSparse(path, 1024 * kMiB, false).ok());
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK(uint64_t(st.st_size) == 1024 * kMiB);
  CHECK(uint64_t(st.st_blocks) * 512 < kMiB);  // nothing allocated
}

TEST_CASE("FileDevice::FillHoles allocates the holes of a range and changes no byte",
          "[file_device]") {
  TempDir dir;
  std::string path = dir.File("holes.pool");
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  auto dev = OpenOk(path);
  const std::vector<uint8_t> a = Pattern(8192, 3), b = Pattern(4096, 4);
  REQUIRE(dev->Write(kMiB + 4096, a.data(), a.size()).ok());  // data inside the range
  REQUIRE(dev->Write(5 * kMiB, b.data(), b.size()).ok());     // and after it
  REQUIRE(dev->FillHoles(kMiB, 3 * kMiB).ok());
  const int fd = open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK(lseek(fd, off_t(kMiB), SEEK_HOLE) >= off_t(4 * kMiB));  // no hole left in the range
  CHECK(lseek(fd, off_t(4 * kMiB), SEEK_DATA) == off_t(5 * kMiB));  // beyond it: untouched
  CHECK(lseek(fd, 0, SEEK_DATA) == off_t(kMiB));                // before it too
  close(fd);
  CHECK(ReadBytes(*dev, kMiB + 4096, a.size()) == a);
  CHECK(ReadBytes(*dev, kMiB, 4096) == std::vector<uint8_t>(4096, 0));
  CHECK(ReadBytes(*dev, 5 * kMiB, b.size()) == b);
  CHECK(dev->FillHoles(kSize - 4096, 8192).code() == StatusCode::kInvalidArgument);
  auto ro = OpenOk(path, {.read_only = true, .exclusive = false});
  CHECK(ro->FillHoles(0, 4096).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("FileDevice::CreateSparse refuses a non-empty file without force", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("data");
  WriteFile(path, "precious");
  Status st = FileDevice::CreateSparse(path, kSize, false);
  CHECK(st.code() == StatusCode::kAlreadyExists);
  CHECK(Contains(st.message(), "refusing to overwrite " + path));
  CHECK(Contains(st.message(), "not empty (8 bytes)"));
  struct stat sb;
  REQUIRE(stat(path.c_str(), &sb) == 0);
  CHECK(sb.st_size == 8);  // untouched

  REQUIRE(FileDevice::CreateSparse(path, kSize, true).ok());
  auto dev = OpenOk(path);
  CHECK(dev->size() == kSize);
  CHECK(ReadBytes(*dev, 0, 8) == std::vector<uint8_t>(8, 0));  // old content gone
}

TEST_CASE("FileDevice::CreateSparse reuses an existing empty file", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("empty");
  WriteFile(path, "");
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  CHECK(OpenOk(path)->size() == kSize);
}

TEST_CASE("FileDevice::CreateSparse refuses size 0 and non-regular files", "[file_device]") {
  TempDir dir;
  CHECK(FileDevice::CreateSparse(dir.File("x"), 0, false).code() == StatusCode::kInvalidArgument);
  CHECK(FileDevice::CreateSparse(dir.path(), kSize, true).code() == StatusCode::kInvalidArgument);
  CHECK(FileDevice::CreateSparse(dir.File("no/such/dir/x"), kSize, false).IsNotFound());
}

TEST_CASE("FileDevice::Open refuses missing files and directories", "[file_device]") {
  TempDir dir;
  Result<std::unique_ptr<FileDevice>> missing = FileDevice::Open(dir.File("nope"), {});
  CHECK(missing.status().IsNotFound());
  CHECK(Contains(missing.status().message(), dir.File("nope")));
  Result<std::unique_ptr<FileDevice>> d = FileDevice::Open(dir.path(), {.read_only = true});
  CHECK(d.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("FileDevice refuses I/O outside the device", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("a.pool");
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  auto dev = OpenOk(path);
  uint8_t buf[16] = {};
  Status st = dev->Read(kSize - 8, buf, 16);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(st.message(), "outside " + path));
  CHECK(dev->Write(kSize, buf, 1).code() == StatusCode::kInvalidArgument);
  CHECK(dev->Write(~uint64_t(0) - 2, buf, 16).code() == StatusCode::kInvalidArgument);
  CHECK(dev->Read(kSize, buf, 0).ok());  // an empty range at the end is fine
}

TEST_CASE("FileDevice open read-only refuses writes", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("a.pool");
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  auto dev = OpenOk(path, {.read_only = true, .exclusive = false});
  uint8_t b = 1;
  Status st = dev->Write(0, &b, 1);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(st.message(), "read-only"));
  CHECK(dev->Flush().ok());
}

TEST_CASE("FileDevice reports a short read as IOError naming device and offset", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("a.pool");
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  auto dev = OpenOk(path);
  REQUIRE(truncate(path.c_str(), 4096) == 0);  // shrunk behind the device's back
  std::vector<uint8_t> buf(8192);
  Status st = dev->Read(0, buf.data(), buf.size());
  CHECK(st.code() == StatusCode::kIOError);
  CHECK(Contains(st.message(), path));
  CHECK(Contains(st.message(), "at offset 0"));
  CHECK(Contains(st.message(), "short read (4096 bytes)"));
}

TEST_CASE("FileDevice exclusive open refuses a second open in the same process", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("a.pool");
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  auto first = OpenOk(path);
  Result<std::unique_ptr<FileDevice>> second = FileDevice::Open(path, {});
  CHECK(second.status().code() == StatusCode::kBusy);
  CHECK(Contains(second.status().message(), path + " is in use by another process"));
  CHECK(second.status().holder_pid() == getpid());
  // A non-exclusive open does not take the lock, and creating over it is refused.
  CHECK(FileDevice::Open(path, {.read_only = true, .exclusive = false}).ok());
  CHECK(FileDevice::CreateSparse(path, kSize, true).code() == StatusCode::kBusy);
  first.reset();  // closing releases the lock
  CHECK(FileDevice::Open(path, {}).ok());
}

TEST_CASE("FileDevice exclusive open refuses a pool another process holds", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("a.pool");
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  int to_child[2], to_parent[2];
  REQUIRE(pipe(to_child) == 0);
  REQUIRE(pipe(to_parent) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // child: hold the pool until told to go
    auto dev = FileDevice::Open(path, {});
    char c = dev.ok() ? 'y' : 'n';
    (void)!write(to_parent[1], &c, 1);
    (void)!read(to_child[0], &c, 1);
    _exit(0);
  }
  char c = 0;
  REQUIRE(read(to_parent[0], &c, 1) == 1);
  REQUIRE(c == 'y');
  Result<std::unique_ptr<FileDevice>> mine = FileDevice::Open(path, {});
  CHECK(mine.status().code() == StatusCode::kBusy);
  CHECK(Contains(mine.status().message(), path + " is in use by another process"));
  CHECK(Contains(mine.status().message(), "pid " + std::to_string(pid)));
  CHECK(mine.status().holder_pid() == pid);  // a field: no one parses the message
  REQUIRE(write(to_child[1], "x", 1) == 1);
  int wstatus = 0;
  REQUIRE(waitpid(pid, &wstatus, 0) == pid);
  CHECK(FileDevice::Open(path, {}).ok());  // the lock died with the child
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
}

TEST_CASE("FileDevice serves concurrent readers and writers", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("a.pool");
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  auto dev = OpenOk(path);
  std::vector<std::thread> threads;
  std::vector<int> good(4, 0);
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 64; i++) {
        uint64_t off = (uint64_t(t) * 64 + i) * 8192;
        std::vector<uint8_t> data = Pattern(8192, off);
        std::vector<uint8_t> back(8192);
        if (dev->Write(off, data.data(), data.size()).ok() &&
            dev->Read(off, back.data(), back.size()).ok() && back == data) {
          good[t]++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; t++) CHECK(good[t] == 64);
  CHECK(dev->Flush().ok());
}

TEST_CASE("FileDevice starts writeback once per writeback_bytes written, from any thread",
          "[file_device]") {
  TempDir dir;
  std::string path = dir.File("wb.pool");
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  std::vector<uint8_t> piece = Pattern(64 * 1024, 3);
  SECTION("off: never") {
    auto dev = OpenOk(path);
    for (uint64_t off = 0; off < 4 * kMiB; off += piece.size())
      REQUIRE(dev->Write(off, piece.data(), piece.size()).ok());
    CHECK(dev->writebacks_started() == 0);
  }
  SECTION("1 MiB: four times for 4 MiB from one thread, and the data is intact") {
    auto dev = OpenOk(path, {.writeback_bytes = kMiB});
    for (uint64_t off = 0; off < 4 * kMiB; off += piece.size())
      REQUIRE(dev->Write(off, piece.data(), piece.size()).ok());
    CHECK(dev->writebacks_started() == 4);
    REQUIRE(dev->Flush().ok());
    CHECK(ReadBytes(*dev, 3 * kMiB, piece.size()) == piece);
  }
  SECTION("1 MiB, two threads writing 4 MiB each: between 4 and 8 starts, none lost") {
    // A start resets the count that other threads are adding to, so a few
    // bytes may be counted towards the next start; never a whole threshold.
    auto dev = OpenOk(path, {.writeback_bytes = kMiB});
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; t++)
      threads.emplace_back([&, t] {
        for (uint64_t off = 0; off < 4 * kMiB; off += piece.size())
          CHECK(dev->Write(uint64_t(t) * 4 * kMiB + off, piece.data(), piece.size()).ok());
      });
    for (auto& th : threads) th.join();
    CHECK(dev->writebacks_started() >= 4);
    CHECK(dev->writebacks_started() <= 8);
  }
  SECTION("read-only opens never start writeback") {
    auto dev = OpenOk(path, {.read_only = true, .exclusive = false, .writeback_bytes = 1});
    CHECK(dev->writebacks_started() == 0);
  }
}

// A buffer aligned for direct reads, with `shift` bytes taken off the front
// (to make it unaligned). aligned_alloc takes only sizes that are multiples
// of the alignment.
struct AlignedBuf {
  static constexpr size_t kAlign = FileDevice::kDirectAlign;
  explicit AlignedBuf(size_t n, size_t shift = 0)
      : raw(static_cast<uint8_t*>(
            std::aligned_alloc(kAlign, (n + shift + kAlign - 1) / kAlign * kAlign))),
        data(raw + shift) {}
  ~AlignedBuf() { std::free(raw); }
  uint8_t* raw;
  uint8_t* data;
};

// A fresh sparse file at `path` opened with `mode` (direct reads or writes
// asked for), or null, with a warning, when its file system refuses O_DIRECT
// (Catch2 v2 has no SKIP).
std::unique_ptr<FileDevice> OpenDirect(const std::string& path, FileDevice::OpenMode mode) {
  REQUIRE(FileDevice::CreateSparse(path, kSize, false).ok());
  auto dev = OpenOk(path, mode);
  if ((mode.direct_reads && !dev->direct_reads()) ||
      (mode.direct_writes && !dev->direct_writes())) {
    WARN("not run: the file system under " << path << " refuses O_DIRECT");
    return nullptr;
  }
  return dev;
}

TEST_CASE("FileDevice direct reads see buffered writes, flushed or not", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("direct.pool");
  auto dev = OpenDirect(path, {.direct_reads = true});
  if (dev == nullptr) return;
  std::vector<uint8_t> a = Pattern(128 * 1024, 7), b = Pattern(128 * 1024, 8);
  REQUIRE(dev->Write(1 * kMiB, a.data(), a.size()).ok());
  AlignedBuf buf(a.size());
  // Not flushed: the kernel writes the dirty pages of the range back first.
  REQUIRE(dev->Read(1 * kMiB, buf.data, a.size()).ok());
  CHECK(std::vector<uint8_t>(buf.data, buf.data + a.size()) == a);
  CHECK(dev->direct_reads_done() == 1);
  REQUIRE(dev->Flush().ok());
  REQUIRE(dev->Write(1 * kMiB, b.data(), b.size()).ok());  // over the same range
  REQUIRE(dev->Read(1 * kMiB, buf.data, b.size()).ok());
  CHECK(std::vector<uint8_t>(buf.data, buf.data + b.size()) == b);
  CHECK(dev->direct_reads_done() == 2);
  // Unaligned buffer, offset or length: buffered, and as correct.
  AlignedBuf odd(b.size(), 8);
  REQUIRE(dev->Read(1 * kMiB, odd.data, b.size()).ok());
  CHECK(std::vector<uint8_t>(odd.data, odd.data + b.size()) == b);
  REQUIRE(dev->Read(1 * kMiB + 512, buf.data, 4096).ok());
  CHECK(std::vector<uint8_t>(buf.data, buf.data + 4096) ==
        std::vector<uint8_t>(b.begin() + 512, b.begin() + 512 + 4096));
  REQUIRE(dev->Read(1 * kMiB, buf.data, 1000).ok());
  CHECK(std::vector<uint8_t>(buf.data, buf.data + 1000) ==
        std::vector<uint8_t>(b.begin(), b.begin() + 1000));
  CHECK(dev->direct_reads_done() == 2);
  // Off: never direct.
  auto plain = OpenOk(path, {.read_only = true, .exclusive = false});
  CHECK_FALSE(plain->direct_reads());
  REQUIRE(plain->Read(1 * kMiB, buf.data, b.size()).ok());
  CHECK(plain->direct_reads_done() == 0);
}

TEST_CASE("FileDevice direct writes: aligned ones direct, the rest buffered, all coherent",
          "[file_device]") {
  TempDir dir;
  std::string path = dir.File("direct-writes.pool");
  auto dev = OpenDirect(path, {.writeback_bytes = 4096, .direct_writes = true});
  if (dev == nullptr) return;
  CHECK_FALSE(dev->direct_reads());
  std::vector<uint8_t> model(kSize, 0);
  auto write = [&](uint64_t off, const uint8_t* p, size_t n) {
    REQUIRE(dev->Write(off, p, n).ok());
    std::copy(p, p + n, model.begin() + off);
  };
  // A buffered write first, so that the page cache holds a dirty page that
  // the direct write below covers.
  std::vector<uint8_t> small = Pattern(1000, 1);
  write(2 * kMiB + 100, small.data(), small.size());
  CHECK(dev->direct_writes_done() == 0);
  // Aligned buffer: straight from it.
  AlignedBuf a(256 * 1024);
  std::vector<uint8_t> pa = Pattern(256 * 1024, 2);
  std::copy(pa.begin(), pa.end(), a.data);
  write(2 * kMiB, a.data, pa.size());
  CHECK(dev->direct_writes_done() == 1);
  // Unaligned buffer longer than the bounce buffer: copied through it in
  // pieces, still direct.
  AlignedBuf odd(3 * kMiB + 8192, 8);
  std::vector<uint8_t> po = Pattern(3 * kMiB + 8192, 3);
  std::copy(po.begin(), po.end(), odd.data);
  write(5 * kMiB, odd.data, po.size());
  CHECK(dev->direct_writes_done() == 2);
  // Unaligned offset or length: buffered, over blocks written direct.
  std::vector<uint8_t> p4 = Pattern(5000, 4), p5 = Pattern(8192 + 512, 5);
  write(2 * kMiB + 4096 + 7, p4.data(), p4.size());
  write(6 * kMiB, p5.data(), p5.size());
  CHECK(dev->direct_writes_done() == 2);
  // Then direct again over those buffered, not yet written back, pages.
  AlignedBuf c(8192);
  std::vector<uint8_t> pc = Pattern(8192, 6);
  std::copy(pc.begin(), pc.end(), c.data);
  write(2 * kMiB + 4096, c.data, pc.size());
  CHECK(dev->direct_writes_done() == 3);
  // Only the buffered bytes count towards the early writeback.
  CHECK(dev->writebacks_started() == 2);
  // Buffered reads see it all, before and after a flush and a reopen.
  CHECK(ReadBytes(*dev, 0, kSize) == model);
  REQUIRE(dev->Flush().ok());
  dev.reset();
  auto again = OpenOk(path, {.read_only = true});
  CHECK(ReadBytes(*again, 0, kSize) == model);
  // Off (the OpenMode default): never direct.
  again.reset();
  auto plain = OpenOk(path);
  CHECK_FALSE(plain->direct_writes());
  REQUIRE(plain->Write(2 * kMiB, a.data, pa.size()).ok());
  CHECK(plain->direct_writes_done() == 0);
}

TEST_CASE("FileDevice writes shorter than direct_write_min_bytes buffered", "[file_device]") {
  TempDir dir;
  std::string path = dir.File("direct-min.pool");
  auto dev = OpenDirect(path, {.direct_writes = true, .direct_write_min_bytes = 65536});
  if (dev == nullptr) return;
  std::vector<uint8_t> model(kSize, 0);
  AlignedBuf small(8192), large(65536);
  std::vector<uint8_t> ps = Pattern(8192, 1), pl = Pattern(65536, 2);
  std::copy(ps.begin(), ps.end(), small.data);
  std::copy(pl.begin(), pl.end(), large.data);
  REQUIRE(dev->Write(kMiB, small.data, ps.size()).ok());  // aligned, but short: buffered
  std::copy(ps.begin(), ps.end(), model.begin() + kMiB);
  CHECK(dev->direct_writes_done() == 0);
  REQUIRE(dev->Write(kMiB, large.data, pl.size()).ok());  // over it, direct
  std::copy(pl.begin(), pl.end(), model.begin() + kMiB);
  CHECK(dev->direct_writes_done() == 1);
  // Gathered parts follow the same rule by their total.
  std::vector<WritePart> parts = {{ps.data(), 4096}, {ps.data() + 4096, 4096}};
  REQUIRE(dev->WriteParts(3 * kMiB, parts).ok());
  std::copy(ps.begin(), ps.end(), model.begin() + 3 * kMiB);
  CHECK(dev->direct_writes_done() == 1);
  CHECK(ReadBytes(*dev, 0, kSize) == model);
  REQUIRE(dev->Flush().ok());
  dev.reset();
  auto again = OpenOk(path, {.read_only = true});
  CHECK(ReadBytes(*again, 0, kSize) == model);
}

TEST_CASE("FileDevice WriteParts: an aligned range in 1 MiB direct writes, the rest as parts",
          "[file_device]") {
  TempDir dir;
  std::string path = dir.File("write-parts.pool");
  auto dev = OpenDirect(path, {.direct_writes = true});
  if (dev == nullptr) return;
  std::vector<uint8_t> model(kSize, 0);
  // Parts of odd sizes and addresses, cut from one pattern.
  auto write_parts = [&](uint64_t off, const std::vector<uint8_t>& bytes,
                         const std::vector<size_t>& cuts) {
    std::vector<WritePart> parts;
    size_t at = 0;
    for (size_t cut : cuts) {
      parts.push_back({bytes.data() + at, cut - at});
      at = cut;
    }
    parts.push_back({bytes.data() + at, bytes.size() - at});
    REQUIRE(dev->WriteParts(off, parts).ok());
    std::copy(bytes.begin(), bytes.end(), model.begin() + off);
  };
  // 3 MiB + 8 KiB in five parts: four direct writes (three of 1 MiB).
  std::vector<uint8_t> big = Pattern(3 * kMiB + 8192, 1);
  write_parts(kMiB, big, {100, 4096 + 7, kMiB + 1, 2 * kMiB - 5});
  CHECK(dev->direct_writes_done() == 4);
  // One aligned part: a plain Write, direct from the bounce buffer.
  std::vector<uint8_t> one = Pattern(8192, 2);
  write_parts(5 * kMiB, one, {});
  CHECK(dev->direct_writes_done() == 5);
  // An unaligned offset or total: part by part, buffered.
  std::vector<uint8_t> odd = Pattern(8192 + 100, 3);
  write_parts(6 * kMiB, odd, {100});
  std::vector<uint8_t> shifted = Pattern(8192, 4);
  write_parts(6 * kMiB + 16384 + 512, shifted, {4096});
  CHECK(dev->direct_writes_done() == 5);
  // Over the middle of the first range again, aligned: direct.
  std::vector<uint8_t> over = Pattern(3 * 4096, 5);
  write_parts(2 * kMiB - 4096, over, {1, 4096});
  CHECK(dev->direct_writes_done() == 6);
  // Out of range: refused, nothing written.
  std::vector<uint8_t> past = Pattern(8192, 6);
  std::vector<WritePart> parts{{past.data(), 4096}, {past.data() + 4096, 4096}};
  CHECK(dev->WriteParts(kSize - 4096, parts).code() == StatusCode::kInvalidArgument);
  CHECK(ReadBytes(*dev, 0, kSize) == model);
  REQUIRE(dev->Flush().ok());
  dev.reset();
  auto again = OpenOk(path, {.read_only = true});
  CHECK(ReadBytes(*again, 0, kSize) == model);
  CHECK(again->WriteParts(0, parts).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("FileDevice ReadParts: one direct read where aligned, buffered otherwise",
          "[file_device]") {
  TempDir dir;
  std::string path = dir.File("read-parts.pool");
  auto dev = OpenDirect(path, {.direct_reads = true});
  if (dev == nullptr) return;
  std::vector<uint8_t> model = Pattern(4 * kMiB, 9);
  REQUIRE(dev->Write(kMiB, model.data(), model.size()).ok());
  // Reads [off, off + sum of sizes) into parts of those sizes, each from
  // an aligned address moved on by `shift`, and checks them.
  auto read_parts = [&](FileDevice& d, uint64_t off, const std::vector<size_t>& sizes,
                        size_t shift) {
    std::vector<std::unique_ptr<AlignedBuf>> bufs;
    std::vector<ReadPart> parts;
    for (size_t n : sizes) {
      bufs.push_back(std::make_unique<AlignedBuf>(n, shift));
      parts.push_back({bufs.back()->data, n});
    }
    REQUIRE(d.ReadParts(off, parts).ok());
    uint64_t at = off - kMiB;
    for (size_t i = 0; i < sizes.size(); i++) {
      INFO("part " << i);
      CHECK(std::equal(bufs[i]->data, bufs[i]->data + sizes[i], model.begin() + at));
      at += sizes[i];
    }
  };
  // Aligned range and parts: one direct preadv into the parts.
  read_parts(*dev, kMiB, {128 * 1024, 4096, 1024 * 1024 - 4096 - 128 * 1024}, 0);
  CHECK(dev->direct_reads_done() == 1);
  // Aligned range, unaligned parts: one direct read into the bounce buffer.
  read_parts(*dev, 2 * kMiB, {100, 8192, 4096 - 100}, 0);
  read_parts(*dev, 2 * kMiB, {4096, 8192}, 8);
  CHECK(dev->direct_reads_done() == 3);
  // Unaligned range, or unaligned parts past the bounce buffer: buffered.
  read_parts(*dev, kMiB + 512, {4096, 4096}, 0);
  read_parts(*dev, kMiB, {kMiB, 4096}, 8);
  CHECK(dev->direct_reads_done() == 3);
  // Out of range: refused.
  AlignedBuf end(8192);
  std::vector<ReadPart> past{{end.data, 4096}, {end.data + 4096, 4096}};
  CHECK(dev->ReadParts(kSize - 4096, past).code() == StatusCode::kInvalidArgument);
  // Without direct reads, the same reads from the page cache.
  auto plain = OpenOk(path, {.read_only = true, .exclusive = false});
  read_parts(*plain, kMiB, {128 * 1024, 4096, 1024 * 1024 - 4096 - 128 * 1024}, 0);
  read_parts(*plain, 2 * kMiB + 4096, {100, 8192, 2 * kMiB - 100}, 8);
  CHECK(plain->direct_reads_done() == 0);
}

}  // namespace
}  // namespace poolfs::core::vdev
