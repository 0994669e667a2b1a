// The pool's dataset tree: names, create, destroy, rename, properties and
// space figures; see "Datasets" in pool.h.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>

#include "dmu/objset_walk.h"
#include "pool/pool.h"
#include "util/check.h"

namespace poolfs::core::pool {

namespace {

constexpr size_t kMaxFullName = 1024;

// The components of a full name, each checked.
Result<std::vector<std::string_view>> Split(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("empty dataset name");
  if (name.size() > kMaxFullName)
    return Status::InvalidArgument("dataset name is " + std::to_string(name.size()) +
                                   " bytes, more than " + std::to_string(kMaxFullName));
  std::vector<std::string_view> comps;
  for (size_t start = 0;;) {
    const size_t slash = name.find('/', start);
    const std::string_view comp = name.substr(start, slash - start);
    if (Status st = ValidateDatasetName(comp); !st.ok())
      return st.WithContext("dataset name " + Quote(name));
    comps.push_back(comp);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return comps;
}

std::string Join(const std::vector<std::string_view>& comps, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; i++) s += (i ? "/" : "") + std::string(comps[i]);
  return s;
}

// Parses `value` for property `name`: its definition and canonical form.
Result<std::pair<const PropertyDef*, std::string>> ParseProperty(std::string_view name,
                                                                 std::string_view value) {
  const PropertyDef* def = FindProperty(name);
  if (def == nullptr) return Status::InvalidArgument("unknown property " + Quote(name));
  if (!def->settable) return Status::InvalidArgument("property " + Quote(name) + " is read-only");
  auto parsed = def->parse(value);
  if (!parsed.ok()) return parsed.status().WithContext("property " + Quote(name));
  return std::make_pair(def, std::move(parsed).value());
}

}  // namespace

Result<std::map<std::string, std::string, std::less<>>> Pool::ParseLocal(
    const std::vector<std::pair<std::string, std::string>>& props) const {
  std::map<std::string, std::string, std::less<>> local;
  for (const auto& [key, value] : props) {
    POOLFS_ASSIGN_OR_RETURN(auto parsed, ParseProperty(key, value));
    POOLFS_RETURN_IF_ERROR(CheckFormatHolds(*parsed.first, parsed.second));
    if (!local.emplace(key, std::move(parsed.second)).second)
      return Status::InvalidArgument("property " + Quote(key) + " is given twice");
  }
  return local;
}

Status Pool::ReservationFits(const std::map<std::string, std::string, std::less<>>& local,
                             const Dataset& parent, const std::string& what) const {
  auto it = local.find("reservation");
  if (it == local.end()) return Status::Ok();
  const uint64_t want = std::stoull(it->second);
  const uint64_t avail = Figures().at(parent.entry.id).available;
  if (want > avail)
    return Status::NoSpace(what + " with a reservation of " + std::to_string(want) +
                           " bytes: " + std::to_string(avail) + " are available");
  return Status::Ok();
}

bool Pool::InDirectory(const Dataset& ds, Txg t) {
  // (A clone has a root from the start: its origin's.)
  if (ds.entry.root.IsHole() || t < ds.entry.created) return false;
  return ds.destroyed == Txg(0) || t < ds.destroyed;
}

std::string Pool::Expand(std::string_view name) const {
  if (name.find('/') == std::string_view::npos && name != config_.name)
    return config_.name + "/" + std::string(name);
  return std::string(name);
}

Pool::Dataset* Pool::Find(uint64_t id) const {
  auto it = datasets_.find(id);
  return it == datasets_.end() ? nullptr : it->second.get();
}

std::string Pool::FullName(const Dataset& ds) const {
  std::string full = ds.entry.name;
  for (uint64_t at = ds.entry.parent; at != 0;) {
    const Dataset* p = Find(at);
    POOLFS_CHECK(p != nullptr);
    full = p->entry.name + "/" + full;
    at = p->entry.parent;
  }
  return full;
}

std::vector<Pool::Dataset*> Pool::Children(uint64_t id) const {
  std::vector<Dataset*> out;
  for (const auto& [cid, ds] : datasets_)
    if (ds->entry.parent == id && ds->entry.id != id && ds->destroyed == Txg(0) && !Hidden(*ds))
      out.push_back(ds.get());
  std::sort(out.begin(), out.end(),
            [](const Dataset* a, const Dataset* b) { return a->entry.name < b->entry.name; });
  return out;
}

void Pool::Subtree(Dataset* ds, std::vector<Dataset*>* out) const {
  out->push_back(ds);
  for (Dataset* c : Children(ds->entry.id)) Subtree(c, out);
}

Result<Pool::Dataset*> Pool::Resolve(std::string_view name) const {
  const std::string full = Expand(name);
  POOLFS_ASSIGN_OR_RETURN(std::vector<std::string_view> comps, Split(full));
  if (comps[0] != config_.name)
    return Status::InvalidArgument("dataset " + Quote(full) + " is not in pool " +
                                   Quote(config_.name));
  Dataset* cur = nullptr;
  for (const auto& [id, ds] : datasets_)
    if (ds->entry.parent == 0 && ds->destroyed == Txg(0)) cur = ds.get();
  POOLFS_CHECK(cur != nullptr);  // the root dataset is never destroyed
  for (size_t i = 1; i < comps.size(); i++) {
    Dataset* next = nullptr;
    for (Dataset* c : Children(cur->entry.id))
      if (c->entry.name == comps[i]) next = c;
    if (next == nullptr)
      return Status::NotFound("dataset " + Quote(Join(comps, i + 1)) + " does not exist");
    cur = next;
  }
  return cur;
}

std::unique_ptr<Pool::Dataset> Pool::NewDataset(uint64_t parent, std::string component, Txg t,
                                                std::unique_ptr<dmu::ObjectSet> os) {
  auto ds = std::make_unique<Dataset>();
  ds->entry.id = dir_.next_dataset_id++;
  ds->entry.parent = parent;
  ds->entry.created = t;
  ds->entry.creation_time = int64_t(std::time(nullptr));
  ds->entry.name = std::move(component);
  Adopt(ds.get(), std::move(os));
  ds->os->SetFirstTxg(t);
  return ds;
}

dmu::ObjectSet* Pool::dataset(std::string_view name) {
  util::MutexLock l(&mu_);
  auto ds = Resolve(name);
  return ds.ok() ? (*ds)->os.get() : nullptr;
}

dmu::ObjectSet* Pool::dataset_by_id(uint64_t id) {
  util::MutexLock l(&mu_);
  Dataset* ds = Find(id);
  return ds != nullptr && ds->destroyed == Txg(0) ? ds->os.get() : nullptr;
}

Result<uint64_t> Pool::DatasetId(std::string_view name) const {
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(Dataset * ds, Resolve(name));
  return ds->entry.id;
}

Result<dmu::ObjectSet*> Pool::CreateDataset(std::string_view name) {
  POOLFS_RETURN_IF_ERROR(CreateDataset(name, {}, false).status());
  dmu::ObjectSet* os = dataset(name);
  POOLFS_CHECK(os != nullptr);
  return os;
}

Result<Txg> Pool::CreateDataset(std::string_view name,
                                const std::vector<std::pair<std::string, std::string>>& props,
                                bool parents) {
  const std::string full = Expand(name);
  POOLFS_ASSIGN_OR_RETURN(std::vector<std::string_view> comps, Split(full));
  if (comps[0] != config_.name)
    return Status::InvalidArgument("dataset " + Quote(full) + " is not in pool " +
                                   Quote(config_.name));
  POOLFS_ASSIGN_OR_RETURN(auto local, ParseLocal(props));
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(Dataset * cur, Resolve(config_.name));
  size_t i = 1;
  for (; i < comps.size(); i++) {
    Dataset* next = nullptr;
    for (Dataset* c : Children(cur->entry.id))
      if (c->entry.name == comps[i]) next = c;
    if (next == nullptr) break;
    cur = next;
  }
  if (i == comps.size()) {
    if (parents) return Txg(0);  // nothing to do, nothing to wait for
    return Status::AlreadyExists("dataset " + Quote(full) + " exists");
  }
  if (i + 1 < comps.size() && !parents)
    return Status::NotFound("cannot create " + Quote(full) + ": its parent " +
                            Quote(Join(comps, comps.size() - 1)) + " does not exist");
  POOLFS_RETURN_IF_ERROR(ReservationFits(local, *cur, "cannot create " + Quote(full)));
  for (; i < comps.size(); i++) {
    auto ds = NewDataset(cur->entry.id, std::string(comps[i]), tx.txg(),
                         std::make_unique<dmu::ObjectSet>(zio_.get(), dmu::ObjsetType::kDataset,
                                                          Join(comps, i + 1)));
    if (i + 1 == comps.size()) ds->entry.props = local;
    cur = ds.get();
    const uint64_t id = ds->entry.id;
    datasets_.emplace(id, std::move(ds));
    cur->os->SetCopies(uint8_t(PropsOf(*cur).copies));
  }
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return tx.txg();
}

Result<Txg> Pool::Clone(std::string_view origin, std::string_view name,
                        const std::vector<std::pair<std::string, std::string>>& props) {
  const std::string full = Expand(name);
  POOLFS_ASSIGN_OR_RETURN(std::vector<std::string_view> comps, Split(full));
  if (comps[0] != config_.name)
    return Status::InvalidArgument("cannot clone to " + Quote(full) + ": it is not in pool " +
                                   Quote(config_.name));
  if (comps.size() == 1)
    return Status::InvalidArgument("cannot clone to " + Quote(full) +
                                   ": that is the pool's root dataset");
  POOLFS_ASSIGN_OR_RETURN(auto local, ParseLocal(props));
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(Snap * snap, ResolveSnapshot(origin));
  const std::string snap_name = FullName(*Find(snap->entry.dataset)) + "@" + snap->entry.name;
  const std::string what = "cannot clone " + Quote(snap_name) + " to " + Quote(full);
  const std::string parent_name = Join(comps, comps.size() - 1);
  auto parent = Resolve(parent_name);
  if (!parent.ok()) return parent.status().WithContext(what);
  if (Resolve(full).ok()) return Status::AlreadyExists(what + ": " + Quote(full) + " exists");
  POOLFS_RETURN_IF_ERROR(ReservationFits(local, **parent, what));
  // The clone's object set starts at the snapshot's root; what it drops
  // of it is the snapshot's (prev_snap).
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> os,
                          dmu::ObjectSet::Open(zio_.get(), snap->entry.root, full));
  auto ds = NewDataset((*parent)->entry.id, std::string(comps.back()), tx.txg(), std::move(os));
  ds->entry.root = snap->entry.root;
  ds->entry.origin = snap->entry.id;
  ds->entry.props = std::move(local);
  ds->prev_snap.store(snap->entry.txg.value(), std::memory_order_release);
  Dataset* d = ds.get();
  datasets_.emplace(d->entry.id, std::move(ds));
  d->os->SetCopies(uint8_t(PropsOf(*d).copies));
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return tx.txg();
}

