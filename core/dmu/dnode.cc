#include "dmu/dnode.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "util/check.h"

namespace poolfs::core::dmu {

namespace {
constexpr uint64_t kAllBlocks = std::numeric_limits<uint64_t>::max();
}  // namespace

Dnode::Dnode(zio::Zio* zio, ObjectId id, const DnodePhys& phys)
    : zio_(zio),
      id_(id),
      tree_(zio, "object " + std::to_string(id.value()), phys.nlevels, phys.bp, phys.used) {
  util::WriterLock l(&mu_);
  live_.type = phys.type;
  live_.compression = phys.compression;
  live_.bonus_type = phys.bonus_type;
  live_.block_size = phys.block_size;
  live_.length = phys.length;
  live_.generation = phys.generation;
  live_.bonus = phys.bonus;
}

Dnode::~Dnode() { delete stream_.load(std::memory_order_acquire); }

Dnode::Slot& Dnode::SlotFor(Txg t) {
  std::unique_ptr<Slot>& s = slots_[t.value() % kTxgSlots];
  if (s == nullptr) {
    s = std::make_unique<Slot>();
    s->txg = t.value();
  }
  // The ring holds at most the open, quiescing and syncing txgs; a slot is
  // reused only after SyncDone dropped it.
  POOLFS_CHECK_EQ(s->txg, t.value());
  return *s;
}

Dnode::Slot* Dnode::SlotOf(Txg t) const {
  Slot* s = slots_[t.value() % kTxgSlots].get();
  return s != nullptr && s->txg == t.value() ? s : nullptr;
}

void Dnode::Touch(Slot& s) {
  s.attrs = live_;
  if (!s.queued) {
    s.queued = true;
    if (on_dirty) on_dirty(this, Txg(s.txg));
  }
}

arc::BlockKey Dnode::CacheKey(const zio::BlockPtr& bp) { return BlockKeyOf(bp); }

size_t Dnode::SlotsNewestFirst(uint64_t t, std::array<const Slot*, kTxgSlots>* order) const {
  size_t n = 0;
  for (const auto& s : slots_)
    if (s != nullptr && s->txg <= t) (*order)[n++] = s.get();
  for (size_t i = 1; i < n; i++)  // at most four: an insertion sort, newest first
    for (size_t j = i; j > 0 && (*order)[j - 1]->txg < (*order)[j]->txg; j--)
      std::swap((*order)[j - 1], (*order)[j]);
  return n;
}

Result<bool> Dnode::Locate(uint64_t blkid, uint64_t t, BlockRef* ref, zio::BlockPtr* bp,
                           bool peek) {
  // Newest unsynced txg first: its dirty copy, else a free that covers it.
  std::array<const Slot*, kTxgSlots> order{};
  const size_t n = SlotsNewestFirst(t, &order);
  *ref = BlockRef();
  bool cloned = false;  // a clone not yet synced names it (*bp)
  for (size_t i = 0; i < n && !cloned; i++) {
    auto it = order[i]->blocks.find(blkid);
    if (it != order[i]->blocks.end()) {
      ref->bytes = it->second;
      return true;
    }
    if (auto c = order[i]->clones.find(blkid); c != order[i]->clones.end()) {
      *bp = c->second;
      cloned = true;
      break;
    }
    for (const auto& [first, end] : order[i]->frees)
      if (blkid >= first && blkid < end) return true;
  }
  if (!cloned) {
    util::MutexLock l(&tree_mu_);
    POOLFS_ASSIGN_OR_RETURN(*bp, tree_.Lookup(blkid));
  }
  if (bp->IsHole()) return true;
  const uint32_t block_size = live_.block_size;
  auto wrong_size = [&](uint64_t size) {
    return Status::Corruption(Name() + " block " + std::to_string(blkid) + " holds " +
                              std::to_string(size) + " bytes, the object's blocks are " +
                              std::to_string(block_size));
  };
  if (cache != nullptr && peek) return cache->Contains(CacheKey(*bp));
  if (cache != nullptr) {
    if (arc::ArcHandle h = cache->Lookup(CacheKey(*bp))) {
      // Verified when it was read in (checksum here, size below); a block's
      // name is unique, so the size check only guards a damaged tree.
      if (h.size() != block_size) return wrong_size(h.size());
      ref->cached = std::move(h);
      return true;
    }
  }
  if (bp->lsize != block_size || block_size == 0) return wrong_size(bp->lsize);
  return false;
}

Status Dnode::ReadBlocks(std::span<const Miss> misses, std::span<BlockRef> refs,
                         std::span<const zio::BlockRead> in_place) {
  // One ReadMany for all, so that adjacent blocks make one device read
  // whichever buffer each goes to.
  std::vector<zio::BlockRead> reads(misses.size());
  reads.insert(reads.end(), in_place.begin(), in_place.end());
  if (cache == nullptr) {
    std::vector<std::shared_ptr<std::string>> bufs(misses.size());
    for (size_t i = 0; i < misses.size(); i++) {
      bufs[i] = std::make_shared<std::string>(misses[i].bp.lsize, '\0');
      reads[i] = {misses[i].bp, reinterpret_cast<uint8_t*>(bufs[i]->data())};
    }
    POOLFS_RETURN_IF_ERROR(zio_->ReadMany(reads));
    for (size_t i = 0; i < misses.size(); i++) refs[misses[i].index].bytes = std::move(bufs[i]);
    return Status::Ok();
  }
  // Read straight into the cache's buffers (aligned: the disk's DMA fills
  // them when the vdev reads with O_DIRECT).
  std::vector<arc::ArcData> bufs;
  bufs.reserve(misses.size());
  for (size_t i = 0; i < misses.size(); i++) {
    bufs.push_back(cache->AllocData(misses[i].bp.lsize));
    reads[i] = {misses[i].bp, reinterpret_cast<uint8_t*>(bufs[i].data())};
  }
  POOLFS_RETURN_IF_ERROR(zio_->ReadMany(reads));
  if (!in_place.empty()) cache->NoteReadOnce(in_place.size());
  for (size_t i = 0; i < misses.size(); i++) {
    const arc::BlockKey key = CacheKey(misses[i].bp);
    refs[misses[i].index].cached = misses[i].keep ? cache->Insert(key, std::move(bufs[i]))
                                                  : cache->Hold(key, std::move(bufs[i]));
  }
  return Status::Ok();
}

Result<Dnode::BlockRef> Dnode::Content(uint64_t blkid, uint64_t t, bool keep) {
  BlockRef ref;
  zio::BlockPtr bp;
  POOLFS_ASSIGN_OR_RETURN(bool found, Locate(blkid, t, &ref, &bp));
  if (!found) {
    const Miss miss{bp, keep, 0};
    POOLFS_RETURN_IF_ERROR(ReadBlocks({&miss, 1}, {&ref, 1}));
  }
  return ref;
}

Result<Dnode::Base> Dnode::ReadBase(Txg t, uint64_t blkid) {
  if (const Slot* s = SlotOf(t); s != nullptr && s->blocks.count(blkid) != 0) return Base();
  POOLFS_ASSIGN_OR_RETURN(BlockRef ref, Content(blkid, t.value()));
  return Base(std::move(ref));
}

std::string* Dnode::DirtyBlock(Txg t, uint64_t blkid, const char* whole, const Base* base,
                               uint64_t* dirtied) {
  Slot& s = SlotFor(t);
  auto it = s.blocks.find(blkid);
  if (it != s.blocks.end()) {
    // A copy an owner shares (PutBlock) is the owner's to change: this
    // write takes a buffer of its own.
    if (it->second.use_count() > 1) it->second = std::make_shared<std::string>(*it->second);
    if (whole) it->second->assign(whole, live_.block_size);
    return it->second.get();
  }
  auto block =
      block_buffers ? block_buffers->New(live_.block_size) : std::make_shared<std::string>();
  if (whole) {
    block->assign(whole, live_.block_size);  // the new contents, copied once
  } else {
    // ReadBase found no copy of t's, and nothing made one since.
    POOLFS_CHECK(base != nullptr && base->has_value());
    const char* old = (*base)->data();
    if (old != nullptr)
      block->assign(old, live_.block_size);
    else
      block->assign(live_.block_size, '\0');
  }
  *dirtied += live_.block_size;
  std::string* raw = block.get();
  DropClone(s, blkid);
  s.blocks.emplace(blkid, std::move(block));
  return raw;
}

void Dnode::DropClone(Slot& s, uint64_t blkid) {
  auto c = s.clones.find(blkid);
  if (c == s.clones.end()) return;
  zio_->ref_table()->CancelPending(Txg(s.txg), c->second);
  s.clones.erase(c);
}

void Dnode::FreeBlocks(Txg t, uint64_t first, uint64_t end) {
  if (first >= end) return;
  Slot& s = SlotFor(t);
  s.blocks.erase(s.blocks.lower_bound(first),
                 end == kAllBlocks ? s.blocks.end() : s.blocks.lower_bound(end));
  auto c = s.clones.lower_bound(first);
  while (c != s.clones.end() && (end == kAllBlocks || c->first < end)) {
    zio_->ref_table()->CancelPending(t, c->second);
    c = s.clones.erase(c);
  }
  s.frees.emplace_back(first, end);
}

Status Dnode::ReadZeroBases(Txg t, uint64_t off, uint64_t len, Bases* bases) {
  const uint64_t bs = live_.block_size;
  for (uint64_t b = off / bs; b * bs < off + len; b++) {
    POOLFS_ASSIGN_OR_RETURN(Base base, ReadBase(t, b));
    bases->emplace_back(b, std::move(base));
  }
  return Status::Ok();
}

void Dnode::ZeroBlocks(Txg t, uint64_t off, uint64_t len, const Bases& bases, uint64_t* dirtied) {
  const uint64_t bs = live_.block_size;
  const uint64_t end = off + len;
  for (uint64_t b = off / bs; b * bs < end; b++) {
    uint64_t lo = std::max(off, b * bs), hi = std::min(end, (b + 1) * bs);
    auto found =
        std::find_if(bases.begin(), bases.end(), [b](const auto& e) { return e.first == b; });
    POOLFS_CHECK(found != bases.end());  // ReadZeroBases read it
    std::string* blk = DirtyBlock(t, b, nullptr, &found->second, dirtied);
    std::memset(blk->data() + (lo - b * bs), 0, hi - lo);
  }
}

Status Dnode::ZeroRange(Txg t, uint64_t off, uint64_t len, uint64_t* dirtied) {
  Bases bases;
  POOLFS_RETURN_IF_ERROR(ReadZeroBases(t, off, len, &bases));
  ZeroBlocks(t, off, len, bases, dirtied);
  return Status::Ok();
}

void Dnode::Allocate(Txg t, Txg generation, ObjectType type, uint32_t block_size,
                     util::Compression compression, std::string_view bonus, uint8_t bonus_type) {
  util::WriterLock l(&mu_);
  POOLFS_CHECK(live_.type == ObjectType::kNone);
  POOLFS_CHECK_LE(bonus.size(), MaxBonus(zio_->format()));
  live_ = Attrs();
  live_.type = type;
  live_.compression = uint8_t(compression);
  live_.block_size = block_size;
  live_.generation = generation.value();
  live_.bonus_type = bonus_type;
  live_.bonus.assign(bonus);
  Touch(SlotFor(t));
}

void Dnode::Free(Txg t) {
  util::WriterLock l(&mu_);
  FreeBlocks(t, 0, kAllBlocks);
  live_ = Attrs();
  Touch(SlotFor(t));
}

Result<zio::BlockPtr> Dnode::WriteEarly(Txg t, uint64_t blkid, size_t allocator) {
  std::shared_ptr<std::string> data;
  zio::WriteProps props;
  {
    util::WriterLock l(&mu_);
    Slot* s = SlotOf(t);
    if (s == nullptr || s->blocks.count(blkid) == 0)
      return Status::NotFound(Name() + ": block " + std::to_string(blkid) +
                              " has no dirty copy in txg " + std::to_string(t.value()));
    auto it = s->blocks.find(blkid);
    if (auto e = s->early.find(blkid); e != s->early.end() && e->second.first == it->second)
      return e->second.second;
    if (s->attrs.type == ObjectType::kMetadnode || it->second.use_count() > 1)
      return Status::NotSupported(Name() + ": block " + std::to_string(blkid) +
                                  " cannot be written before its txg syncs");
    data = it->second;  // shared from now on: a change in t copies it first
    props = DataProps(s->attrs);
  }
  const zio::BlockWrite write{props, *data};
  Result<std::vector<zio::BlockPtr>> written = zio_->WriteMany({&write, 1}, t, allocator);
  util::WriterLock l(&mu_);
  Slot* s = SlotOf(t);
  POOLFS_CHECK(s != nullptr);  // t is held open: its sync has not begun
  if (!written.ok()) return written.status();
  auto [e, added] = s->early.try_emplace(blkid);
  if (!added && !e->second.second.IsHole()) s->early_stale.push_back(e->second.second);
  e->second = {std::move(data), (*written)[0]};
  return (*written)[0];
}

zio::WriteProps Dnode::DataProps(const Attrs& attrs) const {
  const bool dnodes = attrs.type == ObjectType::kMetadnode;
  return zio::WriteProps{dnodes ? zio::BlockType::kDnodes : zio::BlockType::kData, 0,
                         util::Compression(attrs.compression), 1,
                         copies_ ? copies_->For(attrs.type, 0) : uint8_t{1}};
}

Status Dnode::Write(Txg t, uint64_t off, std::string_view data, uint64_t* dirtied) {
  util::WriterLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  const uint64_t bs = live_.block_size;
  const uint64_t end = off + data.size();
  if (end < off || end / bs >= (uint64_t{1} << (kIndirectShift * (kMaxLevels - 1))))
    return Status::InvalidArgument(Name() + ": write past the largest object size");
  // Only the first and the last block can be partial, and only they need
  // their old contents: both are read before anything changes.
  const uint64_t first = off / bs, last = data.empty() ? first : (end - 1) / bs;
  auto partial = [&](uint64_t b) {
    return std::max(off, b * bs) != b * bs || std::min(end, (b + 1) * bs) != (b + 1) * bs;
  };
  Base head, tail;
  if (!data.empty() && partial(first)) {
    POOLFS_ASSIGN_OR_RETURN(head, ReadBase(t, first));
  }
  if (last != first && partial(last)) {
    POOLFS_ASSIGN_OR_RETURN(tail, ReadBase(t, last));
  }
  for (uint64_t b = first; b <= last && !data.empty(); b++) {
    uint64_t lo = std::max(off, b * bs), hi = std::min(end, (b + 1) * bs);
    const char* src = data.data() + (lo - off);
    if (!partial(b)) {  // a whole block: no old contents needed
      DirtyBlock(t, b, src, nullptr, dirtied);
      continue;
    }
    std::string* blk = DirtyBlock(t, b, nullptr, b == first ? &head : &tail, dirtied);
    std::memcpy(blk->data() + (lo - b * bs), src, hi - lo);
  }
  live_.length = std::max(live_.length, end);
  Touch(SlotFor(t));
  return Status::Ok();
}

Status Dnode::PutBlock(Txg t, uint64_t blkid, std::shared_ptr<std::string> block,
                       uint64_t* dirtied) {
  util::WriterLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  const uint64_t bs = live_.block_size;
  if (block == nullptr || block->size() != bs)
    return Status::InvalidArgument(Name() + ": a block of " +
                                   std::to_string(block ? block->size() : 0) +
                                   " bytes, the object's blocks are " + std::to_string(bs));
  if (blkid >= (uint64_t{1} << (kIndirectShift * (kMaxLevels - 1))))
    return Status::InvalidArgument(Name() + ": block " + std::to_string(blkid) +
                                   " is past the largest object size");
  Slot& s = SlotFor(t);
  DropClone(s, blkid);
  auto [it, added] = s.blocks.try_emplace(blkid);
  const uint64_t end = (blkid + 1) * bs;
  if (it->second == block && live_.length >= end) return Status::Ok();
  if (added) *dirtied += bs;
  it->second = std::move(block);
  live_.length = std::max(live_.length, end);
  Touch(s);
  return Status::Ok();
}

Status Dnode::ShareBlocks(Txg t, uint64_t first, uint64_t end,
                          std::vector<std::optional<zio::BlockPtr>>* out) {
  zio::BlockRefTable* table = zio_->ref_table();
  if (table == nullptr)
    return Status::NotSupported(Name() + ": the pool keeps no block reference table");
  util::ReaderLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  std::array<const Slot*, kTxgSlots> order{};
  const size_t n = SlotsNewestFirst(std::numeric_limits<uint64_t>::max(), &order);
  auto changed = [&](uint64_t b) {
    for (size_t i = 0; i < n; i++) {
      const Slot& s = *order[i];
      if (s.blocks.count(b) != 0 || s.clones.count(b) != 0 || s.early.count(b) != 0) return true;
      for (const auto& [lo, hi] : s.frees)
        if (b >= lo && b < hi) return true;
    }
    return false;
  };
  const size_t start = out->size();
  util::MutexLock tl(&tree_mu_);
  for (uint64_t b = first; b < end; b++) {
    if (changed(b)) {
      out->emplace_back();
      continue;
    }
    Result<zio::BlockPtr> bp = tree_.Lookup(b);
    if (!bp.ok()) {
      CancelShared(t, std::span(*out).subspan(start));
      out->resize(start);
      return bp.status();
    }
    if (bp->IsHole()) {
      out->push_back(*bp);
    } else if (zio::BlockRefTable::Clonable(*bp)) {
      table->AddPending(t, *bp);
      out->push_back(*bp);
    } else {
      out->emplace_back();
    }
  }
  return Status::Ok();
}

void Dnode::CancelShared(Txg t, std::span<const std::optional<zio::BlockPtr>> shared) {
  for (const auto& bp : shared)
    if (bp.has_value() && !bp->IsHole()) zio_->ref_table()->CancelPending(t, *bp);
}

Status Dnode::PutClones(Txg t, uint64_t first, std::span<const zio::BlockPtr> bps,
                        uint64_t length, uint64_t* dirtied) {
  util::WriterLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  const uint64_t bs = live_.block_size;
  for (const zio::BlockPtr& bp : bps)
    if (!bp.IsHole() && bp.lsize != bs)
      return Status::InvalidArgument(Name() + ": a clone of a block of " +
                                     std::to_string(bp.lsize) + " bytes, the object's are " +
                                     std::to_string(bs));
  if (first + bps.size() < first ||
      first + bps.size() > (uint64_t{1} << (kIndirectShift * (kMaxLevels - 1))))
    return Status::InvalidArgument(Name() + ": a clone past the largest object size");
  Slot& s = SlotFor(t);
  for (size_t i = 0; i < bps.size();) {
    const uint64_t b = first + i;
    if (bps[i].IsHole()) {  // a run of holes: one free
      size_t j = i;
      while (j < bps.size() && bps[j].IsHole()) j++;
      FreeBlocks(t, b, first + j);
      i = j;
      continue;
    }
    s.blocks.erase(b);
    DropClone(s, b);
    s.clones.emplace(b, bps[i]);
    *dirtied += zio::kBlockPtrSizeV2;  // the pointer, in its indirect block
    i++;
  }
  live_.length = std::max(live_.length, length);
  Touch(s);
  return Status::Ok();
}

Result<std::string> Dnode::Read(uint64_t off, uint64_t len, ReadCaching caching) {
  util::ReaderLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  if (off >= live_.length) return std::string();
  std::string out(std::min(len, live_.length - off), '\0');
  POOLFS_RETURN_IF_ERROR(ReadLocked(off, out, caching));
  return out;
}

Result<size_t> Dnode::ReadInto(uint64_t off, std::span<char> dst, ReadCaching caching,
                               ReadPieces* shared) {
  // Shared: reads of one object go on at once, each holding the lock across
  // its disk reads, so that no write changes (and no sync frees) a block
  // whose pointer a read holds.
  util::ReaderLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  if (off >= live_.length) return size_t{0};
  const size_t n = std::min<uint64_t>(dst.size(), live_.length - off);
  if (read_ahead != nullptr) ReadAheadOf(off, n);
  POOLFS_RETURN_IF_ERROR(ReadLocked(off, dst.first(n), caching, shared));
  return n;
}

void Dnode::ReadAheadOf(uint64_t off, uint64_t n) {
  const uint64_t bs = live_.block_size;
  if (n == 0 || bs == 0) return;
  Stream* s = stream_.load(std::memory_order_acquire);
  if (s == nullptr) {
    auto* fresh = new Stream;
    if (stream_.compare_exchange_strong(s, fresh, std::memory_order_acq_rel))
      s = fresh;
    else
      delete fresh;  // another reader made it first: s is that one
  }
  const uint64_t first = off / bs, end = (off + n + bs - 1) / bs;
  const uint64_t blocks = (live_.length + bs - 1) / bs;
  const uint64_t max_distance = std::max<uint64_t>(read_ahead->distance_bytes() / bs, 1);
  uint64_t from, to;
  {
    util::MutexLock l(&s->mu);
    // Follows: within one read of the stream's blocks, those read or asked
    // for (the kernel's READs of one file can arrive out of order).
    const uint64_t len = end - first;
    if (s->started && end + len >= s->start && first <= std::max(s->next, s->ahead) + len) {
      const uint64_t min_distance =
          std::min(std::max<uint64_t>(ReadAhead::kMinDistanceBytes / bs, 1), max_distance);
      s->distance = s->distance == 0 ? min_distance : std::min(2 * s->distance, max_distance);
      s->start = std::min(s->start, first);
      s->next = std::max(s->next, end);
    } else {  // a new stream starts here; it reads ahead once a read follows
      s->started = true;
      s->start = first;
      s->next = s->ahead = end;
      s->distance = 0;
      return;
    }
    from = std::max(s->ahead, s->next);
    to = std::min(s->next + s->distance, blocks);
    if (from >= to) return;
    s->ahead = to;
  }
  std::vector<zio::BlockPtr> bps;
  for (uint64_t b = from; b < to; b++) {
    BlockRef ref;
    zio::BlockPtr bp;
    Result<bool> found = Locate(b, std::numeric_limits<uint64_t>::max(), &ref, &bp, /*peek=*/true);
    // In memory (or a hole) needs no read; a failure is the reader's to meet.
    if (!found.ok() || *found || bp.IsGang()) continue;
    bps.push_back(bp);
  }
  read_ahead->Request(zio_, bps);
}

Status Dnode::ReadLocked(uint64_t off, std::span<char> dst, ReadCaching caching,
                         ReadPieces* shared) {
  const uint64_t end = off + dst.size();
  const uint64_t bs = live_.block_size;
  if (dst.empty()) return Status::Ok();
  // The next piece of a shared read: joined to the last when it follows it
  // in memory (dst's, mostly).
  auto add_piece = [shared](const char* p, uint64_t n) {
    auto& pieces = shared->pieces;
    if (!pieces.empty() && pieces.back().data() + pieces.back().size() == p)
      pieces.back() = {pieces.back().data(), pieces.back().size() + n};
    else
      pieces.emplace_back(p, n);
  };
  // n bytes of a block found in memory from `from` on (zeros for a hole),
  // copied to `to`, or for a shared read left in the cache when held there.
  auto copy_out = [&](BlockRef& blk, uint64_t from, char* to, uint64_t n) {
    if (shared != nullptr && blk.cached) {
      add_piece(blk.data() + from, n);
      shared->holds.push_back(std::move(blk.cached));
      return;
    }
    if (blk.data() != nullptr)
      std::memcpy(to, blk.data() + from, n);
    else
      std::memset(to, 0, n);
    if (shared != nullptr) add_piece(to, n);
  };
  // Within one block found in memory (a dnode slot, a zap block): no window.
  if (off / bs == (end - 1) / bs) {
    BlockRef blk;
    zio::BlockPtr bp;
    POOLFS_ASSIGN_OR_RETURN(bool found,
                            Locate(off / bs, std::numeric_limits<uint64_t>::max(), &blk, &bp));
    if (found) {
      copy_out(blk, off % bs, dst.data(), dst.size());
      return Status::Ok();
    }
  }
  // A window of blocks at a time: found in memory or, together, on disk
  // (ReadBlocks: adjacent ones in one device read), then copied out block
  // by block. A block on disk that dst takes whole and the cache need not
  // keep is read straight into dst.
  std::vector<BlockRef> refs;
  std::vector<Miss> misses;
  std::vector<zio::BlockRead> in_place;
  std::vector<bool> placed;
  for (uint64_t b = off / bs; b * bs < end;) {
    const uint64_t first = b;
    refs.clear();
    misses.clear();
    in_place.clear();
    placed.clear();
    for (; b * bs < end && refs.size() < kReadWindowBlocks &&
           (misses.size() + in_place.size()) * bs < zio::kAggregateBytes;
         b++) {
      const uint64_t lo = std::max(off, b * bs), hi = std::min(end, (b + 1) * bs);
      // Whole: from the block's start to its end or the object's.
      const bool whole = lo == b * bs && hi == std::min(live_.length, (b + 1) * bs);
      zio::BlockPtr bp;
      refs.emplace_back();
      placed.push_back(false);
      POOLFS_ASSIGN_OR_RETURN(bool found,
                              Locate(b, std::numeric_limits<uint64_t>::max(), &refs.back(), &bp));
      if (found) continue;
      if (read_ahead != nullptr) {
        if (arc::ArcData ahead = read_ahead->Take(bp); ahead.data() != nullptr) {
          const bool keep = caching == ReadCaching::kAll || !whole;
          refs.back().cached = keep ? cache->Insert(CacheKey(bp), std::move(ahead))
                                    : cache->Hold(CacheKey(bp), std::move(ahead));
          continue;
        }
      }
      if (caching == ReadCaching::kPartial && hi - lo == bs) {
        in_place.push_back({bp, reinterpret_cast<uint8_t*>(dst.data() + (lo - off))});
        placed.back() = true;
      } else {
        misses.push_back({bp, caching == ReadCaching::kAll || !whole, refs.size() - 1});
      }
    }
    if (!misses.empty() || !in_place.empty())
      POOLFS_RETURN_IF_ERROR(ReadBlocks(misses, refs, in_place));
    for (uint64_t i = first; i < b; i++) {
      const uint64_t lo = std::max(off, i * bs), hi = std::min(end, (i + 1) * bs);
      if (placed[i - first]) {
        if (shared != nullptr) add_piece(dst.data() + (lo - off), hi - lo);
        continue;
      }
      copy_out(refs[i - first], lo - i * bs, dst.data() + (lo - off), hi - lo);
    }
  }
  return Status::Ok();
}

Status Dnode::Truncate(Txg t, uint64_t length, uint64_t* dirtied) {
  util::WriterLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  const uint64_t bs = live_.block_size;
  if (length < live_.length) {
    // Bytes past the length are always zero: zero the tail of the new last
    // block, free every block after it.
    if (length % bs) {
      uint64_t tail_end = std::min(live_.length, (length / bs + 1) * bs);
      POOLFS_RETURN_IF_ERROR(ZeroRange(t, length, tail_end - length, dirtied));
    }
    FreeBlocks(t, (length + bs - 1) / bs, kAllBlocks);
  }
  live_.length = length;
  Touch(SlotFor(t));
  return Status::Ok();
}

Status Dnode::Punch(Txg t, uint64_t off, uint64_t len, uint64_t* dirtied) {
  util::WriterLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  const uint64_t bs = live_.block_size;
  uint64_t end = std::min(off + len, (live_.length + bs - 1) / bs * bs);
  if (end <= off) return Status::Ok();
  uint64_t first_whole = (off + bs - 1) / bs, end_whole = end / bs;
  if (first_whole < end_whole) {
    // The partial blocks at both ends are read before the whole ones go.
    Bases bases;
    if (off < first_whole * bs)
      POOLFS_RETURN_IF_ERROR(ReadZeroBases(t, off, first_whole * bs - off, &bases));
    if (end > end_whole * bs)
      POOLFS_RETURN_IF_ERROR(ReadZeroBases(t, end_whole * bs, end - end_whole * bs, &bases));
    FreeBlocks(t, first_whole, end_whole);
    if (off < first_whole * bs) ZeroBlocks(t, off, first_whole * bs - off, bases, dirtied);
    if (end > end_whole * bs) ZeroBlocks(t, end_whole * bs, end - end_whole * bs, bases, dirtied);
  } else {
    POOLFS_RETURN_IF_ERROR(ZeroRange(t, off, end - off, dirtied));
  }
  Touch(SlotFor(t));
  return Status::Ok();
}

Status Dnode::SetBonus(Txg t, uint8_t bonus_type, std::string_view bonus) {
  const size_t max_bonus = MaxBonus(zio_->format());
  if (bonus.size() > max_bonus)
    return Status::InvalidArgument(Name() + ": bonus of " + std::to_string(bonus.size()) +
                                   " bytes (at most " + std::to_string(max_bonus) + ")");
  util::WriterLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  live_.bonus_type = bonus_type;
  live_.bonus.assign(bonus);
  Touch(SlotFor(t));
  return Status::Ok();
}

Result<bool> Dnode::SetBlockSize(Txg t, uint32_t block_size, uint64_t* dirtied) {
  util::WriterLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  return ResizeLocked(t, block_size, dirtied);
}

Result<bool> Dnode::GrowBlockSize(Txg t, uint64_t end, uint32_t max_block_size, uint64_t* dirtied) {
  util::WriterLock l(&mu_);
  if (live_.type == ObjectType::kNone) return Status::NotFound(Name() + " is free");
  const uint32_t bs = live_.block_size;
  // Past one block, or already at (or above) the largest: it stays.
  if (bs >= max_block_size || live_.length > bs || end <= bs) return false;
  uint64_t want = bs;
  while (want < end && want < max_block_size) want *= 2;
  return ResizeLocked(t, uint32_t(std::min<uint64_t>(want, max_block_size)), dirtied);
}

Result<bool> Dnode::ResizeLocked(Txg t, uint32_t block_size, uint64_t* dirtied) {
  const uint32_t old = live_.block_size;
  if (block_size == old) return false;
  if (block_size < kMinBlockSize || block_size > kMaxBlockSize ||
      (block_size & (block_size - 1)) != 0)
    return Status::InvalidArgument(Name() + ": block size " + std::to_string(block_size) +
                                   " is not a power of two from 512 B to 1 MiB");
  if (live_.length > std::min(old, block_size))
    return Status::InvalidArgument(Name() + " holds " + std::to_string(live_.length) +
                                   " bytes: its block size cannot change from " +
                                   std::to_string(old) + " to " + std::to_string(block_size));
  // t's own copies lie within the length (Truncate drops those past it):
  // block 0 at most.
  Slot* s = SlotOf(t);
  if (s != nullptr) {
    for (const auto& [blkid, data] : s->blocks) POOLFS_CHECK_EQ(blkid, 0u);
    for (const auto& [blkid, bp] : s->clones) POOLFS_CHECK_EQ(blkid, 0u);
  }
  // Block 0's newest contents, read before anything changes: t's copy, or
  // (base) an older txg's copy, the tree's block, or zeros.
  Base base;
  POOLFS_ASSIGN_OR_RETURN(base, ReadBase(t, 0));
  const std::string* own = nullptr;
  if (!base.has_value()) own = s->blocks.at(0).get();
  const char* from = own != nullptr ? own->data() : base->data();
  if (from != nullptr) {
    // A new buffer even for t's own copy: its owner may share it
    // (PutBlock), and keeps what it has.
    auto block = block_buffers ? block_buffers->New(block_size) : std::make_shared<std::string>();
    block->assign(from, std::min(old, block_size));
    block->resize(block_size, '\0');  // past the length: zeros at either size
    Slot& mine = SlotFor(t);
    DropClone(mine, 0);
    auto [it, added] = mine.blocks.try_emplace(0);
    // A copy t had counted its old size already.
    *dirtied += added ? block_size : block_size > old ? block_size - old : 0;
    it->second = std::move(block);
  }
  live_.block_size = block_size;
  // A sequential reader's position is in blocks of the old size.
  if (Stream* st = stream_.load(std::memory_order_acquire); st != nullptr) {
    util::MutexLock sl(&st->mu);
    st->started = false;
  }
  Touch(SlotFor(t));
  return true;
}

ObjectInfo Dnode::Info() const {
  util::ReaderLock l(&mu_);
  ObjectInfo info;
  info.id = id_;
  info.type = live_.type;
  info.block_size = live_.block_size;
  info.length = live_.length;
  info.generation = live_.generation;
  info.bonus_type = live_.bonus_type;
  info.bonus = live_.bonus;
  util::MutexLock t(&tree_mu_);
  info.used = tree_.used();
  return info;
}

bool Dnode::IsFree() const {
  util::ReaderLock l(&mu_);
  return live_.type == ObjectType::kNone;
}

bool Dnode::Idle() const {
  if (!mu_.TryLock()) return false;
  bool idle = true;
  for (const auto& s : slots_) idle &= s == nullptr;
  mu_.Unlock();
  return idle;
}

bool Dnode::DirtyIn(Txg t) const {
  util::ReaderLock l(&mu_);
  const Slot* s = SlotOf(t);
  return s != nullptr && s->queued;
}

Result<zio::BlockPtr> Dnode::BlockPointer(uint64_t blkid) {
  util::MutexLock l(&tree_mu_);
  return tree_.Lookup(blkid);
}

Result<uint64_t> Dnode::Seek(uint64_t off, uint64_t end, bool hole) {
  util::ReaderLock l(&mu_);
  const uint64_t bs = live_.block_size;
  if (off >= end) return end;
  if (bs == 0) return hole ? off : end;
  // The unsynced txgs, newest first (as Locate takes them).
  std::array<const Slot*, kTxgSlots> order{};
  const size_t n = SlotsNewestFirst(UINT64_MAX, &order);
  // What the slots say of block b: data (a dirty copy), a hole (a free
  // covering it; *free_end is where that free ends), or nothing (the tree
  // decides).
  enum class Says { kData, kHole, kTree };
  auto slots_say = [&](uint64_t b, uint64_t* free_end) {
    for (size_t i = 0; i < n; i++) {
      if (order[i]->blocks.count(b) != 0 || order[i]->clones.count(b) != 0) return Says::kData;
      for (const auto& [first, e] : order[i]->frees)
        if (b >= first && b < e) {
          *free_end = e;
          return Says::kHole;
        }
    }
    return Says::kTree;
  };
  // The first dirty block at or after b in any slot (data unless a newer
  // free hides it: the loop asks slots_say again).
  auto next_dirty = [&](uint64_t b) {
    uint64_t best = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
      auto it = order[i]->blocks.lower_bound(b);
      if (it != order[i]->blocks.end()) best = std::min(best, it->first);
      auto c = order[i]->clones.lower_bound(b);
      if (c != order[i]->clones.end()) best = std::min(best, c->first);
    }
    return best;
  };
  const uint64_t limit = (end - 1) / bs + 1;  // blocks [0, limit) hold bytes before end
  BlockTree::Walk walk;
  uint64_t b = off / bs;
  while (b < limit) {
    uint64_t free_end = b + 1;
    bool data = false;
    uint64_t next = b + 1;  // where to look next when b is not the answer
    switch (slots_say(b, &free_end)) {
      case Says::kData: data = true; break;
      case Says::kHole: next = std::min(free_end, next_dirty(b + 1)); break;
      case Says::kTree: {
        util::MutexLock t(&tree_mu_);
        if (hole) {
          POOLFS_ASSIGN_OR_RETURN(zio::BlockPtr bp, tree_.Lookup(b));
          data = !bp.IsHole();
        } else {
          const BlockTree::NextBlock nb = tree_.Next(b, &walk);
          POOLFS_RETURN_IF_ERROR(nb.status);
          const bool none_left = nb.first == nb.end;  // (the tree may reach less far)
          data = !none_left && nb.first == b;
          if (!data) next = std::min(none_left ? UINT64_MAX : nb.first, next_dirty(b + 1));
        }
        break;
      }
    }
    if (data != hole) return std::min(end, std::max(off, b * bs));
    b = std::max(next, b + 1);
  }
  return end;
}

