// DatasetTreeFs; see the theory comment in dataset_tree.h.
#include "posix/dataset_tree.h"

#include "send/receive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "pool/dataset_admin.h"
#include "posix/diff.h"

namespace poolfs::core::posix {

// The pool's admin, with the mount following its changes.
class DatasetTreeFs::Admin final : public DatasetAdmin {
 public:
  explicit Admin(DatasetTreeFs* tree)
      : tree_(tree),
        inner_(
            tree->pool_.get(),
            [](pool::Pool& p, std::string_view from, std::string_view to) {
              return DiffDatasets(p, from, to);
            },
            send::Replicator()) {}

  Status Create(std::string_view name, bool parents,
                const std::vector<PropertyAssignment>& props) override {
    Status st = inner_.Create(name, parents, props);
    return Follow(st);
  }
  Status Destroy(std::string_view name, bool recursive) override {
    if (const size_t at = name.find('@'); at != std::string_view::npos) {
      // A snapshot open here closes first (Busy while in use).
      const std::string snap(name.substr(at + 1));
      const bool range = snap.find('%') != std::string::npos;
      if (std::optional<uint64_t> slot = tree_->SlotNamed(name.substr(0, at))) {
        for (uint64_t s : recursive ? tree_->Subtree(*slot) : std::vector<uint64_t>{*slot})
          POOLFS_RETURN_IF_ERROR(tree_->CloseSnapshots(s, {snap}, range));
      }
      return inner_.Destroy(name, recursive);
    }
    std::optional<uint64_t> slot = tree_->SlotNamed(name);
    if (!slot.has_value() || *slot == 0) return inner_.Destroy(name, recursive);
    if (!recursive && tree_->Subtree(*slot).size() > 1)
      return inner_.Destroy(name, recursive);  // NotEmpty
    POOLFS_RETURN_IF_ERROR(TakeOut(name, *slot));
    // On failure the datasets are still in the pool: Refresh opens them
    // again.
    return Follow(inner_.Destroy(name, recursive));
  }
  Status Rollback(std::string_view name, bool destroy_later) override {
    // The dataset's filesystem goes while the pool rolls it back; Refresh
    // opens it again over what the pool then has.
    const std::string dataset(name.substr(0, name.find('@')));
    std::optional<uint64_t> slot = tree_->SlotNamed(dataset);
    if (!slot.has_value()) return inner_.Rollback(name, destroy_later);  // NotFound
    // -r destroys the later snapshots: none may stay open.
    POOLFS_RETURN_IF_ERROR(tree_->CloseSnapshots(*slot, {}, destroy_later));
    POOLFS_RETURN_IF_ERROR(TakeOut(dataset, *slot));
    return Follow(inner_.Rollback(name, destroy_later));
  }
  Status Clone(std::string_view origin, std::string_view name,
               const std::vector<PropertyAssignment>& props) override {
    return Follow(inner_.Clone(origin, name, props));
  }
  Status Promote(std::string_view name) override {
    // Snapshots of the origin's dataset move to the clone: none may stay
    // open under the old one (Busy while in use), and the names leave the
    // kernel's cache of both snapshot directories.
    std::vector<std::string> moved;
    POOLFS_ASSIGN_OR_RETURN(std::vector<DatasetProperty> origin, inner_.Get(name, {"origin"}));
    const std::string& from = origin.front().value;
    if (const size_t at = from.find('@'); at != std::string::npos) {
      POOLFS_ASSIGN_OR_RETURN(std::vector<SnapshotInfo> snaps,
                              inner_.ListSnapshots(from.substr(0, at), false));
      uint64_t txg = 0;
      for (const SnapshotInfo& s : snaps)
        if (s.name == from) txg = s.txg;
      for (const SnapshotInfo& s : snaps)
        if (s.txg <= txg) moved.push_back(s.name.substr(s.name.find('@') + 1));
      if (std::optional<uint64_t> slot = tree_->SlotNamed(from.substr(0, at)))
        POOLFS_RETURN_IF_ERROR(
            tree_->CloseSnapshots(*slot, std::set<std::string>(moved.begin(), moved.end()), false));
    }
    POOLFS_RETURN_IF_ERROR(inner_.Promote(name));
    tree_->InvalidateSnapshotNames(moved);
    return Status::Ok();
  }
  Status Rename(std::string_view from, std::string_view to) override {
    if (const size_t at = from.find('@'); at != std::string_view::npos) {
      // A snapshot: open here, it stays open under its new name; both names
      // leave the kernel's cache of the snapshot directories.
      POOLFS_RETURN_IF_ERROR(inner_.Rename(from, to));
      const size_t to_at = to.find('@');
      const std::string old_name(from.substr(at + 1));
      const std::string new_name(to_at == std::string_view::npos ? to : to.substr(to_at + 1));
      if (std::optional<uint64_t> slot = tree_->SlotNamed(from.substr(0, at))) {
        util::MutexLock l(&tree_->snap_mu_);
        for (auto& [s, open] : tree_->snaps_)
          if (open.dataset_slot == *slot && open.name == old_name) open.name = new_name;
      }
      tree_->InvalidateSnapshotNames({old_name, new_name});
      return Status::Ok();
    }
    return Follow(inner_.Rename(from, to));
  }
  Result<std::vector<DatasetInfo>> List(std::string_view root, bool recursive) override {
    return inner_.List(root, recursive);
  }
  Status Snapshot(const std::vector<std::string>& names, bool recursive) override {
    POOLFS_RETURN_IF_ERROR(inner_.Snapshot(names, recursive));
    // No stale "no such name" in the kernel's cache of a snapshot directory.
    std::vector<std::string> snaps;
    for (const std::string& n : names)
      if (const size_t at = n.find('@'); at != std::string::npos) snaps.push_back(n.substr(at + 1));
    tree_->InvalidateSnapshotNames(snaps);
    return Status::Ok();
  }
  Result<std::vector<SnapshotInfo>> ListSnapshots(std::string_view root, bool recursive) override {
    return inner_.ListSnapshots(root, recursive);
  }
  Result<std::vector<DatasetProperty>> Get(std::string_view name,
                                           const std::vector<std::string>& props) override {
    return inner_.Get(name, props);
  }
  Status Set(std::string_view name, const PropertyAssignment& prop) override {
    return inner_.Set(name, prop);
  }
  Status Inherit(std::string_view name, std::string_view prop) override {
    return inner_.Inherit(name, prop);
  }
  Result<std::vector<DiffEntry>> Diff(std::string_view from, std::string_view to) override {
    return inner_.Diff(from, to);
  }
  Result<SendSummary> Send(const SendOptions& options, const StreamSink& sink) override {
    return inner_.Send(options, sink);
  }
  Result<ReceiveSummary> Receive(const ReceiveOptions& options,
                                 const StreamSource& source) override {
    // An incremental stream's target goes while the pool gives it its
    // received head; Refresh opens it again over what the pool then has.
    Result<ReceiveSummary> r =
        inner_.Receive(options, source, [this](std::string_view target) -> Status {
          const std::optional<uint64_t> slot = tree_->SlotNamed(std::string(target));
          if (!slot.has_value()) return Status::Ok();  // a full stream's: new
          return TakeOut(target, *slot);
        });
    Status st = Follow(r.status());
    if (!st.ok()) return st;
    return r;
  }