Result<Txg> Pool::DestroyDataset(std::string_view name, bool recursive) {
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(Dataset * ds, Resolve(name));
  const std::string full = FullName(*ds);
  if (ds->entry.parent == 0)
    return Status::InvalidArgument("cannot destroy " + Quote(full) +
                                   ": it is the pool's root dataset");
  std::vector<Dataset*> children = Children(ds->entry.id);
  if (!children.empty() && !recursive) {
    std::string list;
    for (Dataset* c : children) list += (list.empty() ? "" : ", ") + FullName(*c);
    return Status(StatusCode::kNotEmpty, "cannot destroy " + Quote(full) + ": it has children (" +
                                             list + "); destroy them first, or recursively");
  }
  std::vector<Dataset*> all;
  Subtree(ds, &all);
  for (Dataset* d : all) {
    std::string snaps;
    size_t count = 0;
    for (const auto& [sid, s] : snapshots_)
      if (s->entry.dataset == d->entry.id && s->destroyed == Txg(0) && count++ < 3)
        snaps += (snaps.empty() ? "" : ", ") + Quote(FullName(*d) + "@" + s->entry.name);
    if (count > 0)
      return Status(StatusCode::kNotEmpty,
                    "cannot destroy " + Quote(full) + ": dataset " + Quote(FullName(*d)) + " has " +
                        std::to_string(count) + " snapshot" + (count > 1 ? "s" : "") + " (" +
                        snaps + (count > 3 ? ", ..." : "") + "); destroy them first");
  }
  for (Dataset* d : all) {
    if (busy_ && busy_(d->entry.id))
      return Status::Busy("cannot destroy " + Quote(full) + ": dataset " + Quote(FullName(*d)) +
                          " is in use");
    POOLFS_RETURN_IF_ERROR(NotPromoting(*d, "cannot destroy " + Quote(full)));
    if (d->receive != Txg(0))
      return Status::Busy("cannot destroy " + Quote(full) + ": a receive into " +
                          Quote(FullName(*d)) + " is finishing; try again");
  }
  for (Dataset* d : all) d->destroyed = tx.txg();
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return tx.txg();
}

