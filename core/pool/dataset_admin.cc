// PoolDatasetAdmin and ValidateDatasetPath (the public dataset API,
// poolfs/dataset.h; OfflinePool::Open is the POSIX layer's, which gives
// its admin Diff).
#include "pool/dataset_admin.h"

#include "pool/pool_phys.h"

namespace poolfs {

Status ValidateDatasetPath(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("empty dataset name");
  if (name.size() > 1024)
    return Status::InvalidArgument("dataset name is " + std::to_string(name.size()) +
                                   " bytes, more than 1024");
  for (size_t start = 0;;) {
    const size_t slash = name.find('/', start);
    const std::string_view comp = name.substr(start, slash - start);
    if (Status st = core::pool::ValidateDatasetName(comp); !st.ok())
      return st.WithContext("dataset name '" + std::string(name) + "'");
    if (slash == std::string_view::npos) return Status::Ok();
    start = slash + 1;
  }
}

}  // namespace poolfs

namespace poolfs::core::pool {

Status PoolDatasetAdmin::Synced(Result<Txg> t) {
  if (!t.ok()) return t.status();
  if (*t == Txg(0)) return Status::Ok();
  return pool_->WaitSynced(*t);
}

Status PoolDatasetAdmin::Create(std::string_view name, bool parents,
                                const std::vector<PropertyAssignment>& props) {
  util::MutexLock l(&mu_);
  std::vector<std::pair<std::string, std::string>> assignments;
  for (const PropertyAssignment& p : props) assignments.emplace_back(p.name, p.value);
  return Synced(pool_->CreateDataset(name, assignments, parents));
}

Status PoolDatasetAdmin::Destroy(std::string_view name, bool recursive) {
  util::MutexLock l(&mu_);
  if (name.find('@') != std::string_view::npos)
    return Synced(pool_->DestroySnapshot(name, recursive));
  return Synced(pool_->DestroyDataset(name, recursive));
}

Status PoolDatasetAdmin::Snapshot(const std::vector<std::string>& names, bool recursive) {
  util::MutexLock l(&mu_);
  return Synced(pool_->Snapshot(names, recursive));
}

Status PoolDatasetAdmin::Rollback(std::string_view name, bool destroy_later) {
  util::MutexLock l(&mu_);
  return Synced(pool_->Rollback(name, destroy_later));
}

Status PoolDatasetAdmin::Clone(std::string_view origin, std::string_view name,
                               const std::vector<PropertyAssignment>& props) {
  util::MutexLock l(&mu_);
  std::vector<std::pair<std::string, std::string>> assignments;
  for (const PropertyAssignment& p : props) assignments.emplace_back(p.name, p.value);
  return Synced(pool_->Clone(origin, name, assignments));
}

Status PoolDatasetAdmin::Promote(std::string_view name) {
  util::MutexLock l(&mu_);
  return Synced(pool_->Promote(name));
}

Result<std::vector<SnapshotInfo>> PoolDatasetAdmin::ListSnapshots(std::string_view root,
                                                                  bool recursive) {
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(std::vector<SnapshotFigures> figures,
                          pool_->ListSnapshots(root, recursive));
  std::vector<SnapshotInfo> out;
  for (SnapshotFigures& f : figures) {
    SnapshotInfo i;
    i.name = std::move(f.name);
    i.id = f.id;
    i.txg = f.txg.value();
    i.creation_time = f.creation_time;
    i.used = f.used;
    i.referenced = f.referenced;
    i.written = f.written;
    i.guid = f.guid;
    out.push_back(std::move(i));
  }
  return out;
}

Status PoolDatasetAdmin::Rename(std::string_view from, std::string_view to) {
  util::MutexLock l(&mu_);
  return Synced(pool_->RenameDataset(from, to));
}

Result<std::vector<DatasetInfo>> PoolDatasetAdmin::List(std::string_view root, bool recursive) {
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(std::vector<DatasetFigures> figures,
                          pool_->ListDatasets(root, recursive));
  std::vector<DatasetInfo> out;
  for (DatasetFigures& f : figures) {
    DatasetInfo i;
    i.name = std::move(f.name);
    i.id = f.id;
    i.creation_txg = f.created.value();
    i.creation_time = f.creation_time;
    i.used = f.used;
    i.referenced = f.referenced;
    i.available = f.available;
    i.objects = f.objects;
    i.compressratio = f.compressratio;
    i.mountpoint = std::move(f.mountpoint);
    i.usedbysnapshots = f.usedbysnapshots;
    i.usedbydataset = f.usedbydataset;
    i.origin = std::move(f.origin);
    out.push_back(std::move(i));
  }
  return out;
}

Result<std::vector<DatasetProperty>> PoolDatasetAdmin::Get(std::string_view name,
                                                           const std::vector<std::string>& props) {
  util::MutexLock l(&mu_);
  POOLFS_ASSIGN_OR_RETURN(std::vector<PropertyValue> values, pool_->GetProperties(name, props));
  std::vector<DatasetProperty> out;
  for (PropertyValue& v : values)
    out.push_back({std::move(v.name), std::move(v.value), std::move(v.source)});
  return out;
}

Status PoolDatasetAdmin::Set(std::string_view name, const PropertyAssignment& prop) {
  util::MutexLock l(&mu_);
  return Synced(pool_->SetProperty(name, prop.name, prop.value));
}

Status PoolDatasetAdmin::Inherit(std::string_view name, std::string_view prop) {
  util::MutexLock l(&mu_);
  return Synced(pool_->InheritProperty(name, prop));
}

Result<std::vector<DiffEntry>> PoolDatasetAdmin::Diff(std::string_view from, std::string_view to) {
  util::MutexLock l(&mu_);
  if (!differ_) return Status::NotSupported("diff needs the POSIX layer's view of the files");
  return differ_(*pool_, from, to);
}

Result<SendSummary> PoolDatasetAdmin::Send(const SendOptions& options, const StreamSink& sink) {
  if (!replicator_.send) return Status::NotSupported("send needs the send layer");
  // A snapshot never changes: the send reads it without the admin's lock
  // (OpenSnapshot and the walk keep what they read alive).
  return replicator_.send(*pool_, options, sink);
}

Result<ReceiveSummary> PoolDatasetAdmin::Receive(
    const ReceiveOptions& options, const StreamSource& source,
    const std::function<Status(std::string_view)>& before_finish) {
  if (!replicator_.receive) return Status::NotSupported("receive needs the send layer");
  const Finisher finisher = [&](std::string_view target,
                                const std::function<Result<Txg>()>& finish) -> Status {
    util::MutexLock l(&mu_);
    if (before_finish) {
      Status st = before_finish(target);
      if (!st.ok()) return st;
    }
    return Synced(finish());
  };
  return replicator_.receive(*pool_, options, source, finisher);
}

}  // namespace poolfs::core::pool
