// CacheNotifier: tells the kernel to drop what it caches of a file, on a
// thread of its own, and sends the replies that must wait for that.
//
// Why. The kernel keeps a regular file's pages across opens (keep_cache:
// it opens files without asking, file_ops.cc) and serves reads from them
// without a request, dropping them itself only when it sees the file's
// size or mtime change (FUSE_CAP_AUTO_INVAL_DATA, on a read or stat that
// asks for the attributes). An O_DIRECT write sent asynchronously (aio)
// needs more: the kernel drops the range's pages before it sends the
// WRITE, but not when the WRITE completes, so pages a reader brought in
// meanwhile keep the old bytes, with attributes fetched meanwhile that
// still show the old mtime. The WRITE handler therefore drops the kernel's
// cached attributes before it replies (InvalidateAttributes, which never
// waits): the next read or stat asks for them, sees the new mtime and drops
// the pages. The range's pages are dropped here too, after the reply, for
// readers that only map them (and a writeback-cache mount, where the
// kernel trusts its own mtime).
//
// Deadlock. Dropping pages waits for their locks, which the kernel holds
// while a READ of them (or a write-back WRITE) is in flight, and only a
// worker answers those. So a worker never drops pages itself: it hands
// the work here and goes back to the loop; this thread drops the pages
// (waiting, when it must, for workers to answer such requests), then calls
// what was handed with them. It waits for nothing else, and no worker
// waits for it. A direct WRITE may itself come from a write that holds its
// pages (the kernel falls back to a buffered write when a direct one comes
// short), which is why its range is dropped only after its reply.
//
// Thread safety: Post and InvalidateAttributes from any thread; Stop (and
// the destructor) from one thread, after the request loop has ended.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "poolfs/mutex.h"

namespace poolfs::fuse {

class CacheNotifier {
 public:
  // Starts the thread; `se` must outlive Stop.
  explicit CacheNotifier(fuse_session* se);
  ~CacheNotifier() { Stop(); }
  CacheNotifier(const CacheNotifier&) = delete;
  CacheNotifier& operator=(const CacheNotifier&) = delete;

  // On the notifier's thread, in order: drops the kernel's cached pages of
  // `ino` in [off, off + len) (len 0: to the end) and its attributes, then
  // calls `then` (a reply, say; may be empty).
  void Post(uint64_t ino, int64_t off, int64_t len, std::function<void()> then) EXCLUDES(mu_);

  // Drops the kernel's cached attributes of `ino` now, on the caller's
  // thread: no page is touched, so it never waits.
  void InvalidateAttributes(uint64_t ino) const;

  // Handles what is queued and ends the thread. Idempotent.
  void Stop() EXCLUDES(mu_);

 private:
  struct Item {
    uint64_t ino;
    int64_t off, len;
    std::function<void()> then;
  };
  void Run() EXCLUDES(mu_);
  void Invalidate(uint64_t ino, int64_t off, int64_t len) const;

  fuse_session* const se_;
  util::Mutex mu_;
  util::CondVar cv_;
  std::deque<Item> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace poolfs::fuse
