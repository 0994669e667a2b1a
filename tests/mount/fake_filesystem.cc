#include "fake_filesystem.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <ctime>

namespace poolfs::testing {
namespace {

Timespec Now() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return {int64_t(t.tv_sec), uint32_t(t.tv_nsec)};
}

Status CheckName(std::string_view name) {
  if (name.size() > kNameMax) return {StatusCode::kNameTooLong, "name too long"};
  if (name.empty() || name.find('/') != std::string_view::npos)
    return Status::InvalidArgument("bad name");
  return Status::Ok();
}

}  // namespace

#define FAKE_INJECT(op) \
  if (auto injected = Injected(op)) return *injected

FakeFilesystem::FakeFilesystem() {
  Node& root = nodes_[kRootIno];
  root.attr.ino = kRootIno;
  root.attr.mode = S_IFDIR | 0777;
  root.attr.nlink = 2;
  root.attr.atime = root.attr.mtime = root.attr.ctime = root.attr.btime = Now();
}

uint64_t FakeFilesystem::Calls(const std::string& op) {
  std::lock_guard l(mu_);
  auto it = calls_.find(op);
  return it == calls_.end() ? 0 : it->second;
}

void FakeFilesystem::FailNext(const std::string& op, Status st) {
  std::lock_guard l(mu_);
  failures_.insert_or_assign(op, std::move(st));
}

std::optional<Status> FakeFilesystem::Injected(const std::string& op) {
  calls_[op]++;
  auto it = failures_.find(op);
  if (it == failures_.end()) return std::nullopt;
  Status st = it->second;
  failures_.erase(it);
  return st;
}

void FakeFilesystem::HoldWrites(bool hold) {
  std::lock_guard l(hold_mu_);
  hold_writes_ = hold;
  hold_cv_.notify_all();
}

void FakeFilesystem::WaitForHeldWrites(uint64_t n) {
  std::unique_lock l(hold_mu_);
  hold_cv_.wait(l, [&] { return held_writes_ >= n; });
}

uint64_t FakeFilesystem::LookupCount(uint64_t ino) {
  std::lock_guard l(mu_);
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? 0 : it->second.lookups;
}

uint64_t FakeFilesystem::fsyncs() {
  std::lock_guard l(mu_);
  return fsyncs_;
}

bool FakeFilesystem::unmounted() {
  std::lock_guard l(mu_);
  return unmounted_;
}

Status FakeFilesystem::Unmount() {
  std::lock_guard l(mu_);
  unmounted_ = true;
  return Status::Ok();
}

Result<FakeFilesystem::Node*> FakeFilesystem::Get(uint64_t ino) {
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return Status(StatusCode::kStale, "inode " + std::to_string(ino));
  return &it->second;
}

Result<FakeFilesystem::Node*> FakeFilesystem::Dir(uint64_t ino) {
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  if (!S_ISDIR(n->attr.mode)) return Status(StatusCode::kNotADirectory, "not a directory");
  return n;
}

Result<Attr> FakeFilesystem::Lookup(const Creds&, uint64_t parent, std::string_view name) {
  std::lock_guard l(mu_);
  FAKE_INJECT("lookup");
  POOLFS_RETURN_IF_ERROR(CheckName(name));
  POOLFS_ASSIGN_OR_RETURN(Node * d, Dir(parent));
  auto it = d->children.find(name);
  if (it == d->children.end()) return Status::NotFound(std::string(name));
  Node& n = nodes_[it->second];
  n.lookups++;
  return n.attr;
}

