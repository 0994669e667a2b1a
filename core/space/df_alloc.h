// The "dynamic fit" block picker: first fit from a cursor, bounded, then
// best fit from the size index.
//
// A block of `size` bytes is aligned to the largest power of two dividing
// its size (its natural alignment, counted from the metaslab's start), and each alignment has its
// own cursor: the end of the last block handed out with that alignment. The picker walks free
// segments in offset order from the cursor and takes the first one the aligned block fits in,
// giving up once it has looked at segments starting more than `max_search` bytes past the first one
// it looked at (and at least kMinSegments of them) — without that bound a fragmented metaslab costs
// 100,000+ steps. Then it asks the size index for the smallest segment of at
// least `size` bytes and walks up the sizes until one fits with its
// alignment. A metaslab that is nearly full or whose largest segment is small
// skips the cursor walk, where first fit would only waste time.
//
// The picker is a template over the tree so that the benchmark's baseline
// (two std::sets) runs exactly the same policy as RangeTree.
// Thread safety: the caller locks the tree.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "space/range_tree.h"

namespace poolfs::core::space {

struct DfPolicy {
  uint64_t max_search = uint64_t{16} << 20;  // alloc.df_max_search
  // Below either of these, go straight to the size index.
  uint64_t switch_largest_below = uint64_t{128} << 10;
  uint32_t switch_free_pct_below = 4;
  static constexpr uint32_t kMinSegments = 100;
};

using DfCursors = std::array<uint64_t, 64>;

// Returns the absolute offset of a free, naturally aligned block of `size`
// bytes in `tree` (which it does not modify: the caller removes the block);
// failing that, of any free run of `size` bytes; nullopt when no segment is
// long enough. `capacity` is the metaslab size, for
// the free-percentage switch. Updates the cursor for size's alignment.
template <typename Tree>
std::optional<uint64_t> DfPick(Tree& tree, uint64_t size, uint64_t capacity, DfCursors& cursors,
                               const DfPolicy& policy) {
  const uint64_t align = size & -size;
  const int bucket = 63 - __builtin_clzll(align);
  auto fits = [&](const Range& r, uint64_t* out) {
    // Aligned relative to the tree's base (a metaslab's start, itself aligned
    // to the metaslab size within the vdev's allocatable area).
    uint64_t start = tree.base() + ((r.offset - tree.base() + align - 1) & ~(align - 1));
    if (start + size > r.end()) return false;
    *out = start;
    return true;
  };
  std::optional<uint64_t> found;
  // With the size floor below the switch size, the size index's largest
  // segment is the metaslab's largest whenever that matters.
  const bool first_fit = tree.LargestIndexed() >= policy.switch_largest_below &&
                         tree.space() * 100 >= capacity * policy.switch_free_pct_below;
  if (first_fit) {
    uint64_t& cursor = cursors[bucket];
    uint64_t first = 0;
    uint32_t seen = 0;
    tree.WalkFrom(cursor, [&](const Range& r) {
      if (seen++ == 0) first = r.offset;
      uint64_t at;
      if (fits(r, &at)) {
        found = at;
        return false;
      }
      return seen < DfPolicy::kMinSegments || r.offset - first <= policy.max_search;
    });
    if (!found && cursor > tree.base()) {
      // Wrap once: the cursor only moves forward, so the space behind it is
      // reached by starting over from the front, with the same bound.
      seen = 0;
      tree.WalkFrom(tree.base(), [&](const Range& r) {
        if (seen++ == 0) first = r.offset;
        if (r.offset >= cursor) return false;
        uint64_t at;
        if (fits(r, &at)) {
          found = at;
          return false;
        }
        return seen < DfPolicy::kMinSegments || r.offset - first <= policy.max_search;
      });
    }
  }
  if (!found) {
    // The smallest segment long enough, should none have naturally aligned
    // room: any run of `size` bytes will do then (sector aligned, as every
    // segment is). Natural alignment is a preference for locality; without
    // this, a metaslab whose free space is plentiful but sprinkled with
    // small blocks refuses every large block (found by poolfs-stress: a txg
    // sync failed with NoSpace on a 256 MiB vdev 85% free, wanting 1 MiB).
    std::optional<uint64_t> any;
    tree.WalkBySize(size, [&](const Range& r) {
      if (!any) any = r.offset;
      uint64_t at;
      if (fits(r, &at)) {
        found = at;
        return false;
      }
      // A segment of size + align bytes always fits: no need to look further.
      return r.length < size + align;
    });
    if (!found) found = any;
  }
  if (found) cursors[bucket] = *found + size;
  return found;
}

}  // namespace poolfs::core::space
