#include "space/allocator.h"

#include <algorithm>
#include <thread>

#include "util/check.h"

namespace poolfs::core::space {

namespace {
constexpr uint64_t kTargetMetaslabs = 200;
// Copy allocator sets: one for copy 1, one for copy 2.
constexpr size_t kCopySets = 2;
constexpr uint32_t kMinMetaslabShift = 24;  // 16 MiB

bool Contains(const std::vector<Metaslab*>& v, const Metaslab* ms) {
  return std::find(v.begin(), v.end(), ms) != v.end();
}
}  // namespace

uint32_t ChooseMetaslabShift(uint64_t alloc_size, uint32_t ashift) {
  uint32_t shift = kMinMetaslabShift;
  while ((alloc_size >> shift) > kTargetMetaslabs) shift++;
  // A vdev smaller than one metaslab of the minimum size gets one metaslab.
  while (shift > ashift && (uint64_t{1} << (shift - 1)) >= alloc_size) shift--;
  return std::min(std::max(shift, ashift), ashift + 32);
}

uint32_t DefaultAllocatorCount() {
  unsigned n = std::thread::hardware_concurrency();
  return std::clamp(n, 1u, 8u);
}

MetaslabGroup::MetaslabGroup(const VdevSpaceConfig& config, const SpaceOptions& options)
    : config_(config) {
  POOLFS_CHECK_GT(config.ms_shift, 0u);
  POOLFS_CHECK_EQ(config.alloc_start & ((uint64_t{1} << config.ashift) - 1), 0u);
  const uint64_t ms_size = uint64_t{1} << config.ms_shift;
  const uint64_t sector_mask = (uint64_t{1} << config.ashift) - 1;
  uint64_t end = config.alloc_start + (config.alloc_size & ~sector_mask);
  uint64_t index = 0;
  for (uint64_t start = config.alloc_start; start < end; start += ms_size, index++) {
    uint64_t size = std::min(ms_size, end - start);
    metaslabs_.push_back(
        std::make_unique<Metaslab>(config.vdev, index, start, size, config.ashift, options));
  }
}

Metaslab* MetaslabGroup::ForExtent(uint64_t off, uint64_t len) {
  if (off < config_.alloc_start) return nullptr;
  uint64_t i = (off - config_.alloc_start) >> config_.ms_shift;
  if (i >= metaslabs_.size()) return nullptr;
  Metaslab* ms = metaslabs_[i].get();
  if (len > ms->size() || off + len > ms->start() + ms->size()) return nullptr;
  return ms;
}

Metaslab* MetaslabGroup::Activate(int a, uint64_t size, const std::vector<Metaslab*>& skip) {
  util::MutexLock l(&mu_);
  Metaslab* best = nullptr;
  for (auto& ms : metaslabs_) {
    if (ms->owner >= 0 || ms->weight() < size || Contains(skip, ms.get())) continue;
    // Highest weight wins; ties go to the lower offset (the faster end of a disk).
    if (!best || ms->weight() > best->weight()) best = ms.get();
  }
  if (best) best->owner = a;
  return best;
}

void MetaslabGroup::Passivate(Metaslab* ms) {
  util::MutexLock l(&mu_);
  ms->owner = -1;
}

Metaslab* MetaslabGroup::StealCandidate(uint64_t size, const std::vector<Metaslab*>& skip) {
  util::MutexLock l(&mu_);
  for (auto& ms : metaslabs_)
    if (ms->owner >= 0 && ms->weight() >= size && !Contains(skip, ms.get())) return ms.get();
  return nullptr;
}

SpaceManager::SpaceManager(std::vector<VdevSpaceConfig> vdevs, const SpaceOptions& options)
    : options_(options) {
  POOLFS_CHECK(!vdevs.empty());
  for (size_t v = 0; v < vdevs.size(); v++) {
    VdevSpaceConfig c = vdevs[v];
    POOLFS_CHECK_EQ(c.vdev, v);
    if (c.ms_shift == 0) c.ms_shift = ChooseMetaslabShift(c.alloc_size, c.ashift);
    groups_.push_back(std::make_unique<MetaslabGroup>(c, options_));
  }
  uint32_t n = options.allocators ? options.allocators : DefaultAllocatorCount();
  for (uint32_t i = 0; i < n * (1 + kCopySets); i++) {
    auto st = std::make_unique<AllocatorState>();
    util::MutexLock l(&st->mu);
    st->active.assign(groups_.size(), nullptr);
    st->rotor = uint32_t(i % groups_.size());  // allocators start on different vdevs
    (i < n ? allocators_ : copy_allocators_).push_back(std::move(st));
  }
}

SpaceManager::~SpaceManager() = default;

Status SpaceManager::LoadMetaslab(uint32_t vdev, uint64_t index, std::string_view space_map,
                                  Txg synced) {
  if (vdev >= groups_.size() || index >= groups_[vdev]->count())
    return Status::Corruption("space map for metaslab " + std::to_string(index) + " of vdev " +
                              std::to_string(vdev) + ", which does not exist");
  return groups_[vdev]->metaslab(index).Load(space_map, synced);
}

Result<uint64_t> SpaceManager::AllocateOn(AllocatorState& st, int id, uint32_t v, uint64_t size,
                                          Txg txg, std::vector<Metaslab*> skip) {
  MetaslabGroup& g = *groups_[v];
  if (size & ((uint64_t{1} << g.config().ashift) - 1))
    return Status::InvalidArgument("allocation of " + std::to_string(size) +
                                   " bytes is not a multiple of the sector size");
  Metaslab* ms = st.active[v];
  for (;;) {
    if (ms && !Contains(skip, ms)) {
      Result<uint64_t> off = ms->Allocate(size, txg);
      if (off.ok()) return off;
      skip.push_back(ms);
    }
    // The active metaslab cannot serve: hand it back, take another.
    if (st.active[v]) {
      g.Passivate(st.active[v]);
      st.active[v] = nullptr;
    }
    ms = g.Activate(id, size, skip);
    if (ms) {
      st.active[v] = ms;
      continue;
    }
    // Nothing unowned fits: borrow one another allocator has active.
    for (;;) {
      Metaslab* other = g.StealCandidate(size, skip);
      if (!other) return Status::NoSpace("");
      Result<uint64_t> off = other->Allocate(size, txg);
      if (off.ok()) return off;
      skip.push_back(other);
    }
  }
}

Status SpaceManager::NoSpaceFor(uint64_t size) const {
  SpaceStats s = Stats();
  return Status::NoSpace("no free block of " + std::to_string(size) + " bytes on any vdev (" +
                         std::to_string(s.free) + " of " + std::to_string(s.capacity) +
                         " bytes free, " + std::to_string(s.deferred) + " deferred)");
}

Result<Dva> SpaceManager::Allocate(size_t a, uint64_t size, Txg txg) {
  AllocatorState& st = *allocators_[a % allocators_.size()];
  const int id = int(a % allocators_.size());
  util::MutexLock l(&st.mu);
  const uint32_t nvdevs = uint32_t(groups_.size());
  for (uint32_t step = 0; step < nvdevs; step++) {
    const uint32_t v = (st.rotor + step) % nvdevs;
    Result<uint64_t> off = AllocateOn(st, id, v, size, txg, {});
    if (!off.ok()) {
      if (!off.status().IsNoSpace()) return off.status();
      continue;  // next vdev
    }
    if (step > 0) {  // moved on: start the aliquot on the new vdev
      st.rotor = v;
      st.rotor_bytes = 0;
    }
    st.rotor_bytes += size;
    if (st.rotor_bytes >= options_.aliquot) {
      st.rotor = (v + 1) % nvdevs;
      st.rotor_bytes = 0;
    }
    return Dva{v, *off, size};
  }
  return NoSpaceFor(size);
}

Result<Dva> SpaceManager::AllocateCopy(size_t a, int copy, uint64_t size, Txg txg,
                                       std::span<const Dva> earlier) {
  POOLFS_CHECK(copy >= 1 && size_t(copy) <= kCopySets);
  POOLFS_CHECK(!earlier.empty());
  const size_t n = allocators_.size();
  AllocatorState& st = *copy_allocators_[(copy - 1) * n + a % n];
  const int id = int(n + (copy - 1) * n + a % n);  // never a copy-0 allocator's id
  util::MutexLock l(&st.mu);
  const uint32_t nvdevs = uint32_t(groups_.size());
  auto holds_copy = [&](uint32_t v) {
    for (const Dva& e : earlier)
      if (e.vdev == v) return true;
    return false;
  };
  // The metaslabs of vdev v within `spread` metaslabs of an earlier copy.
  auto near = [&](uint32_t v, uint64_t spread) {
    std::vector<Metaslab*> out;
    MetaslabGroup& g = *groups_[v];
    for (const Dva& e : earlier) {
      if (e.vdev != v) continue;
      const uint64_t at = (e.offset - g.config().alloc_start) >> g.config().ms_shift;
      const uint64_t lo = at >= spread - 1 ? at - (spread - 1) : 0;
      for (uint64_t i = lo; i < g.count() && i <= at + (spread - 1); i++)
        out.push_back(&g.metaslab(i));
    }
    return out;
  };
  const uint32_t first = (earlier.back().vdev + 1) % nvdevs;
  // Vdevs without a copy first; then those with one, far from it, then in
  // another metaslab; then anywhere.
  for (int pass = 0; pass < 4; pass++) {
    for (uint32_t step = 0; step < nvdevs; step++) {
      const uint32_t v = (first + step) % nvdevs;
      const bool has = holds_copy(v);
      if ((pass == 0) == has) continue;
      std::vector<Metaslab*> skip;
      if (pass == 1) skip = near(v, std::max<uint64_t>(1, groups_[v]->count() / 8));
      if (pass == 2) skip = near(v, 1);
      if (pass == 1 && groups_[v]->count() / 8 <= 1) continue;  // pass 2 is the same
      Result<uint64_t> off = AllocateOn(st, id, v, size, txg, std::move(skip));
      if (off.ok()) return Dva{v, *off, size};
      if (!off.status().IsNoSpace()) return off.status();
    }
  }
  return NoSpaceFor(size);
}

Metaslab* SpaceManager::MetaslabFor(const Dva& dva) {
  if (dva.vdev >= groups_.size()) return nullptr;
  return groups_[dva.vdev]->ForExtent(dva.offset, dva.size);
}

Status SpaceManager::Free(const Dva& dva, Txg txg) {
  Metaslab* ms = MetaslabFor(dva);
  if (!ms)
    return Status::Corruption("free of vdev " + std::to_string(dva.vdev) + " [" +
                              std::to_string(dva.offset) + ", +" + std::to_string(dva.size) +
                              "): not inside one metaslab");
  return ms->Free(dva.offset, dva.size, txg);
}

Status SpaceManager::Claim(const Dva& dva, Txg txg) {
  Metaslab* ms = MetaslabFor(dva);
  if (!ms)
    return Status::Corruption("claim of vdev " + std::to_string(dva.vdev) + " [" +
                              std::to_string(dva.offset) + ", +" + std::to_string(dva.size) +
                              "): not inside one metaslab");
  return ms->Claim(dva.offset, dva.size, txg);
}

size_t SpaceManager::Sync(Txg txg, const std::function<void(const Metaslab&)>& changed) {
  size_t n = 0;
  for (auto& g : groups_) {
    for (size_t i = 0; i < g->count(); i++) {
      if (g->metaslab(i).Sync(txg)) {
        changed(g->metaslab(i));
        n++;
      }
    }
  }
  return n;
}

void SpaceManager::SyncDone(Txg txg) {
  const bool hold = reuse_holds_.load(std::memory_order_acquire) > 0;
  for (auto& g : groups_)
    for (size_t i = 0; i < g->count(); i++) g->metaslab(i).SyncDone(txg, hold);
}

SpaceStats SpaceManager::Stats() const {
  SpaceStats s;
  for (const auto& g : groups_) {
    for (size_t i = 0; i < g->count(); i++) {
      MetaslabStats m = g->metaslab(i).Stats();
      POOLFS_CHECK_EQ(m.allocated + m.free + m.deferred, m.size);
      s.capacity += m.size;
      s.allocated += m.allocated;
      s.free += m.free;
      s.deferred += m.deferred;
      s.held += m.held;
      s.segments += m.segments;
      s.metaslabs++;
    }
  }
  return s;
}

}  // namespace poolfs::core::space
