// libFuzzer target for zap objects (core/zap): a zap object whose blocks come
// from the input is opened, looked up in and listed (and changed), and
// nothing crashes, every failure is an expected code, and the answers keep
// the zap's promises.
//
// Input: [mode u8][rest].
//   mode & 3        block size: 4, 8, 16, 4 KiB
//   mode & 4        the object is a directory (names refuse '/' and NUL)
//   mode & 8        raw image (set) or built by operations (clear)
//   mode & 16       unused (it resealed blocks while zap blocks carried a
//                   checksum of their own)
//   mode & 32       after reading, make changes (add, remove, update)
//
// Raw image: `rest`, cut to 64 blocks, is the object's bytes from offset 0.
//
// Built: `rest` is operations [op u8][len u8][len & 63 name bytes], applied
// through the API with a hash the input controls (a name's first 8 bytes,
// big-endian, are its hash: collisions and deep tables are cheap). op & 3:
// 0 add, 1 remove, 2 update, 3 lookup. An operation with len & 63 == 0 ends
// the list; what follows are patches [block u8][offset u16 LE][xor u8]
// applied to the built object's blocks. With no patches, every answer must
// agree with a std::map model; with patches, only the general checks hold.
//
// General checks: calls return OK or Corruption (NotFound, AlreadyExists,
// NoSpace, InvalidArgument where they mean what they say); Iterate's cookies
// strictly increase, stay within [1, 2^62], and come with 1..255-byte names.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dmu/objset.h"
#include "space/allocator.h"
#include "util/endian.h"
#include "vdev/memory_device.h"
#include "zap/zap.h"
#include "zio/zio.h"

namespace {

using namespace poolfs::core;
using poolfs::ObjectId;
using poolfs::Result;
using poolfs::Status;
using poolfs::StatusCode;
using poolfs::Txg;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "zap_fuzz: %s\n", what.c_str());
  std::abort();
}

class OneTxg : public dmu::TxAssigner {
 public:
  Result<Txg> Hold(uint64_t) override { return Txg(1); }
  void Release(Txg, uint64_t) override {}
  // Nothing ever syncs here: an abandoned Tx changes nothing.
  Status Abandon(Txg, const Status& cause) override { return cause; }
};

// A pool in memory, built once; inputs never sync, so the device stays empty.
struct Pool {
  vdev::MemoryDevice dev{16 << 20, "fuzz"};
  space::SpaceManager space{{{0, 4 << 20, 8 << 20, 12, 0}}, space::SpaceOptions()};
  zio::Zio zio{{{&dev, 12}}, &space};
  OneTxg txgs;
};

Pool& ThePool() {
  static Pool* p = new Pool();
  return *p;
}

uint64_t InputHash(uint64_t, std::string_view name) {
  uint64_t h = 0;
  for (size_t i = 0; i < 8; i++) h = (h << 8) | (i < name.size() ? uint8_t(name[i]) : 0);
  return h;
}

void Expect(const Status& s, std::initializer_list<StatusCode> allowed, const char* what) {
  if (s.ok() || s.code() == StatusCode::kCorruption) return;
  for (StatusCode c : allowed)
    if (s.code() == c) return;
  Fail(std::string(what) + ": " + s.ToString());
}

// Lists the whole zap (or up to where it fails); checks the cookies.
std::map<std::string, zap::Value> ListAll(const zap::Zap& z, bool* failed) {
  std::map<std::string, zap::Value> out;
  uint64_t cookie = 0;
  *failed = false;
  for (size_t chunk = 1;; chunk = chunk % 13 + 1) {
    auto r = z.Iterate(cookie, chunk);
    if (!r.ok()) {
      Expect(r.status(), {}, "Iterate");
      *failed = true;
      return out;
    }
    for (const zap::Entry& e : *r) {
      if (e.cookie <= cookie || e.cookie > zap::kKeyLimit) Fail("cookies out of order");
      if (e.name.empty() || e.name.size() > zap::kMaxNameLen) Fail("bad name length");
      if (!out.emplace(e.name, e.value).second) Fail("a name listed twice");
      cookie = e.cookie;
    }
    if (r->size() < chunk) return out;
  }
}

