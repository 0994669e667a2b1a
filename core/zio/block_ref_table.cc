#include "zio/block_ref_table.h"

#include "util/check.h"
#include "util/endian.h"

namespace poolfs::core::zio {

void BlockRefTable::NoteAny() {
  bool any = !entries_.empty();
  for (const Pending& p : pending_) any |= !p.refs.empty();
  any_.store(any, std::memory_order_release);
}

void BlockRefTable::Load(Entries entries) {
  util::MutexLock l(&mu_);
  entries_ = std::move(entries);
  dirty_ = false;
  NoteAny();
}

void BlockRefTable::AddPending(Txg t, const BlockPtr& bp) {
  POOLFS_CHECK(Clonable(bp));
  util::MutexLock l(&mu_);
  Pending& p = pending_[t.value() % kSlots];
  if (p.txg != t.value()) {
    // The ring holds the unsynced txgs only: the slot's txg was applied.
    POOLFS_CHECK(p.refs.empty());
    p.txg = t.value();
  }
  auto& [count, allocated] = p.refs[KeyOf(bp)];
  count++;
  allocated = bp.allocated();
  any_.store(true, std::memory_order_release);
}

void BlockRefTable::CancelPending(Txg t, const BlockPtr& bp) {
  util::MutexLock l(&mu_);
  Pending& p = pending_[t.value() % kSlots];
  POOLFS_CHECK_EQ(p.txg, t.value());
  auto it = p.refs.find(KeyOf(bp));
  POOLFS_CHECK(it != p.refs.end());
  if (--it->second.first == 0) p.refs.erase(it);
  NoteAny();
}

void BlockRefTable::ApplyPending(Txg t) {
  if (!any_.load(std::memory_order_acquire)) return;
  util::MutexLock l(&mu_);
  Pending& p = pending_[t.value() % kSlots];
  if (p.txg != t.value()) return;
  for (const auto& [key, ref] : p.refs) {
    Entry& e = entries_[key];
    e.refs += uint64_t(ref.first);
    e.allocated = ref.second;
    dirty_ = true;
  }
  p.refs.clear();
  NoteAny();
}

BlockRefTable::Release BlockRefTable::Drop(const BlockPtr& bp, Txg t) {
  if (!Clonable(bp) || !any_.load(std::memory_order_acquire)) return Release::kFree;
  util::MutexLock l(&mu_);
  const Key key = KeyOf(bp);
  if (auto it = entries_.find(key); it != entries_.end()) {
    if (--it->second.refs == 0) entries_.erase(it);
    dirty_ = true;
    NoteAny();
    return Release::kKept;
  }
  for (const Pending& p : pending_)
    if (p.txg > t.value() && p.refs.count(key) != 0) return Release::kDefer;
  return Release::kFree;
}

BlockRefTable::Entries BlockRefTable::Snapshot() const {
  util::MutexLock l(&mu_);
  return entries_;
}

bool BlockRefTable::TakeDirty() {
  util::MutexLock l(&mu_);
  return std::exchange(dirty_, false);
}

BlockRefTable::Stats BlockRefTable::stats() const {
  Stats s;
  util::MutexLock l(&mu_);
  s.entries = entries_.size();
  for (const auto& [key, e] : entries_) s.saved_bytes += e.refs * e.allocated;
  for (const Pending& p : pending_)
    for (const auto& [key, ref] : p.refs) s.pending += uint64_t(ref.first);
  return s;
}

std::string BlockRefTable::Encode(const Entries& entries) {
  std::string out(entries.size() * kEntrySize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  for (const auto& [key, e] : entries) {
    util::PutLE64(p, key.second);
    util::PutLE32(p + 8, key.first);
    util::PutLE64(p + 16, e.refs);
    util::PutLE64(p + 24, e.allocated);
    p += kEntrySize;
  }
  return out;
}

Result<BlockRefTable::Entries> BlockRefTable::Decode(std::string_view bytes, uint32_t vdevs) {
  if (bytes.size() % kEntrySize != 0)
    return Status::Corruption("block reference table: " + std::to_string(bytes.size()) +
                              " bytes, not a multiple of the 32-byte entry");
  Entries out;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  for (size_t i = 0; i < bytes.size() / kEntrySize; i++, p += kEntrySize) {
    const uint64_t offset = util::GetLE64(p);
    const uint32_t vdev = util::GetLE32(p + 8);
    const uint32_t reserved = util::GetLE32(p + 12);
    const Entry e{util::GetLE64(p + 16), util::GetLE64(p + 24)};
    auto bad = [&](const std::string& what) {
      return Status::Corruption("block reference table entry " + std::to_string(i) + " (vdev " +
                                std::to_string(vdev) + " offset " + std::to_string(offset) +
                                "): " + what);
    };
    if (reserved != 0) return bad("reserved field is not zero");
    if (vdev >= vdevs) return bad("the pool has " + std::to_string(vdevs) + " vdevs");
    if (offset % kMinSectorSize != 0) return bad("offset is not a multiple of 512");
    if (e.refs == 0) return bad("counts no reference");
    if (e.allocated == 0 || e.allocated % kMinSectorSize != 0 ||
        e.allocated > uint64_t{kMaxCopies} * kMaxBlockSize)
      return bad("allocated size " + std::to_string(e.allocated) + " is not a block's");
    if (offset > UINT64_MAX - e.allocated) return bad("extent passes the end of any device");
    const Key key{vdev, offset};
    if (!out.empty() && !(out.rbegin()->first < key))
      return bad("out of order: entries ascend by vdev, then offset, each once");
    out.emplace_hint(out.end(), key, e);
  }
  return out;
}

}  // namespace poolfs::core::zio
