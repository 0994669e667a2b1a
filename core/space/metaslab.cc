#include "space/metaslab.h"

#include <algorithm>

#include "util/check.h"

namespace poolfs::core::space {

Metaslab::Metaslab(uint32_t vdev, uint64_t index, uint64_t start, uint64_t size, uint32_t shift,
                   const SpaceOptions& options)
    : vdev_(vdev),
      index_(index),
      start_(start),
      size_(size),
      shift_(shift),
      options_(options),
      allocatable_(MakeTree(true)),
      allocs_{MakeTree(false), MakeTree(false), MakeTree(false), MakeTree(false)},
      frees_{MakeTree(false), MakeTree(false), MakeTree(false), MakeTree(false)},
      frees_unsynced_{MakeTree(false), MakeTree(false), MakeTree(false), MakeTree(false)},
      defer_{MakeTree(false), MakeTree(false)},
      held_(MakeTree(false)),
      map_(SpaceMapGeometry{start, size, shift}) {
  policy_.max_search = options.df_max_search;
  util::MutexLock l(&mu_);
  allocatable_.Add(start_, size_);
  UpdateWeight();
}

Status Metaslab::Load(std::string_view space_map, Txg synced) {
  util::MutexLock l(&mu_);
  POOLFS_CHECK_EQ(allocated_, size_ - allocatable_.space());  // loads happen before any use
  allocatable_.Clear();
  allocatable_.BeginLoad();
  allocatable_.Add(start_, size_);
  // Lambdas run under mu_, which the analysis cannot see: they get plain
  // references taken while it is held.
  RangeTree32* tree = &allocatable_;
  uint64_t record = 0;
  Status st;
  // The frees of synced - 1 and synced, by txg % 2 (as defer_ holds them).
  // A kAlloc over the whole metaslab starts a condensed map's base: the
  // frees of its group are free space, not frees of that txg.
  std::array<std::vector<Range>, kTxgDeferSize> recent;
  uint64_t base_txg = UINT64_MAX;
  const uint64_t first_recent = synced.value() >= 1 ? synced.value() - 1 : 0;
  if (!space_map.empty()) {
    auto resumed =
        SpaceMapWriter::Resume(geometry(), std::string(space_map), [&](const SmEntry& e) {
          Status s = e.type == SmType::kAlloc ? tree->TryRemove(e.offset, e.length)
                                              : tree->TryAdd(e.offset, e.length);
          if (e.type == SmType::kAlloc && e.offset == start_ && e.length == size_) {
            base_txg = e.txg.value();
            for (auto& r : recent) r.clear();
          } else if (e.type == SmType::kFree && synced.value() != 0 &&
                     e.txg.value() >= first_recent && e.txg.value() != base_txg) {
            recent[e.txg.value() % kTxgDeferSize].push_back({e.offset, e.length});
          }
          record++;
          if (!s.ok())
            return s.WithContext("record " + std::to_string(record - 1) + " (txg " +
                                 std::to_string(e.txg.value()) + ")");
          return Status::Ok();
        });
    if (resumed.ok())
      map_ = std::move(resumed).value();
    else
      st = resumed.status();
  }
  if (!st.ok()) {
    // Hand nothing out from a map we cannot trust.
    allocatable_.Clear();
    allocated_ = size_;
    UpdateWeight();
    return st.WithContext("metaslab " + std::to_string(index_) + " of vdev " +
                          std::to_string(vdev_) + ": space map");
  }
  // The recent frees still free at the end go back to their deferral.
  for (size_t i = 0; i < kTxgDeferSize; i++) {
    for (const Range& r : recent[i]) {
      std::vector<Range> still;
      allocatable_.WalkFrom(r.offset, [&](const Range& f) {
        if (f.offset >= r.end()) return false;
        const uint64_t a = std::max(f.offset, r.offset), b = std::min(f.end(), r.end());
        if (a < b) still.push_back({a, b - a});
        return true;
      });
      for (const Range& s : still) {
        allocatable_.Remove(s.offset, s.length);
        defer_[i].Add(s.offset, s.length);
      }
    }
  }
  allocatable_.EndLoad();
  allocated_ = size_ - allocatable_.space() - DeferredBytes();
  UpdateWeight();
  CheckAccountingLocked();
  return Status::Ok();
}

Result<uint64_t> Metaslab::Allocate(uint64_t size, Txg txg) {
  util::MutexLock l(&mu_);
  POOLFS_CHECK_GT(size, 0u);
  POOLFS_CHECK_EQ(size & ((uint64_t{1} << shift_) - 1), 0u);
  std::optional<uint64_t> off = DfPick(allocatable_, size, size_, cursors_, policy_);
  if (!off) {
    UpdateWeight();
    return Status::NoSpace("metaslab " + std::to_string(index_) + ": no free block of " +
                           std::to_string(size) + " bytes");
  }
  allocatable_.Remove(*off, size);
  allocs_[txg.value() % kTxgSize].Add(*off, size);
  allocated_ += size;
  UpdateWeight();
  return *off;
}

Status Metaslab::Free(uint64_t off, uint64_t len, Txg txg) {
  util::MutexLock l(&mu_);
  auto where = [&] {
    return "free [" + std::to_string(off) + ", +" + std::to_string(len) + ") in metaslab " +
           std::to_string(index_) + " of vdev " + std::to_string(vdev_);
  };
  if (len == 0 || off < start_ || off + len > start_ + size_ || off + len < off ||
      ((off | len) & ((uint64_t{1} << shift_) - 1)) != 0)
    return Status::Corruption(where() + ": not a valid extent of this metaslab");
  if (allocatable_.FindOverlap(off, len))
    return Status::Corruption(where() + ": part of it is free already (double free?)");
  for (const auto& t : frees_)
    if (t.FindOverlap(off, len)) return Status::Corruption(where() + ": freed already");
  for (const auto& t : defer_)
    if (t.FindOverlap(off, len)) return Status::Corruption(where() + ": freed already");
  frees_[txg.value() % kTxgSize].Add(off, len);
  frees_unsynced_[txg.value() % kTxgSize].Add(off, len);
  allocated_ -= len;
  return Status::Ok();
}

Status Metaslab::Claim(uint64_t off, uint64_t len, Txg txg) {
  util::MutexLock l(&mu_);
  POOLFS_RETURN_IF_ERROR(allocatable_.TryRemove(off, len).WithContext(
      "claim in metaslab " + std::to_string(index_) + " of vdev " + std::to_string(vdev_)));
  allocs_[txg.value() % kTxgSize].Add(off, len);
  allocated_ += len;
  UpdateWeight();
  return Status::Ok();
}

bool Metaslab::Sync(Txg txg) {
  util::MutexLock l(&mu_);
  POOLFS_CHECK_GE(txg, last_synced_);
  const bool first_pass = txg > last_synced_;
  RangeTree32& allocs = allocs_[txg.value() % kTxgSize];
  RangeTree32& frees = frees_unsynced_[txg.value() % kTxgSize];
  SpaceMapWriter* map = &map_;
  bool changed = allocs.space() > 0 || frees.space() > 0;
  allocs.Vacate([&](const Range& r) { map->Append(SmType::kAlloc, txg, r.offset, r.length); });
  frees.Vacate([&](const Range& r) { map->Append(SmType::kFree, txg, r.offset, r.length); });
  if (first_pass && NeedsCondense()) {
    Condense(txg);
    changed = true;
  }
  last_synced_ = txg;
  // The map must now say exactly what is allocated as of txg: what is
  // allocated in memory, less later txgs' allocations, plus their frees.
  uint64_t expect = allocated_;
  for (int i = 0; i < kTxgSize; i++) {
    if (uint64_t(i) == txg.value() % kTxgSize) continue;
    expect = expect - allocs_[i].space() + frees_[i].space();
  }
  POOLFS_CHECK_EQ(map_.alloc_bytes(), expect);
  return changed;
}

void Metaslab::SyncDone(Txg txg, bool hold) {
  util::MutexLock l(&mu_);
  POOLFS_CHECK_EQ(frees_unsynced_[txg.value() % kTxgSize].space(),
                  0u);  // every free reached the map
  RangeTree32& ready = defer_[txg.value() % kTxgDeferSize];
  RangeTree32* free_tree = hold ? &held_ : &allocatable_;
  if (!hold) held_.Vacate([&](const Range& r) { free_tree->Add(r.offset, r.length); });
  ready.Vacate([&](const Range& r) { free_tree->Add(r.offset, r.length); });
  frees_[txg.value() % kTxgSize].Vacate([&](const Range& r) { ready.Add(r.offset, r.length); });
  UpdateWeight();
  CheckAccountingLocked();
}

std::string Metaslab::space_map() const {
  util::MutexLock l(&mu_);
  return map_.bytes();
}

uint64_t Metaslab::space_map_frozen() const {
  util::MutexLock l(&mu_);
  return map_.frozen_bytes();
}

uint64_t Metaslab::map_generation() const {
  util::MutexLock l(&mu_);
  return map_generation_;
}

MetaslabStats Metaslab::Stats() const {
  util::MutexLock l(&mu_);
  MetaslabStats s;
  s.size = size_;
  s.allocated = allocated_;
  s.free = allocatable_.space();
  s.deferred = DeferredBytes();
  s.held = held_.space();
  s.segments = allocatable_.segment_count();
  s.largest = weight();
  return s;
}

void Metaslab::CheckAccounting() const {
  util::MutexLock l(&mu_);
  CheckAccountingLocked();
}

Status Metaslab::Verify() const {
  util::MutexLock l(&mu_);
  POOLFS_RETURN_IF_ERROR(allocatable_.Verify().WithContext("metaslab " + std::to_string(index_)));
  if (allocated_ + allocatable_.space() + DeferredBytes() != size_)
    return Status::Corruption(
        "metaslab " + std::to_string(index_) + ": allocated " + std::to_string(allocated_) +
        " + free " + std::to_string(allocatable_.space()) + " + deferred " +
        std::to_string(DeferredBytes()) + " != size " + std::to_string(size_));
  return Status::Ok();
}

void Metaslab::UpdateWeight() {
  uint64_t w = allocatable_.LargestIndexed();
  if (w == 0 && allocatable_.space() > 0) {
    // Every segment is under the size floor: the floor bounds the largest
    // without a scan of the whole tree.
    uint64_t sector = uint64_t{1} << shift_;
    w = std::min(allocatable_.space(), std::max(options_.size_tree_floor, sector * 2) - sector);
  }
  weight_.store(w, std::memory_order_relaxed);
}

uint64_t Metaslab::DeferredBytes() const {
  uint64_t d = 0;
  for (const auto& t : frees_) d += t.space();
  for (const auto& t : defer_) d += t.space();
  return d + held_.space();
}

void Metaslab::CheckAccountingLocked() const {
  POOLFS_CHECK_EQ(allocated_ + allocatable_.space() + DeferredBytes(), size_);
}

bool Metaslab::NeedsCondense() const {
  // Condense once the history is several times the length of the map that
  // would replace it (one record per free segment), and long enough that a
  // rewrite is worth it.
  uint64_t condensed = 2 + allocatable_.segment_count();
  for (const auto& t : defer_) condensed += t.segment_count();
  return map_.record_count() > 1024 && map_.record_count() > 4 * condensed;
}

void Metaslab::Condense(Txg txg) {
  // Free on disk as of txg: the free tree, everything deferred (freed in
  // synced txgs, including txg itself), and what later txgs allocated in
  // memory only; but not what later txgs freed. By when it was freed, so
  // that Load after an import keeps the deferral: the base (stamped
  // txg - 2: the free tree, what a scrub holds, later txgs' allocations,
  // and the frees of txg - 2, whose deferral ends with this sync), then the
  // frees of txg - 1, then those of txg.
  const uint64_t t = txg.value();
  RangeTree32 base = MakeTree(false), prev = MakeTree(false), now = MakeTree(false);
  auto into = [](RangeTree32& tree) {
    return [&tree](const Range& r) { tree.Add(r.offset, r.length); };
  };
  allocatable_.ForEach(into(base));
  held_.ForEach(into(base));
  for (int i = 0; i < kTxgSize; i++)
    if (uint64_t(i) != t % kTxgSize) allocs_[i].ForEach(into(base));
  defer_[t % kTxgDeferSize].ForEach(into(base));                        // freed in txg - 2
  defer_[(t + 1) % kTxgDeferSize].ForEach(into(t >= 1 ? prev : base));  // freed in txg - 1
  frees_[t % kTxgSize].ForEach(into(now));
  std::string bytes = CondenseSpaceMap(geometry(), Txg(t >= 2 ? t - 2 : 0), [&](const auto& emit) {
    base.ForEach([&](const Range& r) { emit(r.offset, r.length); });
  });
  auto resumed = SpaceMapWriter::Resume(geometry(), std::move(bytes));
  POOLFS_CHECK(resumed.ok());
  map_ = std::move(resumed).value();
  // Lambdas run under mu_, which the analysis cannot see: a plain pointer.
  SpaceMapWriter* map = &map_;
  prev.ForEach([&](const Range& r) { map->Append(SmType::kFree, Txg(t - 1), r.offset, r.length); });
  now.ForEach([&](const Range& r) { map->Append(SmType::kFree, txg, r.offset, r.length); });
  map_generation_++;
}

}  // namespace poolfs::core::space
