// CheckDevices: steps 1 and 2 of the pool check (labels, the uberblock
// import would pick), then the walk and the space check; see check.h.
#include "pool/check.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "dmu/objset.h"
#include "pool/check_space.h"
#include "pool/check_walker.h"
#include "pool/pool.h"
#include "pool/pool_phys.h"
#include "pool/uberblock_choice.h"
#include "space/allocator.h"
#include "util/text.h"
#include "vdev/label.h"
#include "vdev/overlay_device.h"
#include "vdev/vdev_layout.h"
#include "zio/block_ref_table.h"
#include "zio/zio.h"

namespace poolfs::core::pool {

namespace {

// The pool as its labels describe it, vdevs in pool order.
struct PoolOnDevices {
  std::vector<vdev::BlockDevice*> devs;
  PoolConfig config;
  std::vector<vdev::VdevLayout> layouts;
  std::vector<VdevGeometry> geometry;
  UberblockCandidates candidates;             // newest first, as import tries them
  Status no_uberblock;                        // why there is none (candidates empty)
  zio::BpFormat format = zio::BpFormat::kV2;  // the labels' format version
};

// Reads every device's labels and checks that they form one pool, with the
// same rules as Pool::Open. Damaged label copies are problems; ring slots
// that do not decode are warnings.
Result<PoolOnDevices> ReadPool(const std::vector<vdev::BlockDevice*>& devs, ProblemSink* sink) {
  if (devs.empty()) return Status::InvalidArgument("no vdevs given");
  std::vector<vdev::VdevLabelInfo> infos(devs.size());
  PoolOnDevices p;
  p.devs.assign(devs.size(), nullptr);
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
    if (p.devs[h.vdev_index] != nullptr)
      return Status::InvalidArgument(devs[i]->name() + " and " + p.devs[h.vdev_index]->name() +
                                     " are the same vdev");
    p.devs[h.vdev_index] = devs[i];
    infos[i] = std::move(info).value();
  }
  std::sort(infos.begin(), infos.end(),
            [](const auto& a, const auto& b) { return a.header.vdev_index < b.header.vdev_index; });
  const vdev::VdevLabelInfo* newest = &infos[0];
  for (const auto& info : infos)
    if (info.header.config_txg > newest->header.config_txg) newest = &info;
  POOLFS_ASSIGN_OR_RETURN(p.config, DecodePoolConfig(newest->config));
  if (p.config.vdevs.size() != devs.size())
    return Status::Corruption("pool config lists " + std::to_string(p.config.vdevs.size()) +
                              " vdevs, the labels " + std::to_string(devs.size()));
  const uint64_t pool_guid = infos[0].header.pool_guid;
  p.format = zio::BpFormat(infos[0].header.version);
  uint64_t guid_sum = 0;
  for (size_t i = 0; i < infos.size(); i++) {
    const std::string name = "vdev " + std::to_string(i) + " (" + p.devs[i]->name() + ")";
    const VdevConfig& vc = p.config.vdevs[i];
    if (infos[i].header.vdev_guid != vc.guid)
      return Status::Corruption(name + " is not the vdev the pool config names");
    if (vc.ms_shift - vc.ashift >= 32)
      return Status::Corruption(name + ": metaslab shift " + std::to_string(vc.ms_shift) +
                                " is too large for ashift " + std::to_string(vc.ashift));
    if (!vdev::ComputeVdevLayout(p.devs[i]->size()).ok())
      return Status::Corruption(name + " is too small for a vdev");
    guid_sum += vc.guid;
    for (int l = 0; l < vdev::kLabelCount; l++)
      if (!infos[i].label_status[l].ok())
        sink->Add(name + " label " + std::to_string(uint64_t(l)),
                  infos[i].label_status[l].message());
    for (const std::string& e : infos[i].ring_errors) sink->Warn(name, e);
    p.layouts.push_back(infos[i].layout);
    p.geometry.push_back(
        {infos[i].layout.alloc_start, infos[i].layout.alloc_size, vc.ashift, vc.ms_shift});
  }
  p.candidates = CollectUberblocks(infos, pool_guid, guid_sum, uint32_t(p.format));
  if (p.candidates.list.empty()) p.no_uberblock = NoUberblock(p.config.name, infos);
  return p;
}

std::vector<zio::Zio::Vdev> ZioVdevs(const PoolOnDevices& p) {
  std::vector<zio::Zio::Vdev> v;
  for (size_t i = 0; i < p.devs.size(); i++) v.push_back({p.devs[i], p.config.vdevs[i].ashift});
  return v;
}

// Import's test of an uberblock (Pool::OpenAt): the MOS, the pool
// directory, every space map loaded into a metaslab, the block reference
// table, every dataset root; `strict` (a rewind) also every dnode block the
// dataset's open reads.
Status TryOpen(const PoolOnDevices& p, const vdev::Uberblock& ub, bool strict) {
  std::vector<space::VdevSpaceConfig> vdevs;
  for (size_t i = 0; i < p.devs.size(); i++)
    vdevs.push_back({uint32_t(i), p.layouts[i].alloc_start, p.layouts[i].alloc_size,
                     p.config.vdevs[i].ashift, p.config.vdevs[i].ms_shift});
  space::SpaceOptions options;
  options.allocators = 1;
  space::SpaceManager space(vdevs, options);
  zio::Zio zio(ZioVdevs(p), nullptr, p.format);
  POOLFS_ASSIGN_OR_RETURN(RootPayload root, DecodeRootPayload(ub.root, p.format));
  auto opened = dmu::ObjectSet::Open(&zio, root.mos_root, "MOS");
  if (!opened.ok()) return opened.status().WithContext("MOS root block");
  std::unique_ptr<dmu::ObjectSet> mos = std::move(opened).value();
  auto read = [&](uint64_t object, const std::string& what) -> Result<std::string> {
    auto info = mos->Stat(ObjectId(object));
    if (!info.ok()) return info.status().WithContext(what);
    if (info->length > kMaxMosObjectBytes)
      return Status::Corruption(what + ": implausible length " + std::to_string(info->length));
    auto bytes = mos->Read(ObjectId(object), 0, info->length);
    if (!bytes.ok()) return bytes.status().WithContext(what);
    return bytes;
  };
  POOLFS_ASSIGN_OR_RETURN(std::string dir_bytes,
                          read(kDirectoryObject, "pool directory (MOS object 1)"));
  POOLFS_ASSIGN_OR_RETURN(PoolDirectory dir, DecodePoolDirectory(dir_bytes, p.format));
  for (const SpaceMapEntry& m : dir.space_maps) {
    const std::string what = "space map of vdev " + std::to_string(m.vdev) + " metaslab " +
                             std::to_string(m.metaslab) + " (MOS object " +
                             std::to_string(m.object) + ")";
    POOLFS_ASSIGN_OR_RETURN(std::string bytes, read(m.object, what));
    POOLFS_RETURN_IF_ERROR(space.LoadMetaslab(m.vdev, m.metaslab, bytes).WithContext(what));
  }
  if (dir.ref_table_object != 0) {
    const std::string what =
        "block reference table (MOS object " + std::to_string(dir.ref_table_object) + ")";
    auto info = mos->Stat(ObjectId(dir.ref_table_object));
    if (info.ok() && info->type != dmu::ObjectType::kRefTable)
      return Status::Corruption(what + " is a " + std::string(dmu::ObjectTypeName(info->type)) +
                                " object");
    POOLFS_ASSIGN_OR_RETURN(std::string bytes, read(dir.ref_table_object, what));
    POOLFS_RETURN_IF_ERROR(
        zio::BlockRefTable::Decode(bytes, uint32_t(p.devs.size())).status().WithContext(what));
  }
  for (const DatasetEntry& e : dir.datasets) {
    auto os = dmu::ObjectSet::Open(&zio, e.root, e.name);
    if (!os.ok()) return os.status().WithContext("dataset '" + e.name + "'");
    if (strict && (*os)->damaged_dnode_blocks() > 0)
      return Status::Corruption("dataset '" + e.name +
                                "': " + std::to_string((*os)->damaged_dnode_blocks()) +
                                " dnode blocks do not read or do not match their pointers");
  }
  return Status::Ok();
}

// Step 5: imports the pool over overlays of `devs` (nothing reaches them),
// changes one object of a dataset and syncs that txg, as the first write
// of a mount would. A pool whose sync fails here suspends at the first sync
// of every read-write mount.
void TrialSync(const std::vector<vdev::BlockDevice*>& devs, CheckReport* report,
               ProblemSink* sink) {
  std::vector<std::unique_ptr<vdev::OverlayDevice>> overlays;
  std::vector<vdev::BlockDevice*> over;
  for (vdev::BlockDevice* d : devs) {
    overlays.push_back(std::make_unique<vdev::OverlayDevice>(d));
    over.push_back(overlays.back().get());
  }
  PoolOptions options;
  options.txg.timeout_ms = 3600 * 1000;  // only the trial's own sync
  options.space.allocators = 1;
  options.arc.max_bytes = uint64_t{64} << 20;
  options.arc.evict_thread = false;
  options.read_ahead.threads = 0;
  options.block_buffer_retain_bytes = 0;
  const std::string where = "trial sync";
  auto pool = Pool::ImportDevices(over, options);
  if (!pool.ok()) {
    sink->Add(where, "the pool does not import read-write: " + pool.status().message());
    return;
  }
  Pool& p = **pool;
  dmu::ObjectSet* os = p.root_dataset();
  if (os == nullptr) {
    const std::vector<std::string> names = p.datasets();
    if (!names.empty()) os = p.dataset(names[0]);
  }
  Txg txg = p.txgs().open_txg();
  Status st;
  if (os != nullptr) {
    dmu::Tx tx(p.assigner());
    st = tx.Assign();
    if (st.ok()) {
      txg = tx.txg();
      Result<ObjectId> id = os->Create(tx, dmu::ObjectType::kPlain);
      st = id.ok() ? os->Write(tx, *id, 0, "poolfs check: trial sync") : id.status();
      st = tx.Finish(st);
    }
  }
  report->trial_sync_txg = txg.value();
  if (st.ok()) st = p.WaitSynced(txg);
  const Status exported = p.Export();
  if (st.ok()) st = exported;
  if (!st.ok()) {
    sink->Add(where + " of txg " + std::to_string(txg.value()),
              st.message() +
                  ": every read-write mount of this pool would suspend at its first "
                  "sync, losing what it writes");
    return;
  }
  report->trial_sync_passes = p.Stats().mos_passes_max;
}

}  // namespace

