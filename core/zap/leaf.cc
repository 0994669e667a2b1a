#include "zap/leaf.h"

#include <cstring>

#include "util/check.h"
#include "util/endian.h"

namespace poolfs::core::zap {

using util::PutLE16;
using util::PutLE64;

Leaf::Leaf(const BlockContext& ctx, uint64_t block, uint64_t prefix, uint8_t depth)
    : ctx_(ctx),
      block_(block),
      prefix_(prefix),
      depth_(depth),
      heap_(ctx.block_size),
      buf_(std::string(ctx.block_size, '\0')) {
  POOLFS_DCHECK(depth <= kMaxDepth);
}

Result<Leaf> Leaf::Decode(std::string bytes, const BlockContext& ctx, uint64_t block) {
  POOLFS_RETURN_IF_ERROR(CheckBlock(bytes, ctx, block, kLeafMagic, "leaf"));
  auto bad = [&](const std::string& what) {
    return Status::Corruption(ctx.Where(block, "leaf") + ": " + what);
  };
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint32_t bs = ctx.block_size;
  uint64_t object = LoadLE64(p + offsetof(LeafHeaderPhys, object));
  if (object != ctx.object) return bad("belongs to object " + std::to_string(object));
  uint64_t stored_block = LoadLE64(p + offsetof(LeafHeaderPhys, block));
  if (stored_block != block) return bad("says it is block " + std::to_string(stored_block));
  Leaf l;
  l.ctx_ = ctx;
  l.block_ = block;
  l.depth_ = p[offsetof(LeafHeaderPhys, depth)];
  l.prefix_ = LoadLE64(p + offsetof(LeafHeaderPhys, prefix));
  if (l.depth_ > kMaxDepth) return bad("depth " + std::to_string(l.depth_) + " past 26");
  if ((l.prefix_ >> l.depth_) != 0)
    return bad("prefix " + std::to_string(l.prefix_) + " wider than its depth " +
               std::to_string(l.depth_));
  if (p[offsetof(LeafHeaderPhys, reserved0)] != 0 ||
      LoadLE16(p + offsetof(LeafHeaderPhys, reserved1)) != 0)
    return bad("nonzero reserved field");
  for (size_t i = offsetof(LeafHeaderPhys, reserved2); i < kLeafHeaderSize; i++)
    if (p[i] != 0) return bad("nonzero reserved field");
  l.count_ = LoadLE16(p + offsetof(LeafHeaderPhys, count));
  l.heap_ = LoadLE16(p + offsetof(LeafHeaderPhys, heap));
  if (kLeafHeaderSize + 2 * size_t{l.count_} > l.heap_ || l.heap_ > bs)
    return bad(std::to_string(l.count_) + " slots and a heap at " + std::to_string(l.heap_) +
               " do not fit");
  const int shift = kHashBits - l.depth_;
  uint64_t prev = 0;
  uint32_t live = 0;
  auto bad_entry = [&](uint32_t i, const std::string& what) {
    return bad("entry " + std::to_string(i) + " " + what);
  };
  for (uint32_t i = 0; i < l.count_; i++) {
    uint32_t off = LoadLE16(p + kLeafHeaderSize + 2 * i);
    if (off < l.heap_ || off + kLeafEntryFixed > bs)
      return bad_entry(i, "at " + std::to_string(off) + " is outside the heap");
    uint32_t len = p[off + 24];
    if (len == 0) return bad_entry(i, "has an empty name");
    if (off + LeafEntrySize(len) > bs) return bad_entry(i, "runs past the block");
    uint64_t key = LoadLE64(p + off);
    if (key >= kKeyLimit) return bad_entry(i, "has a key past 2^62");
    if (i > 0 && key <= prev) return bad_entry(i, "is out of key order");
    if (l.depth_ > 0 && (KeyHash(key) >> shift) != l.prefix_)
      return bad_entry(i, "has a hash outside the leaf's prefix");
    if (ctx.directory &&
        BadDirectoryName({reinterpret_cast<const char*>(p + off + kLeafEntryFixed), len}))
      return bad_entry(i, "has a name with '/' or NUL in a directory");
    prev = key;
    live += uint32_t(LeafEntrySize(len));
  }
  if (live > bs - l.heap_) return bad("entries overlap (they fill more than the heap)");
  l.live_bytes_ = live;
  l.buf_ = dmu::SharedBlock(std::move(bytes));
  return l;
}

uint32_t Leaf::SlotOffset(uint32_t i) const {
  POOLFS_DCHECK(i < count_);
  return LoadLE16(bytes() + kLeafHeaderSize + 2 * i);
}

uint32_t Leaf::EntrySizeAt(uint32_t offset) const {
  return uint32_t(LeafEntrySize(bytes()[offset + 24]));
}

uint64_t Leaf::KeyAt(uint32_t i) const { return LoadLE64(bytes() + SlotOffset(i)); }

std::string_view Leaf::NameAt(uint32_t i) const {
  uint32_t off = SlotOffset(i);
  return {buf_.data() + off + kLeafEntryFixed, bytes()[off + 24]};
}

Value Leaf::ValueAt(uint32_t i) const {
  const uint8_t* e = bytes() + SlotOffset(i);
  return Value{LoadLE64(e + 8), LoadLE64(e + 16)};
}

uint32_t Leaf::LowerBound(uint64_t key) const {
  // The bytes' address once: KeyAt would load it through the shared
  // buffer at every step.
  const uint8_t* p = bytes();
  auto key_at = [p](uint32_t i) { return LoadLE64(p + LoadLE16(p + kLeafHeaderSize + 2 * i)); };
  // The answer lies in [lo, hi], and every key in [lo, hi) lies in
  // [lo_key, hi_key): the prefix gives the first bounds without a load.
  uint32_t lo = 0, hi = count_;
  const int shift = kHashBits + kCdBits - depth_;
  uint64_t lo_key = prefix_ << shift, hi_key = (prefix_ + 1) << shift;
  // Keys are hashes, spread evenly over the prefix's range: a probe where
  // `key` would fall in an even spread leaves a run of a few entries (a
  // binary search's probe halves it). Each probe is two cache misses (the
  // slot, then the entry) in a leaf the thread has not touched lately, the
  // usual case of a create: up to kInterpolationProbes of them, then the
  // binary search, so that keys bunched on purpose cost no more than
  // kInterpolationProbes probes extra.
  for (int probe = 0; probe < kInterpolationProbes && hi - lo > 8; probe++) {
    if (key <= lo_key) return lo;
    if (key >= hi_key) return hi;
    const uint32_t mid =
        lo + uint32_t(static_cast<unsigned __int128>(key - lo_key) * (hi - lo) / (hi_key - lo_key));
    const uint64_t k = key_at(mid);
    if (k < key) {
      lo = mid + 1;
      lo_key = k + 1;
    } else {
      hi = mid;
      hi_key = k;
    }
  }
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (key_at(mid) < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

uint32_t Leaf::Find(uint64_t h, std::string_view name, uint32_t* free_cd) const {
  uint32_t found = count_, cd = 0;
  for (uint32_t i = LowerBound(MakeKey(h, 0)); i < count_; i++) {
    uint64_t key = KeyAt(i);
    if (KeyHash(key) != h) break;
    // Keys with one h come in cd order: the first gap is the smallest free cd.
    if (KeyCd(key) == cd) cd++;
    if (found == count_ && NameAt(i) == name) {
      found = i;
      if (!free_cd) break;
    }
  }
  if (free_cd) *free_cd = cd;
  return found;
}

bool Leaf::Fits(size_t name_len) const {
  return size_t{Gap()} + Holes() >= LeafEntrySize(name_len) + 2;
}

void Leaf::Compact() {
  std::string nb(buf_.size(), '\0');
  auto* q = reinterpret_cast<uint8_t*>(nb.data());
  uint32_t h = uint32_t(nb.size());
  for (uint32_t i = 0; i < count_; i++) {
    uint32_t off = SlotOffset(i), size = EntrySizeAt(off);
    h -= size;
    std::memcpy(q + h, bytes() + off, size);
    PutLE16(q + kLeafHeaderSize + 2 * i, uint16_t(h));
  }
  heap_ = h;
  buf_.Reset(std::move(nb));
}

void Leaf::Insert(uint64_t key, std::string_view name, const Value& v) {
  POOLFS_DCHECK(key < kKeyLimit && !name.empty() && name.size() <= kMaxNameLen);
  POOLFS_DCHECK(depth_ == 0 || (KeyHash(key) >> (kHashBits - depth_)) == prefix_);
  const uint32_t size = uint32_t(LeafEntrySize(name.size()));
  if (Gap() < size + 2) Compact();
  POOLFS_CHECK_GE(Gap(), size + 2);
  heap_ -= size;
  uint8_t* e = bytes() + heap_;
  PutLE64(e, key);
  PutLE64(e + 8, v.object);
  PutLE64(e + 16, v.attrs);
  e[24] = uint8_t(name.size());
  std::memcpy(e + kLeafEntryFixed, name.data(), name.size());
  uint32_t pos = LowerBound(key);
  POOLFS_DCHECK(pos == count_ || KeyAt(pos) != key);
  uint8_t* slots = bytes() + kLeafHeaderSize;
  std::memmove(slots + 2 * (pos + 1), slots + 2 * pos, 2 * size_t{count_ - pos});
  PutLE16(slots + 2 * pos, uint16_t(heap_));
  count_++;
  live_bytes_ += size;
}

void Leaf::Append(uint64_t key, std::string_view name, const Value& v) {
  POOLFS_DCHECK(count_ == 0 || KeyAt(count_ - 1) < key);
  Insert(key, name, v);  // LowerBound finds the end at once
}

void Leaf::Erase(uint32_t slot) {
  POOLFS_CHECK_LT(slot, count_);
  uint32_t off = SlotOffset(slot), size = EntrySizeAt(off);
  std::memset(bytes() + off, 0, size);
  uint8_t* slots = bytes() + kLeafHeaderSize;
  std::memmove(slots + 2 * slot, slots + 2 * (slot + 1), 2 * size_t{count_ - slot - 1});
  count_--;
  PutLE16(slots + 2 * count_, 0);
  live_bytes_ -= size;
  if (count_ == 0) heap_ = uint32_t(buf_.size());
}

void Leaf::SetValue(uint32_t slot, const Value& v) {
  uint8_t* e = bytes() + SlotOffset(slot);
  PutLE64(e + 8, v.object);
  PutLE64(e + 16, v.attrs);
}

Leaf Leaf::SplitOff(uint64_t new_block) {
  POOLFS_CHECK_LT(depth_, kMaxDepth);
  const uint8_t d = uint8_t(depth_ + 1);
  Leaf lo(ctx_, block_, prefix_ << 1, d), hi(ctx_, new_block, (prefix_ << 1) | 1, d);
  const int shift = kHashBits - d;
  for (uint32_t i = 0; i < count_; i++) {
    uint64_t key = KeyAt(i);
    ((KeyHash(key) >> shift) & 1 ? hi : lo).Append(key, NameAt(i), ValueAt(i));
  }
  *this = std::move(lo);
  return hi;
}

dmu::SharedBlock& Leaf::Encoded() {
  uint8_t* p = bytes();
  std::memset(p, 0, kLeafHeaderSize);
  PutLE64(p + offsetof(LeafHeaderPhys, magic), kLeafMagic);
  PutLE64(p + offsetof(LeafHeaderPhys, object), ctx_.object);
  PutLE64(p + offsetof(LeafHeaderPhys, block), block_);
  PutLE64(p + offsetof(LeafHeaderPhys, prefix), prefix_);
  p[offsetof(LeafHeaderPhys, depth)] = depth_;
  PutLE16(p + offsetof(LeafHeaderPhys, count), uint16_t(count_));
  PutLE16(p + offsetof(LeafHeaderPhys, heap), uint16_t(heap_));
  return buf_;
}

}  // namespace poolfs::core::zap
