// InodeTable: the bounded cache of in-memory inodes and the kernel's lookup
// counts (see inode_table.h).
#include "posix/inode_table.h"

namespace poolfs::core::posix {

namespace {
// An Inode may leave the cache when nobody holds it, unless its file is
// unlinked but not yet freed (the last Forget must find it) or another
// thread holds its mu.
bool Evictable(Inode& in) {
  if (!in.mu.TryLock()) return false;
  const bool evictable = in.freed || in.z.nlink != 0;
  in.mu.Unlock();
  return evictable;
}
}  // namespace

InodeTable::InodeTable() : cache_(Evictable) {}

void InodeTable::Clear() {
  cache_.Clear();
  counts_.Clear();
}

}  // namespace poolfs::core::posix
