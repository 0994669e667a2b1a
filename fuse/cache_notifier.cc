#include "cache_notifier.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace poolfs::fuse {

CacheNotifier::CacheNotifier(fuse_session* se) : se_(se), thread_([this] { Run(); }) {}

void CacheNotifier::Post(uint64_t ino, int64_t off, int64_t len, std::function<void()> then) {
  util::MutexLock l(&mu_);
  queue_.push_back({ino, off, len, std::move(then)});
  cv_.Signal();
}

void CacheNotifier::InvalidateAttributes(uint64_t ino) const { Invalidate(ino, -1, 0); }

void CacheNotifier::Invalidate(uint64_t ino, int64_t off, int64_t len) const {
  const int rc = fuse_lowlevel_notify_inval_inode(se_, ino, off, len);
  // ENOENT: the kernel holds nothing of the inode.
  if (rc != 0 && rc != -ENOENT)
    spdlog::debug("kernel cache of inode {} not invalidated: {}", ino, std::strerror(-rc));
}

void CacheNotifier::Stop() {
  {
    util::MutexLock l(&mu_);
    stopping_ = true;
    cv_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

void CacheNotifier::Run() {
  for (;;) {
    Item item;
    {
      util::MutexLock l(&mu_);
      while (queue_.empty() && !stopping_) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, and everything handled
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    Invalidate(item.ino, item.off, item.len);
    if (item.then) item.then();
  }
}

}  // namespace poolfs::fuse
