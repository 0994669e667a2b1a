#include "vdev/memory_device.h"

#include <cstring>

namespace poolfs::core::vdev {

MemoryDevice::MemoryDevice(uint64_t size, std::string name, uint32_t sector_size)
    : size_(size), name_(std::move(name)), sector_size_(sector_size), bytes_(size, 0) {}

Status MemoryDevice::Read(uint64_t off, void* buf, size_t len) {
  POOLFS_RETURN_IF_ERROR(CheckRange(name_, "read", size_, off, len));
  util::MutexLock lock(&mu_);
  if (len > 0) std::memcpy(buf, bytes_.data() + off, len);
  return Status::Ok();
}

Status MemoryDevice::Write(uint64_t off, const void* buf, size_t len) {
  POOLFS_RETURN_IF_ERROR(CheckRange(name_, "write", size_, off, len));
  util::MutexLock lock(&mu_);
  if (len > 0) std::memcpy(bytes_.data() + off, buf, len);
  return Status::Ok();
}

Status MemoryDevice::Flush() {
  flushes_++;
  return Status::Ok();
}

std::unique_ptr<MemoryDevice> MemoryDevice::Clone() const {
  auto copy = std::make_unique<MemoryDevice>(size_, name_, sector_size_);
  util::MutexLock lock(&mu_);
  util::MutexLock copy_lock(&copy->mu_);
  copy->bytes_ = bytes_;
  return copy;
}

std::vector<uint8_t> MemoryDevice::Contents() const {
  util::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace poolfs::core::vdev