 private:
  // The change's own status, else the tree's trouble following it.
  // Takes dataset `name` (at `slot`) and its descendants out of the tree,
  // for the pool to destroy or roll back: the kernel is asked to drop what
  // it caches below them, and what it still holds after that is in use
  // (Busy after 2 s), as is the root of this mount or of a view.
  Status TakeOut(std::string_view name, uint64_t slot) {
    const std::vector<uint64_t> slots = tree_->Subtree(slot);
    if (std::find(slots.begin(), slots.end(), tree_->top_) != slots.end())
      return Status::Busy("dataset " + std::string(name) +
                          " holds the root of this mount; unmount it first");
    if (auto view = tree_->ViewIn(slots))
      return Status::Busy("dataset " + view->first + " holds the root of the mount on " +
                          view->second);
    std::vector<std::pair<uint64_t, std::string>> joins;
    {
      util::ReadMostlyReader r(&tree_->tree_lock_);
      for (uint64_t s : slots) {
        auto it = tree_->nodes_.find(s);
        if (it == tree_->nodes_.end()) continue;
        const std::string& full = it->second.name;
        joins.emplace_back(Global(it->second.parent_slot, kRootIno),
                           full.substr(full.rfind('/') + 1));
      }
    }
    tree_->Invalidate(joins);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (tree_->InUse(slots)) {
      if (std::chrono::steady_clock::now() > deadline)
        return Status::Busy("dataset " + std::string(name) +
                            " is in use: files in it are open or a working directory");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // A view opened meanwhile (OpenDatasetView registers under mu_).
    util::MutexLock l(&tree_->mu_);
    if (auto view = tree_->ViewIn(slots))
      return Status::Busy("dataset " + view->first + " holds the root of the mount on " +
                          view->second);
    std::vector<std::pair<uint64_t, std::string>> dropped;
    tree_->Detach(slot, &dropped);
    return Status::Ok();
  }
  Status Follow(const Status& change) {
    Status st = tree_->Refresh();
    return change.ok() ? st : change;
  }

  DatasetTreeFs* const tree_;
  pool::PoolDatasetAdmin inner_;
};

DatasetTreeFs::DatasetTreeFs(std::shared_ptr<pool::Pool> pool, const MountOptions& options)
    : pool_(std::move(pool)), opts_(options), slots_(new std::atomic<PosixFs*>[kSlots]) {
  for (uint64_t i = 0; i < kSlots; i++) slots_[i].store(nullptr, std::memory_order_relaxed);
  admin_ = std::make_unique<Admin>(this);
}

DatasetTreeFs::~DatasetTreeFs() { (void)Unmount(); }

DatasetAdmin* DatasetTreeFs::datasets() { return admin_.get(); }

Result<std::unique_ptr<DatasetTreeFs>> DatasetTreeFs::Open(std::unique_ptr<pool::Pool> pool,
                                                           const MountOptions& options) {
  std::shared_ptr<pool::Pool> shared(std::move(pool));
  std::unique_ptr<DatasetTreeFs> fs(new DatasetTreeFs(shared, options));
  Status st = Status::Ok();
  // The log first: it reads the blocks its indirect writes name, which the
  // imported space maps count as free, before anything could allocate.
  std::unique_ptr<zil::IntentLog> log;
  if (!options.read_only) {
    Result<std::unique_ptr<zil::IntentLog>> opened = zil::IntentLog::Open(shared.get());
    if (opened.ok())
      log = std::move(*opened);
    else
      st = opened.status();
  }
  if (st.ok()) {
    Result<uint64_t> root = shared->DatasetId(shared->name());
    if (root.ok()) {
      fs->root_id_ = *root;
      st = fs->Refresh();
    } else {
      st = Status::Corruption("pool '" + shared->name() +
                              "' has no root dataset: " + root.status().message());
    }
  }
  if (st.ok() && fs->dataset_fs(0) == nullptr)
    st = Status::Corruption("pool '" + shared->name() + "' has no root dataset");
  if (st.ok() && !options.dataset.empty()) {
    Result<uint64_t> top = shared->DatasetId(options.dataset);
    if (top.ok() && fs->dataset_fs(fs->SlotFor(*top)) != nullptr)
      fs->top_ = fs->SlotFor(*top);
    else
      st = Status::NotFound("pool '" + shared->name() + "' has no dataset " + options.dataset +
                            (top.ok() ? "" : ": " + top.status().message()));
  }
  if (st.ok() && log != nullptr) st = fs->OpenLog(std::move(log));
  if (st.ok()) {
    // Destroy's last line of defence: a dataset whose files the kernel
    // holds stays (the admin detaches a dataset before it asks the pool).
    DatasetTreeFs* self = fs.get();
    shared->SetBusyCheck([self](uint64_t id) { return self->InUse({self->SlotFor(id)}); });
    fs->props_watch_ = shared->WatchProperties([self](uint64_t id, const pool::DatasetProps& p) {
      // A quota binds the descendants too, and a reservation every
      // other dataset (neither is inherited, so the pool names only the
      // dataset it is set on): all of them look again.
      const uint64_t slot = self->SlotFor(id);
      PosixFs* before = self->slots_[slot].load(std::memory_order_acquire);
      const bool listed = before != nullptr && before->snapdir_visible();
      self->ApplyAll();
      // snapdir changes what the root's listing holds.
      if (before != nullptr && listed != p.snapdir_visible)
        self->InvalidateListings({Global(slot, kRootIno)});
    });
  }
  if (!st.ok()) {
    (void)fs->Unmount();
    return st;
  }
  return fs;
}

Status DatasetTreeFs::OpenLog(std::unique_ptr<zil::IntentLog> log) {
  log_ = std::move(log);
  log_->SetIndirectWriteBytes(opts_.tunables.zil.indirect_write_bytes);
  log_notes_ = log_->notes();
  // The records in the order they were made, each applied by its dataset's
  // filesystem; the objects a create made are known by their new numbers
  // to the records after it.
  std::map<uint64_t, std::map<uint64_t, uint64_t>> ids;  // dataset -> log's object -> now
  uint64_t applied = 0, failed = 0;
  for (const zil::PendingRecord& p : log_->to_replay()) {
    const uint64_t slot = SlotFor(p.dataset);
    PosixFs* fs = slot < kSlots ? slots_[slot].load(std::memory_order_acquire) : nullptr;
    if (fs == nullptr) continue;  // its dataset is gone
    Txg t;
    Status st = fs->Replay(p.record, &ids[p.dataset], &t);
    if (!st.ok()) {
      // The pool as it is cannot take the record (it should not happen):
      // said, and the replay goes on with the next.
      failed++;
      if (failed <= 8) log_notes_.push_back("intent log replay: " + st.ToString());
      continue;
    }
    applied++;
    if (t.value() != 0) log_->NoteReplayed(p.record.seq, t);
  }
  if (applied + failed > 0)
    log_notes_.push_back("intent log: replayed " + std::to_string(applied) + " records" +
                         (failed > 0 ? ", " + std::to_string(failed) + " failed" : std::string()));
  // A txg synced makes the replay durable and said to be done before the
  // new log begins; and one after the start puts the new chain in an
  // uberblock before the first commit can need it.
  if (applied + failed > 0) POOLFS_RETURN_IF_ERROR(pool_->SyncOnce());
  if (Status st = log_->Start(); !st.ok())
    log_notes_.push_back("intent log: " + st.ToString() +
                         " (commits work, each perhaps at the cost of an allocation by the host)");
  POOLFS_RETURN_IF_ERROR(pool_->SyncOnce());
  util::ReadMostlyReader r(&tree_lock_);
  for (const auto& [slot, node] : nodes_)
    if (PosixFs* fs = slots_[slot].load(std::memory_order_acquire))
      fs->SetIntentLog(log_.get(), IdFor(slot));
  return Status::Ok();
}

Status DatasetTreeFs::AddDataset(const std::string& name, uint64_t id) {
  const bool is_root = name == pool_->name();
  uint64_t parent_slot = 0;
  std::string component;
  if (!is_root) {
    if (id == 0 || id >= kSlots)
      return Status::NotSupported("dataset '" + name + "' has id " + std::to_string(id) +
                                  ": a mount numbers at most " + std::to_string(kSlots - 1) +
                                  " datasets");
    const size_t slash = name.rfind('/');
    const std::string parent = name.substr(0, slash);
    component = name.substr(slash + 1);
    util::ReadMostlyReader r(&tree_lock_);
    auto it = std::find_if(nodes_.begin(), nodes_.end(),
                           [&](const auto& n) { return n.second.name == parent; });
    if (it == nodes_.end())
      return Status::Corruption("dataset '" + name + "' has no parent dataset '" + parent + "'");
    parent_slot = it->first;
  }
  const uint64_t slot = is_root ? 0 : id;
  dmu::ObjectSet* os = pool_->dataset_by_id(id);
  if (os == nullptr) return Status::NotFound("dataset '" + name + "'");
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<PosixFs> fs,
                          PosixFs::Open(pool_, os, opts_, /*exports=*/false));
  PosixFs* raw = fs.get();
  if (log_ != nullptr) raw->SetIntentLog(log_.get(), id);
  raw->SetPageDropper([this, slot](uint64_t local) {
    util::MutexLock l(&drop_mu_);
    if (drop_pages_) drop_pages_(Out(Global(slot, local)));
  });
  all_.push_back(std::move(fs));
  {
    util::ReadMostlyWriter w(&tree_lock_);
    Node& n = nodes_[slot];
    n.name = name;
    n.parent_slot = parent_slot;
    if (!is_root) nodes_[parent_slot].children[component] = slot;
  }
  // Its properties before any call can reach it (readonly, a quota).
  Apply(ViewProps(), slot, raw);
  slots_[slot].store(raw, std::memory_order_release);
  return Status::Ok();
}

DatasetTreeFs::PropsView DatasetTreeFs::ViewProps() {
  PropsView v;
  {
    util::ReadMostlyReader r(&tree_lock_);
    for (const auto& [slot, node] : nodes_) v.nodes[slot] = {node.name, node.parent_slot};
  }
  // One lookup per dataset; one destroyed meanwhile is left out.
  for (const auto& [slot, node] : v.nodes)
    if (Result<pool::DatasetProps> p = pool_->EffectiveProps(IdFor(slot)); p.ok())
      v.props[slot] = *p;
  return v;
}

void DatasetTreeFs::Apply(const PropsView& v, uint64_t slot, PosixFs* fs) {
  auto props = v.props.find(slot);
  auto node = v.nodes.find(slot);
  if (props == v.props.end() || node == v.nodes.end()) return;
  std::vector<uint64_t> chain;  // slot and its ancestors
  for (uint64_t s = slot;;) {
    chain.push_back(s);
    auto it = v.nodes.find(s);
    if (s == 0 || it == v.nodes.end()) break;
    s = it->second.second;
  }
  bool bound = false;  // a quota on it or an ancestor
  // A reservation held by a dataset that is not this one or an ancestor
  // (whose reservations this one's writes may use).
  bool reserved_elsewhere = false;
  for (const auto& [s, p] : v.props) {
    const bool mine = std::find(chain.begin(), chain.end(), s) != chain.end();
    if (mine && p.quota != 0) bound = true;
    if (!mine && p.reservation != 0) reserved_elsewhere = true;
  }
  fs->SetProps(props->second, node->second.first, bound, reserved_elsewhere);
}

void DatasetTreeFs::ApplyAll() {
  const PropsView v = ViewProps();
  for (const auto& [slot, node] : v.nodes)
    if (PosixFs* fs = slots_[slot].load(std::memory_order_acquire)) Apply(v, slot, fs);
}

Status DatasetTreeFs::Unmount() {
  util::MutexLock l(&mu_);
  if (unmounted_) return unmount_status_;
  StopNotifier();
  if (root_id_ != 0) pool_->SetBusyCheck(nullptr);
  if (props_watch_ != 0) pool_->UnwatchProperties(props_watch_);
  unmounted_ = true;
  unmounting_.store(true, std::memory_order_release);
  for (uint64_t i = 0; i < kSlots; i++) slots_[i].store(nullptr, std::memory_order_release);
  Status first = Status::Ok();
  // Children first: each waits for its calls in flight.
  for (auto it = all_.rbegin(); it != all_.rend(); ++it) {
    Status st = (*it)->Unmount();
    if (first.ok() && !st.ok()) first = st;
  }
  // Every change synced, the log needs no block: the last uberblock says
  // so (a pool exported cleanly has no log to replay).
  if (log_ != nullptr && pool_->WaitSynced().ok()) log_->StopForExport();
  Status exported = pool_->Export();
  unmount_status_ = first.ok() ? exported : first;
  return unmount_status_;
}

Result<PosixFs*> DatasetTreeFs::Route(uint64_t ino, uint64_t* local) {
  *local = LocalOf(ino);
  // The snapshot directories take no change (the calls that read them do
  // not come here).
  if (IsVirtual(ino))
    return Status(StatusCode::kReadOnly, "the snapshot directories of a dataset are read-only");
  PosixFs* fs = slots_[SlotOf(ino)].load(std::memory_order_acquire);
  if (fs != nullptr) return fs;
  if (unmounting_.load(std::memory_order_acquire))
    return Status(StatusCode::kAborted, "filesystem is unmounted");
  return Status(StatusCode::kStale, "inode " + std::to_string(ino) + ": its dataset (slot " +
                                        std::to_string(SlotOf(ino)) + ") is not in this mount");
}

uint64_t DatasetTreeFs::ChildAt(uint64_t slot, uint64_t local, std::string_view name) {
  if (local != kRootIno) return 0;
  util::ReadMostlyReader r(&tree_lock_);
  auto it = nodes_.find(slot);
  if (it == nodes_.end() || it->second.children.empty()) return 0;
  auto c = it->second.children.find(name);
  return c == it->second.children.end() ? 0 : c->second;
}

Status DatasetTreeFs::NotAJoin(uint64_t parent, std::string_view name, StatusCode code) {
  if (name == kCtlDirName && LocalOf(parent) == kRootIno)
    return Status(code, "'" + std::string(name) + "' is where the dataset's snapshots are");
  const uint64_t child = ChildAt(SlotOf(parent), LocalOf(parent), name);
  if (child == 0) return Status::Ok();
  std::string dataset;
  {
    util::ReadMostlyReader r(&tree_lock_);
    auto it = nodes_.find(child);
    if (it != nodes_.end()) dataset = it->second.name;
  }
  return Status(code, "'" + std::string(name) + "' is dataset " + dataset +
                          " (poolfs dataset rename or destroy changes it)");
}

Result<Attr> DatasetTreeFs::InSlot(uint64_t slot, Result<Attr> a) const {
  if (a.ok()) a->ino = Out(Global(slot, a->ino));
  return a;
}

Result<Attr> DatasetTreeFs::Lookup(const Creds& c, uint64_t parent, std::string_view name) {
  parent = In(parent);
  if (IsVirtual(parent)) return LookupVirtual(c, parent, name);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  const uint64_t slot = SlotOf(parent);
  // A dataset root's hidden ".poolfs"; the ".." of a snapshot's root is
  // the snapshot directory it appears in.
  if (local == kRootIno && (name == kCtlDirName || name == "..")) {
    if (std::optional<uint64_t> owner = SnapshotOwner(slot)) {
      if (name == "..") return VirtualAttr(Global(*owner, kSnapDirIno));
    } else if (name == kCtlDirName) {
      POOLFS_RETURN_IF_ERROR(fs->Access(c, local, X_OK));
      return VirtualAttr(Global(slot, kCtlDirIno));
    }
  }
  // ".." of a child dataset's root is its parent's root, where it appears,
  // as a listing says (the kernel asks it to connect a directory it found
  // by a file handle); the mount's root is its own parent.
  if (name == ".." && local == kRootIno && slot != top_) {
    uint64_t parent_slot = slot;
    {
      util::ReadMostlyReader r(&tree_lock_);
      auto it = nodes_.find(slot);
      if (it != nodes_.end()) parent_slot = it->second.parent_slot;
    }
    PosixFs* pfs = slots_[parent_slot].load(std::memory_order_acquire);
    if (parent_slot != slot && pfs != nullptr) return InSlot(parent_slot, pfs->LookupRoot());
  }
  if (const uint64_t child = ChildAt(slot, local, name); child != 0) {
    POOLFS_RETURN_IF_ERROR(fs->Access(c, local, X_OK));
    PosixFs* cfs = slots_[child].load(std::memory_order_acquire);
    if (cfs == nullptr) return Status::NotFound("'" + std::string(name) + "' not in directory");
    return InSlot(child, cfs->LookupRoot());
  }
  return InSlot(slot, fs->Lookup(c, local, name));
}

void DatasetTreeFs::Forget(uint64_t ino, uint64_t nlookup) {
  ino = In(ino);
  uint64_t local;
  Result<PosixFs*> fs = Route(ino, &local);
  if (fs.ok()) (*fs)->Forget(local, nlookup);
}

Result<Attr> DatasetTreeFs::GetAttr(uint64_t ino) {
  ino = In(ino);
  if (IsVirtual(ino)) return VirtualAttr(ino);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return InSlot(SlotOf(ino), fs->GetAttr(local));
}

Result<Attr> DatasetTreeFs::SetAttr(const Creds& c, uint64_t ino, const SetAttrRequest& req) {
  ino = In(ino);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return Changed(ino, InSlot(SlotOf(ino), fs->SetAttr(c, local, req)));
}

Result<Attr> DatasetTreeFs::Create(const Creds& c, uint64_t parent, std::string_view name,
                                   uint32_t mode) {
  parent = In(parent);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kAlreadyExists));
  return Named(parent, name, InSlot(SlotOf(parent), fs->Create(c, local, name, mode)));
}

