// Helpers for the pool check tests: a churned pool in temp files, the blocks
// the check walks, bit flips, report matching.
#pragma once

#include "pool/check.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "dmu/objset.h"
#include "pool/pool.h"
#include "poolfs/pool_admin.h"
#include "util/checksum.h"
#include "vdev/file_device.h"

namespace poolfs::core::pool::check_test {

inline constexpr uint64_t kFileSize = 128ull << 20;

inline std::string Pattern(uint64_t seed, size_t len) {
  std::string s(len, '\0');
  std::mt19937_64 rng(seed);
  for (auto& c : s) c = char(rng());
  return s;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "poolfs-check-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// Syncs only when the test says so: block layouts do not depend on timing.
inline PoolOptions QuietOptions() {
  PoolOptions o;
  o.txg.timeout_ms = 600000;
  o.space.allocators = 2;
  return o;
}

// Objects the churn leaves alone, in dataset 'a'.
struct Known {
  uint64_t small = 0;  // one 128 KiB block
  uint64_t big = 0;    // four blocks under an L1 indirect block
  uint64_t x = 0, y = 0;
};

// A pool 'tank' on two files with datasets 'a' and 'b', after several txgs
// of creates, overwrites, truncates, punches and frees. Left imported when
// `keep` is set (the caller exports), else exported.
inline Known ChurnPool(const std::vector<std::string>& paths,
                       std::unique_ptr<Pool>* keep = nullptr) {
  REQUIRE(Pool::Create(paths, kFileSize, CreateOptions{"tank"}).ok());
  auto imported = Pool::Import(paths, QuietOptions());
  INFO(imported.status().ToString());
  REQUIRE(imported.ok());
  Pool& p = **imported;
  Known k;
  std::mt19937_64 rng(7);
  REQUIRE(p.CreateDataset("a").ok());
  REQUIRE(p.WaitSynced().ok());
  auto create = [&](dmu::Tx& tx, dmu::ObjectSet* os, const std::string& data) {
    auto id = os->Create(tx, dmu::ObjectType::kPlain);
    REQUIRE(id.ok());
    REQUIRE(os->Write(tx, *id, 0, data).ok());
    return id->value();
  };
  {
    dmu::Tx tx(p.assigner());
    REQUIRE(tx.Assign().ok());
    dmu::ObjectSet* a = p.dataset("a");
    k.small = create(tx, a, Pattern(1, 10000));
    k.big = create(tx, a, Pattern(2, 3 * 131072 + 5000));
    k.x = create(tx, a, Pattern(3, 5000));
    k.y = create(tx, a, Pattern(4, 7000));
    tx.Commit();
  }
  std::vector<std::pair<dmu::ObjectSet*, uint64_t>> churn;
  for (int round = 0; round < 8; round++) {
    if (round == 2) REQUIRE(p.CreateDataset("b").ok());
    {
      dmu::Tx tx(p.assigner());
      REQUIRE(tx.Assign().ok());
      std::vector<dmu::ObjectSet*> sets = {p.dataset("a"), p.root_dataset()};
      if (p.dataset("b")) sets.push_back(p.dataset("b"));
      for (dmu::ObjectSet* os : sets)
        for (int i = 0; i < 3; i++)
          churn.emplace_back(os, create(tx, os, Pattern(rng(), 1 + rng() % 400000)));
      for (int i = 0; i < 4 && churn.size() > 6; i++) {
        auto [os, id] = churn[rng() % churn.size()];
        switch (rng() % 4) {
          case 0:
            REQUIRE(os->Write(tx, ObjectId(id), rng() % 300000, Pattern(rng(), 70000)).ok());
            break;
          case 1: REQUIRE(os->Truncate(tx, ObjectId(id), rng() % 100000).ok()); break;
          case 2: REQUIRE(os->Punch(tx, ObjectId(id), rng() % 200000, 150000).ok()); break;
          default: {
            size_t j = rng() % churn.size();
            REQUIRE(churn[j].first->Free(tx, ObjectId(churn[j].second)).ok());
            churn.erase(churn.begin() + long(j));
          }
        }
      }
      tx.Commit();
    }
    REQUIRE(p.WaitSynced().ok());
  }
  if (keep) {
    *keep = std::move(imported).value();
  } else {
    REQUIRE(p.Export().ok());
  }
  return k;
}

// Block cloning: blocks [first, end) of object `src` of dataset `from`
// become blocks dst_first.. of object `dst` of dataset `to` (the same pool;
// the same block size), through ObjectSet::ShareBlocks and PutClones in
// one Tx; dst's length becomes at least `length`. Not synced: the clones
// join the tree in the Tx's txg. The source's blocks must be synced (a
// block an unsynced txg changed is not shared: ShareBlocks gives nullopt).
inline void CloneBlocks(Pool& p, std::string_view from, uint64_t src, uint64_t first, uint64_t end,
                        std::string_view to, uint64_t dst, uint64_t dst_first, uint64_t length) {
  dmu::ObjectSet* sos = p.dataset(from);
  dmu::ObjectSet* dos = p.dataset(to);
  REQUIRE(sos != nullptr);
  REQUIRE(dos != nullptr);
  auto held_src = sos->Hold(ObjectId(src));
  auto held_dst = dos->Hold(ObjectId(dst));
  REQUIRE(held_src.ok());
  REQUIRE(held_dst.ok());
  dmu::Tx tx(p.assigner());
  REQUIRE(tx.Assign().ok());
  std::vector<std::optional<zio::BlockPtr>> shared;
  Status st = dos->ShareBlocks(tx, **held_src, first, end, &shared);
  INFO(st.ToString());
  REQUIRE(st.ok());
  std::vector<zio::BlockPtr> bps;
  for (const std::optional<zio::BlockPtr>& bp : shared) {
    REQUIRE(bp.has_value());
    bps.push_back(*bp);
  }
  st = dos->PutClones(tx, **held_dst, dst_first, bps, length);
  INFO(st.ToString());
  REQUIRE(st.ok());
  tx.Commit();
}

// A new object of `to` whose blocks are clones of all of object `src` of
// `from` (CloneBlocks); not synced. Returns its id.
inline uint64_t CloneObject(Pool& p, std::string_view from, uint64_t src, std::string_view to) {
  dmu::ObjectSet* sos = p.dataset(from);
  dmu::ObjectSet* dos = p.dataset(to);
  REQUIRE(sos != nullptr);
  REQUIRE(dos != nullptr);
  auto info = sos->Stat(ObjectId(src));
  REQUIRE(info.ok());
  uint64_t id = 0;
  {
    dmu::Tx tx(p.assigner());
    REQUIRE(tx.Assign().ok());
    auto created = dos->Create(tx, dmu::ObjectType::kPlain, info->block_size);
    REQUIRE(created.ok());
    id = created->value();
    tx.Commit();
  }
  const uint64_t bs = info->block_size;
  CloneBlocks(p, from, src, 0, (info->length + bs - 1) / bs, to, id, 0, info->length);
  return id;
}

inline std::string FileHash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  util::Checksum128 c = util::Xxh3_128(bytes.data(), bytes.size());
  return std::to_string(c.hi) + ":" + std::to_string(c.lo) + ":" + std::to_string(bytes.size());
}

// Every block the check walks, found through its visitor.
inline std::vector<CheckedBlock> Blocks(const std::vector<std::string>& paths) {
  std::vector<std::unique_ptr<vdev::FileDevice>> files;
  std::vector<vdev::BlockDevice*> devs;
  for (const auto& path : paths) {
    auto f = vdev::FileDevice::Open(path, {true, false});
    REQUIRE(f.ok());
    devs.push_back(f->get());
    files.push_back(std::move(f).value());
  }
  std::vector<CheckedBlock> blocks;
  auto r = CheckDevices(devs, [&](const CheckedBlock& b) { blocks.push_back(b); });
  REQUIRE(r.ok());
  REQUIRE(r->ok());
  return blocks;
}

inline const CheckedBlock& Find(const std::vector<CheckedBlock>& blocks,
                                const std::function<bool(const CheckedBlock&)>& want) {
  const CheckedBlock* found = nullptr;
  for (const auto& b : blocks)
    if (want(b) && (!found || b.bp.birth > found->bp.birth)) found = &b;  // the newest
  REQUIRE(found != nullptr);
  return *found;
}

// Flips one bit of the stored bytes of `bp` in each of its first `copies`
// copies (-1: every copy, so that no copy reads back).
inline void FlipBit(const std::vector<std::string>& paths, const zio::BlockPtr& bp,
                    uint64_t at = 17, int copies = -1) {
  const int n = copies < 0 ? bp.copies() : copies;
  for (int i = 0; i < n; i++) {
    const space::Dva& d = bp.copy(i);
    int fd = open(paths[d.vdev].c_str(), O_RDWR);  // vdev i is paths[i]: created in order
    REQUIRE(fd >= 0);
    char c;
    REQUIRE(pread(fd, &c, 1, off_t(d.offset + at % bp.psize)) == 1);
    c ^= 0x10;
    REQUIRE(pwrite(fd, &c, 1, off_t(d.offset + at % bp.psize)) == 1);
    close(fd);
  }
}

inline CheckReport Check(const std::vector<std::string>& paths, const CheckOptions& options = {}) {
  auto r = CheckPool(paths, options);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

inline std::string Listing(const CheckReport& r) {
  std::string s = r.Summary();
  for (const auto& p : r.problems) s += "problem: " + p.where + ": " + p.what + "\n";
  for (const auto& w : r.warnings) s += "warning: " + w.where + ": " + w.what + "\n";
  return s;
}

inline bool HasProblem(const CheckReport& r, const std::string& where,
                       const std::string& what = "") {
  for (const auto& p : r.problems)
    if (p.where.find(where) != std::string::npos && p.what.find(what) != std::string::npos)
      return true;
  return false;
}

inline std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace poolfs::core::pool::check_test