BlockTree::NextBlock Dnode::NextBlock(uint64_t from, BlockTree::Walk* walk) {
  util::MutexLock l(&tree_mu_);
  return tree_.Next(from, walk);
}

size_t Dnode::DirtyBlocks(Txg t) const {
  util::ReaderLock l(&mu_);
  const Slot* s = SlotOf(t);
  return s != nullptr ? s->blocks.size() : 0;
}

Result<DnodePhys> Dnode::Sync(Txg t, size_t allocator) {
  Attrs attrs;
  {
    util::WriterLock l(&mu_);
    Slot* sp = SlotOf(t);
    POOLFS_CHECK(sp != nullptr);
    Slot& s = *sp;
    if (s.blocks.empty() && s.frees.empty() && s.early.empty() && s.early_stale.empty() &&
        s.clones.empty()) {
      // Most dnodes a txg syncs changed only their attributes (a new empty
      // file, a chmod, a link count): nothing to write but the dnode. The
      // slot's attributes are moved out, not copied: a later change in t
      // copies them in again (Touch), and SyncDone drops the slot.
      s.queued = false;
      attrs = std::move(s.attrs);
    }
  }
  if (attrs.type != ObjectType::kNone) {
    DnodePhys phys;
    {
      util::MutexLock l(&tree_mu_);
      POOLFS_RETURN_IF_ERROR(tree_.WriteDirty(t, allocator));  // nothing, normally
      phys.nlevels = tree_.nlevels();
      phys.bp = tree_.top();
      phys.used = tree_.used();
    }
    SetAttrs(std::move(attrs), &phys);
    return phys;
  }
  POOLFS_ASSIGN_OR_RETURN(SyncPlan plan, SyncBegin(t));
  POOLFS_RETURN_IF_ERROR(SyncBlocks(t, plan, 0, plan.blocks.size(), allocator));
  return SyncEnd(t, plan, allocator);
}

