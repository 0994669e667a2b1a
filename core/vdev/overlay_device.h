// OverlayDevice: a device that reads through to another and keeps its own
// writes in memory, so that a pool opened read-only can be imported and
// synced as a trial (`poolfs check`'s trial sync) without a byte reaching
// the base device.
//
// Writes are kept in 4 KiB pages: a page is copied from the base device the
// first time a write touches it, then read from memory. Flush does nothing
// (there is nothing to make durable). Memory grows with the pages written.
//
// Thread safety: Read, Write and Flush may be called concurrently; one mutex
// guards the pages. The base device must outlive the overlay and is only
// read.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "util/mutex.h"
#include "vdev/block_device.h"

namespace poolfs::core::vdev {

class OverlayDevice final : public BlockDevice {
 public:
  explicit OverlayDevice(BlockDevice* base) : base_(base) {}

  uint64_t size() const override { return base_->size(); }
  std::string name() const override { return base_->name() + " (overlay)"; }
  uint32_t sector_size() const override { return base_->sector_size(); }

  Status Read(uint64_t off, void* buf, size_t len) override;
  Status Write(uint64_t off, const void* buf, size_t len) override;
  Status Flush() override { return Status::Ok(); }

  // Bytes of the pages written so far.
  uint64_t bytes_held() const;

 private:
  static constexpr uint64_t kPage = 4096;
  using Page = std::array<uint8_t, kPage>;

  BlockDevice* const base_;
  mutable util::Mutex mu_;
  std::map<uint64_t, std::unique_ptr<Page>> pages_ GUARDED_BY(mu_);  // by page index
};

}  // namespace poolfs::core::vdev