// Reads everything; with a model, every answer must agree with it.
void Exercise(zap::Zap& z, const std::map<std::string, zap::Value>* model,
              const std::vector<std::string>& probes) {
  const uint64_t count = z.Count();
  bool failed;
  auto listed = ListAll(z, &failed);
  if (model) {
    if (failed) Fail("a zap built through the API fails to list");
    if (listed != *model) Fail("listing differs from the model");
    if (count != model->size()) Fail("count differs from the model");
  }
  size_t n = 0;
  for (const auto& [name, v] : listed) {
    if (n++ == 300) break;
    auto got = z.Lookup(name);
    if (model && (!got.ok() || !(*got == v))) Fail("a listed name does not look up");
    if (!got.ok())
      Expect(got.status(), {StatusCode::kNotFound, StatusCode::kInvalidArgument}, "Lookup");
  }
  for (const std::string& p : probes) {
    auto got = z.Lookup(p);
    if (model) {
      auto it = model->find(p);
      const bool absent_ok =
          got.status().IsNotFound() || got.status().code() == StatusCode::kInvalidArgument;
      if (it == model->end() ? !absent_ok : !(got.ok() && *got == it->second))
        Fail("a probe disagrees with the model");
    }
    if (!got.ok())
      Expect(got.status(),
             {StatusCode::kNotFound, StatusCode::kInvalidArgument, StatusCode::kNameTooLong},
             "Lookup");
  }
}

void Change(zap::Zap& z) {
  Pool& pool = ThePool();
  dmu::Tx tx(&pool.txgs);
  if (!tx.Assign().ok()) Fail("assign");
  bool failed;
  auto listed = ListAll(z, &failed);
  const std::initializer_list<StatusCode> ok_codes = {
      StatusCode::kNotFound, StatusCode::kAlreadyExists, StatusCode::kNoSpace,
      StatusCode::kInvalidArgument};
  Expect(z.Add(tx, "fuzz-added", {1, 2}), ok_codes, "Add");
  Expect(z.Add(tx, std::string(200, 'L'), {3, 4}), ok_codes, "Add");
  int k = 0;
  for (const auto& [name, v] : listed) {
    if (k++ == 20) break;
    Expect(k % 2 ? z.Remove(tx, name) : z.Update(tx, name, {v.attrs, v.object}), ok_codes,
           "Remove/Update");
  }
  tx.Commit();
  ListAll(z, &failed);
}

void RunRaw(uint8_t mode, uint32_t bs, dmu::ObjectType type, const uint8_t* data, size_t size) {
  Pool& pool = ThePool();
  dmu::ObjectSet os(&pool.zio, dmu::ObjsetType::kDataset, "fuzz");
  std::string bytes(reinterpret_cast<const char*>(data), std::min<size_t>(size, 64 * size_t{bs}));
  ObjectId id;
  {
    dmu::Tx tx(&pool.txgs);
    if (!tx.Assign().ok()) Fail("assign");
    auto r = os.Create(tx, type, bs);
    if (!r.ok()) Fail("create: " + r.status().ToString());
    id = *r;
    if (!bytes.empty() && !os.Write(tx, id, 0, bytes).ok()) Fail("write");
  }
  auto z = zap::Zap::Open(&os, id);
  if (!z.ok()) {
    Expect(z.status(), {}, "Open");
    return;
  }
  std::vector<std::string> probes = {"a", std::string(1, char(bytes.empty() ? 'x' : bytes[0]))};
  if (bytes.size() > 100) probes.push_back(bytes.substr(90, 1 + uint8_t(bytes[89]) % 40));
  Exercise(**z, nullptr, probes);
  if (mode & 32) Change(**z);
}