Result<Attr> DatasetTreeFs::Mknod(const Creds& c, uint64_t parent, std::string_view name,
                                  uint32_t mode, uint64_t rdev) {
  parent = In(parent);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kAlreadyExists));
  return Named(parent, name, InSlot(SlotOf(parent), fs->Mknod(c, local, name, mode, rdev)));
}

Result<Attr> DatasetTreeFs::Mkdir(const Creds& c, uint64_t parent, std::string_view name,
                                  uint32_t mode) {
  parent = In(parent);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kAlreadyExists));
  return Named(parent, name, InSlot(SlotOf(parent), fs->Mkdir(c, local, name, mode)));
}

Result<Attr> DatasetTreeFs::Symlink(const Creds& c, uint64_t parent, std::string_view name,
                                    std::string_view target) {
  parent = In(parent);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kAlreadyExists));
  return Named(parent, name, InSlot(SlotOf(parent), fs->Symlink(c, local, name, target)));
}

Result<std::string> DatasetTreeFs::Readlink(uint64_t ino) {
  ino = In(ino);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Readlink(local);
}

Result<Attr> DatasetTreeFs::Link(const Creds& c, uint64_t ino, uint64_t new_parent,
                                 std::string_view new_name) {
  ino = In(ino);
  new_parent = In(new_parent);
  uint64_t local, parent_local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  POOLFS_RETURN_IF_ERROR(Route(new_parent, &parent_local).status());
  if (SlotOf(ino) != SlotOf(new_parent))
    return Status(StatusCode::kCrossDevice, "a hard link cannot join two datasets");
  POOLFS_RETURN_IF_ERROR(NotAJoin(new_parent, new_name, StatusCode::kAlreadyExists));
  Result<Attr> a =
      Named(new_parent, new_name, InSlot(SlotOf(ino), fs->Link(c, local, parent_local, new_name)));
  return Changed(ino, std::move(a));
}

