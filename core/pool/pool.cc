#include "pool/pool.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>
#include <random>
#include <set>

#include "pool/uberblock_choice.h"
#include "txg/inline_executor.h"
#include "txg/thread_pool_executor.h"
#include "util/check.h"
#include "vdev/file_device.h"
#include "vdev/label.h"

namespace poolfs::core::pool {

namespace {

// Reads MOS object `id` whole. Its length comes from its dnode, so a length
// no MOS object can have is refused (Corruption) before it sizes the read.
Result<std::string> ReadMosObject(dmu::ObjectSet& mos, uint64_t id) {
  POOLFS_ASSIGN_OR_RETURN(dmu::ObjectInfo info, mos.Stat(ObjectId(id)));
  if (info.length > kMaxMosObjectBytes)
    return Status::Corruption("MOS object " + std::to_string(id) + " has an implausible length " +
                              std::to_string(info.length));
  return mos.Read(ObjectId(id), 0, info.length);
}

uint64_t RandomGuid() {
  static std::random_device rd;
  uint64_t g = 0;
  while (g == 0) g = (uint64_t(rd()) << 32) ^ rd();
  return g;
}
}  // namespace

Pool::~Pool() { Export().ok(); }

void Pool::BuildIo() {
  std::vector<space::VdevSpaceConfig> vdevs;
  std::vector<zio::Zio::Vdev> zvdevs;
  for (size_t i = 0; i < devs_.size(); i++) {
    const VdevConfig& vc = config_.vdevs[i];
    vdevs.push_back(
        {uint32_t(i), layouts_[i].alloc_start, layouts_[i].alloc_size, vc.ashift, vc.ms_shift});
    zvdevs.push_back({devs_[i], vc.ashift});
  }
  zio_.reset();
  space_ = std::make_unique<space::SpaceManager>(vdevs, options_.space);
  ref_table_ = std::make_unique<zio::BlockRefTable>();
  zio_ = std::make_unique<zio::Zio>(zvdevs, space_.get(), zio::BpFormat(format_version_));
  zio_->set_ref_table(ref_table_.get());
  zio_->set_force_gang_above(options_.force_gang_above);
  zio_->set_repairs(options_.repair_reads);
}

Status Pool::Create(const std::vector<std::string>& paths, uint64_t size,
                    const CreateOptions& options) {
  if (paths.empty()) return Status::InvalidArgument("a pool needs at least one vdev file");
  std::vector<std::unique_ptr<vdev::FileDevice>> files;
  std::vector<vdev::BlockDevice*> devs;
  for (const std::string& path : paths) {
    if (!options.force) {
      // An existing pool is refused even when --force is needed to say so.
      auto probe = vdev::FileDevice::Open(path, {true, false});
      if (probe.ok() && vdev::ReadLabels(**probe).ok())
        return Status::AlreadyExists(path +
                                     " already holds a poolfs pool (use --force to overwrite it)");
    }
    POOLFS_RETURN_IF_ERROR(vdev::FileDevice::CreateSparse(path, size, options.force));
    POOLFS_ASSIGN_OR_RETURN(auto f, vdev::FileDevice::Open(path, {false, true}));
    devs.push_back(f.get());
    files.push_back(std::move(f));
  }
  return CreateOnDevices(devs, paths, options);
}

Status Pool::CreateOnDevices(const std::vector<vdev::BlockDevice*>& devs,
                             const std::vector<std::string>& paths, const CreateOptions& options) {
  POOLFS_RETURN_IF_ERROR(ValidateDatasetName(options.name).WithContext("pool name"));
  if (options.format_version < vdev::kOldestFormatVersion ||
      options.format_version > vdev::kFormatVersion)
    return Status::InvalidArgument("pool format version " + std::to_string(options.format_version) +
                                   " (this build makes " +
                                   std::to_string(vdev::kOldestFormatVersion) + " to " +
                                   std::to_string(vdev::kFormatVersion) + ")");
  std::unique_ptr<Pool> p(new Pool());
  p->devs_ = devs;
  p->format_version_ = options.format_version;
  p->config_.name = options.name;
  p->pool_guid_ = RandomGuid();
  for (size_t i = 0; i < devs.size(); i++) {
    POOLFS_ASSIGN_OR_RETURN(vdev::VdevLayout layout, vdev::ComputeVdevLayout(devs[i]->size()));
    POOLFS_RETURN_IF_ERROR(vdev::WipeLabels(*devs[i], layout));
    VdevConfig vc;
    vc.guid = RandomGuid();
    vc.ashift = options.ashift;
    vc.ms_shift = space::ChooseMetaslabShift(layout.alloc_size, options.ashift);
    vc.path = i < paths.size() ? paths[i] : devs[i]->name();
    p->guid_sum_ += vc.guid;
    p->config_.vdevs.push_back(vc);
    p->layouts_.push_back(layout);
  }
  const std::string config = EncodePoolConfig(p->config_);
  for (size_t i = 0; i < devs.size(); i++) {
    vdev::LabelHeader h;
    h.version = p->format_version_;
    h.pool_guid = p->pool_guid_;
    h.vdev_guid = p->config_.vdevs[i].guid;
    h.vdev_index = uint32_t(i);
    h.vdev_count = uint32_t(devs.size());
    h.ashift = options.ashift;
    h.vdev_size = p->layouts_[i].vdev_size;
    h.config_txg = Txg(1);
    POOLFS_RETURN_IF_ERROR(vdev::WriteLabels(*devs[i], h, config));
    p->labels_.push_back(h);
  }
  p->BuildIo();
  p->owned_executor_ = std::make_unique<txg::InlineExecutor>();
  p->executor_ = p->owned_executor_.get();
  // Txg 1: the MOS with its pool directory, and the pool's first dataset.
  const Txg t(1);
  p->mos_ = std::make_unique<dmu::ObjectSet>(p->zio_.get(), dmu::ObjsetType::kMos, "MOS");
  dmu::Tx tx = dmu::Tx::ForSync(t);
  POOLFS_ASSIGN_OR_RETURN(ObjectId dir,
                          p->mos_->Create(tx, dmu::ObjectType::kPoolDirectory, kMosBlockSize));
  POOLFS_CHECK_EQ(dir.value(), kDirectoryObject);
  {
    util::MutexLock l(&p->mu_);
    auto ds = std::make_unique<Dataset>();
    ds->entry.id = p->dir_.next_dataset_id++;
    ds->entry.created = t;
    ds->entry.creation_time = int64_t(std::time(nullptr));
    ds->entry.name = options.name;
    ds->os =
        std::make_unique<dmu::ObjectSet>(p->zio_.get(), dmu::ObjsetType::kDataset, options.name);
    const uint64_t id = ds->entry.id;
    p->datasets_.emplace(id, std::move(ds));
    p->dir_dirty_ = true;
  }
  POOLFS_RETURN_IF_ERROR(p->SyncTxg(t).WithContext("writing the new pool"));
  p->exported_ = true;  // nothing more to sync: the destructor just closes
  return Status::Ok();
}

Result<std::unique_ptr<Pool>> Pool::Import(const std::vector<std::string>& paths,
                                           const PoolOptions& options) {
  if (paths.empty()) return Status::InvalidArgument("no vdev files given");
  POOLFS_RETURN_IF_ERROR(CheckImportOptions(options));
  std::vector<std::unique_ptr<vdev::BlockDevice>> owned;
  std::vector<vdev::BlockDevice*> devs;
  for (const std::string& path : paths) {
    POOLFS_ASSIGN_OR_RETURN(
        auto f, vdev::FileDevice::Open(
                    path, {.read_only = options.read_only,
                           .exclusive = true,
                           .writeback_bytes = options.vdev.writeback_bytes,
                           .direct_reads = options.vdev.direct_reads,
                           .direct_writes = options.vdev.direct_writes,
                           .direct_write_min_bytes = options.vdev.direct_write_min_bytes}));
    devs.push_back(f.get());
    owned.push_back(std::move(f));
  }
  return Open(devs, std::move(owned), options);
}

Result<std::unique_ptr<Pool>> Pool::ImportDevices(const std::vector<vdev::BlockDevice*>& devs,
                                                  const PoolOptions& options) {
  return Open(devs, {}, options);
}

Result<std::unique_ptr<Pool>> Pool::Open(std::vector<vdev::BlockDevice*> devs,
                                         std::vector<std::unique_ptr<vdev::BlockDevice>> owned,
                                         const PoolOptions& options) {
  POOLFS_RETURN_IF_ERROR(CheckImportOptions(options));
  std::unique_ptr<Pool> p(new Pool());
  p->options_ = options;
  if (options.read_only) p->options_.repair_reads = false;  // writes nothing
  p->block_buffers_ = std::make_unique<dmu::BlockBuffers>(options.block_buffer_retain_bytes);
  p->arc_ = std::make_unique<arc::Arc>(options.arc);
  p->read_ahead_ = std::make_unique<dmu::ReadAhead>(p->arc_.get(), options.read_ahead);
  p->owned_devs_ = std::move(owned);
  // Read every label; put the vdevs in pool order.
  std::vector<vdev::VdevLabelInfo> infos(devs.size());
  std::vector<vdev::BlockDevice*> ordered(devs.size(), nullptr);
  for (size_t i = 0; i < devs.size(); i++) {
    auto info = vdev::ReadLabels(*devs[i]);
    if (!info.ok())
      return info.status().WithContext(devs[i]->name() + " is not a usable poolfs vdev");
    const vdev::LabelHeader& h = info->header;
    if (i > 0 && h.pool_guid != infos[0].header.pool_guid)
      return Status::InvalidArgument(devs[i]->name() + " belongs to another pool than " +
                                     devs[0]->name());
    if (i > 0 && h.version != infos[0].header.version)
      return Status::Corruption(devs[i]->name() + " has format version " +
                                std::to_string(h.version) + ", " + devs[0]->name() + " " +
                                std::to_string(infos[0].header.version));
    if (h.vdev_count != devs.size())
      return Status::InvalidArgument("the pool has " + std::to_string(h.vdev_count) +
                                     " vdevs but " + std::to_string(devs.size()) + " were given");
    if (ordered[h.vdev_index])
      return Status::InvalidArgument(devs[i]->name() + " and " + ordered[h.vdev_index]->name() +
                                     " are the same vdev");
    ordered[h.vdev_index] = devs[i];
    infos[i] = std::move(info).value();
  }
  std::sort(infos.begin(), infos.end(),
            [](const auto& a, const auto& b) { return a.header.vdev_index < b.header.vdev_index; });
  p->devs_ = ordered;
  p->pool_guid_ = infos[0].header.pool_guid;
  p->format_version_ = infos[0].header.version;
  // The newest config any label holds.
  const vdev::VdevLabelInfo* newest = &infos[0];
  for (const auto& info : infos)
    if (info.header.config_txg > newest->header.config_txg) newest = &info;
  POOLFS_ASSIGN_OR_RETURN(p->config_, DecodePoolConfig(newest->config));
  if (p->config_.vdevs.size() != devs.size())
    return Status::Corruption("pool config lists " + std::to_string(p->config_.vdevs.size()) +
                              " vdevs, the labels " + std::to_string(devs.size()));
  for (size_t i = 0; i < infos.size(); i++) {
    if (infos[i].header.vdev_guid != p->config_.vdevs[i].guid)
      return Status::Corruption("vdev " + std::to_string(i) + " (" + p->devs_[i]->name() +
                                ") is not the vdev the pool config names");
    p->guid_sum_ += infos[i].header.vdev_guid;
    p->labels_.push_back(infos[i].header);
    p->layouts_.push_back(infos[i].layout);
  }
  // The uberblock to open (uberblock_choice.h): the newest, or with a
  // rewind the newest within the window whose tree verifies.
  const UberblockCandidates candidates =
      CollectUberblocks(infos, p->pool_guid_, p->guid_sum_, p->format_version_);
  if (candidates.list.empty()) return NoUberblock(p->config_.name, infos);
  const uint64_t max_txg = candidates.max_txg;
  const UberblockChoice choice =
      ChooseUberblock(candidates, options.rewind, [&p, &options](const vdev::Uberblock& ub) {
        p->BuildIo();
        Status st = p->OpenAt(ub, options.rewind);
        if (!st.ok()) {
          util::MutexLock l(&p->mu_);
          p->snapshots_.clear();
          p->datasets_.clear();
          p->maps_.clear();
          p->mos_.reset();
        }
        return st;
      });
  if (choice.chosen == nullptr) return choice.Failure(p->config_.name);
  p->imported_txg_ = choice.chosen->txg;
  if (options.rewind) p->import_notes_.push_back(choice.Note());
  // A damaged or stale label copy is rewritten from the chosen label, in
  // WriteLabels's crash-safe order (the rings are not touched).
  if (!options.read_only) {
    for (size_t i = 0; i < infos.size(); i++) {
      const vdev::VdevLabelInfo& info = infos[i];
      if (!info.labels_need_repair && info.header.config_txg == newest->header.config_txg &&
          info.config == newest->config)
        continue;
      vdev::LabelHeader h = info.header;
      h.config_txg = newest->header.config_txg;
      std::string damaged;
      for (int l = 0; l < vdev::kLabelCount; l++)
        if (!info.label_status[l].ok())
          damaged += (damaged.empty() ? "" : ", ") + std::string("label ") + std::to_string(l) +
                     " (" + info.label_status[l].message() + ")";
      POOLFS_RETURN_IF_ERROR(vdev::WriteLabels(*p->devs_[i], h, newest->config)
                                 .WithContext("repairing the labels of " + p->devs_[i]->name()));
      p->labels_[i] = h;
      p->import_notes_.push_back("rewrote the labels of vdev " + std::to_string(i) + " (" +
                                 p->devs_[i]->name() +
                                 "): " + (damaged.empty() ? "an older config" : damaged));
    }
  }
  if (options.executor) {
    p->executor_ = options.executor;
  } else {
    p->owned_executor_ = std::make_unique<txg::ThreadPoolExecutor>(p->space_->allocator_count());
    p->executor_ = p->owned_executor_.get();
  }
  Pool* raw = p.get();
  auto sync = [raw, on_synced = options.on_synced](Txg t) {
    if (!on_synced) return raw->SyncTxg(t);
    const auto start = std::chrono::steady_clock::now();
    const uint64_t written = raw->zio_->bytes_written();
    Status st = raw->SyncTxg(t);
    if (st.ok()) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now() - start);
      on_synced(t, uint64_t(ns.count()), raw->zio_->bytes_written() - written);
    }
    return st;
  };
  p->txgs_ = std::make_unique<txg::TxgManager>(Txg(max_txg + 1), std::move(sync), options.txg);
  if (options.read_only) {
    p->txgs_->SetReadOnly(Status(
        StatusCode::kReadOnly, "pool '" + p->config_.name + "' is imported read-only (at txg " +
                                   std::to_string(p->imported_txg_.value()) +
                                   (options.rewind ? ", rewound" : "") + "): it takes no changes"));
  }
  // Freed blocks become free only as later txgs sync (the deferral, and the
  // MOS sync's late frees): an idle pool syncs empty txgs until none wait.
  // A read-only pool syncs nothing.
  if (!options.read_only)
    p->txgs_->SetPendingWork([raw] {
      const space::SpaceStats s = raw->space_->Stats();
      // Held space waits for its holder (a scrub), then for one sync.
      if (s.deferred > s.held || (s.held > 0 && !raw->space_->reuse_held())) return true;
      util::MutexLock l(&raw->mu_);
      return !raw->dir_.deferred_frees.empty();
    });
  p->txgs_->Start();
  ScrubHooks hooks;
  hooks.zio = p->zio_.get();
  hooks.space = p->space_.get();
  hooks.roots = [raw] {
    util::MutexLock l(&raw->mu_);
    return raw->synced_roots_;
  };
  hooks.save = [raw](const ScrubPhys& state) { raw->SaveScrub(state); };
  hooks.io_bytes = [raw] { return raw->zio_->bytes_read() + raw->zio_->bytes_written(); };
  ScrubPhys scrub_state;
  {
    util::MutexLock l(&p->mu_);
    scrub_state = p->dir_.scrub;
  }
  p->scrub_ = std::make_unique<Scrub>(std::move(hooks), std::move(scrub_state));
  if (p->zio_->repairs_on()) p->scrub_->Resume();  // a scrub running at export goes on
  if (!options.read_only) POOLFS_RETURN_IF_ERROR(p->DropUnfinishedReceives());
  return p;
}