Status Pool::FreeDestroyed(dmu::Tx& tx) {
  const Txg t = tx.txg();
  // Each with the txg through which its blocks are its origin's (0: none).
  std::vector<std::pair<Dataset*, uint64_t>> gone;
  {
    util::MutexLock l(&mu_);
    for (auto& [id, ds] : datasets_)
      if (ds->destroyed == t) gone.emplace_back(ds.get(), BaseTxg(*ds));
  }
  if (gone.empty()) return Status::Ok();
  // SyncDatasets wrote their last changes: each root names the whole tree,
  // but for a clone's subtrees born up to its origin's txg (the origin's).
  for (const auto& [ds, base] : gone) {
    const zio::BlockPtr root = ds->os->root();
    if (root.IsHole()) continue;
    POOLFS_RETURN_IF_ERROR(dmu::WalkObjsetBlocks(
                               zio_.get(), root, ds->os->name(),
                               [&](const zio::BlockPtr& bp) { return zio_->Free(bp, t); },
                               Txg(base))
                               .WithContext("destroying dataset " + Quote(ds->os->name())));
  }
  util::MutexLock l(&mu_);
  for (const auto& [ds, base] : gone) {
    // A clone's deadlist holds blocks of its origin it dropped: they stay,
    // their list goes.
    for (const auto& [key, bucket] : ds->deadlist)
      for (const DeadObject& o : bucket.objects)
        POOLFS_RETURN_IF_ERROR(mos_->Free(tx, ObjectId(o.object))
                                   .WithContext("destroying dataset " + Quote(ds->os->name())));
    ds->deadlist.clear();
    auto it = datasets_.find(ds->entry.id);
    destroyed_.push_back(std::move(it->second));
    datasets_.erase(it);
  }
  dir_dirty_ = true;
  return Status::Ok();
}