Status DatasetTreeFs::Unlink(const Creds& c, uint64_t parent, std::string_view name) {
  parent = In(parent);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kIsADirectory));
  return Named(parent, name, fs->Unlink(c, local, name));
}

Status DatasetTreeFs::Rmdir(const Creds& c, uint64_t parent, std::string_view name) {
  parent = In(parent);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kBusy));
  return Named(parent, name, fs->Rmdir(c, local, name));
}

Status DatasetTreeFs::Rename(const Creds& c, uint64_t parent, std::string_view name,
                             uint64_t new_parent, std::string_view new_name, uint32_t flags) {
  parent = In(parent);
  new_parent = In(new_parent);
  uint64_t local, new_local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(parent, &local));
  POOLFS_RETURN_IF_ERROR(Route(new_parent, &new_local).status());
  POOLFS_RETURN_IF_ERROR(NotAJoin(parent, name, StatusCode::kBusy));
  POOLFS_RETURN_IF_ERROR(NotAJoin(new_parent, new_name, StatusCode::kBusy));
  if (SlotOf(parent) != SlotOf(new_parent))
    return Status(StatusCode::kCrossDevice, "a rename cannot move a file to another dataset");
  return Named(new_parent, new_name,
               Named(parent, name, fs->Rename(c, local, name, new_local, new_name, flags)));
}