Status Pool::CheckImportOptions(const PoolOptions& options) {
  if (options.rewind && !options.read_only)
    return Status::InvalidArgument(
        "rewind opens an older txg read-only and needs a read-only import: mount with -o "
        "ro,rewind (a read-write import of an older txg would write over the newer ones)");
  return Status::Ok();
}

Status Pool::OpenAt(const vdev::Uberblock& ub, bool strict) {
  POOLFS_ASSIGN_OR_RETURN(RootPayload payload, DecodeRootPayload(ub.root, zio_->format()));
  if (!payload.log.empty() && payload.log.vdev >= devs_.size())
    return Status::Corruption("uberblock log state: vdev " + std::to_string(payload.log.vdev) +
                              " of a pool of " + std::to_string(devs_.size()));
  imported_log_ = payload.log;
  auto mos = dmu::ObjectSet::Open(zio_.get(), payload.mos_root, "MOS");
  if (!mos.ok()) return mos.status().WithContext("MOS root block");
  mos_ = std::move(mos).value();
  POOLFS_ASSIGN_OR_RETURN(std::string dir_bytes, ReadMosObject(*mos_, kDirectoryObject));
  POOLFS_ASSIGN_OR_RETURN(PoolDirectory dir, DecodePoolDirectory(dir_bytes, zio_->format()));
  util::MutexLock l(&mu_);
  for (const SpaceMapEntry& m : dir.space_maps) {
    std::string where =
        "space map of vdev " + std::to_string(m.vdev) + " metaslab " + std::to_string(m.metaslab);
    auto bytes = ReadMosObject(*mos_, m.object);
    if (!bytes.ok()) return bytes.status().WithContext(where);
    POOLFS_RETURN_IF_ERROR(space_->LoadMetaslab(m.vdev, m.metaslab, *bytes, ub.txg));
    const space::Metaslab& ms = space_->group(m.vdev).metaslab(m.metaslab);
    maps_[{m.vdev, m.metaslab}] = {m.object, ms.map_generation(), ms.space_map_frozen(),
                                   bytes->size()};
  }
  ref_table_->Load({});
  ref_table_stored_.clear();
  if (dir.ref_table_object != 0) {
    Result<dmu::ObjectInfo> info = mos_->Stat(ObjectId(dir.ref_table_object));
    if (info.ok() && info->type != dmu::ObjectType::kRefTable)
      return Status::Corruption("block reference table: MOS object " +
                                std::to_string(dir.ref_table_object) + " is a " +
                                std::string(dmu::ObjectTypeName(info->type)) + " object");
    Result<std::string> bytes = ReadMosObject(*mos_, dir.ref_table_object);
    Result<zio::BlockRefTable::Entries> table =
        bytes.ok() ? zio::BlockRefTable::Decode(*bytes, uint32_t(devs_.size()))
                   : Result<zio::BlockRefTable::Entries>(bytes.status());
    if (!table.ok()) return table.status().WithContext("block reference table");
    ref_table_->Load(std::move(table).value());
    ref_table_stored_ = std::move(bytes).value();
  }
  // Full names from the tree the decoder checked (one root, no cycle).
  std::map<uint64_t, const DatasetEntry*> by_id;
  for (const DatasetEntry& e : dir.datasets) by_id[e.id] = &e;
  for (const DatasetEntry& e : dir.datasets) {
    if (e.parent == 0 && e.name != config_.name)
      return Status::Corruption("pool directory: the root dataset is named '" + e.name +
                                "', the pool '" + config_.name + "'");
    std::string full = e.name;
    for (uint64_t at = e.parent; at != 0; at = by_id.at(at)->parent)
      full = by_id.at(at)->name + "/" + full;
    auto os = dmu::ObjectSet::Open(zio_.get(), e.root, full);
    if (!os.ok()) return os.status();  // Open names the dataset
    if (strict && (*os)->damaged_dnode_blocks() > 0)
      return Status::Corruption("dataset '" + full +
                                "': " + std::to_string((*os)->damaged_dnode_blocks()) +
                                " dnode blocks do not read or do not match their pointers");
    auto ds = std::make_unique<Dataset>();
    ds->entry = e;
    Adopt(ds.get(), std::move(os).value());
    datasets_.emplace(e.id, std::move(ds));
  }
  for (auto& [id, ds] : datasets_) ds->os->SetCopies(uint8_t(PropsOf(*ds).copies));
  dir_ = std::move(dir);
  POOLFS_RETURN_IF_ERROR(LoadSnapshots());
  synced_roots_ = {ub.txg, payload.mos_root, {}};
  for (const DatasetEntry& e : dir_.datasets) synced_roots_.datasets.emplace_back(e.id, e.root);
  for (const SnapshotEntry& e : dir_.snapshots) synced_roots_.datasets.emplace_back(e.id, e.root);
  std::sort(synced_roots_.datasets.begin(), synced_roots_.datasets.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return Status::Ok();
}

Status Pool::Export() {
  if (exported_) return Status::Ok();
  exported_ = true;
  if (scrub_) scrub_->Halt();  // its state is in the directory: it resumes at the next import
  if (read_ahead_) read_ahead_->Stop();  // no read in flight when the files close
  Status st = txgs_ ? txgs_->Stop() : Status::Ok();
  txgs_.reset();
  // Copies rewritten by reads after the last sync (zio's repairs) are
  // written but not flushed: make them durable too.
  if (st.ok() && zio_ && zio_->repairs() > 0) st = zio_->FlushAll();
  // The cache goes back to its allocator a batch at a time (one allocator
  // lock per batch), not block by block as the Arc's destructor would.
  if (arc_) arc_->EvictAll();
  owned_executor_.reset();
  owned_devs_.clear();  // closes the files and drops their locks
  return st;
}

uint64_t Pool::CacheShare(uint64_t fraction, uint64_t item_bytes, uint64_t floor) const {
  if (options_.object_cache_limit != 0) return options_.object_cache_limit;
  if (!arc_) return std::numeric_limits<uint64_t>::max();
  return std::max<uint64_t>(arc_->max_bytes() / fraction / item_bytes, floor);
}

uint64_t Pool::object_cache_limit() const { return CacheShare(10, kObjectBytes, 1024); }

uint64_t Pool::leaf_cache_limit() const { return CacheShare(64, kLeafBytes, 64); }

void Pool::SetCacheBytes(uint64_t max_bytes) {
  if (!arc_) return;
  arc_->SetMaxBytes(max_bytes);
  const uint64_t limit = object_cache_limit();
  util::MutexLock l(&mu_);
  for (auto& [name, ds] : datasets_) ds->os->SetDnodeLimit(limit);
}

PoolStats Pool::Stats() const {
  PoolStats s;
  s.imported = imported_txg_;
  if (txgs_) {
    s.last_synced = txgs_->last_synced();
    s.open = txgs_->open_txg();
    s.syncs = txgs_->stats().syncs;
  }
  s.mos_passes_last = mos_passes_last_.load(std::memory_order_relaxed);
  s.mos_passes_max = mos_passes_max_.load(std::memory_order_relaxed);
  {
    util::MutexLock l(&mu_);
    s.deferred_frees = dir_.deferred_frees.size();
  }
  s.space = space_->Stats();
  if (ref_table_) s.clones = ref_table_->stats();
  for (size_t i = 0; i < devs_.size(); i++)
    s.checksum_errors.push_back(zio_->checksum_errors(uint32_t(i)));
  s.repairs = zio_->repairs();
  s.copy_shortfalls = zio_->copy_shortfalls();
  s.format_version = format_version_;
  s.datasets = datasets();
  if (arc_) s.arc = arc_->Stats();
  if (read_ahead_) s.read_ahead = read_ahead_->Stats();
  return s;
}

void Pool::SaveScrub(const ScrubPhys& state) {
  // With the next txg: a Tx of its own makes one (the pool may be idle).
  dmu::Tx tx(txgs_.get());
  if (!tx.Assign().ok()) return;  // suspended or exporting: it stays in memory
  {
    util::MutexLock l(&mu_);
    dir_.scrub = state;
    dir_dirty_ = true;
  }
  tx.Dirtied(4096);
  tx.Commit();
}

Status Pool::StartScrub() {
  if (!zio_->repairs_on())
    return Status(
        StatusCode::kReadOnly,
        "pool '" + config_.name + "' is imported read-only: a scrub repairs what it finds");
  return scrub_->Start(txgs_->open_txg());
}

Status Pool::StopScrub() { return scrub_->Stop(); }

ScrubPhys Pool::ScrubStatus() const { return scrub_->status(); }

uint64_t Pool::scrub_rounds() const { return scrub_->rounds(); }

}  // namespace poolfs::core::pool
