// poolfs-bench space: RangeTree (segments inline in B-trees) against a
// baseline of two std::sets of 16-byte segments (one heap node per segment,
// the cost of an AVL or red-black tree), on the same fragmented metaslab.
//
// A seeded workload lays blocks of 4 KiB–128 KiB end to end and frees each
// with probability 1/2 until the metaslab has the requested number of free
// segments; its condensed space map is what both trees load. Then both run the
// same seeded sequence of allocations (the dynamic-fit picker of df_alloc.h)
// and frees. Memory is the heap bytes the trees hold after the load, counted
// by the counting allocator; times are medians of several runs.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench_util.h"
#include "space/df_alloc.h"
#include "space/range_tree.h"
#include "space/space_map.h"
#include "util/check.h"

namespace poolfs::bench {
namespace {

using core::space::DfCursors;
using core::space::DfPick;
using core::space::DfPolicy;
using core::space::Range;
using core::space::RangeTree32;
using core::space::SmEntry;
using core::space::SmType;
using core::space::SpaceMapGeometry;

constexpr uint64_t kStart = 4 << 20;
constexpr uint64_t kSize = uint64_t{1} << 40;
constexpr uint32_t kShift = 12;

// The baseline: offset- and size-sorted std::sets of 16-byte segments, with
// the same operations and merge rules as RangeTree (no size floor: the old
// AVL range tree indexed every segment by size).
class SetRangeTree {
 public:
  explicit SetRangeTree(uint64_t base) : base_(base) {}
  uint64_t base() const { return base_; }
  uint64_t space() const { return space_; }
  size_t segment_count() const { return by_offset_.size(); }
  size_t size_tree_count() const { return by_size_.size(); }
  uint64_t LargestIndexed() const {
    return by_size_.empty() ? 0 : by_size_.rbegin()->end - by_size_.rbegin()->start;
  }
  void BeginLoad() { loading_ = true; }
  void EndLoad() {
    loading_ = false;
    std::vector<Seg> v(by_offset_.begin(), by_offset_.end());
    core::space::SortByLength(&v);  // the same one-pass build as RangeTree
    for (const Seg& s : v) by_size_.insert(by_size_.end(), s);
  }
  template <typename F>
  void WalkFrom(uint64_t off, F&& fn) const {
    for (auto it = by_offset_.lower_bound(Seg{off, off + 1}); it != by_offset_.end(); ++it)
      if (!fn(Range{it->start, it->end - it->start})) return;
  }
  template <typename F>
  void WalkBySize(uint64_t min_len, F&& fn) const {
    for (auto it = by_size_.lower_bound(Seg{0, min_len}); it != by_size_.end(); ++it)
      if (!fn(Range{it->start, it->end - it->start})) return;
  }
  bool TryAdd(uint64_t off, uint64_t len) {
    Seg key{off, off + len};
    if (!by_offset_.empty()) {  // the same no-search path past the end as RangeTree
      auto last = std::prev(by_offset_.end());
      if (key.start > last->end) {
        Size(*by_offset_.insert(by_offset_.end(), key));
        space_ += len;
        return true;
      }
      if (key.start == last->end) {
        Unsize(*last);
        last->end = key.end;
        Size(*last);
        space_ += len;
        return true;
      }
    }
    auto it = by_offset_.lower_bound(key);
    if (it != by_offset_.end() && it->start < key.end) return false;
    bool right = it != by_offset_.end() && it->start == key.end;
    auto prev = it;
    bool left = it != by_offset_.begin() && (--prev)->end == key.start;
    if (left && right) {
      Unsize(*prev);
      Unsize(*it);
      prev->end = it->end;
      by_offset_.erase(it);
      Size(*prev);
    } else if (left) {
      Unsize(*prev);
      prev->end = key.end;
      Size(*prev);
    } else if (right) {
      Unsize(*it);
      it->start = key.start;
      Size(*it);
    } else {
      Size(*by_offset_.insert(it, key));
    }
    space_ += len;
    return true;
  }
  bool TryRemove(uint64_t off, uint64_t len) {
    Seg key{off, off + len};
    auto it = by_offset_.find(key);
    if (it == by_offset_.end() || it->start > key.start || it->end < key.end) return false;
    Unsize(*it);
    if (it->start == key.start && it->end == key.end) {
      by_offset_.erase(it);
    } else if (it->start == key.start) {
      it->start = key.end;
      Size(*it);
    } else if (it->end == key.end) {
      it->end = key.start;
      Size(*it);
    } else {
      Seg right{key.end, it->end};
      it->end = key.start;
      Size(*it);
      Size(*by_offset_.insert(std::next(it), right));
    }
    space_ -= len;
    return true;
  }

