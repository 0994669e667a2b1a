// SharedMutex: a reader-writer lock the thread-safety analysis understands
// (readers share it, a writer holds it alone), with scoped holders. Kept in
// zap until another layer needs one (then it belongs in util/mutex.h).
//
// Writers go first: a waiting writer stops new readers from entering (glibc's
// default rwlock, and so std::shared_mutex, lets a steady stream of readers
// starve a writer: lookups in a busy directory would starve its creates).
//
// Thread safety: it is the lock.
#pragma once

#include <pthread.h>

#include "util/check.h"
#include "util/mutex.h"

namespace poolfs::core::zap {

class CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() {
    pthread_rwlockattr_t attr;
    CHECK_EQ(pthread_rwlockattr_init(&attr), 0);
    CHECK_EQ(pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), 0);
    CHECK_EQ(pthread_rwlock_init(&rw_, &attr), 0);
    pthread_rwlockattr_destroy(&attr);
  }
  ~SharedMutex() { pthread_rwlock_destroy(&rw_); }
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { CHECK_EQ(pthread_rwlock_wrlock(&rw_), 0); }
  void Unlock() RELEASE() { CHECK_EQ(pthread_rwlock_unlock(&rw_), 0); }
  void LockShared() ACQUIRE_SHARED() { CHECK_EQ(pthread_rwlock_rdlock(&rw_), 0); }
  void UnlockShared() RELEASE_SHARED() { CHECK_EQ(pthread_rwlock_unlock(&rw_), 0); }

 private:
  pthread_rwlock_t rw_;
};

// Holds a SharedMutex alone for its scope.
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterLock() RELEASE() { mu_->Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex* mu_;
};

// Holds a SharedMutex shared for its scope.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderLock() RELEASE() { mu_->UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex* mu_;
};

}  // namespace poolfs::core::zap
