#include "space/range_tree.h"

#include <algorithm>

namespace poolfs::core::space {

template <typename Seg>
Status BasicRangeTree<Seg>::CheckBounds(uint64_t off, uint64_t len, const char* what) const {
  auto where = [&] {
    return std::string(what) + " [" + std::to_string(off) + ", +" + std::to_string(len) + ")";
  };
  if (len == 0) return Status::Corruption(where() + ": empty range");
  if (((off | len) & Mask()) != 0)
    return Status::Corruption(where() + ": not aligned to " + std::to_string(Mask() + 1));
  if (off < base_ || off + len < off || off + len > base_ + size_)
    return Status::Corruption(where() + ": outside [" + std::to_string(base_) + ", " +
                              std::to_string(base_ + size_) + ")");
  return Status::Ok();
}

template <typename Seg>
Status BasicRangeTree<Seg>::TryAdd(uint64_t off, uint64_t len) {
  POOLFS_RETURN_IF_ERROR(CheckBounds(off, len, "add"));
  const Seg key = Key(off, len);
  if (!by_offset_.empty()) {
    // Past the last segment: a load, and many frees, land there. No search.
    auto last = by_offset_.last();
    if (key.start > last->end) {
      by_offset_.BulkAppend(key);
      Account(key, true);
      return Status::Ok();
    }
    if (key.start == last->end) {
      Seg old = *last;
      Account(old, false);
      Seg merged{old.start, key.end};
      by_offset_.MutableAt(last) = merged;
      Account(merged, true);
      return Status::Ok();
    }
  }
  auto it = by_offset_.lower_bound(key);  // first segment ending after key.start
  if (it != by_offset_.end() && it->start < key.end) {
    Range r = ToRange(*it);
    return Status::Corruption("add [" + std::to_string(off) + ", +" + std::to_string(len) +
                              ") overlaps free segment [" + std::to_string(r.offset) + ", +" +
                              std::to_string(r.length) + ")");
  }
  bool merge_right = it != by_offset_.end() && it->start == key.end;
  auto prev = it;
  bool merge_left = false;
  if (it != by_offset_.begin()) {
    --prev;
    merge_left = prev->end == key.start;
  }
  if (merge_left && merge_right) {
    Seg left = *prev, right = *it;
    Account(left, false);
    Account(right, false);
    by_offset_.Erase(it);
    Seg merged{left.start, right.end};
    by_offset_.MutableAt(by_offset_.find(left)) = merged;
    Account(merged, true);
  } else if (merge_left) {
    Seg left = *prev;
    Account(left, false);
    Seg merged{left.start, key.end};
    by_offset_.MutableAt(prev) = merged;
    Account(merged, true);
  } else if (merge_right) {
    Seg right = *it;
    Account(right, false);
    Seg merged{key.start, right.end};
    by_offset_.MutableAt(it) = merged;
    Account(merged, true);
  } else {
    if (it == by_offset_.end())
      by_offset_.BulkAppend(key);  // loads and most frees land past the end
    else
      by_offset_.Insert(key);
    Account(key, true);
  }
  return Status::Ok();
}

template <typename Seg>
Status BasicRangeTree<Seg>::TryRemove(uint64_t off, uint64_t len) {
  POOLFS_RETURN_IF_ERROR(CheckBounds(off, len, "remove"));
  const Seg key = Key(off, len);
  auto it = by_offset_.find(key);
  if (it == by_offset_.end() || it->start > key.start || it->end < key.end)
    return Status::Corruption("remove [" + std::to_string(off) + ", +" + std::to_string(len) +
                              "): range is not wholly in the tree");
  const Seg s = *it;
  Account(s, false);
  if (s.start == key.start && s.end == key.end) {
    by_offset_.Erase(it);
  } else if (s.start == key.start) {
    Seg rest{key.end, s.end};
    by_offset_.MutableAt(it) = rest;
    Account(rest, true);
  } else if (s.end == key.end) {
    Seg rest{s.start, key.start};
    by_offset_.MutableAt(it) = rest;
    Account(rest, true);
  } else {
    Seg left{s.start, key.start}, right{key.end, s.end};
    by_offset_.MutableAt(it) = left;
    by_offset_.Insert(right);
    Account(left, true);
    Account(right, true);
  }
  return Status::Ok();
}

template <typename Seg>
std::optional<Range> BasicRangeTree<Seg>::Largest() const {
  if (by_size_ && !loading_ && !by_size_tree_.empty()) return ToRange(*by_size_tree_.last());
  std::optional<Range> best;
  ForEach([&](const Range& r) {
    if (!best || r.length > best->length) best = r;
  });
  return best;
}

template <typename Seg>
void BasicRangeTree<Seg>::RebuildSizeTree() {
  by_size_tree_.Clear();
  std::vector<Seg> segs;
  segs.reserve(by_offset_.size());
  for (auto it = by_offset_.begin(); it != by_offset_.end(); ++it)
    if (InSizeTree(*it)) segs.push_back(*it);
  SortByLength(&segs);
  for (const Seg& s : segs) by_size_tree_.BulkAppend(s);
  by_size_tree_.FinishBulk();
}

template <typename Seg>
Status BasicRangeTree<Seg>::Verify() const {
  POOLFS_RETURN_IF_ERROR(by_offset_.Verify().WithContext("range tree offset index"));
  POOLFS_RETURN_IF_ERROR(by_size_tree_.Verify().WithContext("range tree size index"));
  uint64_t space = 0;
  size_t sized = 0;
  std::array<uint64_t, 64> hist{};
  bool have_prev = false;
  Unit prev_end = 0;
  const uint64_t limit = size_ >> shift_;
  for (auto it = by_offset_.begin(); it != by_offset_.end(); ++it) {
    const Seg& s = *it;
    Range r = ToRange(s);
    std::string where = "range tree segment [" + std::to_string(r.offset) + ", +" +
                        std::to_string(r.length) + "): ";
    if (s.start >= s.end) return Status::Corruption(where + "empty or inverted");
    if (s.end > limit) return Status::Corruption(where + "past the end of the range");
    if (have_prev && prev_end >= s.start)
      return Status::Corruption(where + "touches or overlaps the previous segment");
    have_prev = true;
    prev_end = s.end;
    space += r.length;
    hist[63 - __builtin_clzll(r.length)]++;
    if (InSizeTree(s)) {
      sized++;
      auto f = by_size_tree_.find(s);
      if (f == by_size_tree_.end() || f->start != s.start || f->end != s.end)
        return Status::Corruption(where + "missing from the size index");
    }
  }
  if (space != space_)
    return Status::Corruption("range tree: segments hold " + std::to_string(space) +
                              " bytes, total says " + std::to_string(space_));
  if (hist != hist_) return Status::Corruption("range tree: histogram disagrees with segments");
  if (!loading_ && sized != by_size_tree_.size())
    return Status::Corruption("range tree: size index holds " +
                              std::to_string(by_size_tree_.size()) + " segments, expected " +
                              std::to_string(sized));
  return Status::Ok();
}

template class BasicRangeTree<Seg32>;
template class BasicRangeTree<Seg64>;

}  // namespace poolfs::core::space
