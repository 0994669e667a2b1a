// libFuzzer target for the pool layer's on-disk records
// (core/pool/pool_phys.h): the pool config of the vdev labels, the pool
// directory (MOS object 1) and the uberblock's root payload.
//
// Input: [selector byte][bytes...]. selector % 3 == 0: the bytes are a pool
// config; 1: a pool directory; 2: a root payload (zero-padded or cut to
// 512 bytes). (selector / 3) % 2 picks the format of the block pointers in a
// directory or root payload: 0, format 1 (64 bytes); 1, format 2 (128
// bytes). So selectors 0, 1, 2 are the records of format 1 pools and 3, 4, 5
// those of format 2 pools (a config, 0 or 3, has no block pointer).
//
// Properties checked (a violation aborts):
//   - decoding never crashes, allocates no more than the input justifies
//     (libFuzzer's -malloc_limit_mb catches a count taken from the input
//     that drives a reservation), and fails only with Corruption;
//   - decoding is deterministic;
//   - the encoding is canonical: whatever decodes re-encodes to exactly the
//     input bytes;
//   - what decodes obeys the rules of core/doc/on-disk-format.md, checked
//     here with separate arithmetic: 1..4096 vdevs with distinct nonzero
//     GUIDs, ashift 9..16 and a metaslab shift from ashift to ashift + 32;
//     datasets with ids 1..next-1, distinct ids, one root, known parents
//     and no cycle, names of 1..255 bytes without '/', NUL, '@' or '%',
//     distinct under one parent, bounded properties, roots that are valid
//     block pointers of no more copies than the format holds; space map
//     entries with nonzero objects and distinct (vdev, metaslab); deferred
//     frees that are valid, not holes; snapshots with distinct ids, of
//     listed datasets, in ascending txg per dataset, with stored roots, and
//     deadlists whose buckets are keyed 0 or by an earlier snapshot's txg
//     and name distinct objects; snapshot guids (version 8) nonzero and
//     distinct within a dataset, 0 before version 8; a block reference
//     table object that is not the directory's own (1); a root payload zero past its 64 or
//     128 bytes but for a whole log state at bytes 128..183 (a chain, a
//     tail sequence number, an aligned tail inside the log area).
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "pool/pool_phys.h"
#include "util/endian.h"
#include "vdev/vdev_layout.h"
#include "zio/block_ptr.h"

namespace {

using namespace poolfs::core;
using poolfs::Result;
using poolfs::StatusCode;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "pool_phys_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void CheckRefusal(const poolfs::Status& st) {
  if (st.code() != StatusCode::kCorruption) Fail("unexpected status", st.ToString());
}

bool SameConfig(const pool::PoolConfig& a, const pool::PoolConfig& b) {
  if (a.name != b.name || a.vdevs.size() != b.vdevs.size()) return false;
  for (size_t i = 0; i < a.vdevs.size(); i++) {
    const pool::VdevConfig &x = a.vdevs[i], &y = b.vdevs[i];
    if (x.guid != y.guid || x.ashift != y.ashift || x.ms_shift != y.ms_shift || x.path != y.path)
      return false;
  }
  return true;
}

bool SameDirectory(const pool::PoolDirectory& a, const pool::PoolDirectory& b) {
  if (a.next_dataset_id != b.next_dataset_id || a.datasets.size() != b.datasets.size() ||
      a.space_maps.size() != b.space_maps.size() ||
      a.deferred_frees.size() != b.deferred_frees.size() || !(a.scrub == b.scrub))
    return false;
  if (!(a.snapshots == b.snapshots) || !(a.head_deadlists == b.head_deadlists)) return false;
  if (a.ref_table_object != b.ref_table_object) return false;
  for (size_t i = 0; i < a.deferred_frees.size(); i++)
    if (!(a.deferred_frees[i] == b.deferred_frees[i])) return false;
  for (size_t i = 0; i < a.datasets.size(); i++)
    if (!(a.datasets[i] == b.datasets[i])) return false;
  for (size_t i = 0; i < a.space_maps.size(); i++) {
    const pool::SpaceMapEntry &x = a.space_maps[i], &y = b.space_maps[i];
    if (x.vdev != y.vdev || x.metaslab != y.metaslab || x.object != y.object) return false;
  }
  return true;
}