Result<Dnode::SyncPlan> Dnode::SyncBegin(Txg t) {
  SyncPlan plan;
  std::vector<std::pair<uint64_t, uint64_t>> frees;
  std::vector<zio::BlockPtr> stale;
  {
    util::WriterLock l(&mu_);
    Slot* sp = SlotOf(t);
    POOLFS_CHECK(sp != nullptr);
    Slot& s = *sp;
    plan.attrs = s.attrs;
    plan.blocks.assign(s.blocks.begin(), s.blocks.end());
    plan.clones.assign(s.clones.begin(), s.clones.end());
    frees = s.frees;
    s.queued = false;
    // A block written early is t's block if t did not change it since
    // (its copy is still the one written); otherwise the early one is freed.
    for (auto& [blkid, early] : s.early) {
      auto it = s.blocks.find(blkid);
      if (it != s.blocks.end() && it->second == early.first)
        plan.early.emplace(blkid, early.second);
      else if (!early.second.IsHole())
        stale.push_back(early.second);
    }
    s.early.clear();
    stale.insert(stale.end(), s.early_stale.begin(), s.early_stale.end());
    s.early_stale.clear();
  }
  plan.frees = frees.size();
  util::MutexLock l(&tree_mu_);
  for (const zio::BlockPtr& bp : stale) POOLFS_RETURN_IF_ERROR(tree_.Drop(bp, t));
  for (const auto& [first, end] : frees) POOLFS_RETURN_IF_ERROR(tree_.FreeRange(first, end, t));
  // Clones after the frees made before them (later frees dropped them).
  for (auto [blkid, bp] : plan.clones) {
    POOLFS_ASSIGN_OR_RETURN(zio::BlockPtr old, tree_.Lookup(blkid));
    if (!old.IsHole() && old.dva == bp.dva) {
      // The block already names that extent (a file cloned onto itself):
      // the new reference is the old one; the one ApplyPending counted goes.
      POOLFS_RETURN_IF_ERROR(zio_->Free(bp, t));
      continue;
    }
    bp.birth = t;  // as the destination's block: snapshots, diff and send see it change here
    POOLFS_RETURN_IF_ERROR(tree_.Set(blkid, bp, t));
  }
  return plan;
}