Result<Txg> Pool::RenameDataset(std::string_view from, std::string_view to) {
  if (from.find('@') != std::string_view::npos) return RenameSnapshot(from, to);
  if (to.find('@') != std::string_view::npos)
    return Status::InvalidArgument("cannot rename dataset " + Quote(from) + " to snapshot name " +
                                   Quote(to));
  const std::string full_from = Expand(from), full_to = Expand(to);
  POOLFS_ASSIGN_OR_RETURN(std::vector<std::string_view> fc, Split(full_from));
  POOLFS_ASSIGN_OR_RETURN(std::vector<std::string_view> tc, Split(full_to));
  if (fc[0] != config_.name || tc[0] != config_.name)
    return Status::InvalidArgument("cannot rename " + Quote(full_from) + " to " + Quote(full_to) +
                                   ": both must be in pool " + Quote(config_.name));
  if (tc.size() == 1)
    return Status::InvalidArgument("cannot rename " + Quote(full_from) + " to " + Quote(full_to) +
                                   ": that is the pool's root dataset");
  const std::string to_parent = Join(tc, tc.size() - 1);
  // A new parent whose creation has not synced yet could leave an earlier
  // txg's directory with a child of a dataset it does not list: wait.
  Txg wait;
  {
    util::MutexLock l(&mu_);
    if (auto p = Resolve(to_parent); p.ok()) wait = (*p)->entry.created;
  }
  if (wait > txgs_->last_synced()) POOLFS_RETURN_IF_ERROR(WaitSynced(wait));
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  std::vector<std::pair<uint64_t, DatasetProps>> changed;
  {
    util::MutexLock l(&mu_);
    POOLFS_ASSIGN_OR_RETURN(Dataset * src, Resolve(full_from));
    if (src->entry.parent == 0)
      return Status::InvalidArgument("cannot rename " + Quote(full_from) +
                                     ": it is the pool's root dataset");
    auto parent = Resolve(to_parent);
    if (!parent.ok())
      return parent.status().WithContext("cannot rename " + Quote(full_from) + " to " +
                                         Quote(full_to));
    if (Resolve(full_to).ok())
      return Status::AlreadyExists("cannot rename " + Quote(full_from) + ": " + Quote(full_to) +
                                   " exists");
    for (const Dataset* p = *parent; p != nullptr;
         p = p->entry.parent ? Find(p->entry.parent) : nullptr)
      if (p == src)
        return Status::InvalidArgument("cannot move " + Quote(full_from) + " below itself (" +
                                       Quote(full_to) + ")");
    std::vector<Dataset*> all;
    Subtree(src, &all);
    for (Dataset* d : all)
      if (FullName(*d).size() - full_from.size() + full_to.size() > kMaxFullName)
        return Status::InvalidArgument("cannot rename " + Quote(full_from) + " to " +
                                       Quote(full_to) + ": " + Quote(FullName(*d)) +
                                       " would get a name longer than " +
                                       std::to_string(kMaxFullName) + " bytes");
    src->entry.parent = (*parent)->entry.id;
    src->entry.name = std::string(tc.back());
    changed = SubtreeProps(src);
    dir_dirty_ = true;
    tx.Dirtied(4096);
    tx.Commit();
  }
  NotifyProps(changed);
  return tx.txg();
}