void FuzzConfig(const std::string& in) {
  Result<pool::PoolConfig> c = pool::DecodePoolConfig(in);
  Result<pool::PoolConfig> again = pool::DecodePoolConfig(in);
  if (c.ok() != again.ok() || (c.ok() && !SameConfig(*c, *again)))
    Fail("config decoding is not deterministic", "");
  if (!c.ok()) return CheckRefusal(c.status());
  if (c->name.empty() || c->vdevs.empty() || c->vdevs.size() > 4096)
    Fail("decoded config", "empty name or bad vdev count");
  std::set<uint64_t> guids;
  for (const pool::VdevConfig& v : c->vdevs) {
    if (v.guid == 0 || !guids.insert(v.guid).second) Fail("decoded vdev GUID", "zero or repeated");
    if (v.ashift < 9 || v.ashift > 16 || v.ms_shift < v.ashift || v.ms_shift - v.ashift > 32)
      Fail("decoded vdev shifts", std::to_string(v.ashift) + " " + std::to_string(v.ms_shift));
  }
  if (pool::EncodePoolConfig(*c) != in) Fail("config re-encodes to other bytes", "");
}

// A decoded pointer: valid, with no more copies than `format` holds.
void CheckPointer(const zio::BlockPtr& bp, zio::BpFormat format, const char* what) {
  if (!zio::ValidateBlockPtr(bp).ok()) Fail(what, "not valid: " + bp.ToString());
  if (bp.copies() > (format == zio::BpFormat::kV1 ? 1 : 3))
    Fail(what, "more copies than the format holds: " + bp.ToString());
}

