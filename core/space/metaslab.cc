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

Status Metaslab::Load(std::string_view space_map) {
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
  if (!space_map.empty()) {
    auto resumed =
        SpaceMapWriter::Resume(geometry(), std::string(space_map), [&](const SmEntry& e) {
          Status s = e.type == SmType::kAlloc ? tree->TryRemove(e.offset, e.length)
                                              : tree->TryAdd(e.offset, e.length);
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
  allocatable_.EndLoad();
  allocated_ = size_ - allocatable_.space();
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
  // memory only; but not what later txgs freed.
  RangeTree32 free_now = MakeTree(false);
  auto add = [&](const Range& r) { free_now.Add(r.offset, r.length); };
  allocatable_.ForEach(add);
  for (const auto& t : defer_) t.ForEach(add);
  held_.ForEach(add);
  frees_[txg.value() % kTxgSize].ForEach(add);
  for (int i = 0; i < kTxgSize; i++)
    if (uint64_t(i) != txg.value() % kTxgSize) allocs_[i].ForEach(add);
  std::string bytes = CondenseSpaceMap(geometry(), txg, [&](const auto& emit) {
    free_now.ForEach([&](const Range& r) { emit(r.offset, r.length); });
  });
  auto resumed = SpaceMapWriter::Resume(geometry(), std::move(bytes));
  POOLFS_CHECK(resumed.ok());
  map_ = std::move(resumed).value();
  map_generation_++;
}

}  // namespace poolfs::core::space
