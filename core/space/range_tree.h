// RangeTree: a set of disjoint byte ranges (free space, frees to defer,
// object ids to hand out) kept as segments inline in B-trees.
//
// Theory
// ------
// A range tree covers [base, base + size) in units of 1 << shift bytes (the
// sector size for a metaslab; 1 for object ids). A segment is [start, end)
// in units relative to base: two 32-bit numbers (Seg32, 8 bytes) when the
// whole range fits in 2^32 units, two 64-bit numbers (Seg64) otherwise — the
// owner picks the form (RangeTree32 / RangeTree64), and RangeTree32 refuses
// a range that does not fit.
//
// Two trees index the same segments:
//   - by offset, always: segments never overlap and never touch (adding a
//     range next to a segment merges into it), so "a.end <= b.start" is a
//     strict order, and a query range compares equal to every segment it
//     overlaps;
//   - by (size, start), optional: the allocator's fallback when first fit
//     fails. Segments smaller than the size floor (alloc.size_tree_floor,
//     16 KiB by default) are left out, because most of a fragmented
//     metaslab's segments are small and no allocation large enough to need
//     the size tree can use them. When the size tree runs dry while free
//     space remains, it is rebuilt without the floor, which stays off until
//     the next Vacate.
// Both are BTrees with 4 KiB leaves: about 8 bytes per segment per tree at
// full fill, ~10.7 at the 3/4 fill a bulk load leaves. A load (BeginLoad /
// EndLoad) appends segments in offset order and builds the size tree once,
// sorted, at the end.
//
// The tree also keeps the total space and a histogram of segment sizes
// (bucket i counts segments of [2^i, 2^(i+1)) bytes).
//
// Thread safety: none; the owner locks (a metaslab's mutex).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "poolfs/status.h"
#include "space/btree.h"
#include "util/check.h"

namespace poolfs::core::space {

struct Seg32 {
  uint32_t start;
  uint32_t end;
};
struct Seg64 {
  uint64_t start;
  uint64_t end;
};
static_assert(sizeof(Seg32) == 8 && sizeof(Seg64) == 16);

// A range in absolute bytes.
struct Range {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t end() const { return offset + length; }
  bool operator==(const Range&) const = default;
};

// Sorts segments that are in offset order into (length, start) order: a
// stable LSD radix sort on the length, 11 bits a pass, only as many passes as
// the longest length needs. Used to build size indexes in one pass.
template <typename S>
void SortByLength(std::vector<S>* segs) {
  uint64_t max_len = 0;
  for (const S& s : *segs) max_len = std::max<uint64_t>(max_len, s.end - s.start);
  std::vector<S> tmp(segs->size());
  for (int shift = 0; shift < 64 && (max_len >> shift) != 0; shift += 11) {
    std::array<size_t, 2049> count{};
    for (const S& s : *segs) count[((uint64_t(s.end - s.start) >> shift) & 2047) + 1]++;
    for (size_t i = 1; i < count.size(); i++) count[i] += count[i - 1];
    for (const S& s : *segs) tmp[count[(uint64_t(s.end - s.start) >> shift) & 2047]++] = s;
    segs->swap(tmp);
  }
}

template <typename Seg>
class BasicRangeTree {
 public:
  using Unit = decltype(Seg::start);

  // Segments inside [base, base + size), in units of 1 << shift bytes.
  // `size_floor` (bytes) leaves smaller segments out of the size tree;
  // `by_size` false keeps no size tree at all (defer and txg trees).
  BasicRangeTree(uint64_t base, uint64_t size, uint32_t shift, uint64_t size_floor, bool by_size)
      : base_(base), size_(size), shift_(shift), by_size_(by_size) {
    POOLFS_CHECK_EQ(base & Mask(), 0u);
    POOLFS_CHECK_EQ(size & Mask(), 0u);
    POOLFS_CHECK_LE(size >> shift, uint64_t(std::numeric_limits<Unit>::max()));
    floor_units_ = Unit((size_floor + Mask()) >> shift);
    floor_active_ = floor_units_ > 0;
  }

  uint64_t base() const { return base_; }
  uint64_t range_size() const { return size_; }
  uint32_t shift() const { return shift_; }
  // Total bytes in all segments.
  uint64_t space() const { return space_; }
  size_t segment_count() const { return by_offset_.size(); }
  size_t size_tree_count() const { return by_size_tree_.size(); }
  bool size_floor_active() const { return floor_active_; }
  const std::array<uint64_t, 64>& histogram() const { return hist_; }
  // Bytes of B-tree nodes held by both trees.
  size_t memory_bytes() const { return by_offset_.memory_bytes() + by_size_tree_.memory_bytes(); }

  // Adds [off, off+len), merging with touching segments. The range must not
  // overlap any segment: a CHECK, since that is a double free.
  void Add(uint64_t off, uint64_t len) {
    Status st = TryAdd(off, len);
    if (!st.ok()) util::CheckFailed(__FILE__, __LINE__, st.ToString());
  }
  // As Add, but an overlap or a range outside the tree is a Corruption
  // (for replaying on-disk space maps).
  Status TryAdd(uint64_t off, uint64_t len);

  // Removes [off, off+len), which must lie inside one segment (CHECK).
  void Remove(uint64_t off, uint64_t len) {
    Status st = TryRemove(off, len);
    if (!st.ok()) util::CheckFailed(__FILE__, __LINE__, st.ToString());
  }
  // As Remove, but a range that is not wholly present is a Corruption.
  Status TryRemove(uint64_t off, uint64_t len);