Status DatasetTreeFs::Open(const Creds& c, uint64_t ino, int flags) {
  ino = In(ino);
  if (IsVirtual(ino) && (flags & O_ACCMODE) == O_RDONLY) return Status::Ok();
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Open(c, local, flags);
}

Status DatasetTreeFs::Access(const Creds& c, uint64_t ino, int mask) {
  ino = In(ino);
  if (IsVirtual(ino) && (mask & W_OK) == 0) return Status::Ok();
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Access(c, local, mask);
}

Result<size_t> DatasetTreeFs::Read(uint64_t ino, uint64_t off, std::span<char> dst,
                                   uint32_t flags) {
  ino = In(ino);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Read(local, off, dst, flags);
}

Status DatasetTreeFs::ReadShared(uint64_t ino, uint64_t off, std::span<char> scratch,
                                 uint32_t flags, SharedRead* out) {
  ino = In(ino);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->ReadShared(local, off, scratch, flags, out);
}

Result<size_t> DatasetTreeFs::Write(const Creds& c, uint64_t ino, uint64_t off,
                                    std::string_view data) {
  ino = In(ino);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return Changed(ino, fs->Write(c, local, off, data));
}

Status DatasetTreeFs::Fallocate(const Creds& c, uint64_t ino, uint32_t flags, uint64_t off,
                                uint64_t len) {
  ino = In(ino);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return Changed(ino, fs->Fallocate(c, local, flags, off, len));
}

