// Helpers for the daemon tests: a temporary folder, scoped environment
// variables, and a fake Filesystem that records SetLive (the real one is
// core/posix; the daemon services only call GetStatus, SetLive and StatFs).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "poolfs/fs.h"

namespace poolfs::daemon::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base != nullptr ? base : "/tmp") + "/poolfs-daemon-test.XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Sets (or unsets, with nullopt) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value)
      setenv(name_.c_str(), value->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A Filesystem that serves only what the daemon services use; every file
// operation fails with NotSupported. Thread-safe.
class FakeFilesystem : public poolfs::Filesystem {
 public:
  FakeFilesystem() {
    status_.pool = "tank";
    status_.state = "online";
    status_.imported_txg = 7;
    status_.last_synced_txg = 42;
    status_.open_txg = 43;
    status_.syncs = 35;
    status_.space_total = 20ull << 30;
    status_.space_allocated = 3ull << 29;
    status_.space_free = status_.space_total - status_.space_allocated;
    status_.datasets = {"tank"};
    status_.objects = 1234;
  }

  std::vector<poolfs::CoreTunables> live_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_calls_;
  }
  // Makes SetLive refuse (and record nothing) with `st` from now on; OK
  // accepts again.
  void RefuseLive(Status st) {
    std::lock_guard<std::mutex> lock(mu_);
    refuse_ = std::move(st);
  }

  Status Unmount() override { return Status::Ok(); }
  poolfs::DatasetAdmin* datasets() override { return nullptr; }
  Result<Attr> Lookup(const Creds&, uint64_t, std::string_view) override { return No(); }
  void Forget(uint64_t, uint64_t) override {}
  Result<Attr> GetAttr(uint64_t) override { return No(); }
  Result<Attr> SetAttr(const Creds&, uint64_t, const SetAttrRequest&) override { return No(); }
  Result<Attr> Create(const Creds&, uint64_t, std::string_view, uint32_t) override { return No(); }
  Result<Attr> Mknod(const Creds&, uint64_t, std::string_view, uint32_t, uint64_t) override {
    return No();
  }
  Result<Attr> Mkdir(const Creds&, uint64_t, std::string_view, uint32_t) override { return No(); }
  Result<Attr> Symlink(const Creds&, uint64_t, std::string_view, std::string_view) override {
    return No();
  }
  Result<std::string> Readlink(uint64_t) override { return No(); }
  Result<Attr> Link(const Creds&, uint64_t, uint64_t, std::string_view) override { return No(); }
  Status Unlink(const Creds&, uint64_t, std::string_view) override { return No(); }
  Status Rmdir(const Creds&, uint64_t, std::string_view) override { return No(); }
  Status Rename(const Creds&, uint64_t, std::string_view, uint64_t, std::string_view,
                uint32_t) override {
    return No();
  }
  Status Open(const Creds&, uint64_t, int) override { return No(); }
  Status Access(const Creds&, uint64_t, int) override { return No(); }
  Result<size_t> Read(uint64_t, uint64_t, std::span<char>, uint32_t) override { return No(); }
  Result<size_t> Write(const Creds&, uint64_t, uint64_t, std::string_view) override { return No(); }
  Status Fallocate(const Creds&, uint64_t, uint32_t, uint64_t, uint64_t) override { return No(); }
  Status Fsync(uint64_t, bool) override { return No(); }
  Status ReadDir(const Creds&, uint64_t, uint64_t, bool,
                 const std::function<bool(const DirEntry&)>&) override {
    return No();
  }
  Result<std::string> GetXattr(const Creds&, uint64_t, std::string_view) override { return No(); }
  Status SetXattr(const Creds&, uint64_t, std::string_view, std::string_view, uint32_t) override {
    return No();
  }
  Result<std::vector<std::string>> ListXattr(const Creds&, uint64_t) override { return No(); }
  Status RemoveXattr(const Creds&, uint64_t, std::string_view) override { return No(); }
  Result<FsStats> StatFs(uint64_t) override { return FsStats{}; }
  FsStatus GetStatus() override {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  Status SetLive(const CoreTunables& t) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!refuse_.ok()) return refuse_;
    live_calls_.push_back(t);
    return Status::Ok();
  }

 private:
  static Status No() { return Status::NotSupported("fake filesystem"); }

  mutable std::mutex mu_;
  FsStatus status_;
  std::vector<poolfs::CoreTunables> live_calls_;
  Status refuse_;
};

}  // namespace poolfs::daemon::testing
