// The pool's snapshots and deadlists; see "Snapshots" in pool.h.
#include <sys/random.h>

#include <algorithm>
#include <ctime>
#include <random>
#include <set>

#include "dmu/objset_walk.h"
#include "dmu/tx.h"
#include "pool/pool.h"
#include "util/check.h"

namespace poolfs::core::pool {

namespace {

std::string QuoteList(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + Quote(n);
  return list;
}

// "tank/a@s" -> ("tank/a", "s"), the snapshot part checked.
Result<std::pair<std::string, std::string>> SplitSnapshotName(std::string_view name) {
  const size_t at = name.find('@');
  if (at == std::string_view::npos)
    return Status::InvalidArgument(Quote(name) + " is not a snapshot name (DATASET@NAME)");
  const std::string_view snap = name.substr(at + 1);
  if (Status st = ValidateDatasetName(snap); !st.ok())
    return st.WithContext("snapshot name " + Quote(name));
  return std::make_pair(std::string(name.substr(0, at)), std::string(snap));
}

// A random nonzero guid: getrandom(2), or std::random_device where that
// fails.
uint64_t RandomGuid() {
  uint64_t guid = 0;
  while (guid == 0) {
    if (getrandom(&guid, sizeof guid, 0) != ssize_t(sizeof guid)) {
      std::random_device rd;
      guid = (uint64_t(rd()) << 32) ^ uint64_t(rd());
    }
  }
  return guid;
}

// A deadlist object holds block pointers of the pool's format back to back.
std::string EncodeBlocks(const std::vector<zio::BlockPtr>& blocks, zio::BpFormat format) {
  const size_t size = zio::BlockPtrSize(format);
  std::string out(blocks.size() * size, '\0');
  for (size_t i = 0; i < blocks.size(); i++)
    zio::EncodeBlockPtr(blocks[i], reinterpret_cast<uint8_t*>(out.data() + i * size), format);
  return out;
}

// The key of the bucket for a block born in `birth`: the newest of `txgs`
// (ascending) before it, or 0.
uint64_t BucketKey(const std::vector<uint64_t>& txgs, uint64_t birth) {
  auto it = std::lower_bound(txgs.begin(), txgs.end(), birth);
  return it == txgs.begin() ? 0 : *std::prev(it);
}

// Moves every bucket of `from` into `to` (same keys: their objects join).
void Merge(Deadlist&& from, Deadlist* to) {
  for (auto& [key, bucket] : from) {
    DeadBucket& into = (*to)[key];
    into.bytes += bucket.bytes;
    into.objects.insert(into.objects.end(), bucket.objects.begin(), bucket.objects.end());
  }
  from.clear();
}

// Moves the bucket with key `from` of `dl` into the one with key `to`.
void Rekey(uint64_t from, uint64_t to, Deadlist* dl) {
  auto it = dl->find(from);
  if (it == dl->end()) return;
  DeadBucket b = std::move(it->second);
  dl->erase(it);
  Deadlist one;
  one.emplace(to, std::move(b));
  Merge(std::move(one), dl);
}

}  // namespace

bool Pool::InDirectory(const Snap& s, Txg t) {
  if (s.entry.root.IsHole() || t < s.entry.txg) return false;
  return s.destroyed == Txg(0) || t < s.destroyed;
}

void Pool::Adopt(Dataset* ds, std::unique_ptr<dmu::ObjectSet> os) {
  ds->os = std::move(os);
  ds->os->UseBlockBuffers(block_buffers_.get());
  ds->os->UseCache(arc_.get(), read_ahead_.get());
  ds->os->SetDnodeLimit(object_cache_limit());
  ds->os->SetRelease([this, ds](const zio::BlockPtr& bp, Txg t) -> Status {
    if (bp.birth.value() > ds->prev_snap.load(std::memory_order_acquire)) return zio_->Free(bp, t);
    util::MutexLock l(&ds->dying_mu);
    ds->dying.push_back(bp);
    return Status::Ok();
  });
}

std::vector<Pool::Snap*> Pool::SnapshotsOf(uint64_t id, bool with_doomed) const {
  std::vector<Snap*> out;
  for (const auto& [sid, s] : snapshots_)
    if (s->entry.dataset == id && (with_doomed || s->destroyed == Txg(0)) &&
        !s->entry.root.IsHole())
      out.push_back(s.get());
  std::sort(out.begin(), out.end(),
            [](const Snap* a, const Snap* b) { return a->entry.txg < b->entry.txg; });
  return out;
}

Result<Pool::Snap*> Pool::ResolveSnapshot(std::string_view name) const {
  POOLFS_ASSIGN_OR_RETURN(auto parts, SplitSnapshotName(name));
  POOLFS_ASSIGN_OR_RETURN(Dataset * ds, Resolve(parts.first));
  for (Snap* s : SnapshotsOf(ds->entry.id))
    if (s->entry.name == parts.second) return s;
  return Status::NotFound("snapshot " + Quote(FullName(*ds) + "@" + parts.second) +
                          " does not exist");
}

uint64_t Pool::UsedBySnapshots(uint64_t id) const {
  const Dataset* ds = Find(id);
  if (ds == nullptr) return 0;
  // A clone's bucket 0 holds blocks of its origin: not its own.
  const bool clone = ds->entry.origin != 0;
  auto own = [clone](const Deadlist& dl) {
    uint64_t n = DeadBytes(dl);
    if (auto b = dl.find(0); clone && b != dl.end()) n -= b->second.bytes;
    return n;
  };
  uint64_t n = own(ds->deadlist);
  for (const Snap* s : SnapshotsOf(id, true)) n += own(s->entry.deadlist);
  return n;
}

uint64_t Pool::BaseTxg(const Dataset& ds) const {
  if (ds.entry.origin == 0) return 0;
  auto it = snapshots_.find(ds.entry.origin);
  POOLFS_CHECK(it != snapshots_.end());  // an origin is not destroyed while it has clones
  return it->second->entry.txg.value();
}

std::vector<uint64_t> Pool::BucketKeys(uint64_t id) const {
  std::vector<uint64_t> keys;
  if (const Dataset* ds = Find(id); ds != nullptr && ds->entry.origin != 0)
    keys.push_back(BaseTxg(*ds));
  for (const Snap* s : SnapshotsOf(id, true)) keys.push_back(s->entry.txg.value());
  return keys;
}

std::vector<std::string> Pool::ClonesOf(uint64_t snap) const {
  std::vector<std::string> names;
  for (const auto& [id, ds] : datasets_) {
    if (ds->entry.origin != snap || ds->destroyed != Txg(0)) continue;
    if (!Hidden(*ds)) {
      names.push_back(FullName(*ds));
      continue;
    }
    // A receive's: say whose, and how to be rid of a kept one.
    auto target = ds->entry.props.find(kReceiveTargetKey);
    names.push_back(target == ds->entry.props.end()
                        ? "a receive in progress"
                        : "the interrupted receive into " + target->second +
                              " (discard it with poolfs receive -A " + target->second + ")");
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status Pool::NoClones(const Snap& s, const std::string& what) const {
  if (const std::vector<std::string> clones = ClonesOf(s.entry.id); !clones.empty())
    return Status(StatusCode::kNotEmpty,
                  what + ": " + Quote(FullName(*Find(s.entry.dataset)) + "@" + s.entry.name) +
                      " is the origin of " + QuoteList(clones) +
                      "; destroy them first, or promote them");
  // A clone destroyed in a txg not synced yet still needs its origin's
  // txg when that sync frees its blocks.
  for (const auto& [id, ds] : datasets_)
    if (ds->entry.origin == s.entry.id)
      return Status::Busy(what + ": its clone " + Quote(FullName(*ds)) +
                          " is being destroyed; try again");
  return Status::Ok();
}

Status Pool::NotPromoting(const Dataset& ds, const std::string& what) const {
  for (const auto& [id, other] : datasets_) {
    if (other->promote == Txg(0)) continue;
    auto origin = snapshots_.find(other->entry.origin);
    if (other.get() == &ds ||
        (origin != snapshots_.end() && origin->second->entry.dataset == ds.entry.id))
      return Status::Busy(what + ": a promote of " + Quote(FullName(*other)) +
                          " is under way; try again");
  }
  return Status::Ok();
}

Result<std::vector<zio::BlockPtr>> Pool::ReadBucket(const DeadBucket& b, const std::string& what) {
  const size_t bp_size = zio::BlockPtrSize(zio_->format());
  std::vector<zio::BlockPtr> out;
  for (const DeadObject& o : b.objects) {
    POOLFS_ASSIGN_OR_RETURN(std::string bytes,
                            mos_->Read(ObjectId(o.object), 0, o.entries * bp_size));
    if (bytes.size() != o.entries * bp_size)
      return Status::Corruption(what + ": deadlist object " + std::to_string(o.object) + " holds " +
                                std::to_string(bytes.size()) + " bytes, not " +
                                std::to_string(o.entries * bp_size));
    for (uint64_t k = 0; k < o.entries; k++) {
      POOLFS_ASSIGN_OR_RETURN(
          zio::BlockPtr bp,
          zio::DecodeBlockPtr(
              reinterpret_cast<const uint8_t*>(bytes.data()) + k * bp_size,
              "deadlist object " + std::to_string(o.object) + " entry " + std::to_string(k),
              zio_->format()));
      out.push_back(bp);
    }
  }
  return out;
}

Result<Txg> Pool::Snapshot(const std::vector<std::string>& names, bool recursive) {
  std::vector<SnapshotRequest> requests;
  for (const std::string& name : names) requests.push_back({name});
  return AddSnapshots(requests, recursive);
}

Result<Txg> Pool::TakeSnapshots(const std::vector<SnapshotRequest>& requests) {
  return AddSnapshots(requests, false);
}

uint64_t Pool::NewGuid(uint64_t dataset) const {
  for (;;) {
    const uint64_t guid = RandomGuid();
    bool taken = false;
    for (const auto& [sid, s] : snapshots_)
      taken |= s->entry.dataset == dataset && s->entry.guid == guid;
    if (!taken) return guid;
  }
}

Result<Txg> Pool::AddSnapshots(const std::vector<SnapshotRequest>& requests, bool recursive) {
  if (requests.empty()) return Status::InvalidArgument("no snapshot named");
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  const Txg t = tx.txg();
  util::MutexLock l(&mu_);
  struct Todo {
    Dataset* ds;
    std::string name;
    const SnapshotRequest* request;
  };
  std::vector<Todo> todo;
  std::set<uint64_t> seen;
  for (const SnapshotRequest& request : requests) {
    POOLFS_CHECK(!recursive || request.guid == 0);  // a given guid names one snapshot
    POOLFS_ASSIGN_OR_RETURN(auto parts, SplitSnapshotName(request.name));
    POOLFS_ASSIGN_OR_RETURN(Dataset * top, Resolve(parts.first));
    std::vector<Dataset*> all = {top};
    if (recursive) {
      all.clear();
      Subtree(top, &all);
    }
    for (Dataset* ds : all) {
      if (!seen.insert(ds->entry.id).second)
        return Status::InvalidArgument(
            "cannot snapshot " + Quote(FullName(*ds) + "@" + parts.second) + ": dataset " +
            Quote(FullName(*ds)) + " is named twice; one snapshot of a dataset per txg");
      POOLFS_RETURN_IF_ERROR(CanSnapshot(*ds, parts.second, t, request.guid));
      todo.push_back({ds, parts.second, &request});
    }
  }
  for (Todo& each : todo)
    NewSnap(each.ds, std::move(each.name), t, each.request->guid, each.request->creation_time);
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return t;
}

Status Pool::CanSnapshot(const Dataset& ds, std::string_view name, Txg t, uint64_t guid) const {
  const std::string full = FullName(ds) + "@" + std::string(name);
  // Taken before a rollback of the same txg, it would hold blocks the
  // rollback frees; the same goes for a received head taking its place.
  if (ds.rollback != Txg(0))
    return Status::Busy("cannot snapshot " + Quote(full) + ": a rollback of " +
                        Quote(FullName(ds)) + " is under way; try again");
  if (ds.receive != Txg(0))
    return Status::Busy("cannot snapshot " + Quote(full) + ": a receive into " +
                        Quote(FullName(ds)) + " is finishing; try again");
  POOLFS_RETURN_IF_ERROR(NotPromoting(ds, "cannot snapshot " + Quote(full)));
  for (const auto& [sid, s] : snapshots_) {
    if (s->entry.dataset != ds.entry.id) continue;
    // One destroyed in a later txg than t is still in t's directory,
    // beside the new one: their guids must differ.
    if (guid != 0 && s->entry.guid == guid && (s->destroyed == Txg(0) || s->destroyed > t))
      return Status::InvalidArgument("cannot snapshot " + Quote(full) + " with guid " +
                                     std::to_string(guid) + ": snapshot " +
                                     Quote(FullName(ds) + "@" + s->entry.name) + " has it");
    if (s->destroyed != Txg(0)) continue;
    if (s->entry.name == name) return Status::AlreadyExists("snapshot " + Quote(full) + " exists");
    if (s->entry.txg == t)
      return Status::InvalidArgument("cannot snapshot " + Quote(full) + ": snapshot " +
                                     Quote(FullName(ds) + "@" + s->entry.name) +
                                     " is being taken in the same txg; try again");
  }
  return Status::Ok();
}

void Pool::NewSnap(Dataset* ds, std::string name, Txg t, uint64_t guid, int64_t creation_time) {
  auto s = std::make_unique<Snap>();
  s->entry.id = dir_.next_dataset_id++;
  s->entry.dataset = ds->entry.id;
  s->entry.txg = t;
  s->entry.creation_time = creation_time != 0 ? creation_time : int64_t(std::time(nullptr));
  s->entry.guid = guid != 0 ? guid : NewGuid(ds->entry.id);
  s->entry.name = std::move(name);
  const uint64_t id = s->entry.id;
  snapshots_.emplace(id, std::move(s));
}

Result<std::vector<Pool::Snap*>> Pool::ResolveRange(std::string_view name) const {
  const size_t at = name.find('@');
  const size_t pct = name.find('%', at == std::string_view::npos ? 0 : at);
  if (at == std::string_view::npos || pct == std::string_view::npos) {
    POOLFS_ASSIGN_OR_RETURN(Snap * s, ResolveSnapshot(name));
    return std::vector<Snap*>{s};
  }
  // DATASET@FIRST%LAST: both ends included; an empty end is the oldest or
  // the newest.
  const std::string dataset(name.substr(0, at));
  const std::string first(name.substr(at + 1, pct - at - 1)), last(name.substr(pct + 1));
  POOLFS_ASSIGN_OR_RETURN(Dataset * ds, Resolve(dataset));
  const std::vector<Snap*> snaps = SnapshotsOf(ds->entry.id);
  const std::string full = FullName(*ds);
  auto index = [&](const std::string& n, size_t none) -> Result<size_t> {
    if (n.empty()) return none;
    for (size_t i = 0; i < snaps.size(); i++)
      if (snaps[i]->entry.name == n) return i;
    return Status::NotFound("snapshot " + Quote(full + "@" + n) + " does not exist");
  };
  POOLFS_ASSIGN_OR_RETURN(size_t from, index(first, 0));
  POOLFS_ASSIGN_OR_RETURN(size_t to, index(last, snaps.empty() ? 0 : snaps.size() - 1));
  if (snaps.empty() || from > to)
    return Status::InvalidArgument("snapshot range " + Quote(name) +
                                   " is empty: its first snapshot is not before its last");
  return std::vector<Snap*>(snaps.begin() + long(from), snaps.begin() + long(to) + 1);
}

Result<Txg> Pool::DestroySnapshot(std::string_view name, bool recursive) {
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(std::vector<Snap*> gone, ResolveRange(name));
  if (recursive) {
    // The same names in every descendant that has them.
    std::set<std::string> names;
    for (const Snap* g : gone) names.insert(g->entry.name);
    std::vector<Dataset*> all;
    Subtree(Find(gone.front()->entry.dataset), &all);
    for (Dataset* ds : all) {
      if (ds->entry.id == gone.front()->entry.dataset) continue;
      for (Snap* other : SnapshotsOf(ds->entry.id))
        if (names.count(other->entry.name)) gone.push_back(other);
    }
  }
  for (Snap* g : gone) {
    const Dataset* ds = Find(g->entry.dataset);
    const std::string full = FullName(*ds) + "@" + g->entry.name;
    if (ds->rollback != Txg(0) && ds->rollback_to == g->entry.id)
      return Status::Busy("cannot destroy " + Quote(full) + ": a rollback to it is under way");
    POOLFS_RETURN_IF_ERROR(NoClones(*g, "cannot destroy " + Quote(full)));
  }
  for (Snap* g : gone) g->destroyed = tx.txg();
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return tx.txg();
}

Result<Txg> Pool::RenameSnapshot(std::string_view from, std::string_view to) {
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(Snap * s, ResolveSnapshot(from));
  const std::string dataset = FullName(*Find(s->entry.dataset));
  // "tank/a@new" or "@new": a snapshot stays with its dataset.
  const std::string full_to = to.starts_with("@") ? dataset + std::string(to) : std::string(to);
  POOLFS_ASSIGN_OR_RETURN(auto parts, SplitSnapshotName(full_to));
  POOLFS_ASSIGN_OR_RETURN(Dataset * target, Resolve(parts.first));
  if (target->entry.id != s->entry.dataset)
    return Status::InvalidArgument("cannot rename " + Quote(from) + " to " + Quote(to) +
                                   ": a snapshot stays with its dataset " + Quote(dataset));
  POOLFS_RETURN_IF_ERROR(NotPromoting(*target, "cannot rename " + Quote(from)));
  for (const auto& [id, other] : snapshots_)
    if (other->entry.dataset == s->entry.dataset && other->destroyed == Txg(0) &&
        other->entry.name == parts.second && other.get() != s)
      return Status::AlreadyExists("snapshot " + Quote(dataset + "@" + parts.second) + " exists");
  s->entry.name = parts.second;
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return tx.txg();
}

Result<uint64_t> Pool::WrittenSince(const Dataset& ds, std::string_view snap) const {
  const std::vector<Snap*> snaps = SnapshotsOf(ds.entry.id, true);
  auto it = std::find_if(snaps.begin(), snaps.end(), [&](const Snap* s) {
    return s->entry.name == snap && s->destroyed == Txg(0);
  });
  if (it == snaps.end())
    return Status::NotFound("snapshot " + Quote(FullName(ds) + "@" + std::string(snap)) +
                            " does not exist");
  // What the snapshot held and the dataset still does: its bytes less
  // those that died since (born before it, in later deadlists' buckets
  // keyed below its txg); the rest of what the dataset holds is new.
  const uint64_t txg = (*it)->entry.txg.value();
  uint64_t died = 0;
  auto count = [&](const Deadlist& dl) {
    for (const auto& [key, bucket] : dl)
      if (key < txg) died += bucket.bytes;
  };
  for (auto later = std::next(it); later != snaps.end(); ++later) count((*later)->entry.deadlist);
  count(ds.deadlist);
  const uint64_t ref = (*it)->entry.referenced;
  const uint64_t kept = ref - std::min(ref, died);
  const uint64_t head = ds.os->space().referenced;
  return head - std::min(head, kept);
}

Result<std::vector<PropertyValue>> Pool::SnapshotProperties(
    std::string_view name, const std::vector<std::string>& props) const {
  POOLFS_ASSIGN_OR_RETURN(Snap * s, ResolveSnapshot(name));
  const Dataset* ds = Find(s->entry.dataset);
  const std::string full = FullName(*ds);
  const std::vector<Snap*> snaps = SnapshotsOf(ds->entry.id, true);
  const size_t i = size_t(std::find(snaps.begin(), snaps.end(), s) - snaps.begin());
  const SnapshotFigures f = FiguresOf(*ds, snaps, i);
  static const std::vector<std::string> kAll = {
      "name", "type", "creation", "createtxg", "guid", "used", "referenced", "written", "clones"};
  std::vector<PropertyValue> out;
  for (const std::string& p : props.size() == 1 && props[0] == "all" ? kAll : props) {
    PropertyValue v{p, "", "-"};
    if (p == "name")
      v.value = f.name;
    else if (p == "type")
      v.value = "snapshot";
    else if (p == "creation")
      v.value = std::to_string(f.creation_time);
    else if (p == "createtxg")
      v.value = std::to_string(f.txg.value());
    else if (p == "guid")
      v.value = std::to_string(f.guid);
    else if (p == "used")
      v.value = std::to_string(f.used);
    else if (p == "referenced")
      v.value = std::to_string(f.referenced);
    else if (p == "written")
      v.value = std::to_string(f.written);
    else if (p == "clones") {
      for (const std::string& c : ClonesOf(s->entry.id))
        v.value += (v.value.empty() ? "" : ",") + c;
      if (v.value.empty()) v.value = "-";
    } else
      return Status::InvalidArgument(
          "property " + Quote(p) + " is not one of a snapshot's (" +
          "name, type, creation, createtxg, guid, used, referenced, written, clones)");
    out.push_back(std::move(v));
  }
  return out;
}

SnapshotFigures Pool::FiguresOf(const Dataset& ds, const std::vector<Snap*>& snaps,
                                size_t i) const {
  const SnapshotEntry& e = snaps[i]->entry;
  SnapshotFigures f;
  f.id = e.id;
  f.name = FullName(ds) + "@" + e.name;
  f.txg = e.txg;
  f.creation_time = e.creation_time;
  f.referenced = e.referenced;
  f.guid = e.guid;
  // Only it holds what its successor's deadlist has of the blocks born
  // after the snapshot before it.
  // (A clone's first snapshot: its origin before it.)
  const Snap* origin = ds.entry.origin != 0 ? snapshots_.at(ds.entry.origin).get() : nullptr;
  const uint64_t prev_txg =
      i > 0 ? snaps[i - 1]->entry.txg.value() : (origin ? origin->entry.txg.value() : 0);
  const Deadlist& next = i + 1 < snaps.size() ? snaps[i + 1]->entry.deadlist : ds.deadlist;
  if (auto b = next.find(prev_txg); b != next.end()) f.used = b->second.bytes;
  // It holds what the one before held, less what died between them, plus
  // what was written since.
  const uint64_t prev_ref =
      i > 0 ? snaps[i - 1]->entry.referenced : (origin ? origin->entry.referenced : 0);
  const uint64_t kept = prev_ref - std::min(prev_ref, DeadBytes(e.deadlist));
  f.written = e.referenced - std::min(e.referenced, kept);
  return f;
}

Result<std::vector<SnapshotFigures>> Pool::ListSnapshots(std::string_view root,
                                                         bool recursive) const {
  util::MutexLock l(&mu_);
  std::vector<Dataset*> all;
  POOLFS_ASSIGN_OR_RETURN(Dataset * top, Resolve(root.empty() ? config_.name : root));
  if (recursive || root.empty())
    Subtree(top, &all);
  else
    all.push_back(top);
  std::vector<SnapshotFigures> out;
  for (Dataset* ds : all) {
    const std::vector<Snap*> snaps = SnapshotsOf(ds->entry.id, true);
    for (size_t i = 0; i < snaps.size(); i++)
      if (snaps[i]->destroyed == Txg(0)) out.push_back(FiguresOf(*ds, snaps, i));
  }
  return out;
}

Result<Txg> Pool::Rollback(std::string_view name, bool destroy_later) {
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(Snap * s, ResolveSnapshot(name));
  Dataset* ds = Find(s->entry.dataset);
  const std::string full = FullName(*ds) + "@" + s->entry.name;
  std::vector<Snap*> later;
  for (Snap* other : SnapshotsOf(ds->entry.id))
    if (other->entry.txg > s->entry.txg) later.push_back(other);
  // One asked for but not taken yet is later too.
  for (const auto& [id, other] : snapshots_)
    if (other->entry.dataset == ds->entry.id && other->entry.root.IsHole())
      return Status::Busy("cannot roll back to " + Quote(full) + ": snapshot " +
                          Quote(FullName(*ds) + "@" + other->entry.name) +
                          " is being taken; try again");
  if (!later.empty() && !destroy_later) {
    std::string list;
    for (const Snap* o : later) list += (list.empty() ? "" : ", ") + o->entry.name;
    return Status::InvalidArgument("cannot roll back to " + Quote(full) +
                                   ": later snapshots exist (" + list +
                                   "); destroy them first, or roll back recursively");
  }
  for (const Snap* o : later)
    POOLFS_RETURN_IF_ERROR(NoClones(*o, "cannot roll back to " + Quote(full)));
  if (ds->rollback != Txg(0) || ds->receive != Txg(0))
    return Status::Busy("cannot roll back " + Quote(FullName(*ds)) + ": a " +
                        (ds->rollback != Txg(0) ? "rollback of" : "receive into") +
                        " it is under way");
  if (busy_ && busy_(ds->entry.id))
    return Status::Busy("cannot roll back " + Quote(FullName(*ds)) + ": it is in use");
  for (Snap* o : later) o->destroyed = tx.txg();
  ds->rollback = tx.txg();
  ds->rollback_to = s->entry.id;
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return tx.txg();
}

Status Pool::RollBack(dmu::Tx& tx) {
  const Txg t = tx.txg();
  util::MutexLock l(&mu_);
  for (auto& [id, ds] : datasets_) {
    if (ds->rollback != t) continue;
    ds->rollback = Txg(0);
    auto it = snapshots_.find(ds->rollback_to);
    POOLFS_CHECK(it != snapshots_.end());  // only a rollback destroys later ones
    const SnapshotEntry& snap = it->second->entry;
    const std::string full = FullName(*ds);
    const std::string what = "rolling " + Quote(full) + " back to @" + snap.name;
    // What the dataset wrote since the snapshot (its last changes synced):
    // the blocks born after it. The rest is the snapshot's.
    const zio::BlockPtr root = ds->os->root();
    if (!root.IsHole())
      POOLFS_RETURN_IF_ERROR(dmu::WalkObjsetBlocks(
                                 zio_.get(), root, full,
                                 [&](const zio::BlockPtr& bp) { return zio_->Free(bp, t); },
                                 snap.txg)
                                 .WithContext(what));
    // What died since is the snapshot's, so the dataset's again: off the
    // deadlist, not freed.
    for (const auto& [key, bucket] : ds->deadlist)
      for (const DeadObject& o : bucket.objects)
        POOLFS_RETURN_IF_ERROR(mos_->Free(tx, ObjectId(o.object)).WithContext(what));
    ds->deadlist.clear();
    POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> os,
                            dmu::ObjectSet::Open(zio_.get(), snap.root, full));
    rolled_back_.emplace_back(t, std::move(ds->os));
    Adopt(ds.get(), std::move(os));
    ds->os->SetCopies(uint8_t(PropsOf(*ds).copies));
    ds->entry.root = snap.root;
    dir_dirty_ = true;
  }
  return Status::Ok();
}

Result<Txg> Pool::Promote(std::string_view name) {
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(Dataset * c, Resolve(name));
  const std::string full = FullName(*c);
  const std::string what = "cannot promote " + Quote(full);
  if (c->entry.origin == 0) return Status::InvalidArgument(what + ": it is not a clone");
  const Snap* o = snapshots_.at(c->entry.origin).get();
  Dataset* d = Find(o->entry.dataset);
  POOLFS_RETURN_IF_ERROR(NotPromoting(*c, what));
  POOLFS_RETURN_IF_ERROR(NotPromoting(*d, what));
  for (const Dataset* x : {c, d}) {
    if (x->rollback != Txg(0) || x->receive != Txg(0))
      return Status::Busy(what + ": a " +
                          (x->rollback != Txg(0) ? "rollback of " : "receive into ") +
                          Quote(FullName(*x)) + " is under way; try again");
    for (const auto& [id, s] : snapshots_)
      if (s->entry.dataset == x->entry.id && s->entry.root.IsHole())
        return Status::Busy(what + ": snapshot " + Quote(FullName(*x) + "@" + s->entry.name) +
                            " is being taken; try again");
  }
  // The snapshots that move keep their names and guids: none may be one
  // of C's (those destroyed in a txg not yet synced included, which are
  // still in the directories of the txgs before).
  const std::vector<Snap*> own = SnapshotsOf(c->entry.id, true);
  for (const Snap* m : SnapshotsOf(d->entry.id)) {
    if (m->entry.txg > o->entry.txg) continue;
    for (const Snap* s : own) {
      if (s->entry.name == m->entry.name && s->destroyed == Txg(0))
        return Status::AlreadyExists(
            what + ": snapshot " + Quote(FullName(*d) + "@" + m->entry.name) + " would move to " +
            Quote(full) + ", which has one of that name; rename one of them first");
      if (s->entry.guid == m->entry.guid)
        return Status::AlreadyExists(
            what + ": snapshot " + Quote(FullName(*d) + "@" + m->entry.name) + " would move to " +
            Quote(full) + ", whose snapshot " + Quote(full + "@" + s->entry.name) +
            " has its guid " + std::to_string(s->entry.guid));
    }
  }
  c->promote = tx.txg();
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return tx.txg();
}

Status Pool::PromoteClones(dmu::Tx& tx) {
  util::MutexLock l(&mu_);
  for (auto& [id, entry] : datasets_) {
    Dataset* c = entry.get();
    if (c->promote != tx.txg()) continue;
    c->promote = Txg(0);
    Snap* o = snapshots_.at(c->entry.origin).get();
    Dataset* d = Find(o->entry.dataset);
    POOLFS_CHECK(d != nullptr);  // it has a snapshot
    const uint64_t txg = o->entry.txg.value();
    const std::string what = "promoting " + Quote(FullName(*c));
    // C's buckets 0: blocks of the lineage up to O that C dropped. Taken
    // out now, spread over the moved snapshots' keys below.
    std::vector<std::pair<Deadlist*, std::vector<zio::BlockPtr>>> respread;
    std::vector<Deadlist*> lists = {&c->deadlist};
    for (Snap* s : SnapshotsOf(c->entry.id, true)) lists.push_back(&s->entry.deadlist);
    for (Deadlist* dl : lists) {
      auto b = dl->find(0);
      if (b == dl->end()) continue;
      POOLFS_ASSIGN_OR_RETURN(std::vector<zio::BlockPtr> blocks, ReadBucket(b->second, what));
      for (const DeadObject& obj : b->second.objects)
        POOLFS_RETURN_IF_ERROR(mos_->Free(tx, ObjectId(obj.object)).WithContext(what));
      dl->erase(b);
      respread.emplace_back(dl, std::move(blocks));
    }
    // The lineage up to O is C's; D is a clone of O.
    std::vector<Snap*> kept;
    for (Snap* s : SnapshotsOf(d->entry.id, true)) {
      if (s->entry.txg.value() <= txg)
        s->entry.dataset = c->entry.id;
      else
        kept.push_back(s);
    }
    c->entry.origin = d->entry.origin;
    d->entry.origin = o->entry.id;
    // D's blocks born up to O's txg are O's now: its buckets keyed below
    // it join bucket 0.
    lists = {&d->deadlist};
    for (Snap* s : kept) lists.push_back(&s->entry.deadlist);
    for (Deadlist* dl : lists) {
      std::vector<uint64_t> keys;
      for (const auto& [key, bucket] : *dl)
        if (key != 0 && key < txg) keys.push_back(key);
      for (uint64_t key : keys) Rekey(key, 0, dl);
    }
    for (auto& [dl, blocks] : respread)
      POOLFS_RETURN_IF_ERROR(AddToDeadlist(tx, c->entry.id, std::move(blocks), dl));
    dir_dirty_ = true;
  }
  return Status::Ok();
}

Result<std::unique_ptr<dmu::ObjectSet>> Pool::OpenSnapshot(std::string_view name) {
  zio::BlockPtr root;
  std::string full;
  {
    util::MutexLock l(&mu_);
    POOLFS_ASSIGN_OR_RETURN(Snap * s, ResolveSnapshot(name));
    root = s->entry.root;
    full = FullName(*Find(s->entry.dataset)) + "@" + s->entry.name;
  }
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> os,
                          dmu::ObjectSet::Open(zio_.get(), root, full));
  os->UseCache(arc_.get(), read_ahead_.get());
  return os;
}

Result<std::unique_ptr<dmu::ObjectSet>> Pool::OpenSyncedDataset(std::string_view name) {
  zio::BlockPtr root;
  std::string full;
  {
    util::MutexLock l(&mu_);
    POOLFS_ASSIGN_OR_RETURN(Dataset * ds, Resolve(name));
    root = ds->os->root();
    full = FullName(*ds);
  }
  if (root.IsHole()) return Status::NotFound("dataset " + full + " has not been synced yet");
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> os,
                          dmu::ObjectSet::Open(zio_.get(), root, full));
  os->UseCache(arc_.get(), read_ahead_.get());
  return os;
}

