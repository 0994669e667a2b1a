// BlockDevice: the byte-addressed storage a vdev lives on.
//
// Theory. Everything the pool stores goes through this interface: a file or
// block device in production (FileDevice), a byte vector in unit tests
// (MemoryDevice), and a wrapper that models a volatile write cache and power
// cuts for crash tests (FaultInjectingDevice). The upper layers (zio for
// blocks, label.h/uberblock.h for labels) never see file descriptors.
//
// The durability contract is the one disks give and the crash tests enforce:
//   - A Write that returned OK is visible to every later Read (on any thread),
//     but it is NOT durable: a power cut may lose it, entirely or in part, and
//     writes not separated by a Flush may reach the media in any order.
//   - Flush is a barrier: when it returns OK, every Write that had returned
//     before Flush was called is durable. Writes that race with a Flush may or
//     may not be covered.
//   - A failed Write leaves the range in an unknown state (old, new, or a mix
//     at sector granularity). A failed Flush means nothing about durability.
//   - Reads and writes need not be sector-aligned; the file implementation
//     simply hands them to the kernel. Callers that care about torn writes
//     (labels, uberblocks, blocks) protect themselves with checksums and with
//     the ordering of their writes and flushes, never with write atomicity.
//
// Errors: a range outside [0, size()) is InvalidArgument; a failed or short
// transfer is IOError whose message names the device, the operation, the
// offset and length, and the errno text. Nothing here retries a failed I/O.
//
// Thread safety: every implementation allows concurrent Read, Write and Flush
// from any number of threads. Concurrent writes to overlapping ranges, or a
// read overlapping a concurrent write, see an unspecified mix of the data (as
// with pwrite); callers do not do that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "poolfs/status.h"

namespace poolfs::core::vdev {

// One piece of a WriteParts: `len` bytes at `data`.
struct WritePart {
  const void* data;
  size_t len;
};

// One piece of a ReadParts: room for `len` bytes at `data`.
struct ReadPart {
  void* data;
  size_t len;
};

class BlockDevice {
 public:
  virtual ~BlockDevice() = default;

  // The device's size in bytes (fixed for the life of the object).
  virtual uint64_t size() const = 0;

  // A human name for messages: the path for a file device.
  virtual std::string name() const = 0;

  // The sector size writes should be aligned to for speed and atomicity
  // (logical-to-physical: the physical block size for a block device, 4096
  // for a regular file). The pool chooses its ashift from it.
  virtual uint32_t sector_size() const { return 4096; }

  // Reads exactly len bytes at off into buf. InvalidArgument when [off,
  // off+len) is not within the device; IOError on any failure or short read.
  virtual Status Read(uint64_t off, void* buf, size_t len) = 0;

  // Writes exactly len bytes from buf at off. InvalidArgument when out of
  // bounds (or the device is read-only); IOError on any failure or short write.
  virtual Status Write(uint64_t off, const void* buf, size_t len) = 0;

  // Writes the parts one after the other from `off` on, as one Write of
  // their concatenation would (the same kinds of error; a failure leaves
  // the whole range unknown). zio hands adjacent blocks over this way, so
  // that a device may write them with one I/O (FileDevice does for direct
  // writes); this default writes each part with its own Write.
  virtual Status WriteParts(uint64_t off, std::span<const WritePart> parts);

  // Reads into the parts one after the other from `off` on, as one Read
  // of their concatenation would (the same kinds of error; after a failure
  // the parts hold anything). zio reads adjacent blocks this way, so that a
  // device may read them with one I/O (FileDevice does); this default reads
  // each part with its own Read.
  virtual Status ReadParts(uint64_t off, std::span<const ReadPart> parts);

  // Makes the storage under [off, off+len) exist, so that later writes
  // there overwrite it: a file device writes zeros over the holes of a
  // sparse file in the range (what it reads does not change: a hole reads
  // as zeros). A write and Flush into a hole cost the host file system an
  // allocation, on ext4 a journal commit per Flush (about 160 us against
  // 120 us here); the intent log's area is written and flushed on every
  // fsync. Nothing needs to be durable. This default does nothing.
  virtual Status FillHoles(uint64_t off, size_t len);

  // The durability barrier described above. IOError when the device reports a
  // failure: the caller must then assume that no write since the last
  // successful Flush is durable.
  virtual Status Flush() = 0;
};

// Returns OK when [off, off+len) lies within a device of `size` bytes
// (overflow-safe), else InvalidArgument "<op> of <len> bytes at offset <off>
// is outside <name> (size <size>)". For implementations.
Status CheckRange(std::string_view name, std::string_view op, uint64_t size, uint64_t off,
                  size_t len);

// Returns the text of errno value `err` ("No space left on device"); unlike
// strerror, safe to call from many threads at once. For implementations.
std::string ErrnoText(int err);

// Builds the IOError for a failed transfer: "<op> of <len> bytes at offset
// <off> on <name> failed: <strerror(err)>" (or "...: short <op> (N bytes)" when
// err is 0). For implementations.
Status DeviceIoError(std::string_view name, std::string_view op, uint64_t off, size_t len, int err,
                     size_t done = 0);

}  // namespace poolfs::core::vdev
