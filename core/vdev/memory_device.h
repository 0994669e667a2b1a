// MemoryDevice: a BlockDevice over a byte vector, for unit tests and as the
// inner device of a FaultInjectingDevice.
//
// Every write is "durable" at once (there is no cache); Flush only counts.
// Clone() copies the contents, so a crash test can replay the same starting
// state many times.
//
// Thread safety: Read, Write and Flush may be called concurrently; one mutex
// guards the bytes (a memcpy under a lock is far cheaper than anything the
// tests do around it).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/mutex.h"
#include "vdev/block_device.h"

namespace poolfs::core::vdev {

class MemoryDevice final : public BlockDevice {
 public:
  // A zero-filled device of `size` bytes called `name` in messages.
  explicit MemoryDevice(uint64_t size, std::string name = "memory", uint32_t sector_size = 4096);

  uint64_t size() const override { return size_; }
  std::string name() const override { return name_; }
  uint32_t sector_size() const override { return sector_size_; }

  Status Read(uint64_t off, void* buf, size_t len) override;
  Status Write(uint64_t off, const void* buf, size_t len) override;
  Status Flush() override;

  // A new device with a copy of the current contents and the same name.
  std::unique_ptr<MemoryDevice> Clone() const;

  // A copy of the whole contents.
  std::vector<uint8_t> Contents() const;

  uint64_t flushes() const { return flushes_.load(); }

 private:
  const uint64_t size_;
  const std::string name_;
  const uint32_t sector_size_;
  mutable util::Mutex mu_;
  std::vector<uint8_t> bytes_ GUARDED_BY(mu_);
  std::atomic<uint64_t> flushes_{0};
};

}  // namespace poolfs::core::vdev
