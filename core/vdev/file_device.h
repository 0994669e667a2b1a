// FileDevice: a BlockDevice over a regular file or a block device.
//
// I/O is pread/pwrite (looping over short transfers and EINTR); Flush is
// fdatasync.
//
// Early writeback. A txg sync writes its blocks and then flushes; left alone,
// the kernel holds the written pages dirty until that fdatasync, so the sync
// first keeps the CPU busy copying while the disk idles, then waits on the
// disk with nothing to copy. With `writeback_bytes` set, every time that many
// bytes have been written since the last time, Write starts the writeback of
// the file's dirty pages (sync_file_range SYNC_FILE_RANGE_WRITE: it starts
// I/O, waits for none, and promises nothing about durability, which is still
// Flush's job), so the disk works while the sync goes on writing and the
// fdatasync finds little left to do: it brought a buffered pool's write
// rate from about two thirds of pwrite+fdatasync's to nearly all of it.
// `poolfs-bench pool --direct-writes false` measures it (with
// --writeback-kib 0 to compare). Only buffered writes count (direct writes,
// below, leave no dirty pages).
//
// Direct reads. With `direct_reads`, Open also opens the file with
// O_DIRECT, and a Read whose offset, length and buffer are all aligned to
// kDirectAlign goes through it: the disk's DMA fills the caller's buffer
// (the ARC's, see zio), where a buffered pread first fills the page cache
// and then copies, and blocks are cached once, in the ARC, not a second
// time in the page cache. Linux keeps the two paths coherent (a direct read
// writes back dirty pages of its range first). Other reads, and every read
// when the file system refuses O_DIRECT (tmpfs before 6.6), stay buffered.
// Direct reads are the pool's default since dmu::ReadAhead reads ahead of
// sequential readers. Before it they were off by default: in direct mode
// nothing read ahead (the kernel's readahead serves buffered reads only),
// so a sequential read through the mount was slower direct than buffered,
// even with reads gathered into 1 MiB (ReadParts) and several in flight.
// With ReadAhead, direct reads went several times as fast as buffered
// reads without it, on a fraction of the CPU time: a buffered read takes
// two fresh pages per page read (the pool file's and the mount's), and
// fresh pages are expensive on a virtual machine that reports free pages to
// its host (ReadAhead's theory). Dropping each range a buffered read read
// from the page cache (posix_fadvise DONTNEED, so that the ARC is the one
// cache) was slower than keeping it. scripts/bench-fs.sh's read
// figure (1 GiB through the mount against a plain file on the same disk)
// measures this path.
//
// Direct writes. With `direct_writes` (the default), a Write whose offset
// and length are aligned to kDirectAlign goes through the same O_DIRECT
// descriptor (opened read-write then), from the caller's buffer when it is
// aligned, else copied through a per-thread 1 MiB bounce buffer: the copy
// into a buffer that stays in memory replaces a copy into page cache pages
// that each new block of the file takes afresh, and the written blocks are
// not cached a second time in the page cache. Unaligned writes (a 512-byte
// sector pool), and all writes where the file system refuses O_DIRECT, go
// buffered; Linux keeps the two paths coherent (a direct write writes back
// and drops the page cache over its range). Flush stays an fdatasync: it
// makes the blocks a direct write allocated in a sparse file durable, and
// flushes the disk's cache. The cost is that each block write waits for the
// disk; the gain is larger: buffered, the copy into fresh page cache pages
// led the profile and kept the CPU busy throughout, and direct writes went
// faster on a fraction of the CPU time. scripts/bench-fs.sh's write figure
// (1 GiB with dd conv=fsync through the mount) and `poolfs-bench pool
// --direct-writes false` measure it.
//
// Small writes buffered. Writes shorter than `direct_write_min_bytes` go
// buffered even so. A txg that changed a few KiB writes some fifty small
// blocks (dnode, indirect, object set and MOS blocks, space maps, in their
// copies), one after another: direct, each waits for the disk, and an fsync
// that waits for such a txg waits for them all in turn; buffered, they
// cost a copy each and the sync's flush writes them together (fsync about
// three times as fast: bench/README.md, bench-peers). Large blocks keep the
// direct path's gain.
//
// Gathered direct writes. WriteParts of an aligned range copies the parts
// into the bounce buffer and writes it with one direct write per 1 MiB:
// zio hands over adjacent blocks this way. Each write is a trip to the
// hypervisor and an interrupt on a virtual disk, so direct writes of 1 MiB
// went much faster than writes of 128 KiB, on half the CPU time (4 MiB ones
// were no faster than 1 MiB). Other ranges, and everything when direct
// writes are off, go part by part.
//
// Gathered reads. ReadParts reads the parts with one preadv: through the
// O_DIRECT descriptor when direct reads are on and the range and every part
// are aligned (the disk fills the parts), through the bounce buffer when
// only the range is (a direct read of it, then a copy to the parts), else
// buffered. zio reads the adjacent blocks of a file this way: for the same
// reason as writes, direct reads of 1 MiB went much faster than reads of
// 128 KiB, on a fraction of the system time, and two at a time faster
// still.
//
// The size is taken once at Open: st_size for a regular file,
// BLKGETSIZE64 for a block device. Writes never extend the file.
//
// Exclusive opens take flock(LOCK_EX|LOCK_NB) on the file for as long as the
// FileDevice lives. The pool layer opens every vdev exclusively so that a
// second process (or a second open in the same process: flock locks belong to
// the open file description) importing a pool in use is refused with Busy.
// The lock is advisory: tools that ignore it (dd) are not stopped.
//
// Thread safety: Read, Write and Flush may be called concurrently from any
// number of threads (pread/pwrite carry their own offsets).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "poolfs/status.h"
#include "vdev/block_device.h"