Status Pool::CaptureSnapshots(Txg t) {
  util::MutexLock l(&mu_);
  for (auto& [id, s] : snapshots_) {
    if (s->entry.txg != t || !s->entry.root.IsHole()) continue;
    Dataset* ds = Find(s->entry.dataset);
    POOLFS_CHECK(ds != nullptr && ds->destroyed == Txg(0));  // Destroy refuses while it has one
    // The dataset as t's sync left it; what it dropped since the snapshot
    // before died before this one.
    s->entry.root = ds->entry.root;
    s->entry.referenced = ds->os->space().referenced;
    s->entry.deadlist = std::move(ds->deadlist);
    ds->deadlist.clear();
    {
      util::MutexLock d(&ds->dying_mu);
      s->pending.swap(ds->dying);
    }
    ds->prev_snap.store(t.value(), std::memory_order_release);
    dir_dirty_ = true;
  }
  return Status::Ok();
}

Status Pool::AddToDeadlist(dmu::Tx& tx, uint64_t dataset, std::vector<zio::BlockPtr> blocks,
                           Deadlist* dl) {
  if (blocks.empty()) return Status::Ok();
  const std::vector<uint64_t> txgs = BucketKeys(dataset);
  std::map<uint64_t, std::vector<zio::BlockPtr>> by_key;
  for (const zio::BlockPtr& bp : blocks) by_key[BucketKey(txgs, bp.birth.value())].push_back(bp);
  const size_t bp_size = zio::BlockPtrSize(zio_->format());
  for (auto& [key, bps] : by_key) {
    DeadBucket& b = (*dl)[key];
    // A bucket's last object takes the new pointers while it is small; a
    // merged bucket's objects stay as they are.
    if (b.objects.empty() || b.objects.back().entries * bp_size >= kMosBlockSize * 64) {
      POOLFS_ASSIGN_OR_RETURN(ObjectId obj,
                              mos_->Create(tx, dmu::ObjectType::kDeadlist, kMosBlockSize));
      b.objects.push_back({obj.value(), 0});
    }
    DeadObject& o = b.objects.back();
    POOLFS_RETURN_IF_ERROR(mos_->Write(tx, ObjectId(o.object), o.entries * bp_size,
                                       EncodeBlocks(bps, zio_->format())));
    o.entries += bps.size();
    for (const zio::BlockPtr& bp : bps) b.bytes += bp.allocated();
  }
  dir_dirty_ = true;
  return Status::Ok();
}

