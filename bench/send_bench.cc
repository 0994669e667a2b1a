// poolfs-bench send: what replication streams cost (DatasetAdmin::Send and
// Receive, poolfs/replication.h), each figure against a baseline measured
// in the same run, through the public API in process: pools in sparse
// files in a temporary folder of --dir (removed at the end), opened with
// Filesystem::Mount as the daemon opens them, no FUSE.
//
// Fairness: every timed case runs on a fresh mount (a fresh import: the
// block cache is empty) of a pool whose file had its page cache dropped
// first (fdatasync, then posix_fadvise DONTNEED: the pool file's pages
// only, not the whole machine's). The clock starts after the mount and
// stops when the call returns (Receive returns once its dataset has
// synced). Runs take turns between the cases, each run in another order.
// Three parts:
//
// 1. Full-stream throughput. Dataset src/data holds --files files of
//    --size MiB in all, of random bytes (incompressible), written 1 MiB
//    at a time (128 KiB records), snapshot @full. Cases: a sequential read
//    of every file through the POSIX layer's read path (the baseline:
//    Filesystem::ReadShared, 1 MiB at a time into a page-aligned buffer,
//    kReadCallerKeeps, as the FUSE adapter serves a READ, without the
//    kernel and FUSE round trips, so it is faster than a mount's read and
//    the ratios are not flattered); Send to a sink that counts; Receive
//    into a fresh pool from the stream in a file of --dir (written once,
//    untimed, and read through once before each receive, so it comes from
//    the page cache); Send piped into Receive (two threads, a bounded
//    in-memory pipe of --pipe-mib, 16 MiB, between them) into a fresh pool. MiB/s are
//    of the files' bytes in every case; target: rate / baseline >= 0.8.
// 2. Small files. Dataset small/data of --small-files files of
//    --small-bytes random bytes each, 1,000 per directory, created through
//    the POSIX layer (Create, Write). Baseline: a walk that reads every
//    file as `tar c` would (ReadDir of each directory, Lookup, Read,
//    Forget of each file). Send (counting sink) and Receive (from a
//    file), files/s; ratio to the walk (target >= 0.8, as part 1's).
// 3. Incremental. On part 1's dataset, --change-pct percent of its
//    128 KiB records, chosen at random over all the files, each get a
//    4 KiB write of random bytes (the record is rewritten whole), then
//    snapshot @inc; timed: Send of @full..@inc to a counting sink. Bytes
//    the pool read from its vdevs during the send (FsStatus::bytes_read)
//    against the dataset's size; target: <= 5%.
//
// --quick: --size 64, --small-files 2000, one run, for a smoke test. No
// figure is asserted.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "poolfs/dataset.h"
#include "poolfs/fs.h"
#include "poolfs/pool_admin.h"
#include "poolfs/replication.h"

namespace poolfs::bench {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kRecord = 128 * 1024;  // the default recordsize
constexpr uint64_t kChunk = kMiB;         // writes and baseline reads
constexpr uint64_t kChangeBytes = 4096;   // part 3: each change
// The pipe between send and receive (--pipe-mib).
uint64_t g_pipe_bytes = 16 * kMiB;
constexpr uint64_t kFilesPerDir = 1000;
constexpr double kRateTarget = 0.8;  // rate / baseline
constexpr double kIncTarget = 0.05;  // incremental: bytes read / dataset
// Part 1's cases as --cases names them, in the order of its table.
constexpr const char* kCaseKeys[] = {"read", "send", "receive", "pipe"};

// The temporary folder of the pools and the stream (MakeScratch).
const std::string& g_dir = ScratchDir();

[[noreturn]] void Die(const Status& st, const std::string& what) { DieOf("send", st, what); }

void Must(const Status& st, const std::string& what) {
  if (!st.ok()) Die(st, what);
}

double Min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double Max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

// Writes back and drops the page cache of one file (not the machine's).
void DropCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Reads a file through once (into the page cache).
void WarmCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Die(Status::IOError(path), "open");
  std::vector<char> buf(kChunk);
  while (::read(fd, buf.data(), buf.size()) > 0) {
  }
  ::close(fd);
}

std::unique_ptr<Filesystem> MountPool(const std::string& path, const std::string& dataset) {
  MountOptions mo;
  mo.dataset = dataset;
  auto fs = Filesystem::Mount({path}, mo);
  if (!fs.ok()) Die(fs.status(), "mount " + path + " " + dataset);
  return std::move(fs).value();
}

void Unmount(std::unique_ptr<Filesystem>& fs) {
  Must(fs->Unmount(), "unmount");
  fs.reset();
}

// A fresh pool `name` in a sparse file of `size` bytes at `path`.
void NewPool(const std::string& path, const std::string& name, uint64_t size) {
  std::filesystem::remove(path);
  CreatePoolOptions co;
  co.name = name;
  co.force = true;
  Must(CreatePool({path}, size, co), "create pool " + path);
}