Status DatasetTreeFs::SyncIfAlways(uint64_t ino) {
  uint64_t local;
  Result<PosixFs*> fs = Route(ino, &local);
  return fs.ok() ? (*fs)->SyncIfAlways() : Status::Ok();
}

Result<uint64_t> DatasetTreeFs::CopyFileRange(const Creds& c, uint64_t ino_in, uint64_t off_in,
                                              uint64_t ino_out, uint64_t off_out, uint64_t len,
                                              uint32_t flags) {
  ino_in = In(ino_in);
  ino_out = In(ino_out);
  uint64_t local_in, local_out;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * from, Route(ino_in, &local_in));
  POOLFS_ASSIGN_OR_RETURN(PosixFs * to, Route(ino_out, &local_out));
  return Changed(ino_out, to->CopyFrom(c, *from, local_in, off_in, local_out, off_out, len, flags));
}

Result<uint64_t> DatasetTreeFs::Seek(uint64_t ino, uint64_t off, bool hole) {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(In(ino), &local));
  return fs->Seek(local, off, hole);
}

Status DatasetTreeFs::Fsync(uint64_t ino, bool datasync) {
  ino = In(ino);
  if (IsVirtual(ino)) return Status::Ok();  // nothing to make durable
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->Fsync(local, datasync);
}

Status DatasetTreeFs::ReadDir(const Creds& c, uint64_t ino, uint64_t cookie, bool plus,
                              const std::function<bool(const DirEntry&)>& emit) {
  ino = In(ino);
  if (IsVirtual(ino)) return ReadVirtualDir(ino, cookie, plus, emit);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  const uint64_t slot = SlotOf(ino);
  // What joins this directory: its child datasets (a root only), and for a
  // child's root, the parent's root as "..".
  std::map<std::string, uint64_t, std::less<>> children;
  uint64_t parent_slot = slot;
  if (local == kRootIno) {
    util::ReadMostlyReader r(&tree_lock_);
    auto it = nodes_.find(slot);
    if (it != nodes_.end()) {
      children = it->second.children;
      // The mount's root is its own parent, as any mount's is.
      if (slot != top_) parent_slot = it->second.parent_slot;
    }
  }
  bool full = false;
  if (cookie < kChildCookieBase) {
    POOLFS_RETURN_IF_ERROR(fs->ReadDir(c, local, cookie, plus, [&](const DirEntry& e) {
      if (e.name != "." && e.name != ".." && children.contains(e.name))
        return true;  // hidden by the dataset of that name
      DirEntry g = e;
      g.ino = Out(Global(slot, e.ino));
      g.attr.ino = Out(Global(slot, e.attr.ino));
      if (e.name == ".." && local == kRootIno && parent_slot != slot) {
        g.ino = Out(Global(parent_slot, kRootIno));
        if (plus) {
          PosixFs* pfs = slots_[parent_slot].load(std::memory_order_acquire);
          Result<Attr> pa = pfs != nullptr ? pfs->GetAttr(kRootIno) : Result<Attr>(Attr{});
          if (pa.ok()) g.attr = *pa;
          g.attr.ino = g.ino;
        }
      }
      if (!emit(g)) {
        full = true;
        return false;
      }
      return true;
    }));
    if (full) return Status::Ok();
    cookie = kChildCookieBase;
  }
  // .poolfs, where the snapshots are, when the dataset lists it
  // (snapdir=visible), at the cookie no child dataset has (slot 0's).
  if (local == kRootIno && cookie <= kChildCookieBase && fs->snapdir_visible() &&
      !SnapshotOwner(slot)) {
    DirEntry d;
    d.name = std::string(kCtlDirName);
    d.ino = Global(slot, kCtlDirIno);
    d.type = S_IFDIR;
    d.next_cookie = kChildCookieBase + 1;
    if (plus) {
      Result<Attr> a = VirtualAttr(d.ino);
      if (a.ok()) d.attr = *a;
    }
    if (!emit(d)) return Status::Ok();
    cookie = kChildCookieBase + 1;
  }
  // The child datasets, by slot (their cookies' order).
  std::vector<std::pair<uint64_t, std::string>> by_slot;
  for (const auto& [name, s] : children) by_slot.emplace_back(s, name);
  std::sort(by_slot.begin(), by_slot.end());
  for (const auto& [s, name] : by_slot) {
    if (kChildCookieBase + s < cookie) continue;
    PosixFs* cfs = slots_[s].load(std::memory_order_acquire);
    if (cfs == nullptr) continue;
    DirEntry d;
    d.name = name;
    d.ino = Global(s, kRootIno);
    d.type = S_IFDIR;
    d.next_cookie = kChildCookieBase + s + 1;
    if (plus) {
      Result<Attr> a = cfs->GetAttr(kRootIno);
      if (!a.ok()) continue;
      d.attr = *a;
      d.attr.ino = d.ino;
    }
    if (!emit(d)) return Status::Ok();
    if (plus) (void)cfs->LookupRoot();  // the reference the taken entry carries
  }
  return Status::Ok();
}