 private:
  struct Seg {
    mutable uint64_t start;  // mutable: changed in place where order allows, as an AVL tree does
    mutable uint64_t end;
  };
  struct OffsetLess {
    bool operator()(const Seg& a, const Seg& b) const { return a.end <= b.start; }
  };
  struct SizeLess {
    bool operator()(const Seg& a, const Seg& b) const {
      uint64_t sa = a.end - a.start, sb = b.end - b.start;
      return sa != sb ? sa < sb : a.start < b.start;
    }
  };
  void Size(const Seg& s) {
    if (!loading_) by_size_.insert(s);
  }
  void Unsize(const Seg& s) {
    if (!loading_) by_size_.erase(s);
  }
  uint64_t base_;
  uint64_t space_ = 0;
  bool loading_ = false;
  std::set<Seg, OffsetLess> by_offset_;
  std::set<Seg, SizeLess> by_size_;
};
static_assert(sizeof(uint64_t) * 2 == 16);

struct Workload {
  std::string space_map;
  std::vector<Range> live;  // allocated blocks, for the free half of the ops
  uint64_t free_segments = 0;
};

uint64_t BlockSize(std::mt19937_64& rng) {
  // 4 KiB << k, k geometric (p = 1/2) capped at 5: mostly small blocks, as
  // a metaslab holding metadata and small files sees.
  int k = 0;
  while (k < 5 && (rng() & 1)) k++;
  return uint64_t{4096} << k;
}

Workload MakeWorkload(uint64_t segments, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Workload w;
  std::vector<std::pair<uint64_t, uint64_t>> free_segs;
  uint64_t off = kStart;
  bool in_free = false;
  while (w.free_segments < segments) {
    uint64_t size = BlockSize(rng);
    POOLFS_CHECK_LE(off + size, kStart + kSize - (1 << 20));
    if (rng() & 1) {
      if (in_free)
        free_segs.back().second += size;
      else
        free_segs.emplace_back(off, size), w.free_segments++;
      in_free = true;
    } else {
      w.live.push_back({off, size});
      in_free = false;
    }
    off += size;
  }
  // The rest of the metaslab is one free segment after a last allocated block.
  w.live.push_back({off, 4096});
  free_segs.emplace_back(off + 4096, kStart + kSize - off - 4096);
  w.free_segments++;
  w.space_map = core::space::CondenseSpaceMap(SpaceMapGeometry{kStart, kSize, kShift}, Txg(1),
                                              free_segs);
  return w;
}

// Replays the space map into `tree`: fully free, then every record.
template <typename Tree>
void Load(Tree& tree, const std::string& map) {
  tree.BeginLoad();
  POOLFS_CHECK(tree.TryAdd(kStart, kSize));
  Status st = core::space::DecodeSpaceMap(
      map, SpaceMapGeometry{kStart, kSize, kShift}, [&](const SmEntry& e) {
        bool ok = e.type == SmType::kAlloc ? tree.TryRemove(e.offset, e.length)
                                           : tree.TryAdd(e.offset, e.length);
        return ok ? Status::Ok() : Status::Corruption("replay");
      });
  POOLFS_CHECK(st.ok());
  tree.EndLoad();
}

// A RangeTree32 with the bool-returning Try* of the baseline.
class BTreeRangeTree : public RangeTree32 {
 public:
  explicit BTreeRangeTree(uint64_t floor) : RangeTree32(kStart, kSize, kShift, floor, true) {}
  bool TryAdd(uint64_t off, uint64_t len) { return RangeTree32::TryAdd(off, len).ok(); }
  bool TryRemove(uint64_t off, uint64_t len) { return RangeTree32::TryRemove(off, len).ok(); }
};

struct OpsResult {
  double seconds = 0;
  uint64_t ops = 0;
  uint64_t digest = 0;  // of every offset handed out: both trees must agree
};

template <typename Tree>
OpsResult RunOps(Tree& tree, std::vector<Range> live, uint64_t ops, uint64_t seed) {
  std::mt19937_64 rng(seed);
  DfCursors cursors{};
  DfPolicy policy;
  OpsResult r;
  double t0 = NowSeconds();
  for (uint64_t i = 0; i < ops; i++) {
    if (rng() & 1) {
      uint64_t size = BlockSize(rng);
      auto off = DfPick(tree, size, kSize, cursors, policy);
      POOLFS_CHECK(off.has_value());
      POOLFS_CHECK(tree.TryRemove(*off, size));
      live.push_back({*off, size});
      r.digest = r.digest * 31 + *off;
    } else {
      size_t j = rng() % live.size();
      POOLFS_CHECK(tree.TryAdd(live[j].offset, live[j].length));
      live[j] = live.back();
      live.pop_back();
    }
  }
  r.seconds = NowSeconds() - t0;
  r.ops = ops;
  return r;
}

struct TreeFigures {
  double bytes_per_seg = 0;
  double load_s = 0;
  double ops_per_s = 0;
  uint64_t digest = 0;
  double indexed_share = 1;  // share of segments in the size index
};

template <typename MakeTree>
TreeFigures Measure(const Workload& w, MakeTree make, uint64_t ops, int runs) {
  TreeFigures f;
  std::vector<double> loads, rates;
  for (int run = 0; run < runs; run++) {
    uint64_t before = LiveHeapBytes();
    auto tree = make();
    double t0 = NowSeconds();
    Load(*tree, w.space_map);
    loads.push_back(NowSeconds() - t0);
    if (run == 0) {
      POOLFS_CHECK_EQ(tree->segment_count(), w.free_segments);
      f.bytes_per_seg = double(LiveHeapBytes() - before) / double(tree->segment_count());
      f.indexed_share = double(tree->size_tree_count()) / double(tree->segment_count());
    }
    OpsResult r = RunOps(*tree, w.live, ops, 99);
    rates.push_back(double(r.ops) / r.seconds);
    f.digest = r.digest;
  }
  f.load_s = Median(loads);
  f.ops_per_s = Median(rates);
  return f;
}

}  // namespace

int RunSpaceBench(int argc, char** argv) {
  CLI::App app("poolfs-bench space: RangeTree in B-trees vs two std::sets");
  uint64_t segments = 1000000, seed = 1, ops = 2000000;
  int runs = 3;
  bool json = false;
  app.add_option("--segments", segments, "free segments in the fragmented metaslab");
  app.add_option("--ops", ops, "allocate/free operations timed after the load");
  app.add_option("--runs", runs, "runs per tree (the median is reported)");
  app.add_option("--seed", seed, "workload seed");
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);

