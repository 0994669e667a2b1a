// Lock wrappers with Clang thread-safety annotations.
//
// Declare a lock next to the data it guards (`Mutex mu_; int x_
// GUARDED_BY(mu_);`) and Clang's -Wthread-safety checks every access. Under
// g++ the annotations compile to nothing.
//
// Public (core/include/poolfs/) so that every layer uses the same wrappers,
// the daemon included, which sees only these headers; the core includes
// them as util/mutex.h. SharedMutex's out-of-line parts are in
// core/util/mutex.cc (poolfs_util, which every program links).
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <thread>

#if defined(__clang__)
#define POOLFS_TSA(x) __attribute__((x))
#else
#define POOLFS_TSA(x)
#endif

#define CAPABILITY(x) POOLFS_TSA(capability(x))
#define SCOPED_CAPABILITY POOLFS_TSA(scoped_lockable)
#define GUARDED_BY(x) POOLFS_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) POOLFS_TSA(pt_guarded_by(x))
#define REQUIRES(...) POOLFS_TSA(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) POOLFS_TSA(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) POOLFS_TSA(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) POOLFS_TSA(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) POOLFS_TSA(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) POOLFS_TSA(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) POOLFS_TSA(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) POOLFS_TSA(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) POOLFS_TSA(assert_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS POOLFS_TSA(no_thread_safety_analysis)

namespace poolfs::util {

// A std::mutex the analysis understands.
class CAPABILITY("mutex") Mutex {
 public:
  void Lock() ACQUIRE() {
    mu_.lock();
    NoteOwner();
  }
  void Unlock() RELEASE() {
    ClearOwner();
    mu_.unlock();
  }
  bool TryLock() TRY_ACQUIRE(true) {
    if (!mu_.try_lock()) return false;
    NoteOwner();
    return true;
  }
  // Tells the analysis that the calling thread holds the lock where it
  // cannot see so for itself: after a lock taken on one branch only (see
  // MaybeMutexLock). Debug builds check it and stop the program if not.
  void AssertHeld() const ASSERT_CAPABILITY(this);

 private:
  friend class CondVar;
#ifndef NDEBUG
  void NoteOwner() { owner_.store(std::this_thread::get_id(), std::memory_order_relaxed); }
  void ClearOwner() { owner_.store(std::thread::id(), std::memory_order_relaxed); }
  std::atomic<std::thread::id> owner_{};
#else
  void NoteOwner() {}
  void ClearOwner() {}
#endif
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* mu_;
};

// A reader-writer lock the analysis understands, for data that many
// threads read at once and writers change briefly (a directory's zap, a
// file's dnode while its blocks are read from disk). Writers go first: once
// a writer waits, new readers wait behind it, so a stream of readers cannot
// hold a writer off for ever (glibc's default rwlock, and so
// std::shared_mutex, lets them: lookups in a busy directory would starve
// its creates). The price: a reader must not take it again while it holds
// it (a writer may be waiting between the two, and then both wait for ever).
class CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex();
  ~SharedMutex() { pthread_rwlock_destroy(&rw_); }
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE();
  void Unlock() RELEASE() { pthread_rwlock_unlock(&rw_); }
  bool TryLock() TRY_ACQUIRE(true) { return pthread_rwlock_trywrlock(&rw_) == 0; }
  void LockShared() ACQUIRE_SHARED();
  void UnlockShared() RELEASE_SHARED() { pthread_rwlock_unlock(&rw_); }

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

// Holds a Mutex for its scope when `take` is true: for a lock that only
// some cases of an operation need (a rename that moves a directory, an
// unlink that drops a file's last link), where taking it always would
// serialize the others. The analysis cannot follow a lock taken on one
// branch, so the code that relies on it says so with Mutex::AssertHeld().
class MaybeMutexLock {
 public:
  MaybeMutexLock(Mutex* mu, bool take) NO_THREAD_SAFETY_ANALYSIS : mu_(take ? mu : nullptr) {
    if (mu_ != nullptr) mu_->Lock();
  }
  ~MaybeMutexLock() NO_THREAD_SAFETY_ANALYSIS {
    if (mu_ != nullptr) mu_->Unlock();
  }
  MaybeMutexLock(const MaybeMutexLock&) = delete;
  MaybeMutexLock& operator=(const MaybeMutexLock&) = delete;

 private:
  Mutex* mu_;
};

// A condition variable that waits on a Mutex (which the caller holds).
class CondVar {
 public:
  void Wait(Mutex* mu) REQUIRES(mu) {
    mu->ClearOwner();
    std::unique_lock<std::mutex> lk(mu->mu_, std::adopt_lock);
    cv_.wait(lk);
    lk.release();
    mu->NoteOwner();
  }
  template <typename Duration>
  bool WaitFor(Mutex* mu, Duration d) REQUIRES(mu) {
    mu->ClearOwner();
    std::unique_lock<std::mutex> lk(mu->mu_, std::adopt_lock);
    bool timed_out = cv_.wait_for(lk, d) == std::cv_status::timeout;
    lk.release();
    mu->NoteOwner();
    return !timed_out;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace poolfs::util
