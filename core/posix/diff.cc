// Diff; see the theory comment in diff.h.
#include "posix/diff.h"

#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "posix/posix_fs.h"
#include "posix/znode_phys.h"
#include "zap/zap.h"

namespace poolfs::core::posix {

namespace {

constexpr int kMaxDepth = 2048;      // directories above a file, at most
constexpr size_t kListBatch = 1024;  // entries per Iterate call
constexpr int kHeadAttempts = 4;     // diffs against a dataset that keeps changing

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

// The file dnode `d` of object `id` holds: its znode, or nothing when the
// object is not a file or has no link left.
Result<std::optional<ZnodePhys>> FileOf(const dmu::DnodePhys& d, const std::string& set,
                                        uint64_t id) {
  if (d.free() || d.bonus_type != kZnodeBonus) return std::optional<ZnodePhys>();
  Result<ZnodePhys> z = DecodeZnode(d.bonus, id);
  if (!z.ok()) return z.status().WithContext(set);
  if (z->nlink == 0) return std::optional<ZnodePhys>();
  return std::optional<ZnodePhys>(std::move(*z));
}

// Whether a file in both states changed: its znode but for atime, or its
// data.
bool Differs(const dmu::DnodePhys& a, ZnodePhys za, const dmu::DnodePhys& b, ZnodePhys zb) {
  za.atime = zb.atime = Timespec{};
  return EncodeZnode(za) != EncodeZnode(zb) || a.bp != b.bp || a.length != b.length ||
         a.block_size != b.block_size;
}

// One state of the dataset: the names of its files, found and kept.
class Side {
 public:
  Side(dmu::ObjectSet* os, DiffStats* stats) : os_(os), stats_(stats) {}

  // The directory holding file `id` (znode `z`) and its name there.
  Result<std::pair<uint64_t, std::string>> NameOf(uint64_t id, const ZnodePhys& z) {
    Result<const Listing*> listing = List(z.parent);
    if (listing.ok()) {
      auto it = (*listing)->find(id);
      if (it != (*listing)->end()) return std::make_pair(z.parent, it->second.name);
    } else if (!listing.status().IsNotFound()) {
      return listing.status();
    }
    // The parent does not hold it (see diff.h): look everywhere.
    POOLFS_RETURN_IF_ERROR(WalkAll());
    auto it = everywhere_.find(id);
    if (it == everywhere_.end())
      return Status::Corruption(os_->name() + ": object " + std::to_string(id) + " has " +
                                std::to_string(z.nlink) + " links but no directory holds it");
    return it->second;
  }

  Result<std::string> PathOf(uint64_t id, const ZnodePhys& z) {
    if (id == kRootIno) return std::string("/");
    POOLFS_ASSIGN_OR_RETURN(auto where, NameOf(id, z));
    POOLFS_ASSIGN_OR_RETURN(std::string dir, DirPath(where.first));
    return Join(dir, where.second);
  }

  // The path of directory `dir`.
  Result<std::string> DirPath(uint64_t dir, int depth = 0) {
    if (dir == kRootIno) return std::string("/");
    if (auto it = dir_paths_.find(dir); it != dir_paths_.end()) return it->second;
    if (depth >= kMaxDepth)
      return Status::Corruption(os_->name() + ": directory " + std::to_string(dir) +
                                " is more than " + std::to_string(kMaxDepth) +
                                " levels deep (a loop of parents?)");
    POOLFS_ASSIGN_OR_RETURN(ZnodePhys z, Znode(dir));
    if (!S_ISDIR(z.mode))
      return Status::Corruption(os_->name() + ": object " + std::to_string(dir) +
                                " holds files but is not a directory");
    POOLFS_ASSIGN_OR_RETURN(auto where, NameOf(dir, z));
    POOLFS_ASSIGN_OR_RETURN(std::string parent, DirPath(where.first, depth + 1));
    std::string path = Join(parent, where.second);
    dir_paths_.emplace(dir, path);
    return path;
  }

  // Whether directory `dir` exists here and its entry `name` is `id`.
  Result<bool> Holds(uint64_t dir, const std::string& name, uint64_t id) {
    Result<zap::Zap*> z = Dir(dir);
    if (!z.ok()) return z.status().IsNotFound() ? Result<bool>(false) : z.status();
    Result<zap::Value> v = (*z)->Lookup(name);
    if (!v.ok()) return v.status().IsNotFound() ? Result<bool>(false) : v.status();
    return v->object == id;
  }