Status Pool::StoreDeadlists(dmu::Tx& tx) {
  util::MutexLock l(&mu_);
  for (auto& [id, ds] : datasets_) {
    std::vector<zio::BlockPtr> dying;
    {
      util::MutexLock d(&ds->dying_mu);
      dying.swap(ds->dying);
    }
    POOLFS_RETURN_IF_ERROR(AddToDeadlist(tx, id, std::move(dying), &ds->deadlist));
  }
  for (auto& [id, s] : snapshots_) {
    if (s->pending.empty()) continue;
    POOLFS_RETURN_IF_ERROR(
        AddToDeadlist(tx, s->entry.dataset, std::move(s->pending), &s->entry.deadlist));
    s->pending.clear();
  }
  return Status::Ok();
}

Status Pool::DestroySnapshots(dmu::Tx& tx) {
  const Txg t = tx.txg();
  util::MutexLock l(&mu_);
  std::vector<Snap*> gone;
  for (auto& [id, s] : snapshots_)
    if (s->destroyed == t) gone.push_back(s.get());
  // Oldest first: each one's neighbours are those still live.
  std::sort(gone.begin(), gone.end(),
            [](const Snap* a, const Snap* b) { return a->entry.txg < b->entry.txg; });
  for (Snap* s : gone) {
    Dataset* ds = Find(s->entry.dataset);
    POOLFS_CHECK(ds != nullptr);
    const std::string what = "destroying snapshot " + Quote(FullName(*ds) + "@" + s->entry.name);
    // Its neighbours: those not destroyed yet, the later ones of this txg
    // included (each is gone from snapshots_ once destroyed).
    const std::vector<Snap*> snaps = SnapshotsOf(ds->entry.id, true);
    const size_t i = size_t(std::find(snaps.begin(), snaps.end(), s) - snaps.begin());
    POOLFS_CHECK_LT(i, snaps.size());
    // Before its first snapshot, a clone's lineage is its origin's.
    const uint64_t prev_txg = i > 0 ? snaps[i - 1]->entry.txg.value() : BaseTxg(*ds);
    Deadlist& next = i + 1 < snaps.size() ? snaps[i + 1]->entry.deadlist : ds->deadlist;
    // 1. What died after it and was born after the snapshot before it,
    // only it held: free it.
    if (auto b = next.find(prev_txg); b != next.end()) {
      POOLFS_ASSIGN_OR_RETURN(std::vector<zio::BlockPtr> blocks, ReadBucket(b->second, what));
      for (const zio::BlockPtr& bp : blocks)
        POOLFS_RETURN_IF_ERROR(zio_->Free(bp, t).WithContext(what));
      for (const DeadObject& o : b->second.objects)
        POOLFS_RETURN_IF_ERROR(mos_->Free(tx, ObjectId(o.object)).WithContext(what));
      next.erase(b);
    }
    // 2. What died before it (all born before the snapshot before it) dies
    // before its successor now.
    Merge(std::move(s->entry.deadlist), &next);
    // 3. Blocks born after it keyed by its txg now count from the one
    // before it, in every later deadlist.
    for (size_t k = i + 1; k < snaps.size(); k++)
      Rekey(s->entry.txg.value(), prev_txg, &snaps[k]->entry.deadlist);
    Rekey(s->entry.txg.value(), prev_txg, &ds->deadlist);
    if (i + 1 == snaps.size()) ds->prev_snap.store(prev_txg, std::memory_order_release);
    snapshots_.erase(s->entry.id);
  }
  if (!gone.empty()) dir_dirty_ = true;
  return Status::Ok();
}

