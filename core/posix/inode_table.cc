// InodeTable: the sharded map of in-memory inodes (see inode_table.h).
#include "posix/inode_table.h"

namespace poolfs::core::posix {

InodeRef InodeTable::Find(uint64_t ino) {
  Shard& s = ShardOf(ino);
  util::MutexLock l(&s.mu);
  auto it = s.map.find(ino);
  return it == s.map.end() ? nullptr : it->second;
}

InodeRef InodeTable::InsertIfAbsent(InodeRef in) {
  Shard& s = ShardOf(in->ino);
  util::MutexLock l(&s.mu);
  auto [it, inserted] = s.map.emplace(in->ino, in);
  return it->second;
}

void InodeTable::Replace(InodeRef in) {
  Shard& s = ShardOf(in->ino);
  util::MutexLock l(&s.mu);
  s.map[in->ino] = std::move(in);
}

void InodeTable::Erase(uint64_t ino) {
  Shard& s = ShardOf(ino);
  InodeRef drop;  // destroyed outside the lock
  util::MutexLock l(&s.mu);
  auto it = s.map.find(ino);
  if (it == s.map.end()) return;
  drop = std::move(it->second);
  s.map.erase(it);
}

void InodeTable::TryEvict(InodeRef& in) {
  Shard& s = ShardOf(in->ino);
  InodeRef drop;
  util::MutexLock l(&s.mu);
  auto it = s.map.find(in->ino);
  // The table's reference and the caller's: nobody else can see it.
  if (it == s.map.end() || it->second != in || in.use_count() != 2) return;
  {
    util::MutexLock il(&in->mu);
    if (in->lookups != 0) return;
  }
  drop = std::move(it->second);
  s.map.erase(it);
}

void InodeTable::Clear() {
  for (Shard& s : shards_) {
    std::unordered_map<uint64_t, InodeRef> drop;
    util::MutexLock l(&s.mu);
    drop.swap(s.map);
  }
}

uint64_t InodeTable::size() {
  uint64_t n = 0;
  for (Shard& s : shards_) {
    util::MutexLock l(&s.mu);
    n += s.map.size();
  }
  return n;
}

}  // namespace poolfs::core::posix