std::pair<std::string, std::string> Pool::Effective(const Dataset& ds,
                                                    const PropertyDef& def) const {
  if (auto it = ds.entry.props.find(def.name); it != ds.entry.props.end())
    return {it->second, "local"};
  if (def.inheritable) {
    for (const Dataset* p = Find(ds.entry.parent); p != nullptr; p = Find(p->entry.parent))
      if (auto it = p->entry.props.find(def.name); it != p->entry.props.end())
        return {it->second, "inherited from " + FullName(*p)};
  }
  return {std::string(def.default_value), "default"};
}

DatasetProps Pool::PropsOf(const Dataset& ds) const {
  std::map<std::string, std::string, std::less<>> values;
  for (const PropertyDef& def : Properties())
    if (def.settable) values[std::string(def.name)] = Effective(ds, def).first;
  return DecodeProps(values);
}

std::vector<std::pair<uint64_t, DatasetProps>> Pool::SubtreeProps(Dataset* ds) const {
  std::vector<Dataset*> all;
  Subtree(ds, &all);
  std::vector<std::pair<uint64_t, DatasetProps>> out;
  for (Dataset* d : all) out.emplace_back(d->entry.id, PropsOf(*d));
  return out;
}

Result<Txg> Pool::SetProperty(std::string_view name, std::string_view prop,
                              std::string_view value) {
  POOLFS_ASSIGN_OR_RETURN(auto parsed, ParseProperty(prop, value));
  const PropertyDef* def = parsed.first;
  POOLFS_RETURN_IF_ERROR(CheckFormatHolds(*def, parsed.second));
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  std::vector<std::pair<uint64_t, DatasetProps>> changed;
  {
    util::MutexLock l(&mu_);
    POOLFS_ASSIGN_OR_RETURN(Dataset * ds, Resolve(name));
    const std::string full = FullName(*ds);
    if (def->name == "quota" || def->name == "reservation") {
      const std::map<uint64_t, DatasetFigures> figures = Figures();
      const DatasetFigures& f = figures.at(ds->entry.id);
      const uint64_t want = std::stoull(parsed.second);
      const uint64_t old = PropsOf(*ds).reservation;
      if (def->name == "quota" && want != 0 && want < f.used)
        return Status::InvalidArgument("cannot set quota of " + Quote(full) + " to " +
                                       std::to_string(want) + " bytes: it uses " +
                                       std::to_string(f.used));
      // used without the reservation's unused part: what a new one covers.
      uint64_t held = f.usedbydataset + f.usedbysnapshots;
      for (Dataset* c : Children(ds->entry.id)) held += figures.at(c->entry.id).used;
      const uint64_t now = std::max(old, held), then = std::max(want, held);
      if (def->name == "reservation" && then > now && then - now > f.available)
        return Status::NoSpace("cannot reserve " + std::to_string(want) + " bytes for " +
                               Quote(full) + ": " + std::to_string(f.available) +
                               " bytes are available");
    }
    ds->entry.props[std::string(def->name)] = parsed.second;
    if (def->inheritable)
      changed = SubtreeProps(ds);
    else
      changed.emplace_back(ds->entry.id, PropsOf(*ds));
    dir_dirty_ = true;
    tx.Dirtied(4096);
    tx.Commit();
  }
  NotifyProps(changed);
  return tx.txg();
}

