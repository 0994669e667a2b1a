#include "util/mutex.h"

#include <string>

#include "util/check.h"

namespace poolfs::util {

void Mutex::AssertHeld() const {
#ifndef NDEBUG
  if (owner_.load(std::memory_order_relaxed) != std::this_thread::get_id())
    CheckFailed(__FILE__, __LINE__, "a Mutex the caller must hold is not held by this thread");
#endif
}

SharedMutex::SharedMutex() {
  pthread_rwlockattr_t attr;
  POOLFS_CHECK_EQ(pthread_rwlockattr_init(&attr), 0);
  POOLFS_CHECK_EQ(
      pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), 0);
  POOLFS_CHECK_EQ(pthread_rwlock_init(&rw_, &attr), 0);
  pthread_rwlockattr_destroy(&attr);
}

// Failures here are misuse (EDEADLK: the thread holds it already) or a
// reader count overflow (EAGAIN), never a state to go on from.
void SharedMutex::Lock() {
  const int err = pthread_rwlock_wrlock(&rw_);
  if (err != 0)
    CheckFailed(__FILE__, __LINE__, "pthread_rwlock_wrlock: error " + std::to_string(err));
}

void SharedMutex::LockShared() {
  const int err = pthread_rwlock_rdlock(&rw_);
  if (err != 0)
    CheckFailed(__FILE__, __LINE__, "pthread_rwlock_rdlock: error " + std::to_string(err));
}

}  // namespace poolfs::util
