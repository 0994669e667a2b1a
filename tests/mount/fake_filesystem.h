// FakeFilesystem: an in-memory poolfs::Filesystem for testing and measuring
// the FUSE adapter without the core (tests only, never in the product).
//
// It keeps every inode in one map under one mutex: names, data, symlink
// targets, xattrs and lookup counts, with no permission checks. A test can
// make the next calls of one kind fail with a chosen Status (FailNext) to
// see how an error reaches the caller through the kernel, and hold writes
// back (HoldWrites) to see what the kernel does while one is in flight.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "poolfs/fs.h"

namespace poolfs::testing {

class FakeFilesystem : public Filesystem {
 public:
  FakeFilesystem();

  // The next call of operation `op` ("lookup", "getattr", "getxattr",
  // "create", "unlink", "read", "write", ...) returns `st` instead.
  void FailNext(const std::string& op, Status st);
  // Calls of operation `op` so far (names as for FailNext).
  uint64_t Calls(const std::string& op);
  // While held, Write waits before it changes anything (releasing lets
  // every waiting one go on).
  void HoldWrites(bool hold);
  // Returns once `n` writes wait at the hold.
  void WaitForHeldWrites(uint64_t n);
  // Lookup references the kernel holds on `ino` (0 once all forgotten).
  uint64_t LookupCount(uint64_t ino);
  uint64_t fsyncs();
  bool unmounted();

  Status Unmount() override;
  DatasetAdmin* datasets() override { return nullptr; }
  Result<Attr> Lookup(const Creds& c, uint64_t parent, std::string_view name) override;
  void Forget(uint64_t ino, uint64_t nlookup) override;
  Result<Attr> GetAttr(uint64_t ino) override;
  Result<Attr> SetAttr(const Creds& c, uint64_t ino, const SetAttrRequest& req) override;
  Result<Attr> Create(const Creds& c, uint64_t parent, std::string_view name,
                      uint32_t mode) override;
  Result<Attr> Mknod(const Creds& c, uint64_t parent, std::string_view name, uint32_t mode,
                     uint64_t rdev) override;
  Result<Attr> Mkdir(const Creds& c, uint64_t parent, std::string_view name,
                     uint32_t mode) override;
  Result<Attr> Symlink(const Creds& c, uint64_t parent, std::string_view name,
                       std::string_view target) override;
  Result<std::string> Readlink(uint64_t ino) override;
  Result<Attr> Link(const Creds& c, uint64_t ino, uint64_t new_parent,
                    std::string_view new_name) override;
  Status Unlink(const Creds& c, uint64_t parent, std::string_view name) override;
  Status Rmdir(const Creds& c, uint64_t parent, std::string_view name) override;
  Status Rename(const Creds& c, uint64_t parent, std::string_view name, uint64_t new_parent,
                std::string_view new_name, uint32_t flags) override;
  Status Open(const Creds& c, uint64_t ino, int flags) override;
  Status Access(const Creds& c, uint64_t ino, int mask) override;
  using Filesystem::Read;
  Result<size_t> Read(uint64_t ino, uint64_t off, std::span<char> dst, uint32_t flags = 0) override;
  Result<size_t> Write(const Creds& c, uint64_t ino, uint64_t off, std::string_view data) override;
  Status Fallocate(const Creds& c, uint64_t ino, uint32_t flags, uint64_t off,
                   uint64_t len) override;
  // Copies the bytes ("copy_file_range" for FailNext and Calls).
  Result<uint64_t> CopyFileRange(const Creds& c, uint64_t ino_in, uint64_t off_in, uint64_t ino_out,
                                 uint64_t off_out, uint64_t len, uint32_t flags) override;
  Status Fsync(uint64_t ino, bool datasync) override;
  Status ReadDir(const Creds& c, uint64_t ino, uint64_t cookie, bool plus,
                 const std::function<bool(const DirEntry&)>& emit) override;
  Result<std::string> GetXattr(const Creds& c, uint64_t ino, std::string_view name) override;
  Status SetXattr(const Creds& c, uint64_t ino, std::string_view name, std::string_view value,
                  uint32_t flags) override;
  Result<std::vector<std::string>> ListXattr(const Creds& c, uint64_t ino) override;
  Status RemoveXattr(const Creds& c, uint64_t ino, std::string_view name) override;
  Result<FsStats> StatFs(uint64_t ino) override;
  FsStatus GetStatus() override;
  Status SetLive(const CoreTunables&) override { return Status::Ok(); }

 private:
  struct Node {
    Attr attr;
    std::map<std::string, uint64_t, std::less<>> children;  // directories
    std::string data;                                       // files; symlink target
    std::map<std::string, std::string, std::less<>> xattrs;
    uint64_t lookups = 0;
  };

  // Returns the injected failure for `op`, once.
  std::optional<Status> Injected(const std::string& op);
  Result<Node*> Dir(uint64_t ino);
  Result<Node*> Get(uint64_t ino);
  Result<Attr> MakeNode(const Creds& c, uint64_t parent, std::string_view name, uint32_t mode);

  std::mutex mu_;
  std::map<uint64_t, Node> nodes_;
  std::mutex hold_mu_;  // the write hold; never taken with mu_
  std::condition_variable hold_cv_;
  bool hold_writes_ = false;
  uint64_t held_writes_ = 0;
  std::map<std::string, Status> failures_;
  std::map<std::string, uint64_t> calls_;
  uint64_t next_ino_ = 2;
  uint64_t fsyncs_ = 0;
  bool unmounted_ = false;
};

}  // namespace poolfs::testing
