// The pool's side of a receive: the hidden dataset a stream is applied to,
// and the one txg that makes it appear (see "Receives" in pool.h).
#include <algorithm>

#include "dmu/objset_walk.h"
#include "pool/pool.h"
#include "util/check.h"

namespace poolfs::core::pool {

Result<std::pair<Txg, Pool::ReceiveDataset>> Pool::BeginReceive(std::string_view base,
                                                                std::string_view props_of) {
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(Dataset * root, Resolve(config_.name));
  POOLFS_ASSIGN_OR_RETURN(Dataset * like, Resolve(props_of));
  std::unique_ptr<Dataset> ds;
  const uint64_t id = dir_.next_dataset_id;
  const std::string name = ReceiveName(id);
  if (base.empty()) {
    ds = NewDataset(root->entry.id, name, tx.txg(),
                    std::make_unique<dmu::ObjectSet>(zio_.get(), dmu::ObjsetType::kDataset,
                                                     config_.name + "/" + name));
  } else {
    // As Clone makes one: the snapshot's root, whose blocks stay its own.
    POOLFS_ASSIGN_OR_RETURN(Snap * snap, ResolveSnapshot(base));
    POOLFS_ASSIGN_OR_RETURN(
        std::unique_ptr<dmu::ObjectSet> os,
        dmu::ObjectSet::Open(zio_.get(), snap->entry.root, config_.name + "/" + name));
    ds = NewDataset(root->entry.id, name, tx.txg(), std::move(os));
    ds->entry.root = snap->entry.root;
    ds->entry.origin = snap->entry.id;
    ds->prev_snap.store(snap->entry.txg.value(), std::memory_order_release);
  }
  POOLFS_CHECK_EQ(ds->entry.id, id);
  ReceiveDataset out;
  out.id = id;
  out.os = ds->os.get();
  out.props = PropsOf(*like);
  out.os->SetCopies(uint8_t(out.props.copies));
  datasets_.emplace(id, std::move(ds));
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return std::make_pair(tx.txg(), out);
}

Result<Txg> Pool::FinishReceive(uint64_t hidden, std::string_view target,
                                const SnapshotRequest& snapshot, bool force) {
  const std::string full = Expand(target);
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  const Txg t = tx.txg();
  std::vector<std::pair<uint64_t, DatasetProps>> changed;
  {
    util::MutexLock l(&mu_);
    Dataset* h = Find(hidden);
    POOLFS_CHECK(h != nullptr && Hidden(*h) && h->destroyed == Txg(0));
    const std::string what = "cannot receive " + Quote(full + "@" + snapshot.name);
    // Once it appears there is nothing to resume (and only a hidden
    // dataset may keep a receive's state).
    std::map<std::string, std::string, std::less<>> props = h->entry.props;
    props.erase(std::string(kReceiveTargetKey));
    props.erase(std::string(kReceiveTokenKey));
    POOLFS_RETURN_IF_ERROR(ValidateDatasetName(snapshot.name).WithContext(what));
    if (h->entry.origin == 0) {
      // A full stream: the hidden dataset takes the target's name.
      const size_t slash = full.rfind('/');
      if (slash == std::string::npos)
        return Status::AlreadyExists(what + ": " + Quote(full) + " is the pool's root dataset");
      auto parent = Resolve(full.substr(0, slash));
      if (!parent.ok()) return parent.status().WithContext(what);
      if (Resolve(full).ok()) return Status::AlreadyExists(what + ": " + Quote(full) + " exists");
      POOLFS_RETURN_IF_ERROR(ValidateDatasetName(full.substr(slash + 1)).WithContext(what));
      POOLFS_RETURN_IF_ERROR(CanSnapshot(*h, snapshot.name, t, snapshot.guid).WithContext(what));
      h->entry.parent = (*parent)->entry.id;
      h->entry.name = full.substr(slash + 1);
      h->entry.props = std::move(props);
      NewSnap(h, snapshot.name, t, snapshot.guid, snapshot.creation_time);
      changed = SubtreeProps(h);
    } else {
      // An incremental stream: the target's newest snapshot must still be
      // the hidden dataset's origin.
      POOLFS_ASSIGN_OR_RETURN(Dataset * ds, Resolve(full));
      const Snap* base = snapshots_.at(h->entry.origin).get();
      const std::vector<Snap*> snaps = SnapshotsOf(ds->entry.id);
      if (base->entry.dataset != ds->entry.id || snaps.empty() || snaps.back() != base)
        return Status::InvalidArgument(
            what + ": its base " + Quote(full + "@" + base->entry.name) +
            (base->entry.dataset != ds->entry.id || base->destroyed != Txg(0)
                 ? " is no longer a snapshot of it"
                 : " is no longer its newest snapshot (" + Quote(snaps.back()->entry.name) + ")"));
      for (const auto& [sid, s] : snapshots_)
        if (s->entry.dataset == ds->entry.id && s->entry.root.IsHole())
          return Status::Busy(what + ": snapshot " + Quote(full + "@" + s->entry.name) +
                              " is being taken; try again");
      if (!force && ds->entry.root != base->entry.root)
        return Status::InvalidArgument(
            what + ": " + Quote(full) + " has changed since its snapshot " +
            Quote("@" + base->entry.name) + "; receive with -F to discard those changes");
      if (ds->rollback != Txg(0) || ds->receive != Txg(0))
        return Status::Busy(what + ": a " +
                            (ds->rollback != Txg(0) ? "rollback of " : "receive into ") +
                            Quote(full) + " is under way; try again");
      POOLFS_RETURN_IF_ERROR(NotPromoting(*ds, what));
      if (busy_ && busy_(ds->entry.id))
        return Status::Busy(what + ": " + Quote(full) + " is in use");
      POOLFS_RETURN_IF_ERROR(CanSnapshot(*ds, snapshot.name, t, snapshot.guid).WithContext(what));
      NewSnap(ds, snapshot.name, t, snapshot.guid, snapshot.creation_time);
      ds->receive = t;
      ds->receive_from = hidden;
      // Until t's sync takes it, the hidden dataset is spoken for.
      h->receive = t;
    }
    dir_dirty_ = true;
    tx.Dirtied(4096);
    tx.Commit();
  }
  NotifyProps(changed);
  return t;
}

Result<Txg> Pool::AbandonReceive(uint64_t hidden) {
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  Dataset* h = Find(hidden);
  if (h == nullptr || !Hidden(*h) || h->destroyed != Txg(0) || h->receive != Txg(0))
    return Txg(0);  // gone already, or finishing
  h->destroyed = tx.txg();
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return tx.txg();
}

Status Pool::DropUnfinishedReceives() {
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  bool any = false;
  for (auto& [id, ds] : datasets_)
    if (Hidden(*ds) && ds->destroyed == Txg(0) && !ds->entry.props.contains(kReceiveTokenKey)) {
      ds->destroyed = tx.txg();
      any = true;
      import_notes_.push_back("destroyed " + Quote(config_.name + "/" + ds->entry.name) +
                              ", the dataset of a receive that did not finish");
    }
  if (!any) return Status::Ok();
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return Status::Ok();
}

Result<Txg> Pool::SaveReceiveState(uint64_t hidden, std::string_view target,
                                   std::string_view token) {
  const std::string full = Expand(target);
  if (token.size() > kMaxPropertyValue || full.size() > kMaxPropertyValue)
    return Status::InvalidArgument("cannot keep the state of the receive into " + Quote(full) +
                                   ": its resume token would be " + std::to_string(token.size()) +
                                   " bytes, more than " + std::to_string(kMaxPropertyValue));
  dmu::Tx tx(txgs_.get());
  POOLFS_RETURN_IF_ERROR(tx.Assign());
  util::MutexLock l(&mu_);
  Dataset* h = Find(hidden);
  POOLFS_CHECK(h != nullptr && Hidden(*h) && h->destroyed == Txg(0));
  h->entry.props[std::string(kReceiveTargetKey)] = full;
  h->entry.props[std::string(kReceiveTokenKey)] = std::string(token);
  dir_dirty_ = true;
  tx.Dirtied(4096);
  tx.Commit();
  return tx.txg();
}

Pool::Dataset* Pool::PartialReceiveInto(std::string_view full) const {
  for (const auto& [id, ds] : datasets_) {
    if (!Hidden(*ds) || ds->destroyed != Txg(0) || ds->receive != Txg(0)) continue;
    auto t = ds->entry.props.find(kReceiveTargetKey);
    if (t != ds->entry.props.end() && t->second == full &&
        ds->entry.props.contains(kReceiveTokenKey))
      return ds.get();
  }
  return nullptr;
}

std::optional<Pool::PartialReceive> Pool::FindPartialReceive(std::string_view target) const {
  util::MutexLock l(&mu_);
  const Dataset* h = PartialReceiveInto(Expand(target));
  if (h == nullptr) return std::nullopt;
  return PartialReceive{h->entry.id, h->os.get(), h->entry.props.find(kReceiveTokenKey)->second};
}

Status Pool::TakeReceivedHeads(dmu::Tx& tx) {
  const Txg t = tx.txg();
  util::MutexLock l(&mu_);
  for (auto& [id, entry] : datasets_) {
    Dataset* ds = entry.get();
    if (ds->receive != t) continue;
    ds->receive = Txg(0);
    Dataset* h = Find(ds->receive_from);
    POOLFS_CHECK(h != nullptr && h->receive == t);
    const Snap& base = *snapshots_.at(h->entry.origin);
    const std::string full = FullName(*ds);
    const std::string what = "taking the received head of " + Quote(full);
    // The old head, as a rollback to the base leaves it: what it wrote
    // since the base is freed, what it dropped is the base's again.
    const zio::BlockPtr root = ds->os->root();
    if (!root.IsHole())
      POOLFS_RETURN_IF_ERROR(dmu::WalkObjsetBlocks(
                                 zio_.get(), root, full,
                                 [&](const zio::BlockPtr& bp) { return zio_->Free(bp, t); },
                                 base.entry.txg)
                                 .WithContext(what));
    for (const auto& [key, bucket] : ds->deadlist)
      for (const DeadObject& o : bucket.objects)
        POOLFS_RETURN_IF_ERROR(mos_->Free(tx, ObjectId(o.object)).WithContext(what));
    ds->deadlist.clear();
    // What the received head dropped of the base's lineage is the
    // dataset's to keep on its deadlist (its blocks born after the base
    // it freed as it went: it had no snapshot).
    std::vector<zio::BlockPtr> dropped;
    for (const auto& [key, bucket] : h->deadlist) {
      POOLFS_ASSIGN_OR_RETURN(std::vector<zio::BlockPtr> blocks, ReadBucket(bucket, what));
      dropped.insert(dropped.end(), blocks.begin(), blocks.end());
      for (const DeadObject& o : bucket.objects)
        POOLFS_RETURN_IF_ERROR(mos_->Free(tx, ObjectId(o.object)).WithContext(what));
    }
    h->deadlist.clear();
    {
      util::MutexLock a(&ds->dying_mu);
      util::MutexLock b(&h->dying_mu);
      ds->dying.swap(h->dying);
      h->dying.clear();
    }
    POOLFS_RETURN_IF_ERROR(AddToDeadlist(tx, ds->entry.id, std::move(dropped), &ds->deadlist));
    rolled_back_.emplace_back(t, std::move(ds->os));
    Adopt(ds, std::move(h->os));
    ds->os->SetCopies(uint8_t(PropsOf(*ds).copies));
    ds->entry.root = h->entry.root;
    // The hidden dataset is gone with nothing to free: its blocks are the
    // dataset's now.
    auto it = datasets_.find(h->entry.id);
    destroyed_.push_back(std::move(it->second));
    datasets_.erase(it);
    dir_dirty_ = true;
  }
  return Status::Ok();
}

}  // namespace poolfs::core::pool