Result<std::string> DatasetTreeFs::GetXattr(const Creds& c, uint64_t ino, std::string_view name) {
  ino = In(ino);
  if (IsVirtual(ino))
    return Status(StatusCode::kNoData, "no extended attribute '" + std::string(name) + "'");
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->GetXattr(c, local, name);
}

Status DatasetTreeFs::SetXattr(const Creds& c, uint64_t ino, std::string_view name,
                               std::string_view value, uint32_t flags) {
  ino = In(ino);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return Changed(ino, fs->SetXattr(c, local, name, value, flags));
}

Result<std::vector<std::string>> DatasetTreeFs::ListXattr(const Creds& c, uint64_t ino) {
  ino = In(ino);
  if (IsVirtual(ino)) return std::vector<std::string>{};
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->ListXattr(c, local);
}

Status DatasetTreeFs::RemoveXattr(const Creds& c, uint64_t ino, std::string_view name) {
  ino = In(ino);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return Changed(ino, fs->RemoveXattr(c, local, name));
}

Result<FsStats> DatasetTreeFs::StatFs(uint64_t ino) {
  ino = In(ino);
  if (IsVirtual(ino)) ino = Global(SlotOf(ino), kRootIno);
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(ino, &local));
  return fs->StatFs(local);
}

FsStatus DatasetTreeFs::GetStatus() {
  uint64_t local;
  Result<PosixFs*> fs = Route(kRootIno, &local);
  if (fs.ok()) {
    FsStatus s = (*fs)->GetStatus();
    if (auto list = admin_->List("", /*recursive=*/true); list.ok()) s.dataset_space = *list;
    s.import_notes.insert(s.import_notes.end(), log_notes_.begin(), log_notes_.end());
    if (log_ != nullptr) {
      const zil::IntentLogStats l = log_->stats();
      s.log.enabled = true;
      s.log.commits = l.commits;
      s.log.commits_synced = l.commits_synced;
      s.log.blocks = l.blocks;
      s.log.records = l.records;
      s.log.bytes = l.bytes;
      s.log.commit_ns_total = l.commit_ns_total;
      s.log.commit_ns_max = l.commit_ns_max;
      s.log.replayed = l.replayed;
      s.log.indirect = l.indirect;
      s.log.indirect_bytes = l.indirect_bytes;
      s.log.replayed_indirect = l.replayed_indirect;
    }
    // The scrub's errors in any dataset of the tree, each by a path in it.
    s.scrub = (*fs)->DescribeScrub([this](uint64_t id, uint64_t object) -> Result<std::string> {
      const uint64_t slot = SlotFor(id);
      PosixFs* in = slot < kSlots ? slots_[slot].load(std::memory_order_acquire) : nullptr;
      if (in == nullptr) return Status::NotFound("dataset " + std::to_string(id) + " is not here");
      return in->PathOf(object);
    });
    return s;
  }
  FsStatus s;
  s.pool = pool_->name();
  s.state = "unmounted";
  return s;
}

Status DatasetTreeFs::StartScrub() {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(kRootIno, &local));
  return fs->StartScrub();
}

Status DatasetTreeFs::StopScrub() {
  uint64_t local;
  POOLFS_ASSIGN_OR_RETURN(PosixFs * fs, Route(kRootIno, &local));
  return fs->StopScrub();
}

Status DatasetTreeFs::SetLive(const CoreTunables& t) {
  std::vector<PosixFs*> open;
  {
    util::MutexLock l(&mu_);
    if (unmounted_) return Status(StatusCode::kAborted, "filesystem is unmounted");
    for (uint64_t i = 0; i < kSlots; i++)
      if (PosixFs* fs = slots_[i].load(std::memory_order_acquire)) open.push_back(fs);
  }
  // Each applies the pool-wide tunables again (the same values) and its
  // dataset's own; the first refuses a bad set before any applies it.
  for (PosixFs* fs : open) POOLFS_RETURN_IF_ERROR(fs->SetLive(t));
  return Status::Ok();
}

// Live changes (see the theory comment).

void DatasetTreeFs::SetPageDropper(PageDropper fn) {
  util::MutexLock l(&drop_mu_);
  drop_pages_ = std::move(fn);
}

