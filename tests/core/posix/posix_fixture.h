// A filesystem in a temporary pool file for the posix tests: create, mount,
// unmount and remount it, with root and non-root credentials.
#pragma once

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "poolfs/fs.h"
#include "poolfs/pool_admin.h"
#include "posix/dataset_tree.h"
#include "posix/posix_fs.h"

// After the poolfs headers: Catch2 (a system header) then redefines CHECK quietly.
#include <catch2/catch.hpp>

namespace poolfs::core::posix::testing {

inline MountOptions FastOptions() {
  MountOptions o;
  o.tunables.txg.timeout_ms = 200;
  o.tunables.space.allocators = 2;
  return o;
}

inline Creds RootCreds() { return Creds{0, 0, {}}; }
inline Creds UserCreds(uint32_t uid = 1000, uint32_t gid = 1000,
                       std::vector<uint32_t> groups = {}) {
  Creds c{uid, gid, {}};
  if (!groups.empty()) c.supplementary_groups = [groups] { return groups; };
  return c;
}

// What a test's threads ran into (Catch2 asserts only from the main
// thread): how many errors, and the first, named by what failed.
class ThreadErrors {
 public:
  void Note(const Status& st, const char* what) {
    count_++;
    std::lock_guard l(mu_);
    if (first_.empty()) first_ = std::string(what) + ": " + st.ToString();
  }
  uint64_t count() const { return count_.load(); }
  std::string first() {
    std::lock_guard l(mu_);
    return first_;
  }

 private:
  std::atomic<uint64_t> count_{0};
  std::mutex mu_;
  std::string first_;
};

struct FsFixture {
  explicit FsFixture(uint64_t size = uint64_t{256} << 20, MountOptions o = FastOptions())
      : options(o) {
    char tmpl[] = "/tmp/posix-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    path = dir + "/pool";
    Status st = CreatePool({path}, size, CreatePoolOptions{});
    INFO(st.ToString());
    REQUIRE(st.ok());
    Mount();
  }
  ~FsFixture() {
    fs.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  void Mount() {
    auto r = Filesystem::Mount({path}, options);
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    fs = std::move(*r);
  }
  void Unmount() {
    Status st = fs->Unmount();
    INFO(st.ToString());
    REQUIRE(st.ok());
    fs.reset();
  }
  void Remount() {
    Unmount();
    Mount();
  }
  // The root dataset's filesystem inside the mount.
  PosixFs* posix() {
    if (auto* tree = dynamic_cast<DatasetTreeFs*>(fs.get())) return tree->dataset_fs(0);
    return dynamic_cast<PosixFs*>(fs.get());
  }

  // Helpers that REQUIRE success.
  Attr MustCreate(uint64_t parent, const std::string& name, uint32_t mode = 0644,
                  const Creds& c = RootCreds()) {
    auto r = fs->Create(c, parent, name, mode);
    INFO(name << ": " << r.status().ToString());
    REQUIRE(r.ok());
    return *r;
  }
  // The inode `name` in `parent` names.
  uint64_t MustLookup(uint64_t parent, const std::string& name, const Creds& c = RootCreds()) {
    auto r = fs->Lookup(c, parent, name);
    INFO(name << ": " << r.status().ToString());
    REQUIRE(r.ok());
    return r->ino;
  }
  Attr MustMkdir(uint64_t parent, const std::string& name, uint32_t mode = 0755,
                 const Creds& c = RootCreds()) {
    auto r = fs->Mkdir(c, parent, name, mode);
    INFO(name << ": " << r.status().ToString());
    REQUIRE(r.ok());
    return *r;
  }
  void MustWrite(uint64_t ino, uint64_t off, const std::string& data,
                 const Creds& c = RootCreds()) {
    auto r = fs->Write(c, ino, off, data);
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    REQUIRE(*r == data.size());
  }
  std::string MustRead(uint64_t ino, uint64_t off, size_t len) {
    std::string out;
    Status st = fs->Read(ino, off, len, &out);
    INFO(st.ToString());
    REQUIRE(st.ok());
    return out;
  }
  void Chmod(uint64_t ino, uint32_t mode) {
    SetAttrRequest req;
    req.valid = SetAttrRequest::kMode;
    req.mode = mode;
    auto r = fs->SetAttr(RootCreds(), ino, req);
    INFO(r.status().ToString());
    REQUIRE(r.ok());
  }
  Attr MustGetAttr(uint64_t ino) {
    auto r = fs->GetAttr(ino);
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    return *r;
  }
  // Every name in a directory (without "." and ".."), via ReadDir from 0.
  std::vector<std::string> List(uint64_t ino) {
    std::vector<std::string> names;
    Status st = fs->ReadDir(RootCreds(), ino, 0, false, [&](const DirEntry& e) {
      if (e.name != "." && e.name != "..") names.push_back(e.name);
      return true;
    });
    REQUIRE(st.ok());
    std::sort(names.begin(), names.end());
    return names;
  }

  MountOptions options;
  std::string dir;
  std::string path;
  std::unique_ptr<Filesystem> fs;
};

// `n` bytes that do not compress (xorshift from `seed`): stored as they
// are, so that space figures mean what they say and a test can find them
// in the pool file.
inline std::string Incompressible(size_t n, uint64_t seed) {
  std::string out(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = char(x >> 24);
  }
  return out;
}

inline StatusCode Code(const Status& s) { return s.code(); }
template <typename T>
StatusCode Code(const Result<T>& r) {
  return r.status().code();
}

}  // namespace poolfs::core::posix::testing
