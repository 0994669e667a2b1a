#include "stress/workload.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <optional>
#include <set>
#include <string>

#include "stress/snapshot_digest.h"
#include "stress/stamp.h"

namespace poolfs::stress {

namespace {

constexpr uint64_t kMiB = 1 << 20;

// Thread 0's chances, per thousand Txs, to take a snapshot (or, at the
// limit, destroy the oldest) and to destroy a random one ...
constexpr int kSnapshotTakePerMille = 10;
constexpr int kSnapshotDestroyPerMille = 4;
// ... and to clone one into a new dataset, rename one, and list them all
// against its own record.
constexpr int kClonePerMille = 3;
constexpr int kSnapshotRenamePerMille = 4;
constexpr int kSnapshotListPerMille = 5;
// ... and to roll a dataset back to one of its snapshots.
constexpr int kRollbackPerMille = 3;
// Of the operations on an existing object, the share that clone blocks
// (taken from the read-backs).
constexpr int kCloneBlocksPercent = 4;

uint32_t PickBlockSize(std::mt19937_64& rng) {
  const int r = int(rng() % 100);
  if (r < 5) return 512;
  if (r < 20) return 4096;
  if (r < 35) return 16384;
  if (r < 90) return 128 * 1024;
  return 1024 * 1024;
}

util::Compression PickCompression(std::mt19937_64& rng) {
  const int r = int(rng() % 10);
  if (r < 3) return util::Compression::kOff;
  if (r < 8) return util::Compression::kLz4;
  return util::Compression::kZstd;
}

uint64_t PickWriteLength(std::mt19937_64& rng) {
  const int r = int(rng() % 100);
  if (r < 50) return 1 + rng() % 4096;
  if (r < 80) return 4096 + rng() % (28 * 1024);
  return 32 * 1024 + rng() % (224 * 1024);
}

uint64_t PickWriteOffset(std::mt19937_64& rng, const ObjectState& o) {
  const int r = int(rng() % 100);
  if (o.length > 4 * kMiB) return r < 70 ? rng() % kMiB : rng() % o.length;
  if (r < 55 && o.length > 0) return rng() % o.length;
  if (r < 85) return o.length + rng() % (64 * 1024);
  if (r < 98) return rng() % kMiB;
  return rng() % (uint64_t{1} << 34);  // far: more indirect levels
}

}  // namespace

Status ScanObjects(dmu::ObjectSet* os, uint16_t dataset, std::vector<ObjectState>* out) {
  const uint64_t limit = os->next_object();
  for (uint64_t id = 1; id < limit; id++) {
    auto info = os->Stat(ObjectId(id));
    if (!info.ok()) {
      if (info.status().code() == StatusCode::kNotFound) continue;
      return info.status().WithContext(os->name() + ": scanning object " + std::to_string(id));
    }
    out->push_back({dataset, id, info->length, info->block_size});
  }
  return Status::Ok();
}

namespace {

// The object allocation policies the workload cycles through; `on` twice,
// since it reuses freed ids at once (the others rarely, in these small
// datasets).
dmu::BackfillMode ModeFor(uint64_t n) {
  static constexpr dmu::BackfillMode kModes[] = {dmu::BackfillMode::kOn, dmu::BackfillMode::kAuto,
                                                 dmu::BackfillMode::kOn, dmu::BackfillMode::kOff,
                                                 dmu::BackfillMode::kLegacy};
  return kModes[n % 5];
}

}  // namespace

Workload::Workload(core::pool::Pool* pool, std::vector<dmu::ObjectSet*> sets, OpLog* log,
                   const WorkloadOptions& options, std::function<bool()> failure_expected)
    : pool_(pool),
      log_(log),
      options_(options),
      failure_expected_(std::move(failure_expected)),
      tree_(options.tree),
      snapshots_(options.snapshots),
      generations_(options.snapshot_generations),
      next_snapshot_(options.next_snapshot),
      clones_(options.clones) {
  util::MutexLock l(&sets_mu_);
  for (size_t i = 0; i < sets.size(); i++)
    if (sets[i] != nullptr) sets_[uint16_t(i)] = sets[i];
  handshakes_.assign(size_t(options_.threads), 0);
  ended_.assign(size_t(options_.threads), false);
}

Workload::~Workload() { Stop(); }

void Workload::Start(const std::vector<ObjectState>& existing, const std::vector<Model>& models) {
  const size_t n = size_t(options_.threads);
  std::vector<std::vector<ObjectState>> split(n);
  std::vector<LocalModels> local(n);
  for (const ObjectState& o : existing) {
    const size_t t = (o.id + o.dataset) % n;
    split[t].push_back(o);
    auto it = models[o.dataset].objects().find(o.id);
    if (it != models[o.dataset].objects().end()) local[t][o.dataset].Adopt(o.id, it->second);
  }
  // Every backfill mode gets its turn: one per dataset, by seed, and
  // thread 0 switches one now and then (a live switch mid-txg).
  {
    util::MutexLock l(&sets_mu_);
    for (const auto& [i, os] : sets_) os->SetBackfill(ModeFor(options_.seed + i));
  }
  running_ = options_.threads;
  for (size_t i = 0; i < n; i++)
    threads_.emplace_back([this, i, mine = std::move(split[i]), l = std::move(local[i])]() mutable {
      Run(int(i), std::move(mine), std::move(l));
    });
  watcher_ = std::thread([this] { Watch(); });
}

void Workload::Stop() {
  stop_ = true;
  if (threads_.empty() && !watcher_.joinable()) return;  // stopped (the pool may be gone)
  pool_->txgs().Kick();  // a thread waiting for its txg to sync need not wait out the timeout
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  if (watcher_.joinable()) watcher_.join();
}

Status Workload::status() const {
  util::MutexLock l(&mu_);
  return first_error_;
}

void Workload::Fail(int thread, const Status& st) {
  if (stop_.load() && st.code() == StatusCode::kAborted) return;  // the pool is closing
  if (failure_expected_ && failure_expected_()) return;
  util::MutexLock l(&mu_);
  if (first_error_.ok()) first_error_ = st.WithContext("workload thread " + std::to_string(thread));
}

void Workload::Watch() {
  uint64_t logged = 0;
  while (running_.load() > 0) {
    const uint64_t t = pool_->txgs().last_synced().value();
    if (t > logged) {
      OpRecord r;
      r.kind = OpKind::kSynced;
      r.seq = log_->NextSeq();
      r.txg = t;
      if (!log_->Append(r).ok()) return;
      logged = t;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

OpRecord Workload::DatasetRecord(OpKind kind, uint16_t dataset) {
  OpRecord r;
  r.kind = kind;
  r.dataset = dataset;
  r.a = r.txg = pool_->txgs().open_txg().value();
  r.b = pool_->txgs().last_synced().value() + 1;
  r.seq = log_->NextSeq();
  return r;
}

Status Workload::CreateDataset() {
  const uint16_t index = uint16_t(tree_.size());
  OpRecord r = DatasetRecord(OpKind::kCreateDataset, index);
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  const std::string name = tree_.Name(0) + "/" + DatasetName(index);
  auto txg = pool_->CreateDataset(name, {}, false);
  if (!txg.ok()) return txg.status().WithContext("CreateDataset(" + name + ")");
  dmu::ObjectSet* const os = pool_->dataset(name);
  if (os == nullptr) return Status::Corruption("dataset " + name + " is missing once created");
  r.aux = 1;
  r.txg = txg->value();
  r.seq = log_->NextSeq();
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  tree_.Add();
  {
    util::MutexLock l(&sets_mu_);
    sets_[index] = os;
    sets_version_++;
  }
  if (options_.after_dataset_change) options_.after_dataset_change();
  return Status::Ok();
}

Status Workload::RenameDataset(uint16_t i, uint16_t parent) {
  const uint32_t generation = tree_.generation(i) + 1;
  OpRecord r = DatasetRecord(OpKind::kRenameDataset, i);
  r.object = RenameObject(parent, generation);
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  const std::string from = tree_.Name(i);
  const std::string to = tree_.Name(parent) + "/" + DatasetComponent(i, generation);
  auto txg = pool_->RenameDataset(from, to);
  if (!txg.ok()) return txg.status().WithContext("RenameDataset(" + from + ", " + to + ")");
  r.aux = 1;
  r.txg = txg->value();
  r.seq = log_->NextSeq();
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  POOLFS_RETURN_IF_ERROR(tree_.Rename(i, parent, generation));
  if (options_.after_dataset_change) options_.after_dataset_change();
  return Status::Ok();
}

bool Workload::Quiesce(const std::vector<uint16_t>& datasets, std::vector<ObjectState>& mine,
                       LocalModels& local) {
  std::vector<uint64_t> seen;
  {
    util::MutexLock l(&sets_mu_);
    for (uint16_t d : datasets) sets_.erase(d);
    sets_version_++;
    seen = handshakes_;
  }
  for (uint16_t d : datasets) {
    local.erase(d);
    std::erase_if(mine, [d](const ObjectState& o) { return o.dataset == d; });
  }
  // Another thread's Txs that may use them have committed once it starts a
  // new one (or has ended).
  for (size_t t = 1; t < seen.size(); t++) {
    while (true) {
      {
        util::MutexLock l(&sets_mu_);
        if (ended_[t] || handshakes_[t] != seen[t]) break;
      }
      if (stop_.load()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return true;
}

Status Workload::DestroyDataset(uint16_t i, std::vector<ObjectState>& mine, LocalModels& local) {
  const std::vector<uint16_t> doomed = tree_.Subtree(i);
  // The pool destroys no dataset that has snapshots, nor a snapshot that
  // has clones: a subtree with the origin of a live clone stays (the clone
  // goes first, in a destroy of its own).
  std::vector<uint64_t> snaps;
  for (const auto& [n, d] : snapshots_)
    if (std::find(doomed.begin(), doomed.end(), d) != doomed.end()) {
      if (HasClones(n)) return Status::Ok();
      snaps.push_back(n);
    }
  for (uint64_t n : snaps) POOLFS_RETURN_IF_ERROR(DestroySnapshot(n));
  if (!Quiesce(doomed, mine, local)) return Status::Ok();
  OpRecord r = DatasetRecord(OpKind::kDestroyDataset, i);
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  const std::string name = tree_.Name(i);
  auto txg = pool_->DestroyDataset(name, /*recursive=*/true);
  if (!txg.ok()) return txg.status().WithContext("DestroyDataset(" + name + ", recursive)");
  r.aux = 1;
  r.txg = txg->value();
  r.seq = log_->NextSeq();
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  POOLFS_RETURN_IF_ERROR(tree_.Destroy(i));
  for (uint16_t d : doomed)
    if (auto c = clones_.find(d); c != clones_.end()) {
      released_[c->second] = r.txg;
      clones_.erase(c);
    }
  if (options_.after_dataset_change) options_.after_dataset_change();
  return Status::Ok();
}

Status Workload::MaybeChangeDatasets(std::mt19937_64& rng, std::vector<ObjectState>& mine,
                                     LocalModels& local) {
  const std::vector<uint16_t> live = tree_.Live();
  const int roll = int(rng() % 600);
  if (roll < 4) {  // one in 150: create
    if (int(live.size()) >= options_.max_datasets || tree_.size() >= kMaxDatasetIndices)
      return Status::Ok();
    return CreateDataset();
  }
  if (roll >= 9 || live.size() < 2) return Status::Ok();
  const uint16_t i = live[1 + rng() % (live.size() - 1)];  // not the root
  if (roll < 7) {  // one in 200: rename, half the time below another dataset
    std::vector<uint16_t> parents{0};
    if (rng() % 2)
      for (uint16_t p : live)
        if (p != 0 && !tree_.Below(p, i)) parents.push_back(p);
    return RenameDataset(i, parents[rng() % parents.size()]);
  }
  if (live.size() > 3) return DestroyDataset(i, mine, local);  // one in 300
  return Status::Ok();
}

std::string Workload::SnapshotFullName(uint64_t number) const {
  const auto g = generations_.find(number);
  return tree_.Name(snapshots_.at(number)) + "@" +
         SnapshotName(number, g == generations_.end() ? 0 : g->second);
}

Status Workload::TakeSnapshot(uint16_t i) {
  const uint64_t number = next_snapshot_++;
  OpRecord r = DatasetRecord(OpKind::kSnapshot, i);
  r.object = number;
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  const std::string name = tree_.Name(i) + "@" + SnapshotName(number);
  auto txg = pool_->Snapshot({name}, /*recursive=*/false);
  if (!txg.ok()) return txg.status().WithContext("Snapshot(" + name + ")");
  r.aux = 1;
  r.txg = txg->value();
  r.seq = log_->NextSeq();
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  snapshots_[number] = i;
  if (options_.after_dataset_change) options_.after_dataset_change();
  // Until its txg syncs, the snapshot is not taken: it cannot be opened.
  POOLFS_RETURN_IF_ERROR(
      pool_->WaitSynced(*txg).WithContext("WaitSynced(" + std::to_string(r.txg) + ") of " + name));
  auto os = pool_->OpenSnapshot(name);
  if (!os.ok()) return os.status().WithContext("OpenSnapshot(" + name + ")");
  POOLFS_ASSIGN_OR_RETURN(ObjectSetDigest digest, DigestObjectSet(os->get()));
  r.aux = 2;
  r.a = digest.hash;
  r.b = digest.objects;
  r.seq = log_->NextSeq();
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  snapshots_read_++;
  return Status::Ok();
}

Status Workload::DestroySnapshot(uint64_t number) {
  OpRecord r = DatasetRecord(OpKind::kDestroySnapshot, snapshots_.at(number));
  r.object = number;
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  const std::string name = SnapshotFullName(number);
  auto txg = pool_->DestroySnapshot(name, /*recursive=*/false);
  if (!txg.ok()) return txg.status().WithContext("DestroySnapshot(" + name + ")");
  r.aux = 1;
  r.txg = txg->value();
  r.seq = log_->NextSeq();
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  snapshots_.erase(number);
  generations_.erase(number);
  if (options_.after_dataset_change) options_.after_dataset_change();
  return Status::Ok();
}

Status Workload::RenameSnapshot(uint64_t number) {
  const auto g = generations_.find(number);
  const uint32_t generation = (g == generations_.end() ? 0 : g->second) + 1;
  OpRecord r = DatasetRecord(OpKind::kRenameSnapshot, snapshots_.at(number));
  r.object = number;
  r.c = generation;
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  const std::string from = SnapshotFullName(number);
  const std::string to = "@" + SnapshotName(number, generation);
  auto txg = pool_->RenameDataset(from, to);
  if (!txg.ok()) return txg.status().WithContext("RenameDataset(" + from + ", " + to + ")");
  r.aux = 1;
  r.txg = txg->value();
  r.seq = log_->NextSeq();
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  generations_[number] = generation;
  if (options_.after_dataset_change) options_.after_dataset_change();
  return Status::Ok();
}

Status Workload::ListSnapshots() {
  // Every snapshot of snapshots_ was taken by a sync (TakeSnapshot waits
  // for it), and a destroy or rename shows at once: the list is exactly
  // snapshots_, under its names of the moment.
  std::set<std::string> want;
  for (const auto& [n, d] : snapshots_) want.insert(SnapshotFullName(n));
  auto listed = pool_->ListSnapshots("", /*recursive=*/true);
  if (!listed.ok()) return listed.status().WithContext("ListSnapshots");
  std::set<std::string> got;
  for (const core::pool::SnapshotFigures& f : *listed)
    if (!got.insert(f.name).second)
      return Status::Corruption("ListSnapshots lists " + f.name + " twice");
  if (got != want) {
    std::string diff;
    for (const std::string& n : want)
      if (!got.count(n)) diff += " missing " + n;
    for (const std::string& n : got)
      if (!want.count(n)) diff += " extra " + n;
    return Status::Corruption("ListSnapshots differs from the run's " +
                              std::to_string(want.size()) + " snapshots:" + diff);
  }
  OpRecord r = DatasetRecord(OpKind::kListSnapshots, 0);
  r.object = got.size();
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  return Status::Ok();
}

bool Workload::HasClones(uint64_t number) {
  for (const auto& [d, origin] : clones_)
    if (origin == number) return true;
  auto r = released_.find(number);
  if (r == released_.end()) return false;
  if (r->second > pool_->txgs().last_synced().value()) return true;
  released_.erase(r);
  return false;
}

Status Workload::ReadsAs(dmu::ObjectSet* os, const std::string& snapshot, const std::string& what) {
  auto snap = pool_->OpenSnapshot(snapshot);
  if (!snap.ok()) return snap.status().WithContext("OpenSnapshot(" + snapshot + ")");
  POOLFS_ASSIGN_OR_RETURN(ObjectSetDigest want, DigestObjectSet(snap->get()));
  POOLFS_ASSIGN_OR_RETURN(ObjectSetDigest got, DigestObjectSet(os));
  if (got.hash != want.hash || got.objects != want.objects)
    return Status::Corruption(what + " reads as " + std::to_string(got.objects) +
                              " objects, digest " + std::to_string(got.hash) + ", " + snapshot +
                              " as " + std::to_string(want.objects) + " objects, digest " +
                              std::to_string(want.hash));
  return Status::Ok();
}

Status Workload::CloneSnapshot(uint64_t number) {
  const uint16_t index = uint16_t(tree_.size());
  OpRecord r = DatasetRecord(OpKind::kCloneDataset, index);
  r.object = number;
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  const std::string origin = SnapshotFullName(number);
  const std::string name = tree_.Name(0) + "/" + DatasetName(index);
  auto txg = pool_->Clone(origin, name, {});
  if (!txg.ok()) return txg.status().WithContext("Clone(" + origin + ", " + name + ")");
  dmu::ObjectSet* const os = pool_->dataset(name);
  if (os == nullptr) return Status::Corruption("clone " + name + " is missing once created");
  r.aux = 1;
  r.txg = txg->value();
  r.seq = log_->NextSeq();
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  tree_.Add();
  clones_[index] = number;
  // No other thread knows the clone yet: it must read exactly as its
  // origin does.
  POOLFS_RETURN_IF_ERROR(ReadsAs(os, origin, "clone " + name + " of " + origin));
  {
    util::MutexLock l(&sets_mu_);
    sets_[index] = os;
    sets_version_++;
  }
  clones_made_++;
  if (options_.after_dataset_change) options_.after_dataset_change();
  return Status::Ok();
}

Status Workload::RollbackDataset(uint64_t number, std::vector<ObjectState>& mine,
                                 LocalModels& local) {
  const uint16_t d = snapshots_.at(number);
  // The later snapshots go with it (numbers grow with the txgs that took
  // them); the pool destroys none that is a clone's origin.
  std::vector<uint64_t> later;
  for (const auto& [n, ds] : snapshots_)
    if (ds == d && n > number) {
      if (HasClones(n)) return Status::Ok();
      later.push_back(n);
    }
  if (!Quiesce({d}, mine, local)) return Status::Ok();
  OpRecord r = DatasetRecord(OpKind::kRollback, d);
  r.object = number;
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  std::vector<OpRecord> destroys;
  for (uint64_t n : later) {
    OpRecord x = DatasetRecord(OpKind::kDestroySnapshot, d);
    x.object = n;
    POOLFS_RETURN_IF_ERROR(log_->Append(x));
    destroys.push_back(x);
  }
  const std::string name = SnapshotFullName(number);
  auto txg = pool_->Rollback(name, /*destroy_later=*/!later.empty());
  if (!txg.ok())
    return txg.status().WithContext("Rollback(" + name + (later.empty() ? "" : ", recursive") +
                                    ")");
  if (options_.rollback_returned) options_.rollback_returned(*txg);
  for (OpRecord& x : destroys) {
    x.aux = 1;
    x.txg = txg->value();
    x.seq = log_->NextSeq();
    POOLFS_RETURN_IF_ERROR(log_->Append(x));
    snapshots_.erase(x.object);
    generations_.erase(x.object);
  }
  r.aux = 1;
  r.txg = txg->value();
  r.seq = log_->NextSeq();
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  if (options_.after_dataset_change) options_.after_dataset_change();
  // The dataset's new object set comes with the sync of the rollback's txg;
  // until then no thread may touch it. Then it must read exactly as the
  // snapshot.
  POOLFS_RETURN_IF_ERROR(pool_->WaitSynced(*txg).WithContext("WaitSynced(" + std::to_string(r.txg) +
                                                             ") of the "
                                                             "rollback to " +
                                                             name));
  const std::string dataset = tree_.Name(d);
  dmu::ObjectSet* const os = pool_->dataset(dataset);
  if (os == nullptr)
    return Status::Corruption("dataset " + dataset + " is missing once rolled back");
  POOLFS_RETURN_IF_ERROR(ReadsAs(os, name, "dataset " + dataset + " rolled back to " + name));
  {
    util::MutexLock l(&sets_mu_);
    sets_[d] = os;
    sets_version_++;
  }
  return Status::Ok();
}

Status Workload::MaybeChangeSnapshots(std::mt19937_64& rng, std::vector<ObjectState>& mine,
                                      LocalModels& local) {
  // The snapshots the pool lets go (those that no clone has as origin).
  std::vector<uint64_t> free;
  for (const auto& [n, d] : snapshots_)
    if (!HasClones(n)) free.push_back(n);
  const int roll = int(rng() % 1000);
  if (roll < kSnapshotTakePerMille) {
    // At the limit, the oldest goes first (it holds the most of what was
    // overwritten since); with every one an origin, none is taken.
    if (int(snapshots_.size()) >= options_.max_snapshots)
      return free.empty() ? Status::Ok() : DestroySnapshot(free.front());
    const std::vector<uint16_t> live = tree_.Live();
    return TakeSnapshot(live[rng() % live.size()]);
  }
  if (roll < kSnapshotTakePerMille + kSnapshotDestroyPerMille) {
    if (free.empty()) return Status::Ok();
    return DestroySnapshot(free[rng() % free.size()]);
  }
  if (roll < kSnapshotTakePerMille + kSnapshotDestroyPerMille + kClonePerMille) {
    if (snapshots_.empty() || options_.max_datasets == 0 ||
        int(tree_.Live().size()) >= options_.max_datasets || tree_.size() >= kMaxDatasetIndices)
      return Status::Ok();
    auto it = snapshots_.begin();
    std::advance(it, ptrdiff_t(rng() % snapshots_.size()));
    return CloneSnapshot(it->first);
  }
  int bound = kSnapshotTakePerMille + kSnapshotDestroyPerMille + kClonePerMille;
  if (roll < (bound += kSnapshotRenamePerMille)) {
    if (snapshots_.empty()) return Status::Ok();
    auto it = snapshots_.begin();
    std::advance(it, ptrdiff_t(rng() % snapshots_.size()));
    return RenameSnapshot(it->first);
  }
  if (roll < (bound += kSnapshotListPerMille)) return ListSnapshots();
  if (roll < (bound += kRollbackPerMille)) {
    if (snapshots_.empty()) return Status::Ok();
    auto it = snapshots_.begin();
    std::advance(it, ptrdiff_t(rng() % snapshots_.size()));
    return RollbackDataset(it->first, mine, local);
  }
  return Status::Ok();
}

void Workload::Snapshot(int thread, SetMap* sets, uint64_t* version, std::vector<ObjectState>& mine,
                        LocalModels& local) {
  {
    util::MutexLock l(&sets_mu_);
    handshakes_[size_t(thread)]++;
    if (*version == sets_version_) return;
    *sets = sets_;
    *version = sets_version_;
  }
  std::erase_if(mine, [sets](const ObjectState& o) { return !sets->count(o.dataset); });
  std::erase_if(local, [sets](const auto& m) { return !sets->count(m.first); });
}

void Workload::Run(int thread, std::vector<ObjectState> mine, LocalModels local) {
  std::mt19937_64 rng(options_.seed * 1000003 + uint64_t(thread));
  SetMap sets;
  uint64_t version = 0;
  while (!stop_.load()) {
    if (thread == 0 && options_.max_datasets > 0) {
      Status st = MaybeChangeDatasets(rng, mine, local);
      if (!st.ok()) {
        Fail(thread, st);
        break;
      }
    }
    if (thread == 0 && options_.max_snapshots > 0) {
      Status st = MaybeChangeSnapshots(rng, mine, local);
      if (!st.ok()) {
        Fail(thread, st);
        break;
      }
    }
    // The sets that exist before the Tx's txg, none being destroyed or
    // rolled back (none at all while thread 0 rolls back the only one).
    Snapshot(thread, &sets, &version, mine, local);
    if (sets.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (thread == 0 && rng() % 400 == 0) {
      auto it = sets.begin();
      std::advance(it, ptrdiff_t(rng() % sets.size()));
      it->second->SetBackfill(ModeFor(rng()));
    }
    dmu::Tx tx(pool_->assigner());
    Status st = tx.Assign(256 * 1024);
    if (!st.ok()) {
      Fail(thread, st.WithContext("Assign"));
      break;
    }
    const int n = 1 + int(rng() % 4);
    for (int i = 0; i < n && st.ok(); i++) st = OneOp(tx, sets, rng, mine, local);
    const uint64_t txg = tx.txg().value();
    tx.Commit();
    if (!st.ok()) {
      Fail(thread, st);
      break;
    }
    uint64_t prev = max_txg_.load();
    while (prev < txg && !max_txg_.compare_exchange_weak(prev, txg)) {
    }
    if (rng() % 50 == 0) {
      st = pool_->WaitSynced(Txg(txg));
      if (!st.ok()) {
        Fail(thread, st.WithContext("WaitSynced(" + std::to_string(txg) + ")"));
        break;
      }
      OpRecord r;
      r.kind = OpKind::kSynced;
      r.seq = log_->NextSeq();
      r.txg = txg;
      st = log_->Append(r);
      if (!st.ok()) {
        Fail(thread, st);
        break;
      }
    }
  }
  {
    util::MutexLock l(&sets_mu_);
    ended_[size_t(thread)] = true;
  }
  running_--;
}

Status Workload::Record(const OpRecord& r, LocalModels& local) {
  POOLFS_RETURN_IF_ERROR(log_->Append(r));
  ops_++;
  const ModelObject* source = nullptr;
  if (r.kind == OpKind::kCloneBlocks) {
    const CloneRange c = UnpackCloneRange(r);
    const auto& objects = local[c.src_dataset].objects();
    if (auto it = objects.find(c.src_object); it != objects.end()) source = &it->second;
  }
  return local[r.dataset].Apply(r, source).WithContext("the thread's own model");
}

Status Workload::ReadBack(dmu::Tx& tx, dmu::ObjectSet* os, const ObjectState& o,
                          std::mt19937_64& rng, LocalModels& local) {
  uint64_t off = 0, len = o.length;
  if (o.length > 512 * 1024) {
    off = rng() % o.length;
    len = 1 + rng() % (256 * 1024);
  }
  VerifyStats vs;
  Status st = local[o.dataset].CheckObject(os, o.id, off, len, &vs);
  if (!st.ok())
    return st.WithContext(os->name() + ": read-back in txg " + std::to_string(tx.txg().value()) +
                          " (open context, while older txgs sync)");
  reads_++;
  return Status::Ok();
}

Status Workload::CloneBlocks(dmu::Tx& tx, const SetMap& sets, std::mt19937_64& rng,
                             std::vector<ObjectState>& mine, LocalModels& local) {
  // The source: an object with data; the destination: another of its block
  // size, or one whose data fits one block of both sizes (it takes the
  // source's, a quarter of the time when there is a choice); half the time
  // one of the source's dataset when there is one (most of a thread's
  // objects are in others).
  const size_t si = rng() % mine.size();
  const ObjectState src = mine[si];
  const uint32_t bs = src.block_size;
  const bool near = rng() % 2 == 0 && std::any_of(mine.begin(), mine.end(), [&](const auto& o) {
                      return o.dataset == src.dataset && o.id != src.id;
                    });
  std::vector<size_t> same, fits;
  for (size_t j = 0; j < mine.size(); j++) {
    if (j == si || (near && mine[j].dataset != src.dataset)) continue;
    if (mine[j].block_size == bs)
      same.push_back(j);
    else if (mine[j].length <= std::min(mine[j].block_size, bs))
      fits.push_back(j);
  }
  if (src.length == 0 || (same.empty() && fits.empty()))
    return ReadBack(tx, sets.at(src.dataset), src, rng, local);
  const bool resize = same.empty() || (!fits.empty() && rng() % 4 == 0);
  ObjectState& dst = mine[resize ? fits[rng() % fits.size()] : same[rng() % same.size()]];
  dmu::ObjectSet* const src_os = sets.at(src.dataset);
  dmu::ObjectSet* const dst_os = sets.at(dst.dataset);
  if (resize) {
    POOLFS_RETURN_IF_ERROR(ChangeBlockSize(tx, dst_os, dst, 0, bs, local));
    if (dst.block_size != bs)
      return Status::Corruption("clone: object " + std::to_string(dst.id) + " of " +
                                dst_os->name() + " kept block size " +
                                std::to_string(dst.block_size) + ", not " + std::to_string(bs));
  }
  auto din = src_os->Hold(ObjectId(src.id));
  if (!din.ok()) return din.status().WithContext("clone: holding the source");
  auto dout = dst_os->Hold(ObjectId(dst.id));
  if (!dout.ok()) return dout.status().WithContext("clone: holding the destination");
  const dmu::ObjectInfo in = (*din)->Info(), out = (*dout)->Info();
  if (in.block_size != bs || out.block_size != bs || in.length != src.length ||
      out.length != dst.length)
    return Status::Corruption("clone: the DMU has block sizes " + std::to_string(in.block_size) +
                              " and " + std::to_string(out.block_size) + ", lengths " +
                              std::to_string(in.length) + " and " + std::to_string(out.length) +
                              "; the thread " + std::to_string(bs) + " and " +
                              std::to_string(dst.block_size) + ", " + std::to_string(src.length) +
                              " and " + std::to_string(dst.length));

  // The range: blocks [first, first + n) of the source, whose last one
  // starts before its length (mostly within its first MiB, where most of
  // the data is); at block `at` of the destination: over its data, at its
  // last (partial) block or its end, or past it.
  const uint64_t src_blocks = (src.length + bs - 1) / bs;
  const uint64_t mib_blocks = std::max<uint64_t>(1, kMiB / bs);
  const uint64_t first =
      rng() % 4 == 0 ? rng() % src_blocks : rng() % std::min(src_blocks, mib_blocks);
  const uint64_t max_n = std::min<uint64_t>(kMaxCloneBlocks, mib_blocks);
  const uint64_t n = 1 + rng() % std::min(max_n, src_blocks - first);
  const uint64_t dst_blocks = (dst.length + bs - 1) / bs;
  const int where = int(rng() % 100);
  const uint64_t at = where < 45   ? rng() % (dst_blocks + 1)
                      : where < 75 ? (rng() % 2 ? dst.length / bs : dst_blocks)
                                   : dst_blocks + rng() % 8;
  if ((at + n) * bs >= kMaxCloneOffset) return ReadBack(tx, src_os, src, rng, local);
  // What the destination's length becomes (op_log.h, CloneRange).
  const uint64_t length =
      std::max(dst.length, std::min((at + n) * bs, at * bs + src.length - first * bs));

  OpRecord r;
  r.kind = OpKind::kCloneBlocks;
  r.txg = tx.txg().value();
  r.dataset = dst.dataset;
  r.object = dst.id;
  r.seq = log_->NextSeq();
  std::vector<std::optional<zio::BlockPtr>> shared;
  Status st = src_os->ShareBlocks(tx, **din, first, first + n, &shared);
  if (!st.ok()) return st.WithContext("clone: ShareBlocks");
  if (shared.size() != n) {
    (*din)->CancelShared(tx.txg(), shared);
    return Status::Corruption("clone: ShareBlocks returned " + std::to_string(shared.size()) +
                              " pointers for " + std::to_string(n) + " blocks");
  }
  // A stored block of another size (the source's block size changed after
  // its last sync, when it held one block) is copied, as copy_file_range
  // does: PutClones takes only blocks of the destination's size.
  for (auto& bp : shared)
    if (bp.has_value() && !bp->IsHole() && bp->lsize != bs) {
      (*din)->CancelShared(tx.txg(), {&bp, 1});
      bp.reset();
    }
  CloneRange c;
  c.src_dataset = src.dataset;
  c.src_object = src.id;
  c.src_off = first * bs;
  c.dst_off = at * bs;
  c.blocks = uint32_t(n);
  // Everything that can fail comes before the first change: the bytes of
  // the blocks to copy (zeros past the source's length).
  std::vector<std::string> copies(n);
  for (uint64_t i = 0; i < n; i++) {
    if (shared[i].has_value()) {
      (shared[i]->IsHole() ? c.holes : c.shared)++;
      continue;
    }
    copies[i].assign(bs, '\0');
    auto got = src_os->ReadInto(ObjectId(src.id), (first + i) * bs, copies[i]);
    if (!got.ok()) {
      (*din)->CancelShared(tx.txg(), shared);
      return got.status().WithContext("clone: reading a block to copy");
    }
  }
  // The changes, which cannot fail: each run of shared blocks and holes is
  // one PutClones (a reference it takes leaves `shared`), each copied block
  // one whole-block write.
  std::vector<zio::BlockPtr> run;
  uint64_t run_first = 0;
  auto put_run = [&]() -> Status {
    if (run.empty()) return Status::Ok();
    const uint64_t b = at + run_first;
    Status s = dst_os->PutClones(tx, **dout, b, run, std::min(length, (b + run.size()) * bs));
    if (s.ok())
      for (uint64_t i = run_first; i < run_first + run.size(); i++) shared[i].reset();
    run.clear();
    return s;
  };
  for (uint64_t i = 0; i < n && st.ok(); i++) {
    if (shared[i].has_value()) {
      if (run.empty()) run_first = i;
      run.push_back(*shared[i]);
      continue;
    }
    st = put_run();
    if (st.ok()) st = dst_os->Write(tx, **dout, (at + i) * bs, copies[i]);
  }
  if (st.ok()) st = put_run();
  // A copied last block passes `length` when the source's ends inside it.
  if (st.ok() && (*dout)->Info().length > length)
    st = dst_os->Truncate(tx, ObjectId(dst.id), length);
  if (!st.ok()) {
    (*din)->CancelShared(tx.txg(), shared);
    return st.WithContext("clone: a change after ShareBlocks and the reads (which cannot fail)");
  }
  if ((*dout)->Info().length != length)
    return Status::Corruption("clone: the destination's length is " +
                              std::to_string((*dout)->Info().length) + ", not " +
                              std::to_string(length));
  PackCloneRange(c, &r);
  dst.length = length;
  return Record(r, local);
}

Status Workload::ChangeBlockSize(dmu::Tx& tx, dmu::ObjectSet* os, ObjectState& o, uint64_t end,
                                 uint32_t set_to, LocalModels& local) {
  OpRecord r;
  r.txg = tx.txg().value();
  r.dataset = o.dataset;
  r.object = o.id;
  r.seq = log_->NextSeq();
  Status st = set_to != 0 ? os->SetBlockSize(tx, ObjectId(o.id), set_to)
                          : os->GrowBlockSize(tx, ObjectId(o.id), end, 128 * 1024);
  if (!st.ok()) return st.WithContext("block size");
  auto info = os->Stat(ObjectId(o.id));
  if (!info.ok()) return info.status().WithContext("block size");
  if (info->block_size == o.block_size) return Status::Ok();  // it stays
  r.kind = OpKind::kBlockSize;
  r.a = info->block_size;
  o.block_size = info->block_size;
  return Record(r, local);
}

Status Workload::OneOp(dmu::Tx& tx, const SetMap& sets, std::mt19937_64& rng,
                       std::vector<ObjectState>& mine, LocalModels& local) {
  OpRecord r;
  r.txg = tx.txg().value();
  int kind = int(rng() % 100);
  if (mine.empty() || (kind < 10 && int(mine.size()) < options_.max_objects_per_thread)) {
    // Create: id handout, operation and record in one serial section.
    util::MutexLock l(&log_->serial_mu());
    r.kind = OpKind::kCreate;
    r.seq = log_->NextSeq();
    const uint32_t bs = PickBlockSize(rng);
    const util::Compression comp = PickCompression(rng);
    auto set = sets.begin();
    std::advance(set, ptrdiff_t(rng() % sets.size()));
    r.dataset = set->first;
    dmu::ObjectSet* const os = set->second;
    auto id = os->Create(tx, dmu::ObjectType::kPlain, bs, comp);
    if (!id.ok()) return id.status().WithContext(os->name() + ": create");
    r.object = id->value();
    r.a = bs;
    r.aux = uint8_t(comp);
    mine.push_back({r.dataset, r.object, 0, bs});
    return Record(r, local);
  }
  const size_t j = rng() % mine.size();
  ObjectState& o = mine[j];
  r.dataset = o.dataset;
  r.object = o.id;
  dmu::ObjectSet* const os = sets.at(o.dataset);
  Status st;
  if (kind < 45) {
    WriteSpec w;
    w.object = o.id;
    w.len = PickWriteLength(rng);
    w.off = PickWriteOffset(rng, o);
    // A file's way (posix GrowBlocks): while the object has one block, grow
    // it to hold the write first, up to 128 KiB; now and then.
    if (o.length <= o.block_size && rng() % 3 == 0)
      POOLFS_RETURN_IF_ERROR(ChangeBlockSize(tx, os, o, w.off + w.len, 0, local));
    if (rng() % 10 < 3) {  // whole blocks: the DMU need not read the old ones
      w.off = w.off / o.block_size * o.block_size;
      w.len = (w.len + o.block_size - 1) / o.block_size * o.block_size;
    }
    const int f = int(rng() % 10);
    w.fill = f < 1 ? Fill::kZeros : f < 4 ? Fill::kCompressible : Fill::kRandom;
    w.txg = r.txg;
    w.seq = r.seq = log_->NextSeq();
    st = os->Write(tx, ObjectId(o.id), w.off, StampedData(w));
    if (!st.ok()) return st.WithContext("write");
    r.kind = OpKind::kWrite;
    r.a = w.off;
    r.b = w.len;
    r.aux = uint8_t(w.fill);
    o.length = std::max(o.length, w.off + w.len);
  } else if (kind < 55) {
    const int t = int(rng() % 10);
    uint64_t len = t < 5   ? rng() % (o.length + 1)
                   : t < 8 ? o.length + rng() % (128 * 1024)
                   : t < 9 ? 0
                           : o.length / o.block_size * o.block_size;
    r.seq = log_->NextSeq();
    st = os->Truncate(tx, ObjectId(o.id), len);
    if (!st.ok()) return st.WithContext("truncate");
    r.kind = OpKind::kTruncate;
    r.a = len;
    o.length = len;
    if (len == 0 && rng() % 2 == 0) {
      // Emptied: back to a small block, as a file cut to nothing.
      POOLFS_RETURN_IF_ERROR(Record(r, local));
      return ChangeBlockSize(tx, os, o, 0, 4096, local);
    }
  } else if (kind < 65) {
    uint64_t off = rng() % (o.length + 4096);
    uint64_t len = 1 + rng() % (512 * 1024);
    if (rng() % 2) off = off / o.block_size * o.block_size;
    r.seq = log_->NextSeq();
    st = os->Punch(tx, ObjectId(o.id), off, len);
    if (!st.ok()) return st.WithContext("punch");
    r.kind = OpKind::kPunch;
    r.a = off;
    r.b = len;
  } else if (kind < 72) {
    const uint64_t len = rng() % (os->max_bonus() + 1);
    const uint8_t type = uint8_t(rng());
    r.seq = log_->NextSeq();
    st = os->SetBonus(tx, ObjectId(o.id), type, BonusBytes(o.id, r.seq, len));
    if (!st.ok()) return st.WithContext("set bonus");
    r.kind = OpKind::kBonus;
    r.a = len;
    r.aux = type;
  } else if (kind < 78 && mine.size() > 2) {
    util::MutexLock l(&log_->serial_mu());
    r.kind = OpKind::kFree;
    r.seq = log_->NextSeq();
    st = os->Free(tx, ObjectId(o.id));
    if (!st.ok()) return st.WithContext("free");
    mine.erase(mine.begin() + ptrdiff_t(j));
    return Record(r, local);
  } else if (kind < 78 + kCloneBlocksPercent) {
    return CloneBlocks(tx, sets, rng, mine, local);
  } else {
    return ReadBack(tx, os, o, rng, local);
  }
  return Record(r, local);
}

}  // namespace poolfs::stress