void DatasetTreeFs::SetEntryInvalidator(EntryInvalidator fn) {
  util::MutexLock l(&invalidate_mu_);
  invalidate_ = std::move(fn);
}

void DatasetTreeFs::Invalidate(const std::vector<std::pair<uint64_t, std::string>>& names) {
  {
    util::MutexLock l(&invalidate_mu_);
    if (invalidate_)
      for (const auto& [parent, name] : names) invalidate_(parent, name);
  }
  util::MutexLock l(&views_mu_);
  for (DatasetViewFs* view : views_)
    for (const auto& [parent, name] : names) view->InvalidateFromTree(parent, name);
}

std::optional<uint64_t> DatasetTreeFs::SlotNamed(std::string_view name) {
  util::ReadMostlyReader r(&tree_lock_);
  for (const auto& [slot, node] : nodes_)
    if (node.name == name) return slot;
  return std::nullopt;
}

std::vector<uint64_t> DatasetTreeFs::Subtree(uint64_t slot) {
  util::ReadMostlyReader r(&tree_lock_);
  std::vector<uint64_t> out{slot};
  for (size_t i = 0; i < out.size(); i++) {
    auto it = nodes_.find(out[i]);
    if (it == nodes_.end()) continue;
    for (const auto& [name, child] : it->second.children) out.push_back(child);
  }
  return out;
}

bool DatasetTreeFs::InUse(const std::vector<uint64_t>& slots) {
  for (uint64_t s : slots) {
    PosixFs* fs = slots_[s].load(std::memory_order_acquire);
    if (fs != nullptr && fs->InUse()) return true;
  }
  return false;
}

void DatasetTreeFs::Detach(uint64_t slot, std::vector<std::pair<uint64_t, std::string>>* dropped) {
  const std::vector<uint64_t> slots = Subtree(slot);
  {
    util::ReadMostlyWriter w(&tree_lock_);
    for (uint64_t s : slots) {
      auto it = nodes_.find(s);
      if (it == nodes_.end()) continue;
      auto parent = nodes_.find(it->second.parent_slot);
      if (parent != nodes_.end()) {
        for (auto c = parent->second.children.begin(); c != parent->second.children.end(); ++c) {
          if (c->second != s) continue;
          dropped->emplace_back(Global(parent->first, kRootIno), c->first);
          parent->second.children.erase(c);
          break;
        }
      }
      nodes_.erase(it);
    }
  }
  // Deepest first: each waits for its calls in flight.
  for (auto it = slots.rbegin(); it != slots.rend(); ++it) {
    PosixFs* fs = slots_[*it].exchange(nullptr, std::memory_order_acq_rel);
    if (fs != nullptr) (void)fs->Unmount();
  }
}

Status DatasetTreeFs::Refresh() {
  std::vector<std::pair<uint64_t, std::string>> changed;
  Status result = Status::Ok();
  {
    util::MutexLock l(&mu_);
    if (unmounted_) return Status(StatusCode::kAborted, "filesystem is unmounted");
    // Parents before children.
    POOLFS_ASSIGN_OR_RETURN(std::vector<pool::DatasetFigures> live,
                            pool_->ListDatasets("", /*recursive=*/true));
    std::map<uint64_t, std::string> by_slot;
    for (const pool::DatasetFigures& f : live) by_slot[SlotFor(f.id)] = f.name;
    // Gone: out of the tree with their descendants.
    std::vector<uint64_t> gone;
    {
      util::ReadMostlyReader r(&tree_lock_);
      for (const auto& [slot, node] : nodes_)
        if (!by_slot.contains(slot)) gone.push_back(slot);
    }
    for (uint64_t s : gone) Detach(s, &changed);
    for (const pool::DatasetFigures& f : live) {
      const uint64_t slot = SlotFor(f.id);
      bool known = false;
      {
        util::ReadMostlyWriter w(&tree_lock_);
        auto it = nodes_.find(slot);
        if (it != nodes_.end()) {
          known = true;
          Node& n = it->second;
          if (n.name != f.name && slot != 0) {
            // Renamed or moved: leave the old parent, join the new one.
            const size_t slash = f.name.rfind('/');
            const std::string parent = f.name.substr(0, slash);
            uint64_t new_parent = n.parent_slot;
            for (const auto& [ps, pn] : nodes_)
              if (pn.name == parent) new_parent = ps;
            auto& old_children = nodes_[n.parent_slot].children;
            for (auto c = old_children.begin(); c != old_children.end(); ++c) {
              if (c->second != slot) continue;
              changed.emplace_back(Global(n.parent_slot, kRootIno), c->first);
              old_children.erase(c);
              break;
            }
            const std::string component = f.name.substr(slash + 1);
            nodes_[new_parent].children[component] = slot;
            changed.emplace_back(Global(new_parent, kRootIno), component);
            n.parent_slot = new_parent;
          }
          n.name = f.name;
        }
      }
      if (known) continue;
      Status st = AddDataset(f.name, f.id);
      if (!st.ok()) {
        if (result.ok()) result = st.WithContext("dataset " + f.name);
        continue;
      }
      if (slot != 0) {
        const size_t slash = f.name.rfind('/');
        util::ReadMostlyReader r(&tree_lock_);
        changed.emplace_back(Global(nodes_.at(slot).parent_slot, kRootIno),
                             f.name.substr(slash + 1));
      }
    }
  }
  // Names (renames), quotas and reservations may have changed anywhere.
  ApplyAll();
  Invalidate(changed);
  return result;
}

}  // namespace poolfs::core::posix