// A fresh pool with an empty dataset POOL/data, and a mount of it.
std::unique_ptr<Filesystem> NewDatasetPool(const std::string& path, const std::string& name,
                                           uint64_t size) {
  NewPool(path, name, size);
  auto root = MountPool(path, "");
  Must(root->datasets()->Create(name + "/data", false, {}), "create " + name + "/data");
  Unmount(root);
  return MountPool(path, name + "/data");
}

// Bytes from a fast generator (splitmix64): incompressible.
class RandomBytes {
 public:
  explicit RandomBytes(uint64_t seed) : s_(seed) {}
  void Fill(std::string* buf) {
    auto* p = reinterpret_cast<uint64_t*>(buf->data());
    for (size_t i = 0; i < buf->size() / 8; i++) p[i] = Next();
    for (size_t i = buf->size() / 8 * 8; i < buf->size(); i++) (*buf)[i] = char(Next());
  }
  uint64_t Next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t s_;
};

// A page-aligned buffer (as the FUSE adapter's read buffer).
struct AlignedBuffer {
  explicit AlignedBuffer(size_t n)
      : size(n),
        data(static_cast<char*>(
            std::aligned_alloc(2 * kMiB, (n + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB)))) {}
  ~AlignedBuffer() { std::free(data); }
  size_t size;
  char* data;
};

// A bounded byte pipe between a send (Write) and a receive (Read) on two
// threads. Close(status) ends it from either side: the reader then gets the
// bytes left and then 0 (ok) or the error; the writer gets the error.
class Pipe {
 public:
  explicit Pipe(size_t capacity) : buf_(capacity) {}
  Status Write(std::string_view bytes) {
    std::unique_lock<std::mutex> l(mu_);
    while (!bytes.empty()) {
      if (!closed_ && used_ == buf_.size()) {
        const double t0 = NowSeconds();
        cv_.wait(l, [&] { return closed_ || used_ < buf_.size(); });
        writer_waited_ += NowSeconds() - t0;
      }
      if (closed_) return status_.ok() ? Status(StatusCode::kAborted, "pipe closed") : status_;
      const size_t n = std::min(bytes.size(), buf_.size() - used_);
      for (size_t i = 0; i < n;) {  // at most two pieces around the end
        const size_t at = (head_ + used_) % buf_.size();
        const size_t k = std::min(n - i, buf_.size() - at);
        std::memcpy(buf_.data() + at, bytes.data() + i, k);
        used_ += k;
        i += k;
      }
      bytes.remove_prefix(n);
      cv_.notify_all();
    }
    return Status::Ok();
  }
  Result<size_t> Read(std::span<char> dst) {
    std::unique_lock<std::mutex> l(mu_);
    if (!closed_ && used_ == 0) {
      const double t0 = NowSeconds();
      cv_.wait(l, [&] { return closed_ || used_ > 0; });
      reader_waited_ += NowSeconds() - t0;
    }
    if (used_ == 0) {
      if (!status_.ok()) return status_;
      return size_t{0};
    }
    const size_t n = std::min(dst.size(), used_);
    for (size_t i = 0; i < n;) {
      const size_t k = std::min(n - i, buf_.size() - head_);
      std::memcpy(dst.data() + i, buf_.data() + head_, k);
      head_ = (head_ + k) % buf_.size();
      used_ -= k;
      i += k;
    }
    cv_.notify_all();
    return n;
  }
  // Seconds the writer waited for room (the receive was behind) and the
  // reader for bytes (the send was behind).
  double writer_waited() {
    std::lock_guard<std::mutex> l(mu_);
    return writer_waited_;
  }
  double reader_waited() {
    std::lock_guard<std::mutex> l(mu_);
    return reader_waited_;
  }
  void Close(const Status& st) {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return;
    closed_ = true;
    status_ = st;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<char> buf_;
  size_t head_ = 0, used_ = 0;
  bool closed_ = false;
  Status status_;
  double writer_waited_ = 0, reader_waited_ = 0;
};

// A receive's source reading a file.
StreamSource FileSource(int fd) {
  return [fd](std::span<char> buf) -> Result<size_t> {
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n >= 0) return size_t(n);
      if (errno != EINTR)
        return Status::IOError(std::string("read stream: ") + std::strerror(errno));
    }
  };
}

// A timed case's figures.
struct Sample {
  double seconds = 0;
  double end = 0;  // NowSeconds() at the end (CLOCK_MONOTONIC: `perf record -k mono` aligns)
  uint64_t vdev_bytes_read = 0;  // by the source pool, during the case
  uint64_t stream_bytes = 0;
  uint64_t blocks_read = 0;  // SendSummary's
  // The pipe case: seconds the send waited on a full pipe, the receive on
  // an empty one.
  double send_waited = 0, receive_waited = 0;
};

uint64_t VdevBytesRead(Filesystem& fs) { return fs.GetStatus().bytes_read; }