namespace poolfs::core::vdev {

class FileDevice final : public BlockDevice {
 public:
  struct OpenMode {
    bool read_only = false;
    // Take an exclusive flock; refuse with Busy when another open holds one.
    bool exclusive = true;
    // Start the kernel's writeback after each this many bytes written (see
    // above); 0: never.
    uint64_t writeback_bytes = 0;
    // Read aligned ranges with O_DIRECT when the file allows it (see above).
    bool direct_reads = false;
    // Write aligned ranges with O_DIRECT when the file allows it (see above).
    bool direct_writes = false;
    // With direct_writes, writes shorter than this go buffered all the same
    // (see above); 0: every aligned write goes direct.
    uint64_t direct_write_min_bytes = 0;
  };
  // Offset and length alignment of direct I/O, and buffer alignment of a
  // direct read (a direct write copies an unaligned buffer).
  static constexpr uint64_t kDirectAlign = 4096;

  // Opens `path`, a regular file or a block device. Fails with NotFound when
  // it does not exist, InvalidArgument when it is neither a regular file nor a
  // block device, Busy "<path> is in use by another process (pid N)" when
  // exclusive and the lock is held, IOError for other failures (with errno
  // text).
  static Result<std::unique_ptr<FileDevice>> Open(const std::string& path, OpenMode mode);

  // Creates a sparse regular file of `size` bytes at `path` and makes its
  // directory entry durable. An existing empty file is reused; an existing
  // non-empty file is refused with AlreadyExists unless `force`, in which case
  // it is truncated to zero and re-extended (its old content is gone) — but
  // never while another process holds its lock (Busy). InvalidArgument for a
  // size of 0 or a path that exists and is not a regular file (a block device
  // is used as it is: open it, do not create it).
  static Status CreateSparse(const std::string& path, uint64_t size, bool force);

  ~FileDevice() override;
  FileDevice(const FileDevice&) = delete;
  FileDevice& operator=(const FileDevice&) = delete;

  uint64_t size() const override { return size_; }
  std::string name() const override { return path_; }
  uint32_t sector_size() const override { return sector_size_; }
  bool read_only() const { return read_only_; }
  bool is_block_device() const { return is_block_device_; }
  // How many times Write has started the writeback (writeback_bytes).
  uint64_t writebacks_started() const {
    return writebacks_started_.load(std::memory_order_relaxed);
  }
  // Whether aligned reads go through O_DIRECT, and how many did.
  bool direct_reads() const { return direct_reads_; }
  // Whether aligned writes go through O_DIRECT, and how many did.
  bool direct_writes() const { return direct_writes_; }
  uint64_t direct_writes_done() const {
    return direct_writes_done_.load(std::memory_order_relaxed);
  }
  uint64_t direct_reads_done() const { return direct_reads_done_.load(std::memory_order_relaxed); }

  Status Read(uint64_t off, void* buf, size_t len) override;
  Status Write(uint64_t off, const void* buf, size_t len) override;
  Status WriteParts(uint64_t off, std::span<const WritePart> parts) override;
  Status ReadParts(uint64_t off, std::span<const ReadPart> parts) override;
  // Finds the holes with SEEK_DATA and SEEK_HOLE.
  Status FillHoles(uint64_t off, size_t len) override;
  Status Flush() override;

 private:
  FileDevice(std::string path, int fd, int direct_fd, uint64_t size, uint32_t sector_size,
             OpenMode mode, bool is_block_device);
  // Counts `len` written bytes; starts writeback when writeback_bytes_ have
  // gathered.
  void NoteWritten(uint64_t len);
  // Writes the aligned range from *done on through direct_fd_ (from the
  // calling thread's bounce buffer when `p` is not aligned), advancing
  // *done; stops early, leaving the rest to a buffered write, when the file
  // system refuses (EINVAL) or a write ends off a sector boundary.
  Status WriteDirect(uint64_t off, const uint8_t* p, size_t len, size_t* done);
  // Reads the parts with preadv, through direct_fd_ when `direct` (while
  // the file system takes it), looping over short reads.
  Status ReadVector(uint64_t off, std::span<const ReadPart> parts, size_t len, bool direct);
  // The calling thread's kBounceBytes buffer, aligned to kDirectAlign.
  static uint8_t* BounceBuffer();
  static constexpr size_t kBounceBytes = size_t{1} << 20;

  const std::string path_;
  const int fd_;
  const int direct_fd_;  // -1: no direct I/O
  const uint64_t size_;
  const uint32_t sector_size_;
  const bool read_only_;
  const bool is_block_device_;
  const uint64_t writeback_bytes_;
  std::atomic<uint64_t> unstarted_bytes_{0};  // written since writeback last started
  std::atomic<uint64_t> writebacks_started_{0};
  const bool direct_reads_;
  const bool direct_writes_;
  const uint64_t direct_write_min_;
  std::atomic<uint64_t> direct_reads_done_{0};
  std::atomic<uint64_t> direct_writes_done_{0};
  std::atomic<bool> direct_refused_{false};  // a first direct write got EINVAL
};

// Returns the pid that /proc/locks names as holding a flock on the file
// (st_dev, st_ino), or 0 when it cannot be told. /proc/locks reports the pid
// that took the lock, which may be this process (a second open of the same
// file) or a parent that has since forked. For messages; exposed for tests.
int FindFlockHolder(uint64_t dev, uint64_t ino);

}  // namespace poolfs::core::vdev