Result<Txg> Pool::InheritProperty(std::string_view name, std::string_view prop) {
  const PropertyDef* def = FindProperty(prop);
  if (def == nullptr) return Status::InvalidArgument("unknown property " + Quote(prop));
  if (!def->settable) return Status::InvalidArgument("property " + Quote(prop) + " is read-only");
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  std::vector<std::pair<uint64_t, DatasetProps>> changed;
  {
    util::MutexLock l(&mu_);
    POOLFS_ASSIGN_OR_RETURN(Dataset * ds, Resolve(name));
    if (ds->entry.props.erase(std::string(def->name)) == 0)
      return Txg(0);  // not set here: no change
    changed = def->inheritable
                  ? SubtreeProps(ds)
                  : std::vector<std::pair<uint64_t, DatasetProps>>{{ds->entry.id, PropsOf(*ds)}};
    dir_dirty_ = true;
    tx.Dirtied(4096);
    tx.Commit();
  }
  NotifyProps(changed);
  return tx.txg();
}

std::map<uint64_t, DatasetFigures> Pool::Figures() const {
  std::map<uint64_t, DatasetFigures> f;
  std::map<uint64_t, uint64_t> unreserved;  // used without the reservation
  std::map<uint64_t, size_t> depth;
  std::vector<const Dataset*> live;
  for (const auto& [id, ds] : datasets_) {
    if (ds->destroyed != Txg(0)) continue;
    live.push_back(ds.get());
    DatasetFigures& x = f[id];
    x.id = id;
    x.name = FullName(*ds);
    x.created = ds->entry.created;
    x.creation_time = ds->entry.creation_time;
    const dmu::ObjsetSpace space = ds->os->space();
    x.referenced = space.referenced;
    x.logical = space.logical;
    x.physical = space.physical;
    x.compressratio = space.physical > 0 ? double(space.logical) / double(space.physical) : 1.0;
    x.objects = ds->os->live_objects();
    x.usedbysnapshots = UsedBySnapshots(id);
    x.usedbydataset = x.referenced;
    if (ds->entry.origin != 0) {
      // What it still shares with its origin: the origin's bytes less those
      // it dropped (its deadlists' buckets 0).
      const Snap& origin = *snapshots_.at(ds->entry.origin);
      uint64_t dropped = 0;
      auto count = [&dropped](const Deadlist& dl) {
        if (auto b = dl.find(0); b != dl.end()) dropped += b->second.bytes;
      };
      count(ds->deadlist);
      for (const Snap* s : SnapshotsOf(id, true)) count(s->entry.deadlist);
      const uint64_t shared = origin.entry.referenced - std::min(origin.entry.referenced, dropped);
      x.usedbydataset -= std::min(x.usedbydataset, shared);
      x.origin = FullName(*Find(origin.entry.dataset)) + "@" + origin.entry.name;
    }
    const size_t slash = x.name.find('/');
    x.mountpoint = slash == std::string::npos ? "/" : x.name.substr(slash);
    depth[id] = size_t(std::count(x.name.begin(), x.name.end(), '/'));
  }
  // used, children before parents.
  std::sort(live.begin(), live.end(), [&](const Dataset* a, const Dataset* b) {
    return depth[a->entry.id] > depth[b->entry.id];
  });
  std::map<uint64_t, uint64_t> child_used;
  for (const Dataset* ds : live) {
    const uint64_t id = ds->entry.id;
    const uint64_t own = f[id].usedbydataset + f[id].usedbysnapshots + child_used[id];
    const uint64_t reservation = PropsOf(*ds).reservation;
    unreserved[id] = own;
    f[id].used = std::max(own, reservation);
    if (ds->entry.parent != 0) child_used[ds->entry.parent] += f[id].used;
  }
  uint64_t total_unused = 0;
  for (const Dataset* ds : live) total_unused += f[ds->entry.id].used - unreserved[ds->entry.id];
  const uint64_t free = space_->Stats().free;
  for (const Dataset* ds : live) {
    uint64_t mine = 0;  // unused reservations it may use: its own, its ancestors'
    uint64_t room = UINT64_MAX;
    for (const Dataset* a = ds; a != nullptr;
         a = a->entry.parent ? Find(a->entry.parent) : nullptr) {
      const uint64_t id = a->entry.id;
      mine += f[id].used - unreserved[id];
      const uint64_t quota = PropsOf(*a).quota;
      if (quota != 0) room = std::min(room, quota > f[id].used ? quota - f[id].used : 0);
    }
    const uint64_t others = total_unused - mine;
    f[ds->entry.id].available = std::min(free > others ? free - others : 0, room);
  }
  return f;
}