Result<CheckReport> CheckDevices(const std::vector<vdev::BlockDevice*>& devs,
                                 const BlockVisitor& visitor, const CheckOptions& options,
                                 const LogChecker& log) {
  CheckReport report;
  ProblemSink sink(&report);
  POOLFS_ASSIGN_OR_RETURN(PoolOnDevices p, ReadPool(devs, &sink));
  report.pool = p.config.name;
  report.vdevs = p.devs.size();
  if (p.candidates.list.empty()) return p.no_uberblock;

  // The uberblock import (or a rewind import) would pick.
  const UberblockChoice choice =
      ChooseUberblock(p.candidates, options.rewind,
                      [&](const vdev::Uberblock& ub) { return TryOpen(p, ub, options.rewind); });
  const vdev::Uberblock* chosen = choice.chosen;
  report.newest_txg = choice.newest.value();
  if (chosen != nullptr && options.rewind) {
    report.rewind = choice.Note();
    // The damage that makes the rewind necessary is a fact about the pool,
    // not about the tree checked: a warning.
    for (const auto& [txg, st] : choice.failed)
      sink.Warn("uberblock of txg " + std::to_string(txg.value()),
                "its tree does not verify, so a rewind opens txg " +
                    std::to_string(chosen->txg.value()) + ": " + st.message());
  } else if (chosen == nullptr) {
    sink.Add("uberblocks", choice.Failure(p.config.name).message() + " (walking the newest, txg " +
                               std::to_string(p.candidates.list.front().txg.value()) + ")");
    chosen = &p.candidates.list.front();
  }
  report.txg = chosen->txg.value();

  // The walk has a pipeline of its own: its checksum errors are the report's.
  zio::Zio zio(ZioVdevs(p), nullptr, p.format);
  CheckWalker walker(&zio, p.geometry, chosen->txg, &report, &sink, &visitor);
  auto finish = [&] {
    for (size_t v = 0; v < p.devs.size(); v++)
      report.checksum_errors += zio.checksum_errors(uint32_t(v));
    report.checksum_errors -= walker.repeated_copy_errors();
    return report;
  };
  auto root = DecodeRootPayload(chosen->root, p.format);
  if (!root.ok()) {
    sink.Add("uberblock of txg " + std::to_string(report.txg), root.status().message());
    return finish();
  }
  walker.WalkMos(root->mos_root);
  if (log && !root->log.empty()) {
    const LogState& state = root->log;
    const std::string where = "intent log of txg " + std::to_string(report.txg);
    if (state.vdev >= p.devs.size()) {
      sink.Add(where, "the log state names vdev " + std::to_string(state.vdev) + " of a pool of " +
                          std::to_string(p.devs.size()));
    } else {
      vdev::BlockDevice* dev = p.devs[state.vdev];
      auto read = [dev](uint64_t off, std::span<uint8_t> b) -> Status {
        if (off > vdev::kLogAreaSize || b.size() > vdev::kLogAreaSize - off)
          return Status::Corruption("a log block past the log area (offset " + std::to_string(off) +
                                    ")");
        return dev->Read(vdev::kLogAreaOffset + off, b.data(), b.size());
      };
      // The blocks of indirect writes through a pipeline of their own: one
      // that does not verify was cut short by a crash, not damaged (its
      // checksum error is not the pool's).
      zio::Zio log_zio(ZioVdevs(p), nullptr, p.format);
      auto read_block = [&](std::string_view encoded, std::string_view what) {
        return log_zio.ReadEncoded(encoded, what);
      };
      Result<LogSummary> summary = log(state, chosen->pool_guid, read, read_block);
      if (!summary.ok()) {
        sink.Add(where, summary.status().message());
      } else {
        report.log_blocks = summary->blocks;
        report.log_records = summary->records;
        if (!summary->damage.empty())
          sink.Add(where, "ends at a damaged block: " + summary->damage);
        // What a commit that never returned leaves: not damage.
        if (!summary->unwritten.empty())
          sink.Warn(where,
                    "ends before a write whose data block does not verify (a commit cut "
                    "short): " +
                        summary->unwritten);
      }
    }
  }

  const auto& mos = walker.mos_objects();
  PoolDirectory dir;
  bool have_dir = false;
  const std::string dir_name = "pool directory (MOS object 1)";
  const std::string unchecked = "; so the datasets and space maps it lists are not checked";
  if (auto it = mos.find(kDirectoryObject); it == mos.end()) {
    sink.Add(dir_name, walker.skipped_subtrees() > 0
                           ? "not reached: the damage above hides it" + unchecked
                           : "the MOS has no object 1" + unchecked);
  } else if (it->second.type != dmu::ObjectType::kPoolDirectory) {
    sink.Add(dir_name, "object 1 is a " + std::string(dmu::ObjectTypeName(it->second.type)) +
                           " object" + unchecked);
  } else if (!it->second.complete) {
    sink.Add(dir_name, "not all of it could be read (see above)" + unchecked);
  } else if (auto d = DecodePoolDirectory(it->second.bytes, p.format); !d.ok()) {
    sink.Add(dir_name, d.status().message() + unchecked);
  } else {
    dir = std::move(d).value();
    have_dir = true;
  }
  if (!have_dir) return finish();

  report.datasets = dir.datasets.size();
  report.snapshots = dir.snapshots.size();
  // Snapshot guids: the decoder refuses a guid of 0 or one repeated within
  // a dataset (a problem above: the directory does not decode). A
  // directory from before them (version 7 and older) has none yet.
  if (std::any_of(dir.snapshots.begin(), dir.snapshots.end(),
                  [](const SnapshotEntry& e) { return e.guid == 0; }))
    sink.Warn(dir_name,
              "its snapshots have no guids yet (a directory from before version 8): the next "
              "read-write import gives each one");
  std::set<uint64_t> named = {kDirectoryObject};
  // The block reference table, before the datasets: their walks take a
  // second pointer to a block it counts as a clone (check_walker.h).
  const std::string table_name =
      "block reference table (MOS object " + std::to_string(dir.ref_table_object) + ")";
  if (dir.ref_table_object != 0) {
    named.insert(dir.ref_table_object);
    auto it = mos.find(dir.ref_table_object);
    if (it == mos.end()) {
      sink.Add(table_name, walker.skipped_subtrees() > 0 ? "not reached: the damage above hides it"
                                                         : "the MOS has no such object");
      walker.SetRefTableUnknown();
    } else if (it->second.type != dmu::ObjectType::kRefTable) {
      sink.Add(table_name, "is a " + std::string(dmu::ObjectTypeName(it->second.type)) + " object");
      walker.SetRefTableUnknown();
    } else if (!it->second.complete) {
      walker.SetRefTableUnknown();  // the walk named the blocks it could not read
    } else if (auto table = zio::BlockRefTable::Decode(it->second.bytes, uint32_t(p.devs.size()));
               !table.ok()) {
      sink.Add(table_name, table.status().message());
      walker.SetRefTableUnknown();
    } else {
      report.cloned_blocks = table->size();
      for (const auto& [key, e] : *table) report.clone_saved_bytes += e.refs * e.allocated;
      walker.SetRefTable(std::move(table).value());
    }
  }
  std::map<uint64_t, const DatasetEntry*> by_id;  // for full names (the decoder checked the tree)
  for (const DatasetEntry& e : dir.datasets) by_id[e.id] = &e;
  // Each dataset's snapshots oldest first, then the dataset: a block one
  // shares with the snapshot before it was walked there (the decoder
  // checked that the snapshots of a dataset come in txg order). A clone
  // comes after its origin, whose lineage's blocks up to the origin's txg
  // it shares too (and so on up its origin's origins; the decoder checked
  // they end).
  std::map<uint64_t, std::vector<const SnapshotEntry*>> snaps_of;
  std::map<uint64_t, const SnapshotEntry*> snap_by_id;
  for (const SnapshotEntry& e : dir.snapshots) {
    snaps_of[e.dataset].push_back(&e);
    snap_by_id[e.id] = &e;
  }
  std::map<uint64_t, std::string> full_names;
  for (const DatasetEntry& e : dir.datasets) {
    std::string full = e.name;
    for (uint64_t at = e.parent; at != 0; at = by_id.at(at)->parent)
      full = by_id.at(at)->name + "/" + full;
    full_names[e.id] = full;
  }
  // The txg of each dataset's origin (0: no clone), and the walk order.
  std::map<uint64_t, uint64_t> base;
  std::vector<const DatasetEntry*> order;
  std::set<uint64_t> placed;
  std::function<void(const DatasetEntry&)> place = [&](const DatasetEntry& e) {
    if (!placed.insert(e.id).second) return;
    if (e.origin != 0) {
      const SnapshotEntry* o = snap_by_id.at(e.origin);
      base[e.id] = o->txg.value();
      place(*by_id.at(o->dataset));
    }
    order.push_back(&e);
  };
  for (const DatasetEntry& e : dir.datasets) place(e);
  // The space of snapshots, the other way round from their deadlists: what
  // a tree held that the next one in its lineage (a later snapshot, or the
  // dataset) no longer holds died between them, and is exactly the next
  // one's deadlist. A clone's first tree follows its origin snapshot. Held
  // sets are kept only while needed: the previous tree's, and origins'.
  struct Expected {
    CheckWalker::HeldSet dead;
    std::string before;  // the tree that held them
  };
  std::map<std::pair<int, uint64_t>, Expected> expected;  // (0, snapshot id) or (1, dataset id)
  std::set<uint64_t> origins;
  for (const DatasetEntry& e : dir.datasets)
    if (e.origin != 0) origins.insert(e.origin);
  std::map<uint64_t, std::pair<CheckWalker::HeldSet, bool>> origin_held;  // by snapshot id
  for (const DatasetEntry* e : order) {
    const std::string& full = full_names[e->id];
    if (e->created > chosen->txg)
      sink.Add("dataset '" + full + "'",
               "created in txg " + std::to_string(e->created.value()) + ", after the checked txg");
    std::vector<CheckWalker::Share> shares;
    for (uint64_t origin = e->origin; origin != 0;) {
      const SnapshotEntry* o = snap_by_id.at(origin);
      shares.push_back({o->dataset, o->txg});
      origin = by_id.at(o->dataset)->origin;
    }
    shares.push_back({e->id, Txg(0)});
    // The tree before the next one walked: its name, held set, and whether
    // it was walked whole (a tree with a subtree that did not read holds
    // more than the walk saw: no comparison then).
    std::string before;
    CheckWalker::HeldSet held_before;
    bool before_whole = false;
    if (e->origin != 0) {
      const SnapshotEntry* o = snap_by_id.at(e->origin);
      auto it = origin_held.find(e->origin);
      if (it != origin_held.end()) {
        before = "snapshot '" + full_names[o->dataset] + "@" + o->name + "'";
        held_before = it->second.first;
        before_whole = it->second.second;
      }
    }
    auto walk = [&](const std::string& name, const std::string& display,
                    const zio::BlockPtr& tree_root, std::pair<int, uint64_t> who,
                    uint64_t snapshot_id) {
      CheckWalker::HeldSet held;
      const uint64_t skipped = walker.skipped_subtrees();
      walker.CollectHeld(&held);
      walker.WalkDataset(name, tree_root, shares, e->id);
      walker.CollectHeld(nullptr);
      const bool whole = walker.skipped_subtrees() == skipped;
      if (!before.empty() && before_whole && whole) {
        Expected& x = expected[who];
        x.before = before;
        for (const auto& [key, n] : held_before) {
          auto now = held.find(key);
          const uint64_t still = now == held.end() ? 0 : now->second;
          if (n > still) x.dead[key] = n - still;
        }
      }
      if (snapshot_id != 0 && origins.count(snapshot_id)) origin_held[snapshot_id] = {held, whole};
      before = display;
      held_before = std::move(held);
      before_whole = whole;
    };
    for (const SnapshotEntry* snap : snaps_of[e->id]) {
      if (snap->txg > chosen->txg)
        sink.Add("snapshot '" + full + "@" + snap->name + "'",
                 "taken in txg " + std::to_string(snap->txg.value()) + ", after the checked txg");
      walk(full + "@" + snap->name, "snapshot '" + full + "@" + snap->name + "'", snap->root,
           {0, snap->id}, snap->id);
      shares.back().through = snap->txg;
    }
    walk(full, "dataset '" + full + "'", e->root, {1, e->id}, 0);
  }
  walker.ReferenceDeferredFrees(dir.deferred_frees);
  report.deferred_frees = dir.deferred_frees.size();
  if (dir.ref_table_object != 0) walker.CheckRefTable(table_name);
  // Deadlists: each block on one is held by a snapshot walked above (it
  // died after that snapshot was taken) and lies in its bucket's birth
  // range; the bucket's bytes are its blocks'.
  // Compares a deadlist's blocks (`found`, when every one of them was
  // read) with what the walks say died between the tree before and this
  // one (Expected).
  auto compare_dead = [&](const std::string& owner, std::pair<int, uint64_t> who,
                          const CheckWalker::HeldSet& found) {
    auto x = expected.find(who);
    if (x == expected.end()) return;  // no tree before, or one not walked whole
    auto describe = [](const CheckWalker::HeldKey& k) {
      return "the block at vdev " + std::to_string(std::get<0>(k)) + " offset " +
             util::Hex(std::get<1>(k)) + " born in txg " + std::to_string(std::get<2>(k));
    };
    auto count = [](const CheckWalker::HeldSet& set, const CheckWalker::HeldKey& k) {
      auto it = set.find(k);
      return it == set.end() ? uint64_t{0} : it->second;
    };
    for (const auto& [k, n] : x->second.dead)
      if (count(found, k) < n)
        sink.Add(owner + " deadlist",
                 "lacks " + describe(k) + ", which " + x->second.before +
                     " holds and it does not: its space would never be freed");
    for (const auto& [k, n] : found)
      if (count(x->second.dead, k) < n)
        sink.Add(owner + " deadlist",
                 "holds " + describe(k) + ", which is not a block " + x->second.before +
                     " holds and it does not (or holds it fewer times): the snapshots' space "
                     "is miscounted");
  };
  auto check_deadlist = [&](const std::string& owner, uint64_t dataset, const Deadlist& dl,
                            std::pair<int, uint64_t> who) {
    CheckWalker::HeldSet found;  // every entry's, when all are read
    bool all_read = true;
    std::vector<uint64_t> txgs;  // the keys after 0: a clone's origin's txg, then the snapshots'
    if (base[dataset] != 0) txgs.push_back(base[dataset]);
    for (const SnapshotEntry* snap : snaps_of[dataset]) txgs.push_back(snap->txg.value());
    const size_t bp_size = zio::BlockPtrSize(p.format);
    for (const auto& [key, bucket] : dl) {
      const std::string where = owner + " deadlist bucket " + std::to_string(key);
      auto upper = std::upper_bound(txgs.begin(), txgs.end(), key);
      if (upper == txgs.end()) {
        sink.Add(where, "has no later snapshot: no snapshot can hold its blocks");
        all_read = false;
        continue;
      }
      uint64_t bytes = 0;
      bool complete = true;
      for (const DeadObject& o : bucket.objects) {
        named.insert(o.object);
        const std::string owhere = where + " (MOS object " + std::to_string(o.object) + ")";
        auto it = mos.find(o.object);
        if (it == mos.end() || it->second.type != dmu::ObjectType::kDeadlist) {
          sink.Add(owhere, "is not a deadlist object of the MOS");
          complete = false;
          continue;
        }
        if (!it->second.complete) {
          complete = false;  // the walk named what it could not read
          continue;
        }
        const std::string& content = it->second.bytes;
        if (content.size() != o.entries * bp_size) {
          sink.Add(owhere, "holds " + std::to_string(content.size()) + " bytes; " +
                               std::to_string(o.entries) + " block pointers take " +
                               std::to_string(o.entries * bp_size));
          complete = false;
          continue;
        }
        for (uint64_t k = 0; k < o.entries; k++) {
          const std::string ewhere = owhere + " entry " + std::to_string(k);
          auto bp = zio::DecodeBlockPtr(
              reinterpret_cast<const uint8_t*>(content.data()) + k * bp_size, ewhere, p.format);
          if (!bp.ok()) {
            sink.Add(ewhere, bp.status().message());
            complete = false;
            continue;
          }
          bytes += bp->allocated();
          found[CheckWalker::HeldKeyOf(*bp)]++;
          if (bp->IsHole() || bp->birth.value() <= key || bp->birth.value() > *upper)
            sink.Add(ewhere, "born in txg " + std::to_string(bp->birth.value()) +
                                 ", outside the bucket's (" + std::to_string(key) + ", " +
                                 std::to_string(*upper) + "]");
          else if (!walker.Referenced(*bp))
            sink.Add(ewhere, "is held by no snapshot (" + bp->ToString() + ")");
        }
      }
      if (complete && bytes != bucket.bytes)
        sink.Add(where, "says its blocks take " + std::to_string(bucket.bytes) +
                            " bytes; they take " + std::to_string(bytes));
      all_read &= complete;
    }
    if (all_read) compare_dead(owner, who, found);
  };
  for (const SnapshotEntry& e : dir.snapshots)
    check_deadlist("snapshot '" + full_names[e.dataset] + "@" + e.name + "'", e.dataset,
                   e.deadlist, {0, e.id});
  for (const DatasetEntry& e : dir.datasets) {
    auto dl = dir.head_deadlists.find(e.id);
    check_deadlist("dataset '" + full_names[e.id] + "'", e.id,
                   dl == dir.head_deadlists.end() ? Deadlist() : dl->second, {1, e.id});
  }
  std::vector<SpaceMapInput> maps;
  for (const SpaceMapEntry& m : dir.space_maps) {
    named.insert(m.object);
    auto it = mos.find(m.object);
    maps.push_back({m.vdev, m.metaslab, m.object, it == mos.end() ? nullptr : &it->second});
  }
  for (const auto& [id, obj] : mos)
    if (!named.count(id))
      sink.Add("MOS object " + std::to_string(id) + " (" +
                   std::string(dmu::ObjectTypeName(obj.type)) + ")",
               "nothing in the pool directory names it (a leaked object)");
  CheckSpace(walker, p.geometry, maps, &report, &sink);
  finish();
  // A read-write import would open this txg: try one sync of the next. (A
  // rewind import is read-only: it never syncs.)
  if (choice.chosen != nullptr && !options.rewind) TrialSync(devs, &report, &sink);
  return report;
}

}  // namespace poolfs::core::pool
