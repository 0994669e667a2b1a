// ReadMostlyLock: a reader-writer lock for locks that are read on every
// operation and written almost never, like a mount's teardown lock (every
// FUSE request reads it; unmount and remount read-only write it).
//
// One std::shared_mutex has one reader count, so every reader on every core
// writes the same cache line, and that line bounces between cores on each
// request even though no reader ever waits for another. Here the lock is N
// stripes (default 17, prime, as OpenZFS's rrmlock), each a shared_mutex on
// its own cache line; a reader takes only its thread's stripe (threads get
// stripes round-robin on first use), a writer takes every stripe in order.
// Readers on different stripes touch different lines; a writer pays N lock
// round trips, which is the point: writers are rare.
//
// Why in core/util rather than core/arc: it guards nothing of the cache; its
// user is the mount (the posix layer's teardown lock), and it is a lock
// wrapper like mutex.h, usable from any layer.
//
// Not re-entrant for writers; a reader may take it again while holding it
// only when no writer can be waiting (glibc's rwlocks prefer readers, but do
// not rely on it). A thread's stripe is the same for every ReadMostlyLock, so
// ReadUnlock needs no argument.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <shared_mutex>

#include "util/mutex.h"

namespace poolfs::util {

class CAPABILITY("mutex") ReadMostlyLock {
 public:
  static constexpr uint32_t kDefaultStripes = 17;

  explicit ReadMostlyLock(uint32_t stripes = kDefaultStripes);
  ReadMostlyLock(const ReadMostlyLock&) = delete;
  ReadMostlyLock& operator=(const ReadMostlyLock&) = delete;

  // Takes the calling thread's stripe shared.
  void ReadLock() ACQUIRE_SHARED() { stripes_[ThreadStripe()].mu.lock_shared(); }
  void ReadUnlock() RELEASE_SHARED() { stripes_[ThreadStripe()].mu.unlock_shared(); }
  // Takes every stripe exclusively, in order.
  void WriteLock() ACQUIRE();
  void WriteUnlock() RELEASE();

  uint32_t stripes() const { return n_; }

 private:
  struct alignas(64) Stripe {
    std::shared_mutex mu;
  };
  // The calling thread's stripe index (assigned round-robin, then fixed).
  uint32_t ThreadStripe() const;

  const uint32_t n_;
  std::unique_ptr<Stripe[]> stripes_;
};

// Holds a ReadMostlyLock shared for its scope.
class SCOPED_CAPABILITY ReadMostlyReader {
 public:
  explicit ReadMostlyReader(ReadMostlyLock* l) ACQUIRE_SHARED(l) : l_(l) { l_->ReadLock(); }
  ~ReadMostlyReader() RELEASE() { l_->ReadUnlock(); }
  ReadMostlyReader(const ReadMostlyReader&) = delete;
  ReadMostlyReader& operator=(const ReadMostlyReader&) = delete;

 private:
  ReadMostlyLock* l_;
};

// Holds a ReadMostlyLock exclusively for its scope.
class SCOPED_CAPABILITY ReadMostlyWriter {
 public:
  explicit ReadMostlyWriter(ReadMostlyLock* l) ACQUIRE(l) : l_(l) { l_->WriteLock(); }
  ~ReadMostlyWriter() RELEASE() { l_->WriteUnlock(); }
  ReadMostlyWriter(const ReadMostlyWriter&) = delete;
  ReadMostlyWriter& operator=(const ReadMostlyWriter&) = delete;

 private:
  ReadMostlyLock* l_;
};

}  // namespace poolfs::util