void FuzzDirectory(const std::string& in, zio::BpFormat format) {
  Result<pool::PoolDirectory> d = pool::DecodePoolDirectory(in, format);
  Result<pool::PoolDirectory> again = pool::DecodePoolDirectory(in, format);
  if (d.ok() != again.ok() || (d.ok() && !SameDirectory(*d, *again)))
    Fail("directory decoding is not deterministic", "");
  if (!d.ok()) return CheckRefusal(d.status());
  std::map<uint64_t, uint64_t> parent_of;
  std::set<std::pair<uint64_t, std::string>> names;
  size_t roots = 0;
  for (const pool::DatasetEntry& e : d->datasets) {
    if (e.id == 0 || e.id >= d->next_dataset_id || !parent_of.emplace(e.id, e.parent).second)
      Fail("decoded dataset id", std::to_string(e.id));
    if (e.name.empty() || e.name.size() > 255 || e.name == "." || e.name == ".." ||
        e.name.find_first_of(std::string("/\0@%", 4)) != std::string::npos ||
        !names.insert({e.parent, e.name}).second)
      Fail("decoded dataset name", e.name);
    roots += e.parent == 0;
    CheckPointer(e.root, format, "decoded dataset root");
    if (e.props.size() > 64) Fail("decoded properties", "more than 64");
    for (const auto& [k, v] : e.props)
      if (k.empty() || k.size() > 64 || v.size() > 1024) Fail("decoded property", k);
  }
  if (!d->datasets.empty() && roots != 1) Fail("decoded dataset tree", "not one root");
  // Every dataset reaches the root in fewer steps than there are datasets.
  for (const auto& [id, parent] : parent_of) {
    uint64_t at = parent;
    for (size_t steps = 0; at != 0; steps++) {
      auto it = parent_of.find(at);
      if (it == parent_of.end()) Fail("decoded dataset parent", std::to_string(at));
      if (steps > parent_of.size()) Fail("decoded dataset tree", "a cycle");
      at = it->second;
    }
  }
  std::set<std::pair<uint32_t, uint64_t>> maps;
  for (const pool::SpaceMapEntry& m : d->space_maps)
    if (m.object == 0 || !maps.insert({m.vdev, m.metaslab}).second)
      Fail("decoded space map entry", std::to_string(m.object));
  for (const zio::BlockPtr& bp : d->deferred_frees) {
    if (bp.IsHole()) Fail("decoded deferred free", "a hole");
    CheckPointer(bp, format, "decoded deferred free");
  }
  // Snapshots: ids distinct from every other id and below the next, of a
  // listed dataset, named like a component, distinct per dataset, in
  // strictly ascending txg per dataset, with a stored root; deadlist
  // buckets non-empty, keyed 0 or by an earlier snapshot's txg of the same
  // dataset (or by its origin's, for a clone), naming distinct objects
  // above 1 with entries; head deadlists only for datasets with snapshots
  // or clones. A clone's origin is a snapshot of another dataset, older
  // than the clone's snapshots, and origins lead to a dataset that is no
  // clone.
  std::map<uint64_t, const pool::SnapshotEntry*> snap_by_id;
  for (const pool::SnapshotEntry& e : d->snapshots) snap_by_id[e.id] = &e;
  std::map<uint64_t, uint64_t> base;  // a clone's origin's txg
  for (const pool::DatasetEntry& e : d->datasets) {
    if (e.origin == 0) continue;
    auto o = snap_by_id.find(e.origin);
    if (o == snap_by_id.end() || o->second->dataset == e.id)
      Fail("decoded clone origin", std::to_string(e.origin));
    base[e.id] = o->second->txg.value();
    std::set<uint64_t> path = {e.id};
    for (uint64_t at = o->second->dataset;;) {
      if (!path.insert(at).second) Fail("decoded clone origins", "a cycle");
      uint64_t next = 0;
      for (const pool::DatasetEntry& x : d->datasets)
        if (x.id == at) next = x.origin;
      if (next == 0) break;
      at = snap_by_id.at(next)->dataset;
    }
  }
  std::set<uint64_t> ids;
  for (const auto& [id, parent] : parent_of) ids.insert(id);
  std::map<uint64_t, std::set<uint64_t>> txgs;
  std::set<std::pair<uint64_t, std::string>> snap_names;
  std::set<uint64_t> objects;
  for (const pool::SpaceMapEntry& m : d->space_maps) objects.insert(m.object);
  auto check_deadlist = [&](const pool::Deadlist& dl, const std::set<uint64_t>& keys,
                            uint64_t dataset) {
    for (const auto& [key, bucket] : dl) {
      if (key != 0 && !keys.count(key) && key != base[dataset])
        Fail("decoded deadlist key", std::to_string(key));
      if (bucket.objects.empty()) Fail("decoded deadlist bucket", "empty");
      for (const pool::DeadObject& o : bucket.objects)
        if (o.object <= 1 || o.entries == 0 || !objects.insert(o.object).second)
          Fail("decoded deadlist object", std::to_string(o.object));
    }
  };
  for (const pool::SnapshotEntry& e : d->snapshots) {
    if (e.id == 0 || e.id >= d->next_dataset_id || !ids.insert(e.id).second)
      Fail("decoded snapshot id", std::to_string(e.id));
    if (!parent_of.count(e.dataset)) Fail("decoded snapshot dataset", std::to_string(e.dataset));
    if (e.name.empty() || e.name.size() > 255 || e.name == "." || e.name == ".." ||
        e.name.find_first_of(std::string("/\0@%", 4)) != std::string::npos ||
        !snap_names.insert({e.dataset, e.name}).second)
      Fail("decoded snapshot name", e.name);
    if (e.root.IsHole()) Fail("decoded snapshot root", "a hole");
    CheckPointer(e.root, format, "decoded snapshot root");
    std::set<uint64_t>& seen = txgs[e.dataset];
    if ((!seen.empty() && *seen.rbegin() >= e.txg.value()) || e.txg.value() <= base[e.dataset])
      Fail("decoded snapshot txg", std::to_string(e.txg.value()));
    check_deadlist(e.deadlist, seen, e.dataset);
    seen.insert(e.txg.value());
  }
  for (const auto& [id, dl] : d->head_deadlists) {
    if ((!txgs.count(id) && !base.count(id)) || dl.empty())
      Fail("decoded head deadlist", std::to_string(id));
    check_deadlist(dl, txgs[id], id);
  }
  // What decodes has at least the 32-byte header, whose version is at 8.
  const uint32_t version = poolfs::util::GetLE32(reinterpret_cast<const uint8_t*>(in.data()) + 8);
  if (d->ref_table_object == 1 || (version < 7 && d->ref_table_object != 0))
    Fail("decoded block reference table object",
         std::to_string(d->ref_table_object) + " in version " + std::to_string(version));
  std::set<std::pair<uint64_t, uint64_t>> guids;  // (dataset, guid)
  for (const pool::SnapshotEntry& e : d->snapshots)
    if (version >= 8 ? e.guid == 0 || !guids.insert({e.dataset, e.guid}).second : e.guid != 0)
      Fail("decoded snapshot guid",
           std::to_string(e.guid) + " in version " + std::to_string(version));
  // Versions 5 to 8 re-encode as themselves, exactly; an older one (1 to
  // 4) is written back as the newest, with the same content.
  const bool own = version >= pool::kOldestEncodedDirectory;
  const std::string again_bytes =
      pool::EncodePoolDirectory(*d, format, own ? version : pool::kPoolDirectoryVersion);
  if (again_bytes != in) {
    Result<pool::PoolDirectory> re = pool::DecodePoolDirectory(again_bytes, format);
    if (own || !re.ok() || !SameDirectory(*d, *re))
      Fail("directory re-encodes to other bytes", "version " + std::to_string(version));
  }
}