void FakeFilesystem::Forget(uint64_t ino, uint64_t nlookup) {
  std::lock_guard l(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  it->second.lookups -= std::min(it->second.lookups, nlookup);
}

Result<Attr> FakeFilesystem::GetAttr(uint64_t ino) {
  std::lock_guard l(mu_);
  FAKE_INJECT("getattr");
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  return n->attr;
}

Result<Attr> FakeFilesystem::SetAttr(const Creds&, uint64_t ino, const SetAttrRequest& r) {
  std::lock_guard l(mu_);
  FAKE_INJECT("setattr");
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  Attr& a = n->attr;
  if (r.valid & SetAttrRequest::kMode) a.mode = (a.mode & S_IFMT) | r.mode;
  if (r.valid & SetAttrRequest::kUid) a.uid = r.uid;
  if (r.valid & SetAttrRequest::kGid) a.gid = r.gid;
  if ((r.valid & SetAttrRequest::kClearPrivileges) && S_ISREG(a.mode))
    a.mode &= ~uint32_t(S_ISUID | S_ISGID);
  if (r.valid & SetAttrRequest::kSize) {
    n->data.resize(r.size);
    a.size = r.size;
  }
  if (r.valid & SetAttrRequest::kAtime) a.atime = r.atime;
  if (r.valid & SetAttrRequest::kMtime) a.mtime = r.mtime;
  if (r.valid & SetAttrRequest::kAtimeNow) a.atime = Now();
  if (r.valid & SetAttrRequest::kMtimeNow) a.mtime = Now();
  a.ctime = (r.valid & SetAttrRequest::kCtime) ? r.ctime : Now();
  return a;
}

Result<Attr> FakeFilesystem::MakeNode(const Creds& c, uint64_t parent, std::string_view name,
                                      uint32_t mode) {
  POOLFS_RETURN_IF_ERROR(CheckName(name));
  POOLFS_ASSIGN_OR_RETURN(Node * d, Dir(parent));
  if (d->children.count(name)) return Status::AlreadyExists(std::string(name));
  const uint64_t ino = next_ino_++;
  d->children.emplace(std::string(name), ino);
  d->attr.size = d->children.size() + 2;
  d->attr.mtime = d->attr.ctime = Now();
  Node& n = nodes_[ino];
  n.attr.ino = ino;
  n.attr.generation = 1;
  n.attr.mode = mode;
  n.attr.nlink = S_ISDIR(mode) ? 2 : 1;
  n.attr.uid = c.uid;
  n.attr.gid = c.gid;
  n.attr.blksize = 4096;
  n.attr.atime = n.attr.mtime = n.attr.ctime = n.attr.btime = Now();
  if (S_ISDIR(mode)) {
    n.attr.size = 2;
    d->attr.nlink++;
  }
  n.lookups = 1;
  return n.attr;
}

Result<Attr> FakeFilesystem::Create(const Creds& c, uint64_t parent, std::string_view name,
                                    uint32_t mode) {
  std::lock_guard l(mu_);
  FAKE_INJECT("create");
  return MakeNode(c, parent, name, S_IFREG | (mode & 07777));
}

Result<Attr> FakeFilesystem::Mknod(const Creds& c, uint64_t parent, std::string_view name,
                                   uint32_t mode, uint64_t rdev) {
  std::lock_guard l(mu_);
  FAKE_INJECT("mknod");
  POOLFS_ASSIGN_OR_RETURN(Attr a, MakeNode(c, parent, name, mode));
  nodes_[a.ino].attr.rdev = rdev;
  a.rdev = rdev;
  return a;
}

Result<Attr> FakeFilesystem::Mkdir(const Creds& c, uint64_t parent, std::string_view name,
                                   uint32_t mode) {
  std::lock_guard l(mu_);
  FAKE_INJECT("mkdir");
  return MakeNode(c, parent, name, S_IFDIR | (mode & 07777));
}

Result<Attr> FakeFilesystem::Symlink(const Creds& c, uint64_t parent, std::string_view name,
                                     std::string_view target) {
  std::lock_guard l(mu_);
  FAKE_INJECT("symlink");
  POOLFS_ASSIGN_OR_RETURN(Attr a, MakeNode(c, parent, name, S_IFLNK | 0777));
  nodes_[a.ino].data = std::string(target);
  nodes_[a.ino].attr.size = a.size = target.size();
  return a;
}

Result<std::string> FakeFilesystem::Readlink(uint64_t ino) {
  std::lock_guard l(mu_);
  FAKE_INJECT("readlink");
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  if (!S_ISLNK(n->attr.mode)) return Status::InvalidArgument("not a symlink");
  return n->data;
}

Result<Attr> FakeFilesystem::Link(const Creds&, uint64_t ino, uint64_t new_parent,
                                  std::string_view new_name) {
  std::lock_guard l(mu_);
  FAKE_INJECT("link");
  POOLFS_RETURN_IF_ERROR(CheckName(new_name));
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  if (S_ISDIR(n->attr.mode)) return Status(StatusCode::kNotPermitted, "link to a directory");
  POOLFS_ASSIGN_OR_RETURN(Node * d, Dir(new_parent));
  if (d->children.count(new_name)) return Status::AlreadyExists(std::string(new_name));
  d->children.emplace(std::string(new_name), ino);
  n->attr.nlink++;
  n->lookups++;
  return n->attr;
}

Status FakeFilesystem::Unlink(const Creds&, uint64_t parent, std::string_view name) {
  std::lock_guard l(mu_);
  FAKE_INJECT("unlink");
  POOLFS_ASSIGN_OR_RETURN(Node * d, Dir(parent));
  auto it = d->children.find(name);
  if (it == d->children.end()) return Status::NotFound(std::string(name));
  Node& n = nodes_[it->second];
  if (S_ISDIR(n.attr.mode)) return Status(StatusCode::kIsADirectory, std::string(name));
  n.attr.nlink--;
  d->children.erase(it);
  return Status::Ok();
}

Status FakeFilesystem::Rmdir(const Creds&, uint64_t parent, std::string_view name) {
  std::lock_guard l(mu_);
  FAKE_INJECT("rmdir");
  POOLFS_ASSIGN_OR_RETURN(Node * d, Dir(parent));
  auto it = d->children.find(name);
  if (it == d->children.end()) return Status::NotFound(std::string(name));
  Node& n = nodes_[it->second];
  if (!S_ISDIR(n.attr.mode)) return Status(StatusCode::kNotADirectory, std::string(name));
  if (!n.children.empty()) return Status(StatusCode::kNotEmpty, std::string(name));
  n.attr.nlink = 0;
  d->attr.nlink--;
  d->children.erase(it);
  return Status::Ok();
}

Status FakeFilesystem::Rename(const Creds&, uint64_t parent, std::string_view name,
                              uint64_t new_parent, std::string_view new_name, uint32_t flags) {
  std::lock_guard l(mu_);
  FAKE_INJECT("rename");
  POOLFS_ASSIGN_OR_RETURN(Node * from, Dir(parent));
  POOLFS_ASSIGN_OR_RETURN(Node * to, Dir(new_parent));
  auto it = from->children.find(name);
  if (it == from->children.end()) return Status::NotFound(std::string(name));
  if (flags != 0) return Status::NotSupported("rename flags");
  const uint64_t ino = it->second;
  from->children.erase(it);
  to->children.insert_or_assign(std::string(new_name), ino);
  return Status::Ok();
}

Status FakeFilesystem::Open(const Creds&, uint64_t ino, int flags) {
  std::lock_guard l(mu_);
  FAKE_INJECT("open");
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  if (S_ISDIR(n->attr.mode) && (flags & O_ACCMODE) != O_RDONLY)
    return Status(StatusCode::kIsADirectory, "directory");
  return Status::Ok();
}

Status FakeFilesystem::Access(const Creds&, uint64_t ino, int) {
  std::lock_guard l(mu_);
  FAKE_INJECT("access");
  return Get(ino).status();
}

Result<size_t> FakeFilesystem::Read(uint64_t ino, uint64_t off, std::span<char> dst, uint32_t) {
  std::lock_guard l(mu_);
  FAKE_INJECT("read");
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  if (off >= n->data.size()) return size_t{0};
  return n->data.copy(dst.data(), dst.size(), off);
}

Result<size_t> FakeFilesystem::Write(const Creds&, uint64_t ino, uint64_t off,
                                     std::string_view data) {
  {
    std::unique_lock h(hold_mu_);
    if (hold_writes_) {
      held_writes_++;
      hold_cv_.notify_all();
      hold_cv_.wait(h, [&] { return !hold_writes_; });
      held_writes_--;
    }
  }
  std::lock_guard l(mu_);
  FAKE_INJECT("write");
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  if (n->data.size() < off + data.size()) n->data.resize(off + data.size());
  n->data.replace(off, data.size(), data);
  n->attr.size = n->data.size();
  n->attr.mtime = n->attr.ctime = Now();
  return data.size();
}

Status FakeFilesystem::Fallocate(const Creds&, uint64_t, uint32_t, uint64_t, uint64_t) {
  return Status::NotSupported("fallocate in the fake");
}

Result<uint64_t> FakeFilesystem::CopyFileRange(const Creds&, uint64_t ino_in, uint64_t off_in,
                                               uint64_t ino_out, uint64_t off_out, uint64_t len,
                                               uint32_t flags) {
  std::lock_guard l(mu_);
  FAKE_INJECT("copy_file_range");
  if (flags != 0) return Status::InvalidArgument("copy_file_range flags");
  POOLFS_ASSIGN_OR_RETURN(Node * in, Get(ino_in));
  POOLFS_ASSIGN_OR_RETURN(Node * out, Get(ino_out));
  if (off_in >= in->data.size()) return uint64_t{0};
  const std::string bytes = in->data.substr(off_in, len);  // a copy: in may be out
  if (out->data.size() < off_out + bytes.size()) out->data.resize(off_out + bytes.size());
  out->data.replace(off_out, bytes.size(), bytes);
  out->attr.size = out->data.size();
  out->attr.mtime = out->attr.ctime = Now();
  return uint64_t(bytes.size());
}

Status FakeFilesystem::Fsync(uint64_t ino, bool) {
  std::lock_guard l(mu_);
  FAKE_INJECT("fsync");
  fsyncs_++;
  return Get(ino).status();
}

Status FakeFilesystem::ReadDir(const Creds&, uint64_t ino, uint64_t cookie, bool plus,
                               const std::function<bool(const DirEntry&)>& emit) {
  std::lock_guard l(mu_);
  FAKE_INJECT("readdir");
  POOLFS_ASSIGN_OR_RETURN(Node * d, Dir(ino));
  // Cookies: 1 after ".", 2 after "..", then 3 + the index in name order
  // (enough for a test that does not change the directory meanwhile).
  std::vector<std::pair<std::string, uint64_t>> all = {{".", ino}, {"..", kRootIno}};
  for (const auto& [name, child] : d->children) all.emplace_back(name, child);
  for (uint64_t i = cookie; i < all.size(); i++) {
    Node& n = nodes_[all[i].second];
    DirEntry e{all[i].first, n.attr.ino, n.attr.mode & S_IFMT, i + 1, {}};
    if (plus) e.attr = n.attr;
    if (!emit(e)) break;
    if (plus && i >= 2) n.lookups++;
  }
  return Status::Ok();
}

Result<std::string> FakeFilesystem::GetXattr(const Creds&, uint64_t ino, std::string_view name) {
  std::lock_guard l(mu_);
  FAKE_INJECT("getxattr");
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  auto it = n->xattrs.find(name);
  if (it == n->xattrs.end()) return Status(StatusCode::kNoData, std::string(name));
  return it->second;
}

Status FakeFilesystem::SetXattr(const Creds&, uint64_t ino, std::string_view name,
                                std::string_view value, uint32_t flags) {
  std::lock_guard l(mu_);
  FAKE_INJECT("setxattr");
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  const bool exists = n->xattrs.count(name) != 0;
  if ((flags & kXattrCreate) && exists) return Status::AlreadyExists(std::string(name));
  if ((flags & kXattrReplace) && !exists) return Status(StatusCode::kNoData, std::string(name));
  n->xattrs.insert_or_assign(std::string(name), std::string(value));
  return Status::Ok();
}

Result<std::vector<std::string>> FakeFilesystem::ListXattr(const Creds&, uint64_t ino) {
  std::lock_guard l(mu_);
  FAKE_INJECT("listxattr");
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  std::vector<std::string> names;
  for (const auto& [k, v] : n->xattrs) names.push_back(k);
  return names;
}

Status FakeFilesystem::RemoveXattr(const Creds&, uint64_t ino, std::string_view name) {
  std::lock_guard l(mu_);
  FAKE_INJECT("removexattr");
  POOLFS_ASSIGN_OR_RETURN(Node * n, Get(ino));
  if (n->xattrs.erase(std::string(name)) == 0)
    return Status(StatusCode::kNoData, std::string(name));
  return Status::Ok();
}

Result<FsStats> FakeFilesystem::StatFs(uint64_t /*ino*/) {
  std::lock_guard l(mu_);
  FAKE_INJECT("statfs");
  FsStats s;
  s.block_size = 4096;
  s.blocks = 1000;
  s.blocks_free = s.blocks_available = 900;
  s.files = 1000000;
  s.files_free = s.files - nodes_.size();
  return s;
}

FsStatus FakeFilesystem::GetStatus() {
  std::lock_guard l(mu_);
  FsStatus s;
  s.pool = "fake";
  s.state = "online";
  s.objects = nodes_.size();
  return s;
}

}  // namespace poolfs::testing