Status Dnode::SyncBlocks(Txg t, const SyncPlan& plan, size_t first, size_t end, size_t allocator) {
  POOLFS_CHECK_LE(first, end);
  POOLFS_CHECK_LE(end, plan.blocks.size());
  const bool dnodes = plan.attrs.type == ObjectType::kMetadnode;
  const zio::WriteProps props = DataProps(plan.attrs);
  // The blocks these replace leave the cache, in one batch at the end: each
  // is freed, or was rewritten in place under the same name (a later pass
  // of the same txg) and must not be served as it was.
  std::vector<arc::BlockKey> replaced;
  // Blocks go to zio in batches of up to zio::kAggregateBytes, which it
  // writes with one device write where their extents come out adjacent (a
  // file's blocks, in block id order from one allocator, usually do).
  // Compression, checksums and writes happen outside the tree's lock: other
  // ranges of this dnode are written at the same time.
  struct Item {
    uint64_t blkid;
    zio::BlockPtr old, bp;  // what it replaces, what it becomes
    zio::BlockWrite write;
    bool early = false;  // bp written already (WriteEarly)
  };
  std::vector<Item> items;
  std::vector<zio::BlockWrite> batch;
  std::vector<size_t> fresh;  // the items of batch
  for (size_t i = first; i < end;) {
    items.clear();
    uint64_t bytes = 0;
    {
      util::MutexLock l(&tree_mu_);
      for (; i < end &&
             (items.empty() || bytes + plan.blocks[i].second->size() <= zio::kAggregateBytes);
           i++) {
        const auto& [blkid, data] = plan.blocks[i];
        POOLFS_ASSIGN_OR_RETURN(zio::BlockPtr old, tree_.Lookup(blkid));
        items.push_back({blkid, old, {}, {props, *data}});
        if (auto e = plan.early.find(blkid); e != plan.early.end()) {
          items.back().bp = e->second;
          items.back().early = true;
        }
        bytes += data->size();
      }
    }
    // A dnode block's fill counts its allocated dnodes (a dnode's first
    // byte, its type, is 0 when free): import rebuilds the free set from it.
    if (dnodes) {
      for (Item& it : items) {
        const std::string_view data = it.write.data;
        it.write.props.fill = 0;
        for (size_t at = 0; at < data.size(); at += kDnodeSize)
          it.write.props.fill += data[at] != 0;
      }
    }
    // A block this txg wrote already (in an earlier sync pass) is rewritten
    // in place where it still fits; the others are written anew, together.
    batch.clear();
    fresh.clear();
    for (size_t k = 0; k < items.size(); k++) {
      Item& it = items[k];
      if (it.early) continue;
      if (!it.old.IsHole() && it.old.birth == t) {
        POOLFS_ASSIGN_OR_RETURN(it.bp, BlockTree::WriteBlock(zio_, it.write.props, it.write.data,
                                                             it.old, t, allocator));
      } else {
        batch.push_back(it.write);
        fresh.push_back(k);
      }
    }
    if (!batch.empty()) {
      POOLFS_ASSIGN_OR_RETURN(std::vector<zio::BlockPtr> written,
                              zio_->WriteMany(batch, t, allocator));
      for (size_t k = 0; k < fresh.size(); k++) items[fresh[k]].bp = written[k];
    }
    util::MutexLock l(&tree_mu_);
    for (const Item& it : items) {
      if (cache != nullptr && !it.old.IsHole()) replaced.push_back(CacheKey(it.old));
      POOLFS_RETURN_IF_ERROR(tree_.Set(it.blkid, it.bp, t));
    }
  }
  if (!replaced.empty()) cache->Forget(replaced);
  return Status::Ok();
}