void FuzzRootPayload(const std::string& raw, zio::BpFormat format) {
  std::array<uint8_t, vdev::kUberblockRootSize> in{};
  for (size_t i = 0; i < in.size() && i < raw.size(); i++) in[i] = uint8_t(raw[i]);
  Result<pool::RootPayload> got = pool::DecodeRootPayload(in, format);
  Result<pool::RootPayload> again = pool::DecodeRootPayload(in, format);
  if (got.ok() != again.ok() ||
      (got.ok() && !(got->mos_root == again->mos_root && got->log == again->log)))
    Fail("root payload decoding is not deterministic", "");
  if (!got.ok()) return CheckRefusal(got.status());
  CheckPointer(got->mos_root, format, "decoded root payload");
  // Beyond the pointer only the log state (bytes 128..183) may be set, and
  // only as a whole: a chain, a tail sequence number and an aligned tail
  // inside the log area.
  const size_t bp_size = format == zio::BpFormat::kV1 ? 64 : 128;
  for (size_t i = bp_size; i < in.size(); i++)
    if (in[i] != 0 && (i < 128 || i >= 184))
      Fail("decoded root payload", "nonzero byte " + std::to_string(i));
  const pool::LogState& log = got->log;
  if (!log.empty() && (log.tail_seq == 0 || log.tail_offset >= vdev::kLogAreaSize ||
                       log.tail_offset % pool::kLogBlockAlign != 0))
    Fail("decoded root payload", "an invalid log state");
  if (pool::EncodeRootPayload(got->mos_root, format, log) != in)
    Fail("root payload re-encodes to other bytes", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string in(reinterpret_cast<const char*>(data + 1), size - 1);
  const zio::BpFormat format = (data[0] / 3) % 2 ? zio::BpFormat::kV2 : zio::BpFormat::kV1;
  switch (data[0] % 3) {
    case 0: FuzzConfig(in); break;
    case 1: FuzzDirectory(in, format); break;
    default: FuzzRootPayload(in, format); break;
  }
  return 0;
}
