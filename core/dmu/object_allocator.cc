#include "dmu/object_allocator.h"

#include <algorithm>

#include "util/check.h"

namespace poolfs::core::dmu {

std::string_view BackfillModeName(BackfillMode m) {
  switch (m) {
    case BackfillMode::kAuto: return "auto";
    case BackfillMode::kOn: return "on";
    case BackfillMode::kOff: return "off";
    case BackfillMode::kLegacy: return "legacy";
  }
  return "?";
}

Result<BackfillMode> ParseBackfillMode(std::string_view s) {
  for (BackfillMode m :
       {BackfillMode::kAuto, BackfillMode::kOn, BackfillMode::kOff, BackfillMode::kLegacy})
    if (s == BackfillModeName(m)) return m;
  return Status::InvalidArgument("backfill mode '" + std::string(s) +
                                 "': expected auto, on, off or legacy");
}

ObjectAllocator::ObjectAllocator(BackfillMode mode, uint32_t chunk)
    : mode_(mode),
      chunk_(std::max<uint32_t>(chunk, 1)),
      free_(0, kMaxId + 1, 0, 0, false),
      mode_now_(mode) {}

ObjectAllocator::~ObjectAllocator() = default;

Status ObjectAllocator::Load(uint64_t high_water,
                             const std::vector<std::pair<uint64_t, uint64_t>>& in_use) {
  if (high_water < kFirstId || high_water > kMaxId + 1)
    return Status::Corruption("object high-water mark " + std::to_string(high_water) +
                              " out of range");
  DrainSlots();
  util::MutexLock l(&mu_);
  free_.Clear();
  pending_.clear();
  uint64_t at = kFirstId, live = 0;
  for (const auto& [first, end] : in_use) {
    if (first < at || end <= first || end > high_water)
      return Status::Corruption(
          "objects in use [" + std::to_string(first) + ", " + std::to_string(end) +
          ") out of order or past the high-water mark " + std::to_string(high_water));
    if (first > at) free_.Add(at, first - at);
    live += end - first;
    at = end;
  }
  if (high_water > at) free_.Add(at, high_water - at);
  high_water_ = high_water;
  loaded_live_ = live;
  backfilling_ = false;
  Backfilling();  // updates backfill_ready_
  return Status::Ok();
}

bool ObjectAllocator::Backfilling() {
  bool on = false;
  switch (mode_) {
    case BackfillMode::kOn: on = free_.space() > 0; break;
    case BackfillMode::kOff:
    case BackfillMode::kLegacy: on = false; break;
    case BackfillMode::kAuto: {
      // Frees still pending count as free: a churn's deletes reach the
      // free set a txg at a time, and backfill should not stop (and wait
      // for the threshold again) each time the ids released so far are
      // used up while more are on their way.
      const uint64_t threshold = std::max<uint64_t>(kAutoMinFree, (high_water_ - kFirstId) / 8);
      const uint64_t free = free_.space() + pending_.size();
      if (free == 0)
        backfilling_ = false;
      else if (free >= threshold)
        backfilling_ = true;
      on = backfilling_ && free_.space() > 0;
      break;
    }
  }
  backfill_ready_.store(on, std::memory_order_relaxed);
  return on;
}

Status ObjectAllocator::Refill(Slot& s) {
  util::MutexLock l(&mu_);
  s.gen = free_gen_.load(std::memory_order_relaxed);
  if (Backfilling()) {
    space::Range lowest;
    free_.WalkFrom(0, [&](space::Range r) {
      lowest = r;
      return false;
    });
    const uint64_t n = std::min<uint64_t>(lowest.length, chunk_);
    free_.Remove(lowest.offset, n);
    s.next = lowest.offset;
    s.end = lowest.offset + n;
    s.reuse = true;
    return Status::Ok();
  }
  if (high_water_ > kMaxId) return Status::NoSpace("out of object ids (2^48 used)");
  const uint64_t n = std::min<uint64_t>(chunk_, kMaxId + 1 - high_water_);
  s.next = high_water_;
  s.end = high_water_ + n;
  s.reuse = false;
  high_water_ += n;
  return Status::Ok();
}

Result<ObjectId> ObjectAllocator::Allocate(size_t slot_hint) {
  Slot& s = slots_[slot_hint % kSlots];
  util::MutexLock l(&s.mu);
  if (s.next != s.end && backfill_ready_.load(std::memory_order_relaxed) &&
      s.gen != free_gen_.load(std::memory_order_relaxed)) {
    // Ids were freed since this slot took its chunk, and new ids come from
    // the free set: the chunk goes back, so the lowest free ids go first.
    util::MutexLock gl(&mu_);
    free_.Add(s.next, s.end - s.next);
    s.next = s.end = 0;
  }
  if (s.next == s.end) POOLFS_RETURN_IF_ERROR(Refill(s));
  const uint64_t id = s.next++;
  s.allocated++;
  if (s.reuse) s.reused++;
  return ObjectId(id);
}

void ObjectAllocator::Free(ObjectId id, Txg f) {
  POOLFS_CHECK_GE(id.value(), kFirstId);
  util::MutexLock l(&mu_);
  POOLFS_CHECK_LT(id.value(), high_water_);
  pending_.emplace_back(f.value(), id.value());
  freed_++;
}

void ObjectAllocator::Release(Txg t) {
  util::MutexLock l(&mu_);
  auto ready = std::partition(pending_.begin(), pending_.end(),
                              [&](const auto& p) { return p.first > t.value(); });
  for (auto it = ready; it != pending_.end(); ++it) free_.Add(it->second, 1);
  if (ready != pending_.end()) free_gen_.fetch_add(1, std::memory_order_relaxed);
  pending_.erase(ready, pending_.end());
  Backfilling();  // updates backfill_ready_
}

Status ObjectAllocator::Take(ObjectId id) {
  const uint64_t v = id.value();
  if (v < kFirstId || v > kMaxId)
    return Status::InvalidArgument("object id " + std::to_string(v) + " out of range");
  util::MutexLock l(&mu_);
  if (!TakeFreeLocked(v))
    return Status::InvalidArgument("object id " + std::to_string(v) + " is not free");
  taken_++;
  return Status::Ok();
}

bool ObjectAllocator::TakeFreeLocked(uint64_t v) {
  if (v >= high_water_) {
    if (v > high_water_) free_.Add(high_water_, v - high_water_);
    high_water_ = v + 1;
    return true;
  }
  if (!free_.Contains(v, 1)) return false;
  free_.Remove(v, 1);
  taken_reused_++;
  return true;
}

Status ObjectAllocator::Claim(ObjectId id, Txg t) NO_THREAD_SAFETY_ANALYSIS {
  const uint64_t v = id.value();
  if (v < kFirstId || v > kMaxId)
    return Status::InvalidArgument("object id " + std::to_string(v) + " is out of range (1 to " +
                                   std::to_string(kMaxId) + ")");
  // Every slot's lock in order, then mu_ (Allocate's order: a slot's, then
  // mu_): no chunk moves between a slot and the free set until the end.
  for (Slot& s : slots_) s.mu.Lock();
  struct Unlock {
    std::array<Slot, kSlots>& slots;
    ~Unlock() NO_THREAD_SAFETY_ANALYSIS {
      for (auto it = slots.rbegin(); it != slots.rend(); ++it) it->mu.Unlock();
    }
  } unlock{slots_};
  util::MutexLock l(&mu_);
  Slot* reserved = nullptr;
  for (Slot& s : slots_)
    if (v >= s.next && v < s.end) reserved = &s;
  if (reserved != nullptr) {
    // Reserved by a slot, not handed out: the slot keeps the ids below it,
    // those above go back to the free set.
    if (v + 1 < reserved->end) free_.Add(v + 1, reserved->end - v - 1);
    reserved->end = v;
    taken_reused_ += reserved->reuse;
  } else if (!TakeFreeLocked(v)) {
    auto pending = std::find_if(pending_.begin(), pending_.end(),
                                [v](const auto& p) { return p.second == v; });
    if (pending == pending_.end())
      return Status::AlreadyExists("object id " + std::to_string(v) + " is in use");
    if (pending->first > t.value())
      return Status::Busy("object id " + std::to_string(v) + " was freed in txg " +
                          std::to_string(pending->first) + ", after txg " +
                          std::to_string(t.value()) + " that claims it");
    // Freed in t or before, not yet released: the new object takes it now.
    pending_.erase(pending);
    taken_reused_++;
  }
  taken_++;
  Backfilling();  // updates backfill_ready_
  return Status::Ok();
}

bool ObjectAllocator::IsFree(ObjectId id) const {
  const uint64_t v = id.value();
  for (const Slot& s : slots_) {
    util::MutexLock l(&const_cast<Slot&>(s).mu);
    if (v >= s.next && v < s.end) return false;  // reserved by a slot
  }
  util::MutexLock l(&mu_);
  return v >= high_water_ || free_.Contains(v, 1);
}

void ObjectAllocator::DrainSlots() {
  for (Slot& s : slots_) {
    util::MutexLock sl(&s.mu);
    if (s.next == s.end) continue;
    util::MutexLock l(&mu_);
    free_.Add(s.next, s.end - s.next);
    s.next = s.end = 0;
  }
}

void ObjectAllocator::SetMode(BackfillMode mode) {
  {
    util::MutexLock l(&mu_);
    if (mode_ == mode) return;
    mode_ = mode;
    mode_now_ = mode;
    backfilling_ = false;
  }
  DrainSlots();
  util::MutexLock l(&mu_);
  Backfilling();  // updates backfill_ready_
}

void ObjectAllocator::SetChunk(uint32_t chunk) {
  util::MutexLock l(&mu_);
  chunk_ = std::max<uint32_t>(chunk, 1);
}

uint64_t ObjectAllocator::high_water() const { return Stats().high_water; }

size_t ObjectAllocator::free_segments() const {
  util::MutexLock l(&mu_);
  return free_.segment_count();
}

ObjectAllocStats ObjectAllocator::Stats() const {
  ObjectAllocStats st;
  uint64_t allocated = 0, reused = 0;
  std::vector<std::pair<uint64_t, uint64_t>> unused;  // [first, end): cached in slots, or free
  for (const Slot& s : slots_) {
    auto& m = const_cast<Slot&>(s);
    util::MutexLock l(&m.mu);
    allocated += m.allocated;
    reused += m.reused;
    if (m.next < m.end) unused.emplace_back(m.next, m.end);
  }
  util::MutexLock l(&mu_);
  st.mode = mode_;
  st.allocated = allocated + taken_;
  st.freed = freed_;
  st.reused = reused + taken_reused_;
  st.failed_holds = failed_holds_.load(std::memory_order_relaxed);
  st.live = loaded_live_ + allocated + taken_ - freed_;
  st.backfilling = backfilling_;
  free_.ForEach([&](space::Range r) { unused.emplace_back(r.offset, r.end()); });
  std::sort(unused.begin(), unused.end());
  std::vector<std::pair<uint64_t, uint64_t>> runs;  // merged
  for (const auto& r : unused) {
    if (!runs.empty() && r.first <= runs.back().second)
      runs.back().second = std::max(runs.back().second, r.second);
    else
      runs.push_back(r);
  }
  // The high-water mark: one past the highest id in use (ids reserved by a
  // slot or free at the top do not count).
  uint64_t hw = high_water_;
  if (!runs.empty() && runs.back().second >= hw) {
    hw = runs.back().first;
    runs.pop_back();
  }
  st.high_water = std::max(hw, kFirstId);
  // Free ids below it, and dnode blocks with no live id in it: those whose
  // ids [max(32 blk, 1), min(32 (blk + 1), high water)) lie in a free run
  // [a, b), counted without a walk (a claimed id far out leaves a run of
  // up to 2^48 ids).
  uint64_t empty_blocks = 0;
  for (const auto& [a, b] : runs) {
    st.free_below_high_water += b - a;
    const uint64_t first = a <= kFirstId ? 0 : (a + kIdsPerBlock - 1) / kIdsPerBlock;
    // One past the last: every block below the high water mark when the
    // run reaches it, else those ending by b.
    const uint64_t end =
        b >= st.high_water ? (st.high_water + kIdsPerBlock - 1) / kIdsPerBlock : b / kIdsPerBlock;
    if (end > first) empty_blocks += end - first;
  }
  const uint64_t blocks = (st.high_water + kIdsPerBlock - 1) / kIdsPerBlock;
  st.dnode_blocks_in_use = blocks - std::min(blocks, empty_blocks);
  return st;
}

}  // namespace poolfs::core::dmu