Result<std::vector<DatasetFigures>> Pool::ListDatasets(std::string_view root,
                                                       bool recursive) const {
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(Dataset * top, Resolve(root.empty() ? config_.name : root));
  std::vector<Dataset*> all;
  if (recursive)
    Subtree(top, &all);
  else
    all.push_back(top);
  std::map<uint64_t, DatasetFigures> figures = Figures();
  std::vector<DatasetFigures> out;
  for (Dataset* d : all) out.push_back(std::move(figures.at(d->entry.id)));
  return out;
}

std::vector<std::string> Pool::datasets() const {
  util::MutexLock l(&mu_);
  std::vector<std::string> names;
  auto root = Resolve(config_.name);
  if (!root.ok()) return names;
  std::vector<Dataset*> all;
  Subtree(*root, &all);
  for (Dataset* d : all) names.push_back(FullName(*d));
  return names;
}

Result<std::vector<PropertyValue>> Pool::GetProperties(std::string_view name,
                                                       const std::vector<std::string>& props) {
  if (name.find('@') != std::string_view::npos) {
    util::MutexLock l(&mu_);
    return SnapshotProperties(name, props);
  }
  std::vector<const PropertyDef*> defs;
  std::vector<std::string> written;  // "written@SNAP" properties, in `props` order
  if (props.size() == 1 && props[0] == "all") {
    for (const PropertyDef& def : Properties()) defs.push_back(&def);
  } else {
    for (const std::string& p : props) {
      if (p.starts_with("written@")) {
        written.push_back(p);
        defs.push_back(nullptr);
        continue;
      }
      const PropertyDef* def = FindProperty(p);
      if (def == nullptr) return Status::InvalidArgument("unknown property " + Quote(p));
      defs.push_back(def);
    }
  }
  util::MutexLock l(&mu_);
  Result<Dataset*> resolved = Resolve(name);
  if (!resolved.ok()) {
    // A full stream's target does not exist until it is received whole;
    // its resume token is there all the same.
    const Dataset* h = PartialReceiveInto(Expand(name));
    if (h == nullptr || resolved.status().code() != StatusCode::kNotFound ||
        !std::all_of(props.begin(), props.end(),
                     [](const std::string& p) { return p == "receive_resume_token"; }))
      return resolved.status();
    std::vector<PropertyValue> out;
    for (size_t i = 0; i < props.size(); i++)
      out.push_back(
          {"receive_resume_token", h->entry.props.at(std::string(kReceiveTokenKey)), "-"});
    return out;
  }
  Dataset* ds = *resolved;
  const DatasetFigures f = Figures().at(ds->entry.id);
  std::vector<PropertyValue> out;
  size_t next_written = 0;
  for (const PropertyDef* def : defs) {
    if (def == nullptr) {
      const std::string& p = written[next_written++];
      POOLFS_ASSIGN_OR_RETURN(uint64_t bytes, WrittenSince(*ds, p.substr(8)));
      out.push_back({p, std::to_string(bytes), "-"});
      continue;
    }
    PropertyValue v{std::string(def->name), "", "-"};
    if (def->settable) {
      auto [value, source] = Effective(*ds, *def);
      v.value = def->show ? def->show(value) : value;
      v.source = std::move(source);
    } else if (def->name == "name") {
      v.value = f.name;
    } else if (def->name == "type") {
      v.value = "filesystem";
    } else if (def->name == "creation") {
      v.value = std::to_string(f.creation_time);
    } else if (def->name == "used") {
      v.value = std::to_string(f.used);
    } else if (def->name == "available") {
      v.value = std::to_string(f.available);
    } else if (def->name == "referenced") {
      v.value = std::to_string(f.referenced);
    } else if (def->name == "usedbysnapshots") {
      v.value = std::to_string(f.usedbysnapshots);
    } else if (def->name == "usedbydataset") {
      v.value = std::to_string(f.usedbydataset);
    } else if (def->name == "origin") {
      v.value = f.origin.empty() ? "-" : f.origin;
    } else if (def->name == "objects") {
      v.value = std::to_string(f.objects);
    } else if (def->name == "compressratio") {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2fx", f.compressratio);
      v.value = buf;
    } else if (def->name == "mountpoint") {
      v.value = f.mountpoint;
    } else if (def->name == "receive_resume_token") {
      const Dataset* h = PartialReceiveInto(f.name);
      v.value = h != nullptr ? h->entry.props.at(std::string(kReceiveTokenKey)) : "-";
    }
    out.push_back(std::move(v));
  }
  return out;
}