 private:
  struct Name {
    std::string name;
    bool dir = false;
  };
  using Listing = std::unordered_map<uint64_t, Name>;  // object -> its (first) name

  Result<ZnodePhys> Znode(uint64_t id) {
    POOLFS_ASSIGN_OR_RETURN(dmu::ObjectInfo info, os_->Stat(ObjectId(id)));
    if (info.bonus_type != kZnodeBonus)
      return Status::Corruption(os_->name() + ": object " + std::to_string(id) +
                                " is not a file (no znode)");
    Result<ZnodePhys> z = DecodeZnode(info.bonus, id);
    if (!z.ok()) return z.status().WithContext(os_->name());
    return z;
  }

  // The open directory `dir`: NotFound when there is no such object here.
  Result<zap::Zap*> Dir(uint64_t dir) {
    if (auto it = dirs_.find(dir); it != dirs_.end()) return it->second.get();
    POOLFS_ASSIGN_OR_RETURN(dmu::ObjectInfo info, os_->Stat(ObjectId(dir)));
    if (info.type != dmu::ObjectType::kDirectory)
      return Status::NotFound(os_->name() + ": object " + std::to_string(dir) +
                              " is not a directory");
    Result<std::unique_ptr<zap::Zap>> z = zap::Zap::Open(os_, ObjectId(dir));
    if (!z.ok()) {
      if (z.status().code() == StatusCode::kInvalidArgument || z.status().IsNotFound())
        return Status::Corruption(os_->name() + ": directory " + std::to_string(dir) +
                                  " does not open: " + z.status().message());
      return z.status().WithContext(os_->name() + " directory " + std::to_string(dir));
    }
    zap::Zap* raw = z->get();
    dirs_.emplace(dir, std::move(*z));
    return raw;
  }

  // Every entry of directory `dir`, by object (NotFound: not a directory
  // here).
  Result<const Listing*> List(uint64_t dir) {
    if (auto it = listings_.find(dir); it != listings_.end()) return &it->second;
    POOLFS_ASSIGN_OR_RETURN(zap::Zap * z, Dir(dir));
    if (stats_ != nullptr) stats_->directories_listed++;
    Listing listing;
    for (uint64_t cookie = 0;;) {
      Result<std::vector<zap::Entry>> entries = z->Iterate(cookie, kListBatch);
      if (!entries.ok())
        return entries.status().WithContext(os_->name() + " directory " + std::to_string(dir));
      for (zap::Entry& e : *entries) {
        cookie = e.cookie;
        listing.emplace(e.value.object, Name{std::move(e.name), S_ISDIR(e.value.attrs)});
      }
      if (entries->size() < kListBatch) break;
    }
    return &listings_.emplace(dir, std::move(listing)).first->second;
  }

  // Every name of the tree, from the root down, into everywhere_ (once).
  Status WalkAll() {
    if (walked_) return Status::Ok();
    walked_ = true;
    if (stats_ != nullptr) stats_->full_walk = true;
    std::deque<uint64_t> todo{kRootIno};
    std::unordered_set<uint64_t> seen{kRootIno};
    while (!todo.empty()) {
      const uint64_t dir = todo.front();
      todo.pop_front();
      Result<const Listing*> listing = List(dir);
      if (!listing.ok()) {
        if (!listing.status().IsNotFound()) return listing.status();
        return Status::Corruption(os_->name() + ": object " + std::to_string(dir) +
                                  " is named as a directory but is not one");
      }
      for (const auto& [object, name] : **listing) {
        everywhere_.try_emplace(object, dir, name.name);
        if (name.dir && seen.insert(object).second) todo.push_back(object);
      }
    }
    return Status::Ok();
  }