  Workload w = MakeWorkload(segments, seed);
  auto btree = [] { return std::make_unique<BTreeRangeTree>(0); };
  auto btree_floor = [] { return std::make_unique<BTreeRangeTree>(16384); };
  auto baseline = [] { return std::make_unique<SetRangeTree>(kStart); };
  TreeFigures b = Measure(w, btree, ops, runs);
  TreeFigures bf = Measure(w, btree_floor, ops, runs);
  TreeFigures s = Measure(w, baseline, ops, runs);
  POOLFS_CHECK_EQ(b.digest, s.digest);  // the same policy picked the same blocks
  POOLFS_CHECK_EQ(bf.digest, s.digest);

  double load_speedup = s.load_s / b.load_s;
  double ops_speedup = b.ops_per_s / s.ops_per_s;
  if (json) {
    Json o;
    o["segments"] = w.free_segments;
    o["btree_bytes_per_seg"] = b.bytes_per_seg;
    o["size_indexed_share_floor"] = bf.indexed_share;
    o["btree_bytes_per_seg_floor"] = bf.bytes_per_seg;
    o["baseline_bytes_per_seg"] = s.bytes_per_seg;
    o["btree_load_ms"] = b.load_s * 1e3;
    o["btree_floor_load_ms"] = bf.load_s * 1e3;
    o["baseline_load_ms"] = s.load_s * 1e3;
    o["btree_ops_per_s"] = b.ops_per_s;
    o["btree_floor_ops_per_s"] = bf.ops_per_s;
    o["baseline_ops_per_s"] = s.ops_per_s;
    o["load_speedup"] = load_speedup;
    o["ops_speedup"] = ops_speedup;
    o["floor_ops_speedup"] = bf.ops_per_s / s.ops_per_s;
    return PrintJson(o);
  }
  std::printf("fragmented metaslab: %llu free segments (%.0f%% of them >= 16 KiB), %zu allocated "
              "blocks, %.1f KiB space map\n",
              (unsigned long long)w.free_segments, bf.indexed_share * 100, w.live.size(),
              w.space_map.size() / 1024.0);
  std::printf("%-26s %14s %10s %14s\n", "tree", "bytes/segment", "load ms", "alloc+free/s");
  std::printf("%-26s %14.2f %10.1f %14.0f\n", "RangeTree (B-tree)", b.bytes_per_seg, b.load_s * 1e3,
              b.ops_per_s);
  std::printf("%-26s %14.2f %10.1f %14.0f\n", "RangeTree, 16 KiB floor", bf.bytes_per_seg,
              bf.load_s * 1e3, bf.ops_per_s);
  std::printf("%-26s %14.2f %10.1f %14.0f\n", "baseline (2 x std::set)", s.bytes_per_seg,
              s.load_s * 1e3, s.ops_per_s);
  std::printf("ratios: memory %.2fx smaller (%.2fx with floor), load %.2fx faster, ops %.2fx "
              "faster (%.2fx with floor); medians of %d runs, %llu ops each\n",
              s.bytes_per_seg / b.bytes_per_seg, s.bytes_per_seg / bf.bytes_per_seg, load_speedup,
              ops_speedup, bf.ops_per_s / s.ops_per_s, runs, (unsigned long long)ops);
  return 0;
}

}  // namespace poolfs::bench