Result<DatasetProps> Pool::EffectiveProps(uint64_t id) const {
  util::MutexLock l(&mu_);
  const Dataset* ds = Find(id);
  if (ds == nullptr || ds->destroyed != Txg(0))
    return Status::NotFound("no dataset has id " + std::to_string(id));
  return PropsOf(*ds);
}

uint64_t Pool::WatchProperties(std::function<void(uint64_t, const DatasetProps&)> fn) {
  util::MutexLock l(&watch_mu_);
  const uint64_t handle = next_watcher_++;
  watchers_.emplace(handle, std::move(fn));
  return handle;
}

void Pool::UnwatchProperties(uint64_t handle) {
  util::MutexLock l(&watch_mu_);
  watchers_.erase(handle);
}

Status Pool::CheckFormatHolds(const PropertyDef& def, std::string_view value) const {
  if (def.name == "copies" && value != "1" && zio_->format() == zio::BpFormat::kV1)
    return Status::InvalidArgument("copies=" + std::string(value) + ": pool '" + config_.name +
                                   "' has on-disk format 1, which stores one copy of each block "
                                   "(pools created since format 2 hold up to 3)");
  return Status::Ok();
}

void Pool::NotifyProps(const std::vector<std::pair<uint64_t, DatasetProps>>& changed) {
  if (changed.empty()) return;
  {
    // The dmu's share: how many copies new blocks get.
    util::MutexLock l(&mu_);
    for (const auto& [id, props] : changed)
      if (Dataset* ds = Find(id)) ds->os->SetCopies(uint8_t(props.copies));
  }
  std::vector<std::function<void(uint64_t, const DatasetProps&)>> fns;
  {
    util::MutexLock l(&watch_mu_);
    for (const auto& [handle, fn] : watchers_) fns.push_back(fn);
  }
  for (const auto& fn : fns)
    for (const auto& [id, props] : changed) fn(id, props);
}

void Pool::SetBusyCheck(std::function<bool(uint64_t id)> busy) {
  util::MutexLock l(&mu_);
  busy_ = std::move(busy);
}

}  // namespace poolfs::core::pool
