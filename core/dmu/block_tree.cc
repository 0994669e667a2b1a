#include "dmu/block_tree.h"

#include "dmu/dnode_phys.h"
#include "util/check.h"

namespace poolfs::core::dmu {

using zio::BlockPtr;

namespace {
// Level-0 blocks covered by one block at `level`.
uint64_t Span(uint8_t level) { return uint64_t{1} << (kIndirectShift * level); }
}  // namespace

BlockTree::BlockTree(zio::Zio* zio, std::string name, uint8_t nlevels, const BlockPtr& top,
                     uint64_t used)
    : zio_(zio), name_(std::move(name)), nlevels_(nlevels), top_(top), used_(used) {
  POOLFS_CHECK_GE(nlevels_, 1);
}

uint64_t BlockTree::Capacity() const { return Span(nlevels_ - 1); }

std::string BlockTree::Where(uint8_t level, uint64_t index) const {
  return name_ + " L" + std::to_string(level) + " block " + std::to_string(index);
}

Result<BlockPtr*> BlockTree::Slot(uint8_t level, uint64_t index) {
  if (level == nlevels_ - 1) {
    POOLFS_CHECK_EQ(index, 0u);
    return &top_;
  }
  POOLFS_ASSIGN_OR_RETURN(Indirect * parent, Load(level + 1, index >> kIndirectShift));
  return &parent->bps[index & (kFanout - 1)];
}

Result<BlockTree::Indirect*> BlockTree::Load(uint8_t level, uint64_t index) {
  auto it = cache_.find({level, index});
  if (it != cache_.end()) return it->second.get();
  POOLFS_ASSIGN_OR_RETURN(BlockPtr * slot, Slot(level, index));
  auto ind = std::make_unique<Indirect>();
  ind->bps.resize(kFanout);
  if (!slot->IsHole()) {
    const zio::BpFormat format = zio_->format();
    if (slot->level != level || slot->lsize != IndirectBlockSize(format))
      return Status::Corruption(Where(level, index) + ": pointer says level " +
                                std::to_string(slot->level) + ", " + std::to_string(slot->lsize) +
                                " bytes");
    POOLFS_ASSIGN_OR_RETURN(std::string data, zio_->Read(*slot));
    auto* p = reinterpret_cast<const uint8_t*>(data.data());
    for (uint64_t i = 0; i < kFanout; i++) {
      // The place is named only when a pointer is refused: building it for
      // each of 2048 slots would cost more than decoding them.
      auto bp = zio::DecodeBlockPtr(p + i * zio::BlockPtrSize(format), {}, format);
      if (!bp.ok())
        return bp.status().WithContext(Where(level, index) + " slot " + std::to_string(i));
      ind->bps[i] = *bp;
      if (!ind->bps[i].IsHole() && ind->bps[i].level != level - 1)
        return Status::Corruption(Where(level, index) + " slot " + std::to_string(i) +
                                  ": child at level " + std::to_string(ind->bps[i].level));
    }
  }
  Indirect* raw = ind.get();
  cache_.emplace(Key{level, index}, std::move(ind));
  if (level == 1) cached_l1_++;
  return raw;
}

void BlockTree::TrimCache() {
  if (cached_l1_ <= kMaxCachedL1) return;
  // Level 1 sorts first in the map: (1, index) keys, then level 2 and up.
  for (auto it = cache_.begin(); it != cache_.end() && it->first.first == 1;) {
    if (it->second->dirty) {
      ++it;
      continue;
    }
    it = cache_.erase(it);
    cached_l1_--;
  }
}

Result<BlockPtr> BlockTree::Lookup(uint64_t blkid) {
  if (blkid >= Capacity()) return BlockPtr{};
  TrimCache();  // nothing points into the cache between calls
  if (!top_.IsHole() && top_.level != nlevels_ - 1)
    return Status::Corruption(name_ + ": top pointer is at level " + std::to_string(top_.level) +
                              ", the dnode has " + std::to_string(nlevels_) + " levels");
  // Down from the top. A cached indirect block is the current truth even
  // when the pointer to it is a hole not yet written (a Set that grew the
  // tree or refilled a freed range, before WriteDirty: readers see that
  // state between the sync's calls). Otherwise a hole on the way means zeros
  // below, with nothing loaded or cached for it (only Set builds indirect
  // blocks for holes).
  BlockPtr bp = top_;
  for (uint8_t level = nlevels_ - 1; level > 0; level--) {
    const uint64_t index = blkid >> (kIndirectShift * level);
    Indirect* ind;
    auto it = cache_.find({level, index});
    if (it != cache_.end()) {
      ind = it->second.get();
    } else {
      if (bp.IsHole()) return BlockPtr{};
      POOLFS_ASSIGN_OR_RETURN(ind, Load(level, index));
    }
    bp = ind->bps[(blkid >> (kIndirectShift * (level - 1))) & (kFanout - 1)];
  }
  return bp;
}

BlockTree::NextBlock BlockTree::Next(uint64_t from, Walk* walk) {
  const uint64_t cap = Capacity();
  if (from >= cap) return {cap, cap, {}, Status::Ok()};
  if (!top_.IsHole() && top_.level != nlevels_ - 1)
    return {from,
            cap,
            {},
            Status::Corruption(name_ + ": top pointer is at level " + std::to_string(top_.level) +
                               ", the dnode has " + std::to_string(nlevels_) + " levels")};
  while (from < cap) {
    // Down from the top as Lookup goes; a hole above level 0 that has no
    // cached block under it skips everything it covers.
    BlockPtr bp = top_;
    uint64_t skip_to = 0;
    for (uint8_t level = nlevels_ - 1; level > 0; level--) {
      const uint64_t index = from >> (kIndirectShift * level);
      Indirect* ind;
      auto it = cache_.find({level, index});
      if (it != cache_.end()) {
        ind = it->second.get();
      } else if (bp.IsHole()) {
        skip_to = (index + 1) * Span(level);
        break;
      } else {
        const uint64_t first = index * Span(level), end = std::min((index + 1) * Span(level), cap);
        if (!walk->indirects.insert({bp.dva.vdev, bp.dva.offset}).second)
          return {first,
                  end,
                  {},
                  Status::Corruption(Where(level, index) + ": the block at vdev " +
                                     std::to_string(bp.dva.vdev) + " offset " +
                                     std::to_string(bp.dva.offset) +
                                     " is reached through a second pointer")};
        Result<Indirect*> loaded = Load(level, index);
        if (!loaded.ok()) return {first, end, {}, loaded.status()};
        ind = *loaded;
      }
      bp = ind->bps[(from >> (kIndirectShift * (level - 1))) & (kFanout - 1)];
    }
    if (skip_to != 0) {
      from = skip_to;
      continue;
    }
    if (!bp.IsHole()) return {from, from + 1, bp, Status::Ok()};
    from++;
  }
  return {cap, cap, {}, Status::Ok()};
}

void BlockTree::Grow() {
  POOLFS_CHECK_LT(nlevels_, kMaxLevels);
  auto ind = std::make_unique<Indirect>();
  ind->bps.resize(kFanout);
  ind->bps[0] = top_;
  ind->dirty = true;
  cache_.emplace(Key{nlevels_, 0}, std::move(ind));
  if (nlevels_ == 1) cached_l1_++;
  top_ = BlockPtr{};
  nlevels_++;
}

void BlockTree::Account(const BlockPtr& old, const BlockPtr& bp) {
  if (!old.IsHole()) {
    used_ -= old.allocated();
    if (counter_ != nullptr) counter_->Add(old, -1);
  }
  if (!bp.IsHole()) {
    used_ += bp.allocated();
    if (counter_ != nullptr) counter_->Add(bp, +1);
  }
}

void BlockTree::MarkPath(uint64_t blkid) {
  for (uint8_t level = 1; level < nlevels_; level++) {
    auto it = cache_.find({level, blkid >> (kIndirectShift * level)});
    POOLFS_CHECK(it != cache_.end());  // Slot() loaded the whole path
    it->second->dirty = true;
  }
}

Status BlockTree::Set(uint64_t blkid, const BlockPtr& bp, Txg txg) {
  while (blkid >= Capacity()) Grow();
  POOLFS_ASSIGN_OR_RETURN(BlockPtr * slot, Slot(0, blkid));
  BlockPtr old = *slot;
  bool in_place = !old.IsHole() && !bp.IsHole() && old.dva == bp.dva;
  if (!in_place && !old.IsHole()) POOLFS_RETURN_IF_ERROR(Drop(old, txg));
  Account(old, bp);
  *slot = bp;
  MarkPath(blkid);
  return Status::Ok();
}

Status BlockTree::FreeUnder(uint8_t level, uint64_t index, BlockPtr* slot, uint64_t first,
                            uint64_t end, Txg txg) {
  if (slot->IsHole()) return Status::Ok();
  if (level == 0) {
    POOLFS_RETURN_IF_ERROR(Drop(*slot, txg));
    Account(*slot, BlockPtr{});
    *slot = BlockPtr{};
    return Status::Ok();
  }
  POOLFS_ASSIGN_OR_RETURN(Indirect * ind, Load(level, index));
  const uint64_t child_span = Span(level - 1);
  const uint64_t base = index * Span(level);
  for (uint64_t c = 0; c < kFanout; c++) {
    uint64_t lo = base + c * child_span, hi = lo + child_span;
    if (hi <= first || lo >= end) continue;
    if (ind->bps[c].IsHole()) continue;
    POOLFS_RETURN_IF_ERROR(
        FreeUnder(level - 1, index * kFanout + c, &ind->bps[c], first, end, txg));
    ind->dirty = true;
  }
  return Status::Ok();
}

Status BlockTree::FreeRange(uint64_t first, uint64_t end, Txg txg) {
  if (first >= end || first >= Capacity()) return Status::Ok();
  return FreeUnder(nlevels_ - 1, 0, &top_, first, end, txg);
}

Result<BlockPtr> BlockTree::WriteBlock(zio::Zio* zio, const zio::WriteProps& props,
                                       std::string_view data, const BlockPtr& old, Txg txg,
                                       size_t allocator) {
  if (old.IsHole() || old.birth != txg) return zio->Write(props, data, txg, allocator);
  // A later pass of txg (the MOS sync). What this txg stored uncompressed
  // stays so: its stored size is its logical size, which never changes, so
  // it fits in place every time (a gang block too: the same pieces).
  zio::WriteProps as = props;
  if (old.compression == util::Compression::kOff) as.compression = util::Compression::kOff;
  Result<BlockPtr> r = zio->Rewrite(old, as, data, txg);
  if (r.ok() || !r.status().IsNoSpace()) return r;
  // It outgrew its extent: it moves once, stored uncompressed. A new extent
  // the size of its compressed bytes would be outgrown again by the next
  // few bytes, and each move changes a space map and defers a free into
  // the pool directory, which grows and may move in the next pass: a MOS
  // sync that converged only by luck (ZFS stops compressing in its late
  // sync passes for the same reason).
  as.compression = util::Compression::kOff;
  return zio->Write(as, data, txg, allocator);
}

Status BlockTree::WriteDirty(Txg txg, size_t allocator) {
  std::string buf;  // made on first use: most dnodes a txg syncs have no indirect block
  for (uint8_t level = 1; level < nlevels_; level++) {
    for (auto& [key, ind] : cache_) {
      if (key.first != level || !ind->dirty) continue;
      if (buf.empty()) buf.resize(IndirectBlockSize(zio_->format()));
      const uint64_t index = key.second;
      POOLFS_ASSIGN_OR_RETURN(BlockPtr * slot, Slot(level, index));
      BlockPtr old = *slot;
      uint64_t fill = 0;
      bool any = false;
      auto* p = reinterpret_cast<uint8_t*>(buf.data());
      for (uint64_t i = 0; i < kFanout; i++) {
        const BlockPtr& c = ind->bps[i];
        fill += c.fill;
        any |= !c.IsHole();
        zio::EncodeBlockPtr(c, p + i * zio::BlockPtrSize(zio_->format()), zio_->format());
      }
      BlockPtr bp;  // a hole when every child is one
      if (any) {
        zio::WriteProps props{zio::BlockType::kIndirect, level, util::Compression::kLz4, fill,
                              copies_ ? copies_->metadata() : uint8_t{1}};
        POOLFS_ASSIGN_OR_RETURN(bp, WriteBlock(zio_, props, buf, old, txg, allocator));
      }
      bool in_place = !old.IsHole() && !bp.IsHole() && old.dva == bp.dva;
      if (!in_place && !old.IsHole()) POOLFS_RETURN_IF_ERROR(Drop(old, txg));
      Account(old, bp);
      *slot = bp;
      ind->dirty = false;
      if (level + 1 < nlevels_)
        cache_.at({uint8_t(level + 1), index >> kIndirectShift})->dirty = true;
    }
  }
  return Status::Ok();
}

}  // namespace poolfs::core::dmu
