#include "pool/check_space.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <memory>

#include "space/range_tree.h"
#include "space/space_map.h"
#include "util/text.h"

namespace poolfs::core::pool {

namespace {

struct MetaslabState {
  enum class Map { kNone, kLoaded, kUnknown };
  uint64_t start = 0;
  uint64_t size = 0;
  Map map = Map::kNone;  // kNone: no space map, all free
  uint64_t object = 0;
  std::unique_ptr<space::RangeTree32> free;  // kLoaded: the replayed free space
  uint64_t end() const { return start + size; }
};

std::string MetaslabName(uint32_t vdev, uint64_t index) {
  return "vdev " + std::to_string(vdev) + " metaslab " + std::to_string(index);
}

// Replays one map into ms.free; a problem and kUnknown when it fails.
void LoadMap(const SpaceMapInput& in, uint32_t ashift, MetaslabState& ms, CheckReport* report,
             ProblemSink* sink) {
  const std::string where = "space map of " + MetaslabName(in.vdev, in.metaslab) + " (MOS object " +
                            std::to_string(in.object) + ")";
  ms.object = in.object;
  ms.map = MetaslabState::Map::kUnknown;
  if (in.content == nullptr) {
    sink->Add(where, "the MOS has no such object");
    return;
  }
  if (in.content->type != dmu::ObjectType::kSpaceMap) {
    sink->Add(where, "the object is a " + std::string(dmu::ObjectTypeName(in.content->type)) +
                         ", not a space map");
    return;
  }
  if (!in.content->complete) return;  // the walk named the blocks it could not read
  auto tree = std::make_unique<space::RangeTree32>(ms.start, ms.size, ashift, 0, false);
  tree->BeginLoad();
  tree->Add(ms.start, ms.size);
  space::RangeTree32* t = tree.get();
  uint64_t record = 0;
  Status st = space::DecodeSpaceMap(
      in.content->bytes, space::SpaceMapGeometry{ms.start, ms.size, ashift},
      [&](const space::SmEntry& e) {
        const bool alloc = e.type == space::SmType::kAlloc;
        Status s = alloc ? t->TryRemove(e.offset, e.length) : t->TryAdd(e.offset, e.length);
        if (!s.ok())
          return Status::Corruption(
              "record " + std::to_string(record) + " (txg " + std::to_string(e.txg.value()) + ", " +
              (alloc ? "alloc [" : "free [") + util::Hex(e.offset) + ", +" +
              std::to_string(e.length) + ")) contradicts the records before it: " + s.message());
        record++;
        return Status::Ok();
      });
  if (!st.ok()) {
    sink->Add(where, st.message());
    return;
  }
  tree->EndLoad();
  report->bytes_allocated_by_maps += ms.size - tree->space();
  ms.free = std::move(tree);
  ms.map = MetaslabState::Map::kLoaded;
}

}  // namespace

void CheckSpace(const CheckWalker& walker, const std::vector<VdevGeometry>& vdevs,
                const std::vector<SpaceMapInput>& maps, CheckReport* report, ProblemSink* sink) {
  // The metaslabs, cut as space::MetaslabGroup cuts them.
  std::vector<std::vector<MetaslabState>> metaslabs(vdevs.size());
  for (size_t v = 0; v < vdevs.size(); v++) {
    const VdevGeometry& g = vdevs[v];
    const uint64_t sector_mask = (uint64_t{1} << g.ashift) - 1;
    const uint64_t ms_size = uint64_t{1} << g.ms_shift;
    if ((ms_size >> g.ashift) > std::numeric_limits<uint32_t>::max()) {
      sink->Add("vdev " + std::to_string(v), "metaslabs of 2^" +
                                                 std::to_string(g.ms_shift - g.ashift) +
                                                 " sectors are too large to check");
      continue;
    }
    const uint64_t end = g.alloc_start + (g.alloc_size & ~sector_mask);
    for (uint64_t start = g.alloc_start; start < end; start += ms_size) {
      MetaslabState ms;
      ms.start = start;
      ms.size = std::min(ms_size, end - start);
      metaslabs[v].push_back(std::move(ms));
    }
  }
  for (const SpaceMapInput& in : maps) {
    if (in.vdev >= metaslabs.size() || in.metaslab >= metaslabs[in.vdev].size()) {
      sink->Add("space map of " + MetaslabName(in.vdev, in.metaslab) + " (MOS object " +
                    std::to_string(in.object) + ")",
                "names a metaslab the pool does not have");
      continue;
    }
    LoadMap(in, vdevs[in.vdev].ashift, metaslabs[in.vdev][in.metaslab], report, sink);
  }

  uint64_t leaked_bytes = 0, leaked_runs = 0;
  for (uint32_t v = 0; v < metaslabs.size(); v++) {
    const auto& refs = walker.refs()[v];
    for (uint64_t i = 0; i < metaslabs[v].size(); i++) {
      const MetaslabState& ms = metaslabs[v][i];
      if (ms.map == MetaslabState::Map::kUnknown) continue;
      // Referenced, so it must be allocated.
      for (auto it = refs.lower_bound(ms.start); it != refs.end() && it->first < ms.end(); ++it) {
        const uint64_t off = it->first, size = it->second.size;
        const std::string where = walker.DescribeAt(it->second.origin, v, off);
        if (off + size > ms.end())
          sink->Add(where, "extent [" + util::Hex(off) + ", +" + std::to_string(size) +
                               ") crosses the end of " + MetaslabName(v, i));
        if (ms.map == MetaslabState::Map::kNone) {
          sink->Add(where, "is referenced but not allocated: " + MetaslabName(v, i) +
                               " has no space map (all free)");
        } else if (auto free = ms.free->FindOverlap(off, std::min(size, ms.end() - off))) {
          sink->Add(where, "is referenced but free in the space map of " + MetaslabName(v, i) +
                               " (free run [" + util::Hex(free->offset) + ", +" +
                               std::to_string(free->length) + "))");
        }
      }
      if (ms.map != MetaslabState::Map::kLoaded) continue;
      // Allocated, so it must be referenced: sweep the allocated runs (the
      // gaps between free segments) against the referenced extents.
      std::vector<space::Range> allocated;
      uint64_t cur = ms.start;
      ms.free->ForEach([&](const space::Range& r) {
        if (r.offset > cur) allocated.push_back({cur, r.offset - cur});
        cur = r.end();
      });
      if (cur < ms.end()) allocated.push_back({cur, ms.end() - cur});
      auto it = refs.lower_bound(ms.start);
      if (it != refs.begin() && std::prev(it)->first + std::prev(it)->second.size > ms.start)
        it = std::prev(it);
      auto leak = [&](uint64_t a, uint64_t b) {
        leaked_bytes += b - a;
        leaked_runs++;
        if (walker.skipped_subtrees() == 0)
          sink->Add(MetaslabName(v, i) + " offset " + util::Hex(a),
                    std::to_string(b - a) +
                        " bytes are allocated in the space map but referenced by no "
                        "block (leaked)");
      };
      for (const space::Range& run : allocated) {
        const uint64_t a = run.offset, b = run.end();
        while (it != refs.end() && it->first + it->second.size <= a) ++it;
        uint64_t pos = a;
        for (auto j = it; j != refs.end() && j->first < b && pos < b; ++j) {
          if (j->first > pos) leak(pos, j->first);
          pos = std::max(pos, j->first + j->second.size);
        }
        if (pos < b) leak(pos, b);
      }
    }
  }
  if (leaked_runs > 0 && walker.skipped_subtrees() > 0)
    sink->Add("space maps", std::to_string(leaked_bytes) + " bytes in " +
                                std::to_string(leaked_runs) +
                                " runs are allocated but referenced by no block the walk reached; "
                                "the " +
                                std::to_string(walker.skipped_subtrees()) +
                                " damaged subtrees it could not walk hold some or all of them");
}

}  // namespace poolfs::core::pool
