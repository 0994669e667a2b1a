#include "vdev/overlay_device.h"

#include <algorithm>
#include <cstring>

namespace poolfs::core::vdev {

Status OverlayDevice::Read(uint64_t off, void* buf, size_t len) {
  POOLFS_RETURN_IF_ERROR(CheckRange(name(), "read", size(), off, len));
  auto* out = static_cast<uint8_t*>(buf);
  util::MutexLock l(&mu_);
  // Runs of pages not written come from the base device in one read each.
  uint64_t at = off;
  const uint64_t end = off + len;
  while (at < end) {
    auto it = pages_.lower_bound(at / kPage);
    const uint64_t next_page_off = it == pages_.end() ? end : std::max(at, it->first * kPage);
    if (next_page_off > at) {
      const uint64_t n = std::min(end, next_page_off) - at;
      POOLFS_RETURN_IF_ERROR(base_->Read(at, out + (at - off), n));
      at += n;
      continue;
    }
    const uint64_t in_page = at - it->first * kPage;
    const uint64_t n = std::min(end - at, kPage - in_page);
    std::memcpy(out + (at - off), it->second->data() + in_page, n);
    at += n;
  }
  return Status::Ok();
}

Status OverlayDevice::Write(uint64_t off, const void* buf, size_t len) {
  POOLFS_RETURN_IF_ERROR(CheckRange(name(), "write", size(), off, len));
  const auto* in = static_cast<const uint8_t*>(buf);
  util::MutexLock l(&mu_);
  uint64_t at = off;
  const uint64_t end = off + len;
  while (at < end) {
    const uint64_t index = at / kPage;
    const uint64_t in_page = at - index * kPage;
    const uint64_t n = std::min(end - at, kPage - in_page);
    std::unique_ptr<Page>& page = pages_[index];
    if (page == nullptr) {
      page = std::make_unique<Page>();
      // The base's bytes around a partial write; the device may end
      // inside its last page.
      const uint64_t have = std::min(kPage, size() - index * kPage);
      if (n < kPage) {
        Status st = base_->Read(index * kPage, page->data(), have);
        if (!st.ok()) {
          pages_.erase(index);
          return st;
        }
      }
    }
    std::memcpy(page->data() + in_page, in + (at - off), n);
    at += n;
  }
  return Status::Ok();
}

uint64_t OverlayDevice::bytes_held() const {
  util::MutexLock l(&mu_);
  return pages_.size() * kPage;
}

}  // namespace poolfs::core::vdev