Status Pool::LoadSnapshots() {
  const size_t bp_size = zio::BlockPtrSize(zio_->format());
  auto check_objects = [&](const Deadlist& dl, const std::string& what) -> Status {
    for (const auto& [key, b] : dl)
      for (const DeadObject& o : b.objects) {
        auto info = mos_->Stat(ObjectId(o.object));
        if (!info.ok() || info->type != dmu::ObjectType::kDeadlist ||
            info->length != o.entries * bp_size)
          return Status::Corruption(
              "pool directory: " + what + " names MOS object " + std::to_string(o.object) +
              " for " + std::to_string(o.entries) + " block pointers; it " +
              (!info.ok() ? "does not exist (" + info.status().message() + ")"
                          : "is a " + std::string(dmu::ObjectTypeName(info->type)) + " of " +
                                std::to_string(info->length) + " bytes"));
      }
    return Status::Ok();
  };
  for (const SnapshotEntry& e : dir_.snapshots) {
    Dataset* ds = Find(e.dataset);
    POOLFS_CHECK(ds != nullptr);  // the decoder checked it
    POOLFS_RETURN_IF_ERROR(
        check_objects(e.deadlist, "snapshot " + Quote(FullName(*ds) + "@" + e.name)));
    auto s = std::make_unique<Snap>();
    s->entry = e;
    ds->prev_snap.store(std::max(ds->prev_snap.load(), e.txg.value()));
    snapshots_.emplace(e.id, std::move(s));
  }
  // A directory from before guids (version 7 and older; the decoder
  // refuses guid 0 in a later one): each snapshot gets one now, stored
  // with the next sync.
  for (SnapshotEntry& e : dir_.snapshots) {
    if (e.guid != 0) continue;
    e.guid = NewGuid(e.dataset);
    snapshots_.at(e.id)->entry.guid = e.guid;
    dir_dirty_ = true;
  }
  for (const auto& [id, dl] : dir_.head_deadlists) {
    Dataset* ds = Find(id);
    POOLFS_CHECK(ds != nullptr);
    POOLFS_RETURN_IF_ERROR(check_objects(dl, "the deadlist of " + Quote(FullName(*ds))));
    ds->deadlist = dl;
  }
  // A clone keeps what it has of its origin: blocks born up to the
  // origin's txg are never its to free.
  for (auto& [id, ds] : datasets_)
    if (ds->entry.origin != 0) ds->prev_snap.store(std::max(ds->prev_snap.load(), BaseTxg(*ds)));
  return Status::Ok();
}

}  // namespace poolfs::core::pool