// Sends `snapshot` (from `from` when given) of the pool at `path`, fresh
// mount and cold cache, to a counting sink (or to `sink`).
Sample TimedSend(const std::string& path, const std::string& snapshot, const std::string& from) {
  DropCache(path);
  auto fs = MountPool(path, "");
  const uint64_t read0 = VdevBytesRead(*fs);
  uint64_t counted = 0;
  SendOptions so;
  so.snapshot = snapshot;
  so.from = from;
  const double t0 = NowSeconds();
  auto sum = fs->datasets()->Send(so, [&](std::string_view b) {
    counted += b.size();
    return Status::Ok();
  });
  Sample s;
  s.end = NowSeconds();
  s.seconds = s.end - t0;
  if (!sum.ok()) Die(sum.status(), "send " + snapshot);
  s.vdev_bytes_read = VdevBytesRead(*fs) - read0;
  s.stream_bytes = counted;
  s.blocks_read = sum->blocks_read;
  Unmount(fs);
  return s;
}

// Writes the stream of `snapshot` to `stream_path` (untimed).
SendSummary SendToFile(const std::string& pool_path, const std::string& snapshot,
                       const std::string& stream_path) {
  auto fs = MountPool(pool_path, "");
  const int fd = ::open(stream_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die(Status::IOError(stream_path), "open");
  SendOptions so;
  so.snapshot = snapshot;
  auto sum = fs->datasets()->Send(so, [&](std::string_view b) {
    while (!b.empty()) {
      const ssize_t n = ::write(fd, b.data(), b.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::IOError(std::string("write stream: ") + std::strerror(errno));
      b.remove_prefix(size_t(n));
    }
    return Status::Ok();
  });
  if (!sum.ok()) Die(sum.status(), "send " + snapshot + " to " + stream_path);
  ::close(fd);
  Unmount(fs);
  return *sum;
}

// What a receive must have made (untimed): dst/data with at least these
// objects and referenced bytes, so that a receive that dropped data cannot
// pass for a fast one.
struct Expect {
  uint64_t objects = 0;
  uint64_t bytes = 0;
};

void CheckReceived(Filesystem& fs, const Expect& e) {
  auto l = fs.datasets()->List("dst/data", false);
  if (!l.ok() || l->size() != 1) Die(l.ok() ? Status::NotFound("dst/data") : l.status(), "list");
  const DatasetInfo& d = (*l)[0];
  if (d.objects < e.objects || d.referenced < e.bytes)
    Die(Status::Corruption("dst/data has " + std::to_string(d.objects) + " objects and " +
                           std::to_string(d.referenced) + " bytes, expected at least " +
                           std::to_string(e.objects) + " and " + std::to_string(e.bytes)),
        "receive");
}

// Receives the stream in `stream_path` into dst/data of a fresh pool.
Sample TimedReceive(const std::string& stream_path, const std::string& dst_path, uint64_t dst_size,
                    const Expect& expect) {
  NewPool(dst_path, "dst", dst_size);
  auto fs = MountPool(dst_path, "");
  WarmCache(stream_path);
  const int fd = ::open(stream_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Die(Status::IOError(stream_path), "open");
  ReceiveOptions ro;
  ro.target = "dst/data";
  const double t0 = NowSeconds();
  auto sum = fs->datasets()->Receive(ro, FileSource(fd));
  Sample s;
  s.end = NowSeconds();
  s.seconds = s.end - t0;
  ::close(fd);
  if (!sum.ok()) Die(sum.status(), "receive from " + stream_path);
  s.stream_bytes = sum->bytes;
  CheckReceived(*fs, expect);
  Unmount(fs);
  std::filesystem::remove(dst_path);
  return s;
}

// Send of `snapshot` piped into a receive into dst/data of a fresh pool.
Sample TimedPipe(const std::string& src_path, const std::string& snapshot,
                 const std::string& dst_path, uint64_t dst_size, const Expect& expect) {
  NewPool(dst_path, "dst", dst_size);
  DropCache(src_path);
  auto src = MountPool(src_path, "");
  auto dst = MountPool(dst_path, "");
  const uint64_t read0 = VdevBytesRead(*src);
  Pipe pipe(g_pipe_bytes);
  Result<SendSummary> sent = Status(StatusCode::kAborted, "not run");
  SendOptions so;
  so.snapshot = snapshot;
  ReceiveOptions ro;
  ro.target = "dst/data";
  const double t0 = NowSeconds();
  std::thread sender([&] {
    sent = src->datasets()->Send(so, [&](std::string_view b) { return pipe.Write(b); });
    pipe.Close(sent.ok() ? Status::Ok() : sent.status());
  });
  auto got = dst->datasets()->Receive(ro, [&](std::span<char> b) { return pipe.Read(b); });
  pipe.Close(got.ok() ? Status::Ok() : got.status());
  sender.join();
  Sample s;
  s.end = NowSeconds();
  s.seconds = s.end - t0;
  if (!sent.ok()) Die(sent.status(), "send (piped) " + snapshot);
  if (!got.ok()) Die(got.status(), "receive (piped) " + snapshot);
  s.vdev_bytes_read = VdevBytesRead(*src) - read0;
  s.stream_bytes = got->bytes;
  s.blocks_read = sent->blocks_read;
  s.send_waited = pipe.writer_waited();
  s.receive_waited = pipe.reader_waited();
  CheckReceived(*dst, expect);
  Unmount(src);
  Unmount(dst);
  std::filesystem::remove(dst_path);
  return s;
}

// ---- 1. Full-stream throughput of large files.

struct LargeData {
  std::vector<std::string> names;
  uint64_t file_bytes = 0;  // each
  uint64_t total() const { return file_bytes * names.size(); }
};

LargeData WriteLargeFiles(Filesystem& fs, uint64_t total, uint32_t files) {
  LargeData d;
  d.file_bytes = std::max<uint64_t>(kRecord, total / files / kRecord * kRecord);
  RandomBytes rnd(1);
  std::string chunk(kChunk, '\0');
  Creds c;
  for (uint32_t f = 0; f < files; f++) {
    const std::string name = "file" + std::to_string(f);
    auto a = fs.Create(c, kRootIno, name, 0644);
    if (!a.ok()) Die(a.status(), "create " + name);
    for (uint64_t off = 0; off < d.file_bytes; off += kChunk) {
      const uint64_t n = std::min(kChunk, d.file_bytes - off);
      chunk.resize(n);
      rnd.Fill(&chunk);
      auto w = fs.Write(c, a->ino, off, chunk);
      if (!w.ok() || *w != n)
        Die(w.ok() ? Status::IOError("short write") : w.status(), "write " + name);
    }
    fs.Forget(a->ino, 1);
    d.names.push_back(name);
  }
  return d;
}

// The baseline: every file read in order through ReadShared, 1 MiB at a
// time, as the FUSE adapter serves READs. Returns the sample and checks
// that every byte came back.
Sample TimedRead(const std::string& path, const std::string& dataset, const LargeData& d) {
  DropCache(path);
  auto fs = MountPool(path, dataset);
  const uint64_t read0 = VdevBytesRead(*fs);
  AlignedBuffer buf(kChunk);
  Creds c;
  uint64_t got = 0;
  const double t0 = NowSeconds();
  for (const std::string& name : d.names) {
    auto a = fs->Lookup(c, kRootIno, name);
    if (!a.ok()) Die(a.status(), "lookup " + name);
    Must(fs->Open(c, a->ino, O_RDONLY), "open " + name);
    for (uint64_t off = 0;; off += kChunk) {
      SharedRead r;
      Must(fs->ReadShared(a->ino, off, std::span<char>(buf.data, buf.size), kReadCallerKeeps, &r),
           "read " + name);
      const size_t n = r.size();
      got += n;
      if (n < kChunk) break;
    }
    fs->Forget(a->ino, 1);
  }
  Sample s;
  s.end = NowSeconds();
  s.seconds = s.end - t0;
  if (got != d.total()) Die(Status::IOError("read " + std::to_string(got) + " bytes"), "baseline");
  s.vdev_bytes_read = VdevBytesRead(*fs) - read0;
  Unmount(fs);
  return s;
}

// ---- 2. Small files.

struct SmallData {
  uint64_t files = 0, dirs = 0, bytes = 0;
};

SmallData WriteSmallFiles(Filesystem& fs, uint64_t files, uint64_t bytes) {
  SmallData d{files, (files + kFilesPerDir - 1) / kFilesPerDir, bytes};
  RandomBytes rnd(2);
  std::string content(bytes, '\0');
  Creds c;
  for (uint64_t dir = 0; dir < d.dirs; dir++) {
    auto da = fs.Mkdir(c, kRootIno, "d" + std::to_string(dir), 0755);
    if (!da.ok()) Die(da.status(), "mkdir");
    for (uint64_t i = dir * kFilesPerDir; i < std::min(files, (dir + 1) * kFilesPerDir); i++) {
      const std::string name = "f" + std::to_string(i);
      auto a = fs.Create(c, da->ino, name, 0644);
      if (!a.ok()) Die(a.status(), "create " + name);
      if (bytes > 0) {
        rnd.Fill(&content);
        auto w = fs.Write(c, a->ino, 0, content);
        if (!w.ok()) Die(w.status(), "write " + name);
      }
      fs.Forget(a->ino, 1);
    }
    fs.Forget(da->ino, 1);
  }
  return d;
}

// The baseline: ReadDir of every directory; Lookup, Open, Read and Forget
// of every file in it (what `tar c` asks of a mount).
Sample TimedWalk(const std::string& path, const std::string& dataset, const SmallData& d) {
  DropCache(path);
  auto fs = MountPool(path, dataset);
  const uint64_t read0 = VdevBytesRead(*fs);
  AlignedBuffer buf(kRecord);
  Creds c;
  uint64_t files = 0;
  const double t0 = NowSeconds();
  for (uint64_t dir = 0; dir < d.dirs; dir++) {
    auto da = fs->Lookup(c, kRootIno, "d" + std::to_string(dir));
    if (!da.ok()) Die(da.status(), "lookup dir");
    std::vector<std::string> names;
    Must(fs->ReadDir(c, da->ino, 0, false,
                     [&](const DirEntry& e) {
                       if (e.name != "." && e.name != "..") names.push_back(e.name);
                       return true;
                     }),
         "readdir");
    for (const std::string& name : names) {
      auto a = fs->Lookup(c, da->ino, name);
      if (!a.ok()) Die(a.status(), "lookup " + name);
      Must(fs->Open(c, a->ino, O_RDONLY), "open " + name);
      SharedRead r;
      Must(fs->ReadShared(a->ino, 0, std::span<char>(buf.data, buf.size), kReadCallerKeeps, &r),
           "read " + name);
      if (r.size() != d.bytes) Die(Status::IOError("short read"), name);
      fs->Forget(a->ino, 1);
      files++;
    }
    fs->Forget(da->ino, 1);
  }
  Sample s;
  s.end = NowSeconds();
  s.seconds = s.end - t0;
  if (files != d.files) Die(Status::IOError(std::to_string(files) + " files"), "walk");
  s.vdev_bytes_read = VdevBytesRead(*fs) - read0;
  Unmount(fs);
  return s;
}

// ---- 3. Incremental.

struct Change {
  uint64_t records = 0, all_records = 0;
};

// Overwrites kChangeBytes at a random place of `pct` percent of the
// records, chosen at random over every file.
Change ChangeRecords(Filesystem& fs, const LargeData& d, double pct) {
  Change ch;
  const uint64_t per_file = d.file_bytes / kRecord;
  ch.all_records = per_file * d.names.size();
  ch.records = std::max<uint64_t>(1, uint64_t(double(ch.all_records) * pct / 100.0 + 0.5));
  std::vector<uint64_t> all(ch.all_records);
  for (uint64_t i = 0; i < all.size(); i++) all[i] = i;
  std::mt19937_64 rng(3);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(ch.records);
  std::sort(all.begin(), all.end());
  RandomBytes rnd(4);
  std::string bytes(kChangeBytes, '\0');
  Creds c;
  for (uint64_t r : all) {
    const std::string& name = d.names[r / per_file];
    auto a = fs.Lookup(c, kRootIno, name);
    if (!a.ok()) Die(a.status(), "lookup " + name);
    const uint64_t off =
        (r % per_file) * kRecord + (rnd.Next() % (kRecord / kChangeBytes)) * kChangeBytes;
    rnd.Fill(&bytes);
    auto w = fs.Write(c, a->ino, off, bytes);
    if (!w.ok()) Die(w.status(), "overwrite " + name);
    fs.Forget(a->ino, 1);
  }
  return ch;
}

// ---- Output.

struct Case {
  std::string name;
  std::vector<Sample> samples;
  std::vector<double> Rates(double work) const {
    std::vector<double> v;
    for (const Sample& s : samples) v.push_back(work / s.seconds);
    return v;
  }
};

double LoadAverage() {
  double l[1] = {0};
  return ::getloadavg(l, 1) == 1 ? l[0] : -1;
}

void PrintRates(const std::vector<Case>& cases, double work, const char* unit, bool has_target) {
  std::printf("  %-34s %12s %10s %10s %8s\n", "case", unit, "min", "max", "ratio");
  const double base = Median(cases[0].Rates(work));
  for (size_t i = 0; i < cases.size(); i++) {
    if (cases[i].samples.empty()) continue;
    const std::vector<double> v = cases[i].Rates(work);
    if (base == 0) {
      std::printf("  %-34s %12.1f %10.1f %10.1f\n", cases[i].name.c_str(), Median(v), Min(v),
                  Max(v));
      continue;
    }
    std::printf("  %-34s %12.1f %10.1f %10.1f %8.3f", cases[i].name.c_str(), Median(v), Min(v),
                Max(v), Median(v) / base);
    if (i > 0 && has_target)
      std::printf("   target >= %.2f: %s", kRateTarget,
                  Median(v) / base >= kRateTarget ? "met" : "NOT MET");
    std::printf("\n");
  }
}

Json CasesJson(const std::vector<Case>& cases, double work, bool has_target) {
  Json a = Json::array();
  const double base = Median(cases[0].Rates(work));
  for (size_t i = 0; i < cases.size(); i++) {
    if (cases[i].samples.empty()) continue;
    const std::vector<double> v = cases[i].Rates(work);
    Json e;
    e["case"] = cases[i].name;
    e["median"] = Median(v);
    e["min"] = Min(v);
    e["max"] = Max(v);
    e["samples"] = v;
    if (base == 0) {
      a.push_back(e);
      continue;
    }
    e["ratio"] = Median(v) / base;
    if (i > 0 && has_target) {
      e["target"] = kRateTarget;
      e["met"] = Median(v) / base >= kRateTarget;
    }
    a.push_back(e);
  }
  return a;
}

uint64_t MedianOf(const std::vector<Sample>& v, uint64_t Sample::*field) {
  std::vector<double> d;
  for (const Sample& s : v) d.push_back(double(s.*field));
  return uint64_t(Median(d));
}

double MedianSeconds(const std::vector<Sample>& v, double Sample::*field) {
  std::vector<double> d;
  for (const Sample& s : v) d.push_back(s.*field);
  return Median(d);
}

}  // namespace

int RunSendBench(int argc, char** argv) {
  CLI::App app("poolfs-bench send: send and receive throughput, and incremental reads");
  uint64_t size_mib = 2048, small_files = 200000, small_bytes = 1024;
  uint32_t files = 16;
  double change_pct = 1.0;
  int runs = 3;
  std::string dir = "/var/tmp", parts_arg = "full,small,incremental";
  std::string cases_arg = "read,send,receive,pipe";
  bool quick = false, json = false;
  app.add_option("--size", size_mib, "part 1 and 3: MiB of file data in the large-file dataset")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--files", files, "part 1 and 3: files the data is split into")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--small-files", small_files, "part 2: files in the small-file dataset")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000000));
  app.add_option("--small-bytes", small_bytes, "part 2: random bytes in each small file")
      ->capture_default_str()
      ->check(CLI::Range(0, 131072));
  app.add_option("--change-pct", change_pct, "part 3: percent of the records changed")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--parts", parts_arg, "which parts run: full, small, incremental")
      ->capture_default_str();
  app.add_option("--cases", cases_arg,
                 "part 1: which cases run (read, send, receive, pipe; for profiling one alone; "
                 "a ratio needs read)")
      ->capture_default_str();
  uint64_t pipe_mib = 16;
  app.add_option("--pipe-mib", pipe_mib, "part 1: MiB the pipe of send | receive holds")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--runs", runs, "runs per case (medians are printed)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--dir", dir, "where the temporary folder of the pools and the stream goes")
      ->capture_default_str();
  app.add_flag("--quick", quick, "--size 64 --small-files 2000 --runs 1, unless given");
  app.add_flag("--json", json, "one JSON object instead of the table");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    if (app.count("--size") == 0) size_mib = 64;
    if (app.count("--small-files") == 0) small_files = 2000;
    if (app.count("--runs") == 0) runs = 1;
  }
  g_pipe_bytes = pipe_mib * kMiB;
  const bool part_full = parts_arg.find("full") != std::string::npos;
  const bool part_small = parts_arg.find("small") != std::string::npos;
  const bool part_inc = parts_arg.find("incremental") != std::string::npos;

  if (!MakeScratch(dir, "send")) return 1;
  const double load_start = LoadAverage();
  const double t_start = NowSeconds();
  const std::string src = g_dir + "/src.pool", dst = g_dir + "/dst.pool";
  const std::string stream = g_dir + "/stream";
  const uint64_t large_bytes = size_mib * kMiB;
  const uint64_t large_pool = large_bytes * 2 + (2ull << 30);

  Json o;
  o["benchmark"] = std::string("send");
  o["runs"] = runs;
  o["quick"] = quick;
  o["cores"] = std::thread::hardware_concurrency();

  LargeData large;
  std::vector<Case> full = {{"read (baseline)", {}},
                            {"send (counting sink)", {}},
                            {"receive (stream from file)", {}},
                            {"send | receive (" + std::to_string(pipe_mib) + " MiB pipe)", {}}};
  SendSummary full_sum;
  if (part_full || part_inc) {
    {
      auto fs = NewDatasetPool(src, "src", large_pool);
      const double t0 = NowSeconds();
      large = WriteLargeFiles(*fs, large_bytes, files);
      Unmount(fs);
      std::fprintf(stderr, "full: wrote %u files, %.0f MiB in %.1f s\n", files,
                   double(large.total()) / kMiB, NowSeconds() - t0);
      auto root = MountPool(src, "");
      Must(root->datasets()->Snapshot({"src/data@full"}, false), "snapshot @full");
      Unmount(root);
    }
  }
  if (part_full) {
    full_sum = SendToFile(src, "src/data@full", stream);
    std::fprintf(stderr, "full: stream of %.1f MiB in %s\n", double(full_sum.bytes) / kMiB,
                 stream.c_str());
    for (int run = 0; run < runs; run++) {
      for (size_t k = 0; k < full.size(); k++) {
        const size_t c = (k + size_t(run)) % full.size();
        if (cases_arg.find(kCaseKeys[c]) == std::string::npos) continue;
        Sample s;
        if (c == 0) s = TimedRead(src, "src/data", large);
        if (c == 1) s = TimedSend(src, "src/data@full", "");
        if (c == 2) s = TimedReceive(stream, dst, large_pool, {large.names.size(), large.total()});
        if (c == 3)
          s = TimedPipe(src, "src/data@full", dst, large_pool, {large.names.size(), large.total()});
        full[c].samples.push_back(s);
        std::fprintf(stderr, "full: run %d/%d, %s: %.1f MiB/s (%.2f s, monotonic %.3f-%.3f)\n",
                     run + 1, runs, full[c].name.c_str(), double(large.total()) / kMiB / s.seconds,
                     s.seconds, s.end - s.seconds, s.end);
        if (c == 3)
          std::fprintf(stderr,
                       "full: the send waited %.2f s on a full pipe, the receive %.2f s "
                       "on an empty one\n",
                       s.send_waited, s.receive_waited);
      }
    }
    std::filesystem::remove(stream);
    const double work = double(large.total()) / kMiB;
    o["full"]["file_mib"] = work;
    o["full"]["files"] = large.names.size();
    o["full"]["stream_bytes"] = full_sum.bytes;
    o["full"]["records"] = full_sum.records;
    o["full"]["cases"] = CasesJson(full, work, true);
    o["full"]["send_vdev_bytes_read"] = MedianOf(full[1].samples, &Sample::vdev_bytes_read);
    o["full"]["read_vdev_bytes_read"] = MedianOf(full[0].samples, &Sample::vdev_bytes_read);
    if (!full[3].samples.empty()) {
      o["full"]["pipe_send_waited_s"] = MedianSeconds(full[3].samples, &Sample::send_waited);
      o["full"]["pipe_receive_waited_s"] = MedianSeconds(full[3].samples, &Sample::receive_waited);
    }
  }

  SmallData small;
  std::vector<Case> smallc = {{"walk: readdir+lookup+read (base)", {}},
                              {"send (counting sink)", {}},
                              {"receive (stream from file)", {}}};
  SendSummary small_sum;
  const std::string ssrc = g_dir + "/small.pool";
  if (part_small) {
    const uint64_t pool = small_files * 16384 + (2ull << 30);
    {
      auto fs = NewDatasetPool(ssrc, "small", pool);
      const double t0 = NowSeconds();
      small = WriteSmallFiles(*fs, small_files, small_bytes);
      Unmount(fs);
      std::fprintf(stderr, "small: created %llu files in %.1f s\n", (unsigned long long)small_files,
                   NowSeconds() - t0);
      auto root = MountPool(ssrc, "");
      Must(root->datasets()->Snapshot({"small/data@full"}, false), "snapshot small@full");
      Unmount(root);
    }
    small_sum = SendToFile(ssrc, "small/data@full", stream);
    for (int run = 0; run < runs; run++) {
      for (size_t k = 0; k < smallc.size(); k++) {
        const size_t c = (k + size_t(run)) % smallc.size();
        Sample s;
        if (c == 0) s = TimedWalk(ssrc, "small/data", small);
        if (c == 1) s = TimedSend(ssrc, "small/data@full", "");
        if (c == 2) s = TimedReceive(stream, dst, pool, {small.files + small.dirs, 0});
        smallc[c].samples.push_back(s);
        std::fprintf(stderr, "small: run %d/%d, %s: %.0f files/s (%.2f s)\n", run + 1, runs,
                     smallc[c].name.c_str(), double(small.files) / s.seconds, s.seconds);
      }
    }
    std::filesystem::remove(stream);
    std::filesystem::remove(ssrc);
    o["small"]["files"] = small.files;
    o["small"]["file_bytes"] = small.bytes;
    o["small"]["stream_bytes"] = small_sum.bytes;
    o["small"]["cases"] = CasesJson(smallc, double(small.files), true);
  }

  Change change;
  std::vector<Sample> inc;
  if (part_inc) {
    {
      auto fs = MountPool(src, "src/data");
      change = ChangeRecords(*fs, large, change_pct);
      Unmount(fs);
      auto root = MountPool(src, "");
      Must(root->datasets()->Snapshot({"src/data@inc"}, false), "snapshot @inc");
      Unmount(root);
    }
    for (int run = 0; run < runs; run++) {
      inc.push_back(TimedSend(src, "src/data@inc", "@full"));
      std::fprintf(stderr, "incremental: run %d/%d: read %.2f MiB in %.3f s\n", run + 1, runs,
                   double(inc.back().vdev_bytes_read) / kMiB, inc.back().seconds);
    }
    o["incremental"]["dataset_bytes"] = large.total();
    o["incremental"]["records"] = change.all_records;
    o["incremental"]["records_changed"] = change.records;
    o["incremental"]["stream_bytes"] = MedianOf(inc, &Sample::stream_bytes);
    o["incremental"]["blocks_read"] = MedianOf(inc, &Sample::blocks_read);
    o["incremental"]["vdev_bytes_read"] = MedianOf(inc, &Sample::vdev_bytes_read);
    const double frac = double(MedianOf(inc, &Sample::vdev_bytes_read)) / double(large.total());
    o["incremental"]["read_over_dataset"] = frac;
    o["incremental"]["target"] = kIncTarget;
    o["incremental"]["met"] = frac <= kIncTarget;
  }
  const double elapsed = NowSeconds() - t_start;
  const double load_end = LoadAverage();
  RemoveScratch();
  o["seconds"] = elapsed;
  o["load_start"] = load_start;
  o["load_end"] = load_end;
  if (json) return PrintJson(o);

  std::printf(
      "poolfs-bench send: pools in sparse files in %s, %d run%s%s, %u cores, load average %.2f at "
      "the start, %.2f at the end; %.0f s\n",
      dir.c_str(), runs, runs == 1 ? "" : "s", quick ? ", --quick" : "",
      std::thread::hardware_concurrency(), load_start, load_end, elapsed);
  if (part_full) {
    const double work = double(large.total()) / kMiB;
    std::printf(
        "\n1. full stream of src/data@full: %zu files of %.0f MiB of random bytes (%.0f MiB in "
        "all, 128 KiB records), MiB/s of file data; baseline: a sequential read of the same "
        "files through the POSIX layer in process (Filesystem::ReadShared, 1 MiB a call, as the "
        "FUSE adapter serves a READ; no kernel, no FUSE); each case on a fresh mount, the source "
        "pool file's page cache dropped (medians of %d)\n",
        large.names.size(), double(large.file_bytes) / kMiB, work, runs);
    PrintRates(full, work, "MiB/s", true);
    std::printf(
        "stream: %.1f MiB, %llu records; read from the vdevs: send %.1f MiB, baseline read %.1f "
        "MiB (medians)\n",
        double(full_sum.bytes) / kMiB, (unsigned long long)full_sum.records,
        double(MedianOf(full[1].samples, &Sample::vdev_bytes_read)) / kMiB,
        double(MedianOf(full[0].samples, &Sample::vdev_bytes_read)) / kMiB);
    if (!full[3].samples.empty())
      std::printf(
          "send | receive: the send waited %.2f s on a full pipe, the receive %.2f s on an empty "
          "one, of %.2f s (medians)\n",
          MedianSeconds(full[3].samples, &Sample::send_waited),
          MedianSeconds(full[3].samples, &Sample::receive_waited),
          MedianSeconds(full[3].samples, &Sample::seconds));
  }
  if (part_small) {
    std::printf(
        "\n2. small files: small/data@full, %llu files of %llu random bytes, %llu per directory; "
        "files/s; baseline: a walk reading every file through the POSIX layer in process "
        "(ReadDir of each directory, Lookup, Open, ReadShared, Forget of each file); fresh mount, "
        "page cache dropped (medians of %d)\n",
        (unsigned long long)small.files, (unsigned long long)small.bytes,
        (unsigned long long)kFilesPerDir, runs);
    PrintRates(smallc, double(small.files), "files/s", true);
    std::printf("stream: %.1f MiB, %llu records\n", double(small_sum.bytes) / kMiB,
                (unsigned long long)small_sum.records);
  }
  if (part_inc) {
    const uint64_t read = MedianOf(inc, &Sample::vdev_bytes_read);
    const double frac = double(read) / double(large.total());
    std::vector<double> secs;
    for (const Sample& s : inc) secs.push_back(s.seconds);
    std::printf(
        "\n3. incremental: %llu of %llu records (%.2f%%) of src/data given a %llu-byte write "
        "each, at random over the files; send -i @full @inc to a counting sink, fresh mount, page "
        "cache dropped (medians of %d)\n",
        (unsigned long long)change.records, (unsigned long long)change.all_records,
        100.0 * double(change.records) / double(change.all_records),
        (unsigned long long)kChangeBytes, runs);
    std::printf("  %12s %12s %12s %12s %14s %10s %12s\n", "dataset MiB", "changed MiB",
                "stream MiB", "blocks_read", "vdev read MiB", "send s", "read/dataset");
    std::printf("  %12.1f %12.1f %12.2f %12llu %14.2f %10.3f %11.2f%%   target <= %.0f%%: %s\n",
                double(large.total()) / kMiB, double(change.records * kRecord) / kMiB,
                double(MedianOf(inc, &Sample::stream_bytes)) / kMiB,
                (unsigned long long)MedianOf(inc, &Sample::blocks_read), double(read) / kMiB,
                Median(secs), 100.0 * frac, 100.0 * kIncTarget,
                frac <= kIncTarget ? "met" : "NOT MET");
  }
  return 0;
}

}  // namespace poolfs::bench