  // True when [off, off+len) lies wholly inside one segment.
  bool Contains(uint64_t off, uint64_t len) const {
    auto it = by_offset_.find(Key(off, len));
    return it != by_offset_.end() && it->start <= ToUnit(off) && it->end >= ToUnit(off + len);
  }
  // The first segment overlapping [off, off+len), if any.
  std::optional<Range> FindOverlap(uint64_t off, uint64_t len) const {
    auto it = by_offset_.lower_bound(Key(off, len));
    if (it == by_offset_.end() || it->start >= ToUnit(off + len)) return std::nullopt;
    return ToRange(*it);
  }

  // Calls fn(offset, length) for every segment in offset order.
  template <typename F>
  void ForEach(F&& fn) const {
    for (auto it = by_offset_.begin(); it != by_offset_.end(); ++it) fn(ToRange(*it));
  }
  // Walks segments in offset order from the first one that ends after
  // `off`; fn(Range) returns false to stop.
  template <typename F>
  void WalkFrom(uint64_t off, F&& fn) const {
    if (off >= base_ + size_) return;
    Unit u = off <= base_ ? 0 : ToUnit(off);
    for (auto it = by_offset_.lower_bound(Seg{u, Unit(u + 1)}); it != by_offset_.end(); ++it)
      if (!fn(ToRange(*it))) return;
  }
  // Walks the size tree from the smallest segment of at least `min_len`
  // bytes upwards; fn(Range) returns false to stop. When the size tree is
  // empty but space remains, it is first rebuilt without the floor.
  template <typename F>
  void WalkBySize(uint64_t min_len, F&& fn) {
    POOLFS_CHECK(by_size_);
    if (by_size_tree_.empty() && space_ > 0 && floor_active_) {
      floor_active_ = false;
      RebuildSizeTree();
    }
    Unit want = Unit(std::min<uint64_t>((min_len + Mask()) >> shift_, std::numeric_limits<Unit>::max()));
    for (auto it = by_size_tree_.lower_bound(Seg{0, want}); it != by_size_tree_.end(); ++it)
      if (!fn(ToRange(*it))) return;
  }
  // Length of the largest segment in the size index (0 when it is empty:
  // then every segment is below the floor, or there are none).
  uint64_t LargestIndexed() const {
    return by_size_tree_.empty() ? 0 : ToRange(*by_size_tree_.last()).length;
  }
  // The largest segment, if any (from the size tree when there is one).
  std::optional<Range> Largest() const;

  // Empties the tree, calling fn(Range) for each segment in offset order,
  // and turns the size floor back on.
  template <typename F>
  void Vacate(F&& fn) {
    ForEach(fn);
    Clear();
  }
  void Clear() {
    by_offset_.Clear();
    by_size_tree_.Clear();
    space_ = 0;
    hist_.fill(0);
    floor_active_ = floor_units_ > 0;
    loading_ = false;
  }

  // Between BeginLoad and EndLoad the size tree is not maintained; EndLoad
  // builds it in one sorted pass. For loading a space map.
  void BeginLoad() { loading_ = true; }
  void EndLoad() {
    loading_ = false;
    by_offset_.FinishBulk();
    if (by_size_) RebuildSizeTree();
  }

  // Checks both trees against each other, the space total and the
  // histogram. Returns Corruption naming the first disagreement.
  Status Verify() const;

 private:
  struct OffsetLess {
    bool operator()(const Seg& a, const Seg& b) const { return a.end <= b.start; }
  };
  struct SizeLess {
    bool operator()(const Seg& a, const Seg& b) const {
      Unit sa = a.end - a.start, sb = b.end - b.start;
      return sa != sb ? sa < sb : a.start < b.start;
    }
  };

  uint64_t Mask() const { return (uint64_t{1} << shift_) - 1; }
  Unit ToUnit(uint64_t off) const { return Unit((off - base_) >> shift_); }
  Seg Key(uint64_t off, uint64_t len) const { return Seg{ToUnit(off), ToUnit(off + len)}; }
  Range ToRange(const Seg& s) const {
    return Range{base_ + (uint64_t(s.start) << shift_), uint64_t(s.end - s.start) << shift_};
  }
  bool InSizeTree(const Seg& s) const {
    return by_size_ && !loading_ && (!floor_active_ || Unit(s.end - s.start) >= floor_units_);
  }
  void Account(const Seg& s, bool add) {
    uint64_t bytes = uint64_t(s.end - s.start) << shift_;
    int bucket = 63 - __builtin_clzll(bytes);
    if (add) {
      space_ += bytes;
      hist_[bucket]++;
      if (InSizeTree(s)) by_size_tree_.Insert(s);
    } else {
      space_ -= bytes;
      hist_[bucket]--;
      if (InSizeTree(s)) POOLFS_CHECK(by_size_tree_.Remove(s));
    }
  }
  Status CheckBounds(uint64_t off, uint64_t len, const char* what) const;
  void RebuildSizeTree();

  uint64_t base_;
  uint64_t size_;
  uint32_t shift_;
  bool by_size_;
  Unit floor_units_ = 0;
  bool floor_active_ = true;
  bool loading_ = false;
  uint64_t space_ = 0;
  std::array<uint64_t, 64> hist_{};
  BTree<Seg, OffsetLess> by_offset_;
  BTree<Seg, SizeLess> by_size_tree_;
};

using RangeTree32 = BasicRangeTree<Seg32>;
using RangeTree64 = BasicRangeTree<Seg64>;
extern template class BasicRangeTree<Seg32>;
extern template class BasicRangeTree<Seg64>;

}  // namespace poolfs::core::space