void RunBuilt(uint8_t mode, uint32_t bs, dmu::ObjectType type, const uint8_t* data, size_t size) {
  Pool& pool = ThePool();
  dmu::ObjectSet os(&pool.zio, dmu::ObjsetType::kDataset, "fuzz");
  zap::ZapOptions o;
  o.block_size = bs;
  o.salt = 1;
  o.hash = &InputHash;
  std::map<std::string, zap::Value> model;
  std::vector<std::string> probes;
  size_t i = 0;
  ObjectId id;
  {
    dmu::Tx tx(&pool.txgs);
    if (!tx.Assign().ok()) Fail("assign");
    auto created = zap::Zap::Create(tx, &os, type, {}, o);
    if (!created.ok()) Fail("create: " + created.status().ToString());
    zap::Zap& z = **created;
    id = z.id();
    uint64_t serial = 0;
    while (i + 2 <= size) {
      const uint8_t op = data[i], len = data[i + 1] & 63;
      i += 2;
      if (len == 0) break;
      std::string name(reinterpret_cast<const char*>(data + i), std::min<size_t>(len, size - i));
      i += name.size();
      if (name.empty()) break;
      probes.push_back(name);
      const zap::Value v{++serial, op};
      const bool bad_name = type == dmu::ObjectType::kDirectory && zap::BadDirectoryName(name);
      auto it = model.find(name);
      Status s;
      switch (op & 3) {
        case 0:
          s = z.Add(tx, name, v);
          if (s.ok()) {
            if (it != model.end() || bad_name) Fail("Add accepted a name it should refuse");
            model[name] = v;
          } else if (s.code() == StatusCode::kAlreadyExists) {
            if (it == model.end()) Fail("AlreadyExists for a new name");
          } else if (!(s.IsNoSpace() || (bad_name && s.code() == StatusCode::kInvalidArgument))) {
            Fail("Add: " + s.ToString());
          }
          break;
        case 1:
          s = z.Remove(tx, name);
          if (s.ok() != (it != model.end())) Fail("Remove: " + s.ToString());
          if (s.ok()) model.erase(it);
          break;
        case 2:
          s = z.Update(tx, name, v);
          if (s.ok() != (it != model.end())) Fail("Update: " + s.ToString());
          if (s.ok()) it->second = v;
          break;
        default: {
          auto got = z.Lookup(name);
          if (got.ok() != (it != model.end()) || (got.ok() && !(*got == it->second)))
            Fail("Lookup disagrees with the model");
        }
      }
    }
    Exercise(z, &model, probes);
  }
  const bool patched = i + 4 <= size;
  const uint64_t blocks = os.Stat(id)->length / bs;
  if (patched) {
    dmu::Tx tx(&pool.txgs);
    if (!tx.Assign().ok()) Fail("assign");
    for (; i + 4 <= size; i += 4) {
      const uint64_t b = data[i] % blocks;
      const size_t off = poolfs::util::GetLE16(data + i + 1) % bs;
      auto block = os.Read(id, b * bs, bs);
      if (!block.ok() || block->size() != bs) Fail("read back");
      (*block)[off] ^= char(data[i + 3] ? data[i + 3] : 1);
      if (!os.Write(tx, id, b * bs, *block).ok()) Fail("write back");
    }
  }
  auto z = zap::Zap::Open(&os, id, o);
  if (!z.ok()) {
    if (!patched) Fail("a zap built through the API fails to open: " + z.status().ToString());
    Expect(z.status(), {}, "Open");
    return;
  }
  Exercise(**z, patched ? nullptr : &model, probes);
  if (mode & 32) Change(**z);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  static const uint32_t kSizes[4] = {4096, 8192, 16384, 4096};
  const uint32_t bs = kSizes[mode & 3];
  const auto type = mode & 4 ? dmu::ObjectType::kDirectory : dmu::ObjectType::kZap;
  if (mode & 8)
    RunRaw(mode, bs, type, data + 1, size - 1);
  else
    RunBuilt(mode, bs, type, data + 1, size - 1);
  return 0;
}