  dmu::ObjectSet* const os_;
  DiffStats* const stats_;
  std::unordered_map<uint64_t, std::unique_ptr<zap::Zap>> dirs_;
  std::unordered_map<uint64_t, Listing> listings_;
  std::unordered_map<uint64_t, std::string> dir_paths_;
  bool walked_ = false;
  std::unordered_map<uint64_t, std::pair<uint64_t, std::string>> everywhere_;
};

bool Before(const DiffEntry& x, const DiffEntry& y) {
  if (x.path != y.path) return x.path < y.path;
  if (x.type != y.type) return char(x.type) < char(y.type);
  return x.new_path < y.new_path;
}

// "POOL/PATH@NAME" split at '@'; InvalidArgument for anything else.
Result<std::pair<std::string, std::string>> SplitSnapshot(std::string_view name) {
  const size_t at = name.find('@');
  if (at == std::string_view::npos)
    return Status::InvalidArgument("'" + std::string(name) +
                                   "' is not a snapshot (POOL/PATH@NAME)");
  std::string snap(name.substr(at + 1));
  if (snap.empty() || snap.size() > 255 || snap == "." || snap == ".." ||
      snap.find_first_of(std::string("/@%\0", 4)) != std::string::npos)
    return Status::InvalidArgument("'" + std::string(name) + "': bad snapshot name '" + snap + "'");
  return std::make_pair(std::string(name.substr(0, at)), std::move(snap));
}

}  // namespace

Result<std::vector<DiffEntry>> DiffObjectSets(dmu::ObjectSet& from, Txg from_txg,
                                              dmu::ObjectSet& to, DiffStats* stats) {
  DiffStats local;
  if (stats == nullptr) stats = &local;
  std::map<uint64_t, std::pair<dmu::DnodePhys, dmu::DnodePhys>> changed;
  POOLFS_RETURN_IF_ERROR(to.ChangedDnodes(
      from, from_txg,
      [&](ObjectId id, const dmu::DnodePhys& a, const dmu::DnodePhys& b) {
        changed.emplace(id.value(), std::make_pair(a, b));
        return Status::Ok();
      },
      &stats->dnodes));
  stats->objects = changed.size();

  Side a(&from, stats), b(&to, stats);
  std::vector<DiffEntry> out;
  for (const auto& [id, dnodes] : changed) {
    const auto& [da, db] = dnodes;
    POOLFS_ASSIGN_OR_RETURN(std::optional<ZnodePhys> za, FileOf(da, from.name(), id));
    POOLFS_ASSIGN_OR_RETURN(std::optional<ZnodePhys> zb, FileOf(db, to.name(), id));
    const bool same = za && zb && da.generation == db.generation;
    if (za && !same) {
      POOLFS_ASSIGN_OR_RETURN(std::string path, a.PathOf(id, *za));
      out.push_back({DiffEntry::Type::kRemoved, std::move(path), {}});
    }
    if (zb && !same) {
      POOLFS_ASSIGN_OR_RETURN(std::string path, b.PathOf(id, *zb));
      out.push_back({DiffEntry::Type::kCreated, std::move(path), {}});
    }
    if (!same || !Differs(da, *za, db, *zb)) continue;
    if (id == kRootIno) {
      out.push_back({DiffEntry::Type::kModified, "/", {}});
      continue;
    }
    // A directory that did not change holds the same names: no rename.
    if (za->parent == zb->parent && !changed.contains(za->parent)) {
      POOLFS_ASSIGN_OR_RETURN(std::string path, b.PathOf(id, *zb));
      out.push_back({DiffEntry::Type::kModified, std::move(path), {}});
      continue;
    }
    POOLFS_ASSIGN_OR_RETURN(auto where_a, a.NameOf(id, *za));
    POOLFS_ASSIGN_OR_RETURN(bool kept, b.Holds(where_a.first, where_a.second, id));
    if (kept) {  // one of its names, kept: modified (maybe a link more or less)
      POOLFS_ASSIGN_OR_RETURN(std::string dir, b.DirPath(where_a.first));
      out.push_back({DiffEntry::Type::kModified, Join(dir, where_a.second), {}});
      continue;
    }
    POOLFS_ASSIGN_OR_RETURN(auto where_b, b.NameOf(id, *zb));
    POOLFS_ASSIGN_OR_RETURN(std::string dir_b, b.DirPath(where_b.first));
    std::string path_b = Join(dir_b, where_b.second);
    POOLFS_ASSIGN_OR_RETURN(bool old, a.Holds(where_b.first, where_b.second, id));
    if (old) {  // a link of it removed, another kept
      out.push_back({DiffEntry::Type::kModified, std::move(path_b), {}});
      continue;
    }
    POOLFS_ASSIGN_OR_RETURN(std::string dir_a, a.DirPath(where_a.first));
    out.push_back({DiffEntry::Type::kRenamed, Join(dir_a, where_a.second), std::move(path_b)});
  }
  std::sort(out.begin(), out.end(), Before);
  return out;
}

Result<std::vector<DiffEntry>> DiffDatasets(pool::Pool& pool, std::string_view from,
                                            std::string_view to, DiffStats* stats) {
  POOLFS_ASSIGN_OR_RETURN(auto snap_from, SplitSnapshot(from));
  const bool to_snapshot = to.find('@') != std::string_view::npos;
  std::pair<std::string, std::string> snap_to;
  if (to_snapshot) {
    POOLFS_ASSIGN_OR_RETURN(snap_to, SplitSnapshot(to));
  } else {
    snap_to.first = std::string(to);
  }
  POOLFS_ASSIGN_OR_RETURN(uint64_t id_from, pool.DatasetId(snap_from.first));
  POOLFS_ASSIGN_OR_RETURN(uint64_t id_to, pool.DatasetId(snap_to.first));
  POOLFS_ASSIGN_OR_RETURN(std::vector<pool::SnapshotFigures> snaps,
                          pool.ListSnapshots(snap_from.first, /*recursive=*/false));
  auto txg_of = [&](const std::string& snap, std::string_view full) -> Result<Txg> {
    for (const pool::SnapshotFigures& s : snaps)
      if (s.name.substr(s.name.find('@') + 1) == snap) return s.txg;
    return Status::NotFound("no snapshot " + std::string(full));
  };
  POOLFS_ASSIGN_OR_RETURN(Txg txg_from, txg_of(snap_from.second, from));
  if (id_from != id_to) {
    // Another dataset: a clone (or a clone of a clone...) whose origins
    // lead back to `from`'s dataset, at `from` or a later snapshot of it.
    // It shares with `from` every block born up to `from`'s txg, so the
    // walk by births holds across the datasets.
    const std::string refused = std::string(from) + " and " + std::string(to) +
                                " are of different datasets, and " + snap_to.first +
                                " is no clone of " + std::string(from) + " or a later snapshot";
    std::string at = snap_to.first;
    for (int hops = 0;; hops++) {
      POOLFS_ASSIGN_OR_RETURN(std::vector<pool::PropertyValue> origin,
                              pool.GetProperties(at, {"origin"}));
      const std::string& o = origin.front().value;
      const size_t sep = o.find('@');
      if (sep == std::string::npos || hops > 1000) return Status::InvalidArgument(refused);
      at = o.substr(0, sep);
      POOLFS_ASSIGN_OR_RETURN(uint64_t id, pool.DatasetId(at));
      if (id != id_from) continue;
      POOLFS_ASSIGN_OR_RETURN(Txg txg_origin, txg_of(o.substr(sep + 1), o));
      if (txg_origin < txg_from) return Status::InvalidArgument(refused);
      break;
    }
  }
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> older, pool.OpenSnapshot(from));
  if (to_snapshot && id_from != id_to) {
    POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> newer, pool.OpenSnapshot(to));
    return DiffObjectSets(*older, txg_from, *newer, stats);
  }
  if (to_snapshot) {
    POOLFS_ASSIGN_OR_RETURN(Txg txg_to, txg_of(snap_to.second, to));
    if (txg_to < txg_from)
      return Status::InvalidArgument(std::string(to) + " is older than " + std::string(from) +
                                     " (txg " + std::to_string(txg_to.value()) + " before " +
                                     std::to_string(txg_from.value()) + ")");
    POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> newer, pool.OpenSnapshot(to));
    return DiffObjectSets(*older, txg_from, *newer, stats);
  }
  // The dataset now: what has been changed so far, synced (a read-only
  // pool has nothing unsynced).
  if (Status st = pool.SyncOnce(); !st.ok() && st.code() != StatusCode::kReadOnly) return st;
  for (int attempt = 1;; attempt++) {
    POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> head,
                            pool.OpenSyncedDataset(snap_to.first));
    if (stats != nullptr) *stats = DiffStats{};
    Result<std::vector<DiffEntry>> r = DiffObjectSets(*older, txg_from, *head, stats);
    const bool damage =
        r.status().code() == StatusCode::kCorruption || r.status().code() == StatusCode::kIOError;
    if (r.ok() || !damage || attempt == kHeadAttempts) return r;
    // Blocks the dataset dropped since, reused: try its newer root.
    POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> now,
                            pool.OpenSyncedDataset(snap_to.first));
    if (now->root() == head->root()) return r;
  }
}

}  // namespace poolfs::core::posix