Result<DnodePhys> Dnode::SyncEnd(Txg t, const SyncPlan& plan, size_t allocator) {
  DnodePhys phys;
  {
    util::MutexLock l(&tree_mu_);
    POOLFS_RETURN_IF_ERROR(tree_.WriteDirty(t, allocator));
    phys.nlevels = tree_.nlevels();
    phys.bp = tree_.top();
    phys.used = tree_.used();
  }
  {
    // The tree now has what the slot held: drop it (unless a later pass of
    // the same txg replaced a block meanwhile).
    util::WriterLock l(&mu_);
    Slot* sp = SlotOf(t);
    POOLFS_CHECK(sp != nullptr);  // SyncDone has not run
    Slot& s = *sp;
    for (const auto& [blkid, data] : plan.blocks) {
      auto it = s.blocks.find(blkid);
      if (it != s.blocks.end() && it->second == data) s.blocks.erase(it);
    }
    s.frees.erase(s.frees.begin(), s.frees.begin() + std::min(plan.frees, s.frees.size()));
    for (const auto& [blkid, bp] : plan.clones) {
      auto it = s.clones.find(blkid);
      if (it != s.clones.end() && it->second == bp) s.clones.erase(it);
    }
  }
  if (plan.attrs.type == ObjectType::kNone) return DnodePhys();
  SetAttrs(plan.attrs, &phys);
  return phys;
}

void Dnode::SetAttrs(Attrs attrs, DnodePhys* phys) {
  phys->type = attrs.type;
  phys->compression = attrs.compression;
  phys->bonus_type = attrs.bonus_type;
  phys->block_size = attrs.block_size;
  phys->length = attrs.length;
  phys->generation = attrs.generation;
  phys->bonus = std::move(attrs.bonus);
}

void Dnode::SyncDone(Txg t) {
  util::WriterLock l(&mu_);
  Slot* s = SlotOf(t);
  if (s == nullptr) return;
  POOLFS_CHECK(s->blocks.empty());
  POOLFS_CHECK(s->frees.empty());
  POOLFS_CHECK(s->early.empty() && s->early_stale.empty());
  POOLFS_CHECK(s->clones.empty());
  POOLFS_CHECK(!s->queued);
  slots_[t.value() % kTxgSlots].reset();
}

}  // namespace poolfs::core::dmu
