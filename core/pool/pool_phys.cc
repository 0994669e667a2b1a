#include "pool/pool_phys.h"

#include <algorithm>
#include <map>
#include <set>

#include "pool/dataset_props.h"
#include "util/check.h"
#include "util/endian.h"
#include "vdev/vdev_layout.h"

namespace poolfs::core::pool {

namespace {
constexpr uint64_t kConfigMagic = 0x31464e4f43534650ull;  // "PFSCONF1"
constexpr uint64_t kDirMagic = 0x3152494444534650ull;     // "PFSPDIR1"
// Version 2 adds the deferred frees (their count where version 1 has a
// reserved zero); version 3 the dataset tree (parents, creation times,
// properties); version 4 the scrub record; version 5 snapshots and
// deadlists; version 6 the origins of clones; version 7 the block
// reference table's object; version 8 each snapshot's guid. Older versions
// are still read (kPoolDirectoryVersion, pool_phys.h).
constexpr uint32_t kMaxVdevs = 4096;

// A bounds-checked little-endian reader over a byte string.
class Reader {
 public:
  Reader(std::string_view in, std::string what) : in_(in), what_(std::move(what)) {}
  bool U16(uint16_t* v) {
    return Get(2, [&](const uint8_t* p) { *v = util::GetLE16(p); });
  }
  bool U32(uint32_t* v) {
    return Get(4, [&](const uint8_t* p) { *v = util::GetLE32(p); });
  }
  bool U64(uint64_t* v) {
    return Get(8, [&](const uint8_t* p) { *v = util::GetLE64(p); });
  }
  bool Bytes(size_t n, std::string* out) {
    if (in_.size() - pos_ < n) return false;
    out->assign(in_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  const uint8_t* Raw(size_t n) {
    if (in_.size() - pos_ < n) return nullptr;
    auto* p = reinterpret_cast<const uint8_t*>(in_.data() + pos_);
    pos_ += n;
    return p;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return in_.size() - pos_; }
  bool done() const { return pos_ == in_.size(); }
  Status Bad(const std::string& why) const {
    return Status::Corruption(what_ + " at byte " + std::to_string(pos_) + ": " + why);
  }

 private:
  template <typename F>
  bool Get(size_t n, F f) {
    if (in_.size() - pos_ < n) return false;
    f(reinterpret_cast<const uint8_t*>(in_.data() + pos_));
    pos_ += n;
    return true;
  }
  std::string_view in_;
  std::string what_;
  size_t pos_ = 0;
};

void PutU16(std::string* s, uint16_t v) {
  uint8_t b[2];
  util::PutLE16(b, v);
  s->append(reinterpret_cast<char*>(b), 2);
}
}  // namespace

std::string Quote(std::string_view name) { return "'" + std::string(name) + "'"; }

bool IsReceiveName(std::string_view name) { return name.starts_with("%recv-"); }

std::string ReceiveName(uint64_t id) { return "%recv-" + std::to_string(id); }

bool IsReceiveStateKey(std::string_view key) {
  return key == kReceiveTargetKey || key == kReceiveTokenKey;
}

Status ValidateDatasetName(std::string_view name) {
  if (name.empty() || name.size() > 255)
    return Status::InvalidArgument("a dataset name component must be 1 to 255 bytes, not " +
                                   std::to_string(name.size()));
  if (name == "." || name == "..")
    return Status::InvalidArgument("'" + std::string(name) +
                                   "' cannot be a dataset name component");
  for (char c : {'/', '\0', '@', '%'})
    if (name.find(c) != std::string_view::npos)
      return Status::InvalidArgument(
          "dataset name component '" + std::string(name) + "' contains " +
          (c == '\0' ? std::string("NUL") : "'" + std::string(1, c) + "'"));
  return Status::Ok();
}

std::string EncodePoolConfig(const PoolConfig& c) {
  std::string s;
  util::AppendLE64(&s, kConfigMagic);
  util::AppendLE32(&s, uint32_t(c.vdevs.size()));
  PutU16(&s, uint16_t(c.name.size()));
  s += c.name;
  for (const VdevConfig& v : c.vdevs) {
    util::AppendLE64(&s, v.guid);
    util::AppendLE32(&s, v.ashift);
    util::AppendLE32(&s, v.ms_shift);
    PutU16(&s, uint16_t(v.path.size()));
    s += v.path;
  }
  return s;
}

Result<PoolConfig> DecodePoolConfig(std::string_view in) {
  Reader r(in, "pool config");
  uint64_t magic;
  uint32_t count;
  uint16_t name_len;
  if (!r.U64(&magic) || magic != kConfigMagic) return r.Bad("bad magic");
  if (!r.U32(&count) || count == 0 || count > kMaxVdevs) return r.Bad("bad vdev count");
  PoolConfig c;
  if (!r.U16(&name_len) || name_len == 0 || !r.Bytes(name_len, &c.name))
    return r.Bad("bad pool name");
  std::set<uint64_t> guids;
  for (uint32_t i = 0; i < count; i++) {
    VdevConfig v;
    uint16_t path_len;
    if (!r.U64(&v.guid) || !r.U32(&v.ashift) || !r.U32(&v.ms_shift) || !r.U16(&path_len) ||
        !r.Bytes(path_len, &v.path))
      return r.Bad("vdev " + std::to_string(i) + " is truncated");
    if (v.guid == 0 || !guids.insert(v.guid).second)
      return r.Bad("vdev " + std::to_string(i) + " has a zero or repeated GUID");
    if (v.ashift < 9 || v.ashift > 16 || v.ms_shift < v.ashift || v.ms_shift > v.ashift + 32)
      return r.Bad("vdev " + std::to_string(i) + " has ashift " + std::to_string(v.ashift) +
                   ", metaslab shift " + std::to_string(v.ms_shift));
    c.vdevs.push_back(std::move(v));
  }
  if (!r.done()) return r.Bad("trailing bytes");
  return c;
}

std::string EncodePoolDirectory(const PoolDirectory& d, zio::BpFormat format, uint32_t version) {
  POOLFS_CHECK_GE(version, kOldestEncodedDirectory);
  POOLFS_CHECK_LE(version, kPoolDirectoryVersion);
  const size_t bp_size = zio::BlockPtrSize(format);
  std::string s;
  util::AppendLE64(&s, kDirMagic);
  util::AppendLE32(&s, version);
  util::AppendLE32(&s, uint32_t(d.deferred_frees.size()));
  util::AppendLE64(&s, d.next_dataset_id);
  util::AppendLE32(&s, uint32_t(d.datasets.size()));
  util::AppendLE32(&s, uint32_t(d.space_maps.size()));
  for (const DatasetEntry& e : d.datasets) {
    util::AppendLE64(&s, e.id);
    util::AppendLE64(&s, e.parent);
    util::AppendLE64(&s, e.created.value());
    util::AppendLE64(&s, uint64_t(e.creation_time));
    uint8_t bp[zio::kBlockPtrSizeV2];
    zio::EncodeBlockPtr(e.root, bp, format);
    s.append(reinterpret_cast<char*>(bp), bp_size);
    PutU16(&s, uint16_t(e.name.size()));
    s += e.name;
    PutU16(&s, uint16_t(e.props.size()));
    for (const auto& [key, value] : e.props) {
      s.push_back(char(uint8_t(key.size())));
      s += key;
      PutU16(&s, uint16_t(value.size()));
      s += value;
    }
  }
  for (const SpaceMapEntry& m : d.space_maps) {
    util::AppendLE32(&s, m.vdev);
    util::AppendLE32(&s, 0);
    util::AppendLE64(&s, m.metaslab);
    util::AppendLE64(&s, m.object);
  }
  for (const zio::BlockPtr& bp : d.deferred_frees) {
    uint8_t b[zio::kBlockPtrSizeV2];
    zio::EncodeBlockPtr(bp, b, format);
    s.append(reinterpret_cast<char*>(b), bp_size);
  }
  const ScrubPhys& sc = d.scrub;
  POOLFS_CHECK_LE(sc.error_list.size(), ScrubPhys::kMaxErrors);
  s.push_back(char(sc.state));
  s.append(3, '\0');
  util::AppendLE32(&s, uint32_t(sc.error_list.size()));
  for (uint64_t v : {sc.start_txg, uint64_t(sc.start_time), uint64_t(sc.end_time), sc.objset,
                     sc.object, sc.blkid, sc.examined, sc.total, sc.blocks, sc.repaired, sc.errors})
    util::AppendLE64(&s, v);
  for (const ScrubError& e : sc.error_list) {
    util::AppendLE64(&s, e.objset);
    util::AppendLE64(&s, e.object);
    util::AppendLE64(&s, e.blkid);
    s.push_back(char(e.level));
    s.append(7, '\0');
  }
  util::AppendLE32(&s, uint32_t(d.snapshots.size()));
  util::AppendLE32(&s, uint32_t(d.head_deadlists.size()));
  auto put_deadlist = [&s](const Deadlist& dl) {
    util::AppendLE32(&s, uint32_t(dl.size()));
    for (const auto& [key, bucket] : dl) {
      util::AppendLE64(&s, key);
      util::AppendLE64(&s, bucket.bytes);
      util::AppendLE32(&s, uint32_t(bucket.objects.size()));
      util::AppendLE32(&s, 0);
      for (const DeadObject& o : bucket.objects) {
        util::AppendLE64(&s, o.object);
        util::AppendLE64(&s, o.entries);
      }
    }
  };
  for (const SnapshotEntry& e : d.snapshots) {
    for (uint64_t v : {e.id, e.dataset, e.txg.value(), uint64_t(e.creation_time), e.referenced})
      util::AppendLE64(&s, v);
    if (version >= 8) util::AppendLE64(&s, e.guid);
    uint8_t bp[zio::kBlockPtrSizeV2];
    zio::EncodeBlockPtr(e.root, bp, format);
    s.append(reinterpret_cast<char*>(bp), bp_size);
    PutU16(&s, uint16_t(e.name.size()));
    s += e.name;
    put_deadlist(e.deadlist);
  }
  for (const auto& [id, dl] : d.head_deadlists) {
    util::AppendLE64(&s, id);
    put_deadlist(dl);
  }
  std::vector<std::pair<uint64_t, uint64_t>> clones;
  for (const DatasetEntry& e : d.datasets)
    if (e.origin != 0) clones.emplace_back(e.id, e.origin);
  std::sort(clones.begin(), clones.end());
  if (version < 6) {
    POOLFS_CHECK(clones.empty());  // a version 5 directory has no place for them
    return s;
  }
  util::AppendLE32(&s, uint32_t(clones.size()));
  for (const auto& [id, origin] : clones) {
    util::AppendLE64(&s, id);
    util::AppendLE64(&s, origin);
  }
  if (version < 7) {
    POOLFS_CHECK_EQ(d.ref_table_object, 0u);
    return s;
  }
  util::AppendLE64(&s, d.ref_table_object);
  return s;
}

uint64_t DeadBucket::entries() const {
  uint64_t n = 0;
  for (const DeadObject& o : objects) n += o.entries;
  return n;
}

uint64_t DeadBytes(const Deadlist& d) {
  uint64_t n = 0;
  for (const auto& [key, bucket] : d) n += bucket.bytes;
  return n;
}

namespace {

Status DecodeScrub(Reader& r, ScrubPhys* sc) {
  const uint8_t* head = r.Raw(4);
  uint32_t count;
  if (head == nullptr || !r.U32(&count)) return r.Bad("the scrub record is truncated");
  if (head[0] > uint8_t(ScrubPhys::State::kStopped))
    return r.Bad("the scrub record has unknown state " + std::to_string(head[0]));
  if (head[1] != 0 || head[2] != 0 || head[3] != 0)
    return r.Bad("the scrub record has nonzero reserved bytes");
  if (count > ScrubPhys::kMaxErrors)
    return r.Bad("the scrub record lists " + std::to_string(count) + " errors (at most " +
                 std::to_string(ScrubPhys::kMaxErrors) + ")");
  sc->state = ScrubPhys::State(head[0]);
  uint64_t v[11];
  for (uint64_t& x : v)
    if (!r.U64(&x)) return r.Bad("the scrub record is truncated");
  sc->start_txg = v[0];
  sc->start_time = int64_t(v[1]);
  sc->end_time = int64_t(v[2]);
  sc->objset = v[3];
  sc->object = v[4];
  sc->blkid = v[5];
  sc->examined = v[6];
  sc->total = v[7];
  sc->blocks = v[8];
  sc->repaired = v[9];
  sc->errors = v[10];
  if (sc->errors < count)
    return r.Bad("the scrub record counts " + std::to_string(sc->errors) + " errors and lists " +
                 std::to_string(count));
  for (uint32_t i = 0; i < count; i++) {
    ScrubError e;
    const uint8_t* tail;
    if (!r.U64(&e.objset) || !r.U64(&e.object) || !r.U64(&e.blkid) || !(tail = r.Raw(8)))
      return r.Bad("scrub error " + std::to_string(i) + " is truncated");
    e.level = tail[0];
    for (int k = 1; k < 8; k++)
      if (tail[k] != 0)
        return r.Bad("scrub error " + std::to_string(i) + " has nonzero reserved bytes");
    sc->error_list.push_back(e);
  }
  if (sc->state == ScrubPhys::State::kNone && !(*sc == ScrubPhys{}))
    return r.Bad("the scrub record says no scrub ran but is not empty");
  return Status::Ok();
}

// A deadlist (`what` names its owner); its keys ascend, and are checked
// against its dataset's snapshots and origin once those are all known
// (CheckDeadlistKeys); `objects` collects every MOS object named so far.
Status DecodeDeadlist(Reader& r, const std::string& what, std::set<uint64_t>* objects,
                      Deadlist* out) {
  uint32_t nbuckets;
  if (!r.U32(&nbuckets)) return r.Bad(what + ": the deadlist is truncated");
  // Each bucket takes 24 bytes and an object 16: refuse counts the bytes
  // left cannot hold before reading on.
  for (uint32_t b = 0; b < nbuckets; b++) {
    const std::string bwhat = what + " deadlist bucket " + std::to_string(b);
    uint64_t key;
    uint32_t nobjects, pad;
    DeadBucket bucket;
    if (!r.U64(&key) || !r.U64(&bucket.bytes) || !r.U32(&nobjects) || !r.U32(&pad))
      return r.Bad(bwhat + " is truncated");
    if (pad != 0) return r.Bad(bwhat + " has nonzero reserved bytes");
    if (!out->empty() && !(out->rbegin()->first < key))
      return r.Bad(bwhat + " has key " + std::to_string(key) + ", not above the one before");
    if (nobjects == 0) return r.Bad(bwhat + " is empty");
    if (uint64_t(nobjects) * 16 > r.left()) return r.Bad(bwhat + " lists more objects than fit");
    for (uint32_t i = 0; i < nobjects; i++) {
      DeadObject o;
      if (!r.U64(&o.object) || !r.U64(&o.entries)) return r.Bad(bwhat + " is truncated");
      if (o.object <= kDirectoryObject || o.entries == 0 || !objects->insert(o.object).second)
        return r.Bad(bwhat + " names object " + std::to_string(o.object) + " with " +
                     std::to_string(o.entries) + " entries: not a MOS object of its own, or empty");
      bucket.objects.push_back(o);
    }
    out->emplace(key, std::move(bucket));
  }
  return Status::Ok();
}

// The version 5 part: snapshots and head deadlists (see pool_phys.h); from
// version 8 each snapshot has a guid.
Status DecodeSnapshots(Reader& r, uint32_t version, zio::BpFormat format,
                       const std::map<uint64_t, size_t>& by_id, PoolDirectory* d) {
  const size_t bp_size = zio::BlockPtrSize(format);
  const bool guids = version >= 8;
  uint32_t nsnaps, nheads;
  if (!r.U32(&nsnaps) || !r.U32(&nheads)) return r.Bad("the snapshot counts are truncated");
  if (uint64_t(nsnaps) * ((guids ? 54 : 46) + bp_size) + uint64_t(nheads) * 12 > r.left())
    return r.Bad("snapshot counts too large");
  std::set<uint64_t> objects;
  for (const SpaceMapEntry& m : d->space_maps) objects.insert(m.object);
  std::set<uint64_t> ids;
  for (const auto& [id, index] : by_id) ids.insert(id);
  std::map<uint64_t, std::set<uint64_t>> txgs;  // per dataset
  std::set<std::pair<uint64_t, std::string>> names;
  std::map<std::pair<uint64_t, uint64_t>, std::string> guid_names;  // (dataset, guid) -> name
  for (uint32_t i = 0; i < nsnaps; i++) {
    SnapshotEntry e;
    std::string what = "snapshot " + std::to_string(i);
    uint64_t txg, ctime;
    uint16_t name_len;
    const uint8_t* bp;
    if (!r.U64(&e.id) || !r.U64(&e.dataset) || !r.U64(&txg) || !r.U64(&ctime) ||
        !r.U64(&e.referenced) || (guids && !r.U64(&e.guid)) || !(bp = r.Raw(bp_size)) ||
        !r.U16(&name_len) || !r.Bytes(name_len, &e.name))
      return r.Bad(what + " is truncated");
    e.txg = Txg(txg);
    e.creation_time = int64_t(ctime);
    if (Status st = ValidateDatasetName(e.name); !st.ok())
      return r.Bad(what + " has a bad name: " + st.message());
    what += " ('@" + e.name + "')";
    POOLFS_ASSIGN_OR_RETURN(e.root, zio::DecodeBlockPtr(bp, what + " root", format));
    if (e.root.IsHole()) return r.Bad(what + " has no root block");
    if (e.id == 0 || e.id >= d->next_dataset_id || !ids.insert(e.id).second)
      return r.Bad(what + " has id " + std::to_string(e.id) + ": outside 1.." +
                   std::to_string(d->next_dataset_id - 1) + " or taken");
    auto ds = by_id.find(e.dataset);
    if (ds == by_id.end())
      return r.Bad(what + " belongs to dataset " + std::to_string(e.dataset) +
                   ", which the directory does not list");
    if (IsReceiveName(d->datasets[ds->second].name))
      return r.Bad(what + " belongs to hidden dataset '" + d->datasets[ds->second].name + "'");
    // (A promoted clone holds snapshots older than itself: no bound by its
    // creation.)
    if (txg == 0) return r.Bad(what + " has txg 0");
    std::set<uint64_t>& seen = txgs[e.dataset];
    if (!seen.empty() && !(*seen.rbegin() < txg))
      return r.Bad(what + " has txg " + std::to_string(txg) +
                   ", not after the dataset's snapshot before it");
    if (!names.emplace(e.dataset, e.name).second)
      return r.Bad(what + " repeats a snapshot name of its dataset");
    if (guids) {
      if (e.guid == 0)
        return r.Bad(what + " of dataset " + std::to_string(e.dataset) + " has guid 0");
      auto [same, fresh] = guid_names.emplace(std::make_pair(e.dataset, e.guid), e.name);
      if (!fresh)
        return r.Bad(what + " of dataset " + std::to_string(e.dataset) + " has guid " +
                     std::to_string(e.guid) + ", as snapshot '@" + same->second +
                     "' of that dataset has");
    }
    POOLFS_RETURN_IF_ERROR(DecodeDeadlist(r, what, &objects, &e.deadlist));
    seen.insert(txg);
    d->snapshots.push_back(std::move(e));
  }
  for (uint32_t i = 0; i < nheads; i++) {
    uint64_t id;
    if (!r.U64(&id)) return r.Bad("head deadlist " + std::to_string(i) + " is truncated");
    const std::string what = "the deadlist of dataset " + std::to_string(id);
    if (!by_id.count(id)) return r.Bad(what + ": no such dataset");
    Deadlist dl;
    POOLFS_RETURN_IF_ERROR(DecodeDeadlist(r, what, &objects, &dl));
    if (dl.empty()) return r.Bad(what + " is empty");
    if (!d->head_deadlists.emplace(id, std::move(dl)).second) return r.Bad(what + " is repeated");
  }
  return Status::Ok();
}

// The version 6 part: the origins of clones (see pool_phys.h).
Status DecodeClones(Reader& r, const std::map<uint64_t, size_t>& by_id, PoolDirectory* d) {
  uint32_t n;
  if (!r.U32(&n)) return r.Bad("the clone count is truncated");
  if (uint64_t(n) * 16 > r.left()) return r.Bad("clone count too large");
  std::map<uint64_t, const SnapshotEntry*> snaps;
  for (const SnapshotEntry& e : d->snapshots) snaps.emplace(e.id, &e);
  uint64_t last = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t id, origin;
    if (!r.U64(&id) || !r.U64(&origin))
      return r.Bad("clone " + std::to_string(i) + " is truncated");
    const std::string what = "clone " + std::to_string(i) + " (dataset " + std::to_string(id) + ")";
    auto ds = by_id.find(id);
    if (ds == by_id.end() || id <= last)
      return r.Bad(what + ": no such dataset, or not in ascending order");
    last = id;
    auto snap = snaps.find(origin);
    if (snap == snaps.end())
      return r.Bad(what + " has origin " + std::to_string(origin) + ", which is no snapshot");
    if (snap->second->dataset == id)
      return r.Bad(what + " has origin " + std::to_string(origin) + ", a snapshot of its own");
    d->datasets[ds->second].origin = origin;
  }
  // No dataset is its own origin's origin, however far back: each walk
  // stops at a dataset that is no clone, or one known to reach one.
  std::set<uint64_t> reaches_end;
  for (const DatasetEntry& e : d->datasets) {
    std::set<uint64_t> path = {e.id};
    for (uint64_t origin = e.origin; origin != 0;) {
      const uint64_t next = snaps.at(origin)->dataset;
      if (reaches_end.count(next)) break;
      if (!path.insert(next).second)
        return r.Bad("dataset " + std::to_string(e.id) + " is a clone of a clone of itself");
      origin = d->datasets[by_id.at(next)].origin;
    }
    reaches_end.insert(path.begin(), path.end());
  }
  return Status::Ok();
}

// Every deadlist's keys: 0, a clone's origin's txg, or the txg of a
// snapshot of its dataset (for a snapshot's, an earlier one); and every
// snapshot of a clone is later than its origin. A head deadlist belongs
// to a dataset with snapshots, or to a clone (the blocks of its origin it
// dropped).
Status CheckDeadlistKeys(Reader& r, const std::map<uint64_t, size_t>& by_id,
                         const PoolDirectory& d) {
  std::map<uint64_t, uint64_t> snap_txg;        // by snapshot id
  std::map<uint64_t, std::set<uint64_t>> txgs;  // per dataset
  for (const SnapshotEntry& e : d.snapshots) {
    snap_txg[e.id] = e.txg.value();
    txgs[e.dataset].insert(e.txg.value());
  }
  auto base_of = [&](uint64_t dataset) -> uint64_t {
    const uint64_t origin = d.datasets[by_id.at(dataset)].origin;
    return origin == 0 ? 0 : snap_txg.at(origin);
  };
  auto check = [&](const std::string& what, uint64_t dataset, const Deadlist& dl,
                   uint64_t below) -> Status {
    const uint64_t base = base_of(dataset);
    const std::set<uint64_t>& own = txgs[dataset];
    for (const auto& [key, bucket] : dl)
      if (key >= below || (key != 0 && key != base && !own.count(key)))
        return r.Bad(what + " has a bucket with key " + std::to_string(key) +
                     ", which is neither 0 nor the txg of an earlier snapshot of its dataset" +
                     (base != 0 ? " nor of its origin" : ""));
    return Status::Ok();
  };
  for (const SnapshotEntry& e : d.snapshots) {
    const std::string what = "snapshot '@" + e.name + "' of dataset " + std::to_string(e.dataset);
    if (e.txg.value() <= base_of(e.dataset))
      return r.Bad(what + " has txg " + std::to_string(e.txg.value()) +
                   ", not after its dataset's origin");
    POOLFS_RETURN_IF_ERROR(check(what, e.dataset, e.deadlist, e.txg.value()));
  }
  for (const auto& [id, dl] : d.head_deadlists) {
    const std::string what = "the deadlist of dataset " + std::to_string(id);
    if (txgs[id].empty() && base_of(id) == 0)
      return r.Bad(what + ": the dataset has no snapshots and is no clone");
    POOLFS_RETURN_IF_ERROR(check(what, id, dl, ~uint64_t{0}));
  }
  return Status::Ok();
}

}  // namespace

Result<PoolDirectory> DecodePoolDirectory(std::string_view in, zio::BpFormat format) {
  Reader r(in, "pool directory");
  const size_t bp_size = zio::BlockPtrSize(format);
  uint64_t magic;
  uint32_t version, nfrees, ndatasets, nmaps;
  PoolDirectory d;
  if (!r.U64(&magic) || magic != kDirMagic) return r.Bad("bad magic");
  if (!r.U32(&version) || version < 1 || version > kPoolDirectoryVersion)
    return r.Bad("unknown version");
  if (!r.U32(&nfrees)) return r.Bad("truncated header");
  if (version == 1 && nfrees != 0) return r.Bad("nonzero reserved field");
  if (!r.U64(&d.next_dataset_id) || !r.U32(&ndatasets) || !r.U32(&nmaps))
    return r.Bad("truncated header");
  // Each dataset entry takes at least 19 bytes and a block pointer (37 from
  // version 3), each space map 24, each deferred free a block pointer:
  // refuse counts the bytes cannot hold before reserving anything.
  const uint64_t min_entry = (version >= 3 ? 37 : 19) + bp_size;
  if (uint64_t(ndatasets) * min_entry + uint64_t(nmaps) * 24 + uint64_t(nfrees) * bp_size >
      in.size())
    return r.Bad("counts too large");
  std::map<uint64_t, size_t> by_id;  // id -> index in d.datasets
  for (uint32_t i = 0; i < ndatasets; i++) {
    DatasetEntry e;
    const std::string what = "dataset " + std::to_string(i);
    uint64_t created, ctime = 0;
    uint16_t name_len;
    const uint8_t* bp;
    if (!r.U64(&e.id) || (version >= 3 && !r.U64(&e.parent)) || !r.U64(&created) ||
        (version >= 3 && !r.U64(&ctime)) || !(bp = r.Raw(bp_size)) || !r.U16(&name_len) ||
        !r.Bytes(name_len, &e.name))
      return r.Bad(what + " is truncated");
    e.created = Txg(created);
    e.creation_time = int64_t(ctime);
    POOLFS_ASSIGN_OR_RETURN(e.root,
                            zio::DecodeBlockPtr(bp, "dataset '" + e.name + "' root", format));
    if (version >= 9 && IsReceiveName(e.name)) {
      if (e.name != ReceiveName(e.id))
        return r.Bad(what + " has a bad name: '" + e.name + "' is not '" + ReceiveName(e.id) +
                     "', the only hidden name dataset " + std::to_string(e.id) + " may have");
    } else if (Status st = ValidateDatasetName(e.name); !st.ok()) {
      return r.Bad(what + " has a bad name: " + st.message());
    }
    if (e.id == 0 || e.id >= d.next_dataset_id)
      return r.Bad(what + " ('" + e.name + "') has id " + std::to_string(e.id) + ", outside 1.." +
                   std::to_string(d.next_dataset_id - 1));
    if (!by_id.emplace(e.id, i).second)
      return r.Bad(what + " ('" + e.name + "') repeats id " + std::to_string(e.id));
    if (version >= 3) {
      uint16_t nprops;
      if (!r.U16(&nprops)) return r.Bad(what + " is truncated");
      if (nprops > kMaxLocalProperties)
        return r.Bad(what + " ('" + e.name + "') has " + std::to_string(nprops) +
                     " properties, more than " + std::to_string(kMaxLocalProperties));
      for (uint16_t k = 0; k < nprops; k++) {
        const uint8_t* klen = r.Raw(1);
        std::string key, value;
        uint16_t vlen;
        if (klen == nullptr || *klen == 0 || *klen > kMaxPropertyKey || !r.Bytes(*klen, &key) ||
            !r.U16(&vlen) || vlen > kMaxPropertyValue || !r.Bytes(vlen, &value))
          return r.Bad(what + " ('" + e.name + "') property " + std::to_string(k) +
                       " is truncated or too long");
        if (!e.props.empty() && !(e.props.rbegin()->first < key))
          return r.Bad(what + " ('" + e.name + "') property '" + key +
                       "' is out of order or repeated");
        if (IsReceiveStateKey(key)) {
          // A resumable receive's state: its hidden dataset's alone.
          if (version < 9 || !IsReceiveName(e.name) || value.empty())
            return r.Bad(what + " ('" + e.name + "'): property '" + key + "' " +
                         (value.empty() ? "is empty" : "belongs to a receive's hidden dataset"));
        } else if (Status st = ValidateStoredProperty(key, value); !st.ok()) {
          return r.Bad(what + " ('" + e.name + "'): " + st.message());
        }
        e.props.emplace(std::move(key), std::move(value));
      }
    }
    d.datasets.push_back(std::move(e));
  }
  // Versions 1 and 2 were flat: the first dataset (the lowest id) is the
  // root, the others its children.
  if (version < 3 && !by_id.empty())
    for (DatasetEntry& e : d.datasets)
      if (e.id != by_id.begin()->first) e.parent = by_id.begin()->first;
  // The tree: one root, known parents, no cycle, unique names per parent.
  size_t roots = 0;
  std::set<std::pair<uint64_t, std::string_view>> names;
  std::set<uint64_t> reaches_root;
  for (const DatasetEntry& e : d.datasets) {
    const std::string what = "dataset '" + e.name + "' (id " + std::to_string(e.id) + ")";
    if (e.parent == 0) {
      roots++;
    } else if (!by_id.count(e.parent)) {
      return r.Bad(what + " has unknown parent " + std::to_string(e.parent));
    }
    if (!names.emplace(e.parent, e.name).second)
      return r.Bad(what + " repeats a name under parent " + std::to_string(e.parent));
    // Up to the root or to a dataset known to reach it; each id is walked
    // from once, so the whole check costs the number of datasets.
    std::set<uint64_t> path = {e.id};
    for (uint64_t at = e.parent; at != 0 && !reaches_root.count(at);) {
      if (!path.insert(at).second)
        return r.Bad(what + " is its own ancestor or below a cycle of parents");
      // An ancestor's own parent may not have been looked at yet.
      auto it = by_id.find(at);
      if (it == by_id.end())
        return r.Bad(what + " has an ancestor with unknown parent " + std::to_string(at));
      at = d.datasets[it->second].parent;
    }
    reaches_root.insert(path.begin(), path.end());
  }
  if (!d.datasets.empty() && roots != 1)
    return r.Bad(std::to_string(roots) + " datasets have no parent; exactly one root is allowed");
  // A receive's hidden dataset hangs off the root and has no children.
  for (const DatasetEntry& e : d.datasets) {
    if (e.parent == 0) continue;
    const DatasetEntry& parent = d.datasets[by_id.at(e.parent)];
    if (IsReceiveName(e.name) && parent.parent != 0)
      return r.Bad("hidden dataset '" + e.name + "' is not a child of the root dataset");
    if (IsReceiveName(parent.name))
      return r.Bad("dataset '" + e.name + "' (id " + std::to_string(e.id) +
                   ") is a child of hidden dataset '" + parent.name + "'");
  }
  std::set<std::pair<uint32_t, uint64_t>> maps;
  for (uint32_t i = 0; i < nmaps; i++) {
    SpaceMapEntry m;
    uint32_t pad;
    if (!r.U32(&m.vdev) || !r.U32(&pad) || !r.U64(&m.metaslab) || !r.U64(&m.object))
      return r.Bad("space map entry " + std::to_string(i) + " is truncated");
    if (pad != 0 || m.object == 0 || !maps.insert({m.vdev, m.metaslab}).second)
      return r.Bad("space map entry " + std::to_string(i) + " is invalid or repeated");
    d.space_maps.push_back(m);
  }
  for (uint32_t i = 0; i < nfrees; i++) {
    const std::string what = "deferred free " + std::to_string(i);
    const uint8_t* bp = r.Raw(bp_size);
    if (bp == nullptr) return r.Bad(what + " is truncated");
    POOLFS_ASSIGN_OR_RETURN(zio::BlockPtr b, zio::DecodeBlockPtr(bp, what, format));
    if (b.IsHole()) return r.Bad(what + " is a hole");
    d.deferred_frees.push_back(b);
  }
  if (version >= 4) POOLFS_RETURN_IF_ERROR(DecodeScrub(r, &d.scrub));
  if (version >= 5) POOLFS_RETURN_IF_ERROR(DecodeSnapshots(r, version, format, by_id, &d));
  if (version >= 6) POOLFS_RETURN_IF_ERROR(DecodeClones(r, by_id, &d));
  if (version >= 5) POOLFS_RETURN_IF_ERROR(CheckDeadlistKeys(r, by_id, d));
  if (version >= 7) {
    if (!r.U64(&d.ref_table_object)) return r.Bad("the block reference table object is truncated");
    if (d.ref_table_object == kDirectoryObject)
      return r.Bad("the block reference table is the pool directory's object");
  }
  if (!r.done()) return r.Bad("trailing bytes");
  return d;
}

namespace {
constexpr uint64_t kLogStateMagic = 0x31474f4c53534650ull;  // "PFSSLOG1"
constexpr size_t kLogStateOffset = 128;                     // past either format's pointer
constexpr size_t kLogStateSize = 56;
static_assert(kLogStateOffset + kLogStateSize <= vdev::kUberblockRootSize);
}  // namespace

std::array<uint8_t, vdev::kUberblockRootSize> EncodeRootPayload(const zio::BlockPtr& mos_root,
                                                                zio::BpFormat format,
                                                                const LogState& log) {
  std::array<uint8_t, vdev::kUberblockRootSize> out{};
  zio::EncodeBlockPtr(mos_root, out.data(), format);
  if (!log.empty()) {
    uint8_t* p = out.data() + kLogStateOffset;
    util::PutLE64(p, kLogStateMagic);
    util::PutLE32(p + 8, log.vdev);
    util::PutLE64(p + 16, log.chain);
    util::PutLE64(p + 24, log.synced_txg);
    util::PutLE64(p + 32, log.tail_offset);
    util::PutLE64(p + 40, log.tail_seq);
    util::PutLE64(p + 48, log.replayed_seq);
  }
  return out;
}

Result<RootPayload> DecodeRootPayload(const std::array<uint8_t, vdev::kUberblockRootSize>& in,
                                      zio::BpFormat format) {
  auto nonzero = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; i++)
      if (in[i]) return true;
    return false;
  };
  if (nonzero(zio::BlockPtrSize(format), kLogStateOffset) ||
      nonzero(kLogStateOffset + kLogStateSize, in.size()))
    return Status::Corruption("uberblock root payload has nonzero reserved bytes");
  RootPayload out;
  POOLFS_ASSIGN_OR_RETURN(out.mos_root,
                          zio::DecodeBlockPtr(in.data(), "uberblock MOS root", format));
  const uint8_t* p = in.data() + kLogStateOffset;
  if (!nonzero(kLogStateOffset, kLogStateOffset + kLogStateSize)) return out;
  auto bad = [](const std::string& what) {
    return Status::Corruption("uberblock log state: " + what);
  };
  if (util::GetLE64(p) != kLogStateMagic) return bad("bad magic");
  if (util::GetLE32(p + 12) != 0) return bad("nonzero reserved bytes");
  LogState& log = out.log;
  log.vdev = util::GetLE32(p + 8);
  log.chain = util::GetLE64(p + 16);
  log.synced_txg = util::GetLE64(p + 24);
  log.tail_offset = util::GetLE64(p + 32);
  log.tail_seq = util::GetLE64(p + 40);
  log.replayed_seq = util::GetLE64(p + 48);
  if (log.chain == 0) return bad("chain id 0");
  if (log.tail_seq == 0) return bad("tail sequence number 0");
  if (log.tail_offset >= vdev::kLogAreaSize || log.tail_offset % kLogBlockAlign != 0)
    return bad("tail offset " + std::to_string(log.tail_offset) + " is not a 4 KiB step of the " +
               std::to_string(vdev::kLogAreaSize) + "-byte log area");
  return out;
}

}  // namespace poolfs::core::pool
