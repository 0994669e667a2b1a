#include "stress/fsync_workload.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "stress/stress_util.h"
#include "util/checksum.h"
#include "util/endian.h"

namespace poolfs::stress::fsync {

namespace {

constexpr uint32_t kMagic = 0x434e5346;  // "FSNC"
constexpr size_t kRecordSize = 64;
// Sizes: files stay under a few hundred KiB (the pool is 256 MiB and a
// crash check reads every file of every thread).
constexpr uint64_t kMaxOffset = 384 << 10;
constexpr uint64_t kMaxWrite = 64 << 10;
constexpr size_t kMaxFiles = 10;
constexpr size_t kMaxDirs = 3;

const Creds kRoot{0, 0, {}};

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// The file and directory paths of `tree`.
void Split(const Tree& tree, std::vector<std::string>* files, std::vector<std::string>* dirs) {
  for (const auto& [path, node] : tree.nodes) (node.dir ? dirs : files)->push_back(path);
}

// PathString's inverse, for the model's keys (always well formed).
uint64_t ParsePath(const std::string& s) {
  auto name = [](const std::string& c) {
    return uint32_t(std::stoul(c.substr(1))) | (c[0] == 'd' ? kDirBit : 0);
  };
  const size_t slash = s.find('/');
  if (slash == std::string::npos) return MakePath(0, name(s));
  return MakePath(name(s.substr(0, slash)), name(s.substr(slash + 1)));
}

// Parses a directory entry's name: false for one the workload never makes.
bool ParseName(const std::string& s, bool dir, uint32_t* name) {
  if (s.size() < 2 || s.size() > 11 || s[0] != (dir ? 'd' : 'f')) return false;
  if (s[1] == '0') return false;
  uint64_t n = 0;
  for (size_t i = 1; i < s.size(); i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    n = n * 10 + uint64_t(s[i] - '0');
  }
  if (n == 0 || n >= kDirBit) return false;
  *name = uint32_t(n) | (dir ? kDirBit : 0);
  return true;
}

// The inode of the parent directory of `path` (a lookup reference the
// caller forgets when it is not `top`).
Result<uint64_t> Parent(Filesystem* fs, uint64_t top, uint64_t path) {
  if (ParentOf(path) == 0) return top;
  POOLFS_ASSIGN_OR_RETURN(Attr a, fs->Lookup(kRoot, top, NameString(ParentOf(path))));
  return a.ino;
}

// Runs `fn(parent inode, name)` for `path`, then drops the parent's lookup.
template <typename F>
Status AtPath(Filesystem* fs, uint64_t top, uint64_t path, F&& fn) {
  POOLFS_ASSIGN_OR_RETURN(uint64_t parent, Parent(fs, top, path));
  Status st = fn(parent, NameString(NameOf(path)));
  if (parent != top) fs->Forget(parent, 1);
  return st;
}

// Runs `fn(inode)` on the file or directory at `path`.
template <typename F>
Status OnInode(Filesystem* fs, uint64_t top, uint64_t path, F&& fn) {
  return AtPath(fs, top, path, [&](uint64_t parent, const std::string& name) -> Status {
    POOLFS_ASSIGN_OR_RETURN(Attr a, fs->Lookup(kRoot, parent, name));
    Status st = fn(a.ino);
    fs->Forget(a.ino, 1);
    return st;
  });
}

Status Listing(Filesystem* fs, uint64_t dir, std::vector<DirEntry>* out) {
  return fs->ReadDir(kRoot, dir, 0, false, [&](const DirEntry& e) {
    if (e.name != "." && e.name != "..") out->push_back(e);
    return true;
  });
}

// The file of `t` whose identity is `id` (nullptr: none).
const Node* FileById(const Tree& t, uint64_t id) {
  for (const auto& [path, node] : t.nodes)
    if (!node.dir && node.id == id) return &node;
  return nullptr;
}

std::string Printable(const std::string& s, size_t off, size_t n) {
  std::string out;
  for (size_t i = off; i < s.size() && i < off + n; i++)
    out += (s[i] >= 32 && s[i] < 127) ? s[i] : '.';
  return "\"" + out + "\"";
}

std::string Names(const Tree& t) {
  std::string s;
  for (const auto& [path, node] : t.nodes) s += (s.empty() ? "" : " ") + path;
  return "{" + s + "}";
}

// Which write of `log` put the 16 bytes at `off` of `data` there, for a
// failure's report.
std::string WrittenBy(const ThreadLog& log, const std::string& data, uint64_t off) {
  const uint64_t n = std::min<uint64_t>(16, data.size() - off);
  for (const FsOp& op : log.ops)
    if (op.kind == FsOpKind::kWrite && op.a <= off && off + n <= op.a + op.b &&
        data.compare(off, n, Content(op.stamp, off, n)) == 0)
      return "    the bytes found are those of " + DescribeOp(op) + "\n";
  return "    the bytes found are those of no write of this cycle\n";
}

// The changes of `log` that name a path in one of `a` and `b` but not the
// other, for a failure's report.
std::string Touching(const ThreadLog& log, const Tree& a, const Tree& b) {
  std::set<std::string> differ;
  for (const auto& [path, node] : a.nodes)
    if (!b.nodes.count(path)) differ.insert(path);
  for (const auto& [path, node] : b.nodes)
    if (!a.nodes.count(path)) differ.insert(path);
  std::string s = "    the changes that name a path found in one but not the other:\n";
  for (const FsOp& op : log.ops) {
    const std::string p = PathString(op.path), p2 = PathString(op.path2);
    bool hit = false;
    for (const std::string& d : differ)
      hit = hit || d == p || (op.kind == FsOpKind::kRename && d == p2) ||
            d.rfind(p + "/", 0) == 0 || (op.kind == FsOpKind::kRename && d.rfind(p2 + "/", 0) == 0);
    if (hit) s += "      " + DescribeOp(op) + (op.opno <= log.fsynced ? " (fsynced)" : "") + "\n";
  }
  return s;
}

}  // namespace

std::string NameString(uint32_t name) {
  return std::string(name & kDirBit ? "d" : "f") + std::to_string(name & ~kDirBit);
}

std::string PathString(uint64_t path) {
  const std::string leaf = NameString(NameOf(path));
  return ParentOf(path) == 0 ? leaf : NameString(ParentOf(path)) + "/" + leaf;
}

std::string ThreadDir(uint8_t thread) { return "t" + std::to_string(thread); }

std::string XattrValue(uint64_t stamp) { return "stamp-" + std::to_string(stamp); }

char Fill(uint64_t stamp, uint64_t offset) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-";
  const uint64_t h = Mix(stamp * 0x9e3779b97f4a7c15ull ^ (offset >> 3));
  return kAlphabet[(h >> (6 * (offset & 7))) & 63];
}

std::string Content(uint64_t stamp, uint64_t offset, uint64_t length) {
  std::string s(length, '\0');
  for (uint64_t i = 0; i < length; i++) s[i] = Fill(stamp, offset + i);
  return s;
}

std::string DescribeOp(const FsOp& op) {
  std::string s = "t" + std::to_string(op.thread) + " #" + std::to_string(op.opno) + " ";
  const std::string p = PathString(op.path);
  switch (op.kind) {
    case FsOpKind::kCreate: return s + "create " + p + " (id " + std::to_string(op.stamp) + ")";
    case FsOpKind::kWrite:
      return s + "write " + p + " [" + std::to_string(op.a) + ", +" + std::to_string(op.b) +
             ") stamp " + std::to_string(op.stamp);
    case FsOpKind::kTruncate: return s + "truncate " + p + " to " + std::to_string(op.a);
    case FsOpKind::kRename: return s + "rename " + p + " to " + PathString(op.path2);
    case FsOpKind::kUnlink: return s + "unlink " + p;
    case FsOpKind::kMkdir: return s + "mkdir " + p;
    case FsOpKind::kRmdir: return s + "rmdir " + p;
    case FsOpKind::kSetXattr: return s + "setxattr " + p + " " + XattrValue(op.stamp);
    case FsOpKind::kFsynced: return s + "fsync returned" + (op.a ? " after the crash began" : "");
  }
  return s + "?";
}

FsOp Choose(std::mt19937_64& rng, const Tree& tree, uint8_t thread, uint64_t opno, uint64_t stamp) {
  FsOp op;
  op.thread = thread;
  op.opno = opno;
  op.stamp = stamp;
  std::vector<std::string> files, dirs;
  Split(tree, &files, &dirs);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  // A new name at the top or in a directory there.
  auto fresh = [&](bool dir) {
    const uint32_t parent =
        (!dir && !dirs.empty() && rng() % 2) ? NameOf(ParsePath(pick(dirs))) : 0;
    return MakePath(parent, tree.next_name | (dir ? kDirBit : 0));
  };
  // One change in ten a create, four writes, one truncate, one unlink in
  // twenty, one rename in ten, then directories and xattrs; a change that
  // does not fit the tree (no room, nothing to remove) becomes a write.
  const uint64_t r = rng() % 100;
  if (files.empty() || (r < 10 && files.size() < kMaxFiles)) {
    op.kind = FsOpKind::kCreate;
    op.path = fresh(false);
  } else if (r >= 50 && r < 60) {
    const std::string f = pick(files);
    const uint64_t size = tree.nodes.at(f).data.size();
    op.kind = FsOpKind::kTruncate;
    op.path = ParsePath(f);
    op.a = (size > 0 && rng() % 2) ? rng() % size : rng() % kMaxOffset;
  } else if (r >= 60 && r < 65 && files.size() > 2) {
    op.kind = FsOpKind::kUnlink;
    op.path = ParsePath(pick(files));
  } else if (r >= 65 && r < 75) {
    // A file to a new name or over another file; or a directory, renamed.
    op.kind = FsOpKind::kRename;
    if (!dirs.empty() && rng() % 4 == 0) {
      op.path = ParsePath(pick(dirs));
      op.path2 = fresh(true);
    } else {
      const std::string from = pick(files);
      const std::string to = pick(files);
      op.path = ParsePath(from);
      op.path2 = (to != from && rng() % 3 == 0) ? ParsePath(to) : fresh(false);
    }
  } else if (r >= 75 && r < 80 && dirs.size() < kMaxDirs) {
    op.kind = FsOpKind::kMkdir;
    op.path = fresh(true);
  } else if (r >= 80 && r < 83 && !dirs.empty()) {
    // An empty directory goes; a full one gets an xattr on a file instead.
    const std::string d = pick(dirs);
    bool empty = true;
    for (const std::string& f : files) empty = empty && f.rfind(d + "/", 0) != 0;
    op.kind = empty ? FsOpKind::kRmdir : FsOpKind::kSetXattr;
    op.path = ParsePath(empty ? d : pick(files));
  } else if (r >= 83 && r < 90) {
    op.kind = FsOpKind::kSetXattr;
    op.path = ParsePath(pick(files));
  } else {
    const std::string f = pick(files);
    const uint64_t size = tree.nodes.at(f).data.size();
    op.kind = FsOpKind::kWrite;
    op.path = ParsePath(f);
    // Mostly within or just past the file (overwrites, appends), sometimes
    // anywhere (a hole before it); mostly small, sometimes 64 KiB.
    op.a = rng() % 4 ? rng() % std::min(size + 8192, kMaxOffset) : rng() % kMaxOffset;
    op.b = 1 + (rng() % 2 ? rng() % 4096 : rng() % kMaxWrite);
  }
  return op;
}

void Apply(Tree* tree, const FsOp& op) {
  const std::string p = PathString(op.path);
  auto note_name = [tree](uint64_t path) {
    tree->next_name = std::max(tree->next_name, (NameOf(path) & ~kDirBit) + 1);
  };
  switch (op.kind) {
    case FsOpKind::kCreate:
      tree->nodes[p] = Node{false, op.stamp, "", ""};
      note_name(op.path);
      break;
    case FsOpKind::kWrite: {
      std::string& d = tree->nodes.at(p).data;
      if (d.size() < op.a + op.b) d.resize(op.a + op.b, '\0');
      const std::string c = Content(op.stamp, op.a, op.b);
      d.replace(op.a, op.b, c);
      break;
    }
    case FsOpKind::kTruncate: tree->nodes.at(p).data.resize(op.a, '\0'); break;
    case FsOpKind::kRename: {
      const std::string to = PathString(op.path2);
      note_name(op.path2);
      Node n = tree->nodes.at(p);
      tree->nodes.erase(p);
      if (n.dir) {
        // Its files move with it.
        std::map<std::string, Node> moved;
        for (auto it = tree->nodes.begin(); it != tree->nodes.end();) {
          if (it->first.rfind(p + "/", 0) == 0) {
            moved[to + it->first.substr(p.size())] = it->second;
            it = tree->nodes.erase(it);
          } else {
            ++it;
          }
        }
        tree->nodes.insert(moved.begin(), moved.end());
      }
      tree->nodes[to] = n;
      break;
    }
    case FsOpKind::kUnlink:
    case FsOpKind::kRmdir: tree->nodes.erase(p); break;
    case FsOpKind::kMkdir:
      tree->nodes[p] = Node{true, 0, "", ""};
      note_name(op.path);
      break;
    case FsOpKind::kSetXattr: tree->nodes.at(p).xattr = XattrValue(op.stamp); break;
    case FsOpKind::kFsynced: break;
  }
}

Status Execute(Filesystem* fs, uint64_t top, const FsOp& op) {
  switch (op.kind) {
    case FsOpKind::kCreate:
      return AtPath(fs, top, op.path, [&](uint64_t parent, const std::string& name) -> Status {
        POOLFS_ASSIGN_OR_RETURN(Attr a, fs->Create(kRoot, parent, name, 0644));
        fs->Forget(a.ino, 1);
        return Status::Ok();
      });
    case FsOpKind::kMkdir:
      return AtPath(fs, top, op.path, [&](uint64_t parent, const std::string& name) -> Status {
        POOLFS_ASSIGN_OR_RETURN(Attr a, fs->Mkdir(kRoot, parent, name, 0755));
        fs->Forget(a.ino, 1);
        return Status::Ok();
      });
    case FsOpKind::kWrite:
      return OnInode(fs, top, op.path, [&](uint64_t ino) -> Status {
        POOLFS_ASSIGN_OR_RETURN(size_t n,
                                fs->Write(kRoot, ino, op.a, Content(op.stamp, op.a, op.b)));
        if (n != op.b)
          return Status::IOError("short write: " + std::to_string(n) + " of " +
                                 std::to_string(op.b) + " bytes");
        return Status::Ok();
      });
    case FsOpKind::kTruncate:
      return OnInode(fs, top, op.path, [&](uint64_t ino) -> Status {
        SetAttrRequest req;
        req.valid = SetAttrRequest::kSize;
        req.size = op.a;
        return fs->SetAttr(kRoot, ino, req).status();
      });
    case FsOpKind::kSetXattr:
      return OnInode(fs, top, op.path, [&](uint64_t ino) {
        return fs->SetXattr(kRoot, ino, kXattrName, XattrValue(op.stamp), 0);
      });
    case FsOpKind::kUnlink:
      return AtPath(fs, top, op.path, [&](uint64_t parent, const std::string& name) {
        return fs->Unlink(kRoot, parent, name);
      });
    case FsOpKind::kRmdir:
      return AtPath(fs, top, op.path, [&](uint64_t parent, const std::string& name) {
        return fs->Rmdir(kRoot, parent, name);
      });
    case FsOpKind::kRename:
      return AtPath(fs, top, op.path, [&](uint64_t from, const std::string& name) {
        return AtPath(fs, top, op.path2, [&](uint64_t to, const std::string& to_name) {
          return fs->Rename(kRoot, from, name, to, to_name, 0);
        });
      });
    case FsOpKind::kFsynced: break;
  }
  return Status::InvalidArgument("not a change: " + DescribeOp(op));
}

Result<Tree> ReadTree(Filesystem* fs, uint8_t thread) {
  Tree tree;
  POOLFS_ASSIGN_OR_RETURN(Attr top, fs->Lookup(kRoot, kRootIno, ThreadDir(thread)));
  // (directory inode, its path prefix)
  std::vector<std::pair<uint64_t, std::string>> todo{{top.ino, ""}};
  std::vector<uint64_t> held{top.ino};
  Status st = Status::Ok();
  for (size_t i = 0; i < todo.size() && st.ok(); i++) {
    const auto [dir, prefix] = todo[i];
    std::vector<DirEntry> entries;
    st = Listing(fs, dir, &entries);
    for (const DirEntry& e : entries) {
      if (!st.ok()) break;
      const bool is_dir = e.type == S_IFDIR;
      uint32_t name = 0;
      const std::string path = prefix + e.name;
      if (!ParseName(e.name, is_dir, &name) || (is_dir && !prefix.empty()) ||
          (!is_dir && e.type != S_IFREG)) {
        st = Status::Corruption(ThreadDir(thread) + "/" + path + " (type " +
                                std::to_string(e.type >> 12) + ") is no name the workload makes");
        break;
      }
      Result<Attr> a = fs->Lookup(kRoot, dir, e.name);
      if (!a.ok()) {
        st = a.status().WithContext("looking up " + ThreadDir(thread) + "/" + path);
        break;
      }
      held.push_back(a->ino);
      Node& n = tree.nodes[path];
      n.dir = is_dir;
      if (is_dir) {
        todo.push_back({a->ino, path + "/"});
        continue;
      }
      st = fs->Read(a->ino, 0, a->size + 1, &n.data);
      if (st.ok() && n.data.size() != a->size)
        st = Status::Corruption(ThreadDir(thread) + "/" + path + ": " +
                                std::to_string(n.data.size()) + " bytes read, size " +
                                std::to_string(a->size));
      if (!st.ok()) break;
      Result<std::string> x = fs->GetXattr(kRoot, a->ino, kXattrName);
      if (x.ok())
        n.xattr = *x;
      else if (x.status().code() != StatusCode::kNoData)
        st = x.status().WithContext("getxattr of " + ThreadDir(thread) + "/" + path);
    }
  }
  for (uint64_t ino : held) fs->Forget(ino, 1);
  if (!st.ok()) return st;
  return tree;
}

Status CheckThread(uint8_t thread, const Tree& start, const ThreadLog& log, const Tree& actual,
                   Tree* found, std::string* detail) {
  // S_d .. S_n.
  std::vector<Tree> states;
  Tree t = start;
  if (log.fsynced == 0) states.push_back(t);
  for (const FsOp& op : log.ops) {
    Apply(&t, op);
    if (op.opno >= log.fsynced) states.push_back(t);
  }
  const uint64_t d = log.fsynced;
  auto describe = [&] {
    std::string s = "    the thread's changes this cycle (" + std::to_string(log.ops.size()) +
                    ", fsync returned after #" + std::to_string(d) + "; " +
                    std::to_string(log.fsynced_after_crash) +
                    " fsyncs returned OK after the crash began):\n";
    const size_t from = log.ops.size() > 40 ? log.ops.size() - 40 : 0;
    if (from) s += "      ... " + std::to_string(from) + " earlier\n";
    for (size_t i = from; i < log.ops.size(); i++)
      s += std::string(log.ops[i].opno <= d ? "    * " : "      ") + DescribeOp(log.ops[i]) + "\n";
    return s;
  };
  // The names and types: those of one state.
  std::vector<size_t> same;
  for (size_t j = 0; j < states.size(); j++) {
    bool eq = states[j].nodes.size() == actual.nodes.size();
    auto s = states[j].nodes.begin();
    for (auto a = actual.nodes.begin(); eq && a != actual.nodes.end(); ++a, ++s)
      eq = a->first == s->first && a->second.dir == s->second.dir;
    if (eq) same.push_back(j);
  }
  const std::string where = ThreadDir(thread);
  if (same.empty()) {
    *detail = describe() + Touching(log, actual, states.front());
    return Status::Corruption(where + " holds " + Names(actual) +
                              ", the names of no state since the last fsync: after #" +
                              std::to_string(d) + " it held " + Names(states.front()) +
                              ", after the last change " + Names(states.back()));
  }
  *found = actual;
  found->next_name = t.next_name;
  for (auto& [path, node] : found->nodes) {
    if (node.dir) continue;
    std::set<uint64_t> ids;
    for (size_t j : same) ids.insert(states[j].nodes.at(path).id);
    node.id = *ids.begin();
    // Every version of those files since the last fsync.
    std::vector<const Node*> versions;
    for (const Tree& s : states)
      for (uint64_t id : ids)
        if (const Node* v = FileById(s, id)) versions.push_back(v);
    const std::string name = where + "/" + path;
    bool size_ok = false, xattr_ok = false;
    for (const Node* v : versions) {
      size_ok = size_ok || v->data.size() == node.data.size();
      xattr_ok = xattr_ok || v->xattr == node.xattr;
    }
    if (!xattr_ok) {
      *detail = describe();
      return Status::Corruption(name + " has xattr '" + node.xattr +
                                "', a value it had in no state since the last fsync (then: '" +
                                versions.front()->xattr + "')");
    }
    for (uint64_t off = 0; off < node.data.size(); off++) {
      bool ok = false;
      for (const Node* v : versions)
        if (off < v->data.size() && v->data[off] == node.data[off]) {
          ok = true;
          break;
        }
      if (!ok) {
        const std::string& then = versions.front()->data;
        *detail = describe() + WrittenBy(log, node.data, off);
        return Status::Corruption(
            name + " byte " + std::to_string(off) + " of " + std::to_string(node.data.size()) +
            " is " + Printable(node.data, off, 16) + ", which no version since the last fsync has" +
            " there (after #" + std::to_string(d) + ": " + std::to_string(then.size()) +
            " bytes, " + (off < then.size() ? Printable(then, off, 16) : "past its end") + ")");
      }
    }
    if (!size_ok) {
      *detail = describe();
      return Status::Corruption(name + " has " + std::to_string(node.data.size()) +
                                " bytes, a size it had in no state since the last fsync (then " +
                                std::to_string(versions.front()->data.size()) + ")");
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& path, bool truncate) {
  POOLFS_ASSIGN_OR_RETURN(int fd, OpenRecordLog(path, truncate));
  return std::unique_ptr<Journal>(new Journal(fd));
}

Journal::~Journal() { ::close(fd_); }

Status Journal::Append(const FsOp& op) {
  uint8_t p[kRecordSize] = {};
  util::PutLE32(p, kMagic);
  p[4] = uint8_t(op.kind);
  p[5] = op.thread;
  util::PutLE64(p + 8, op.opno);
  util::PutLE64(p + 16, op.path);
  util::PutLE64(p + 24, op.path2);
  util::PutLE64(p + 32, op.a);
  util::PutLE64(p + 40, op.b);
  util::PutLE64(p + 48, op.stamp);
  util::PutLE64(p + 56, util::Xxh3_64(p, 56));
  return AppendRecord(fd_, p, sizeof p, "journal");
}

Result<std::vector<ThreadLog>> Journal::Read(const std::string& path, int threads) {
  POOLFS_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  std::vector<ThreadLog> out(static_cast<size_t>(threads));
  const size_t whole = bytes.size() / kRecordSize;
  for (size_t i = 0; i < whole; i++) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data()) + i * kRecordSize;
    const bool last = i + 1 == whole && bytes.size() % kRecordSize == 0;
    if (util::GetLE32(p) != kMagic || util::GetLE64(p + 56) != util::Xxh3_64(p, 56) ||
        p[4] < uint8_t(FsOpKind::kCreate) || p[4] > uint8_t(FsOpKind::kFsynced) ||
        p[5] >= threads) {
      if (last) break;  // torn
      return Status::Corruption(path + ": record " + std::to_string(i) + " is damaged");
    }
    FsOp op;
    op.kind = FsOpKind(p[4]);
    op.thread = p[5];
    op.opno = util::GetLE64(p + 8);
    op.path = util::GetLE64(p + 16);
    op.path2 = util::GetLE64(p + 24);
    op.a = util::GetLE64(p + 32);
    op.b = util::GetLE64(p + 40);
    op.stamp = util::GetLE64(p + 48);
    ThreadLog& t = out[op.thread];
    if (op.kind == FsOpKind::kFsynced) {
      if (op.opno != t.ops.size())
        return Status::Corruption(path + ": " + DescribeOp(op) + " after change #" +
                                  std::to_string(t.ops.size()));
      t.fsynced = op.opno;
      t.fsyncs++;
      t.fsynced_after_crash += op.a;
      continue;
    }
    if (op.opno != t.ops.size() + 1)
      return Status::Corruption(path + ": " + DescribeOp(op) + " after change #" +
                                std::to_string(t.ops.size()));
    t.ops.push_back(op);
  }
  return out;
}

Workload::Workload(Filesystem* fs, Journal* journal, std::vector<Tree> models,
                   WorkloadOptions options)
    : fs_(fs), journal_(journal), models_(std::move(models)), options_(std::move(options)) {}

Workload::~Workload() { Stop(); }

void Workload::Start() {
  for (int t = 0; t < options_.threads; t++) threads_.emplace_back([this, t] { Run(uint8_t(t)); });
}

void Workload::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

Status Workload::status() {
  util::MutexLock l(&mu_);
  return status_;
}

void Workload::Run(uint8_t thread) {
  Result<Attr> top = fs_->Lookup(kRoot, kRootIno, ThreadDir(thread));
  Status st = top.ok() ? Loop(thread, top->ino) : top.status();
  if (top.ok()) fs_->Forget(top->ino, 1);
  // A failure once the crash has begun is the crash's.
  if (st.ok() || (options_.crashed && options_.crashed())) return;
  util::MutexLock l(&mu_);
  if (status_.ok()) status_ = st;
}

Status Workload::Loop(uint8_t thread, uint64_t top) {
  std::mt19937_64 rng(options_.seed + 0x9e3779b97f4a7c15ull * (thread + 1));
  Tree& tree = models_[thread];
  for (uint64_t opno = 1; !stop_.load(); opno++) {
    const FsOp op = Choose(rng, tree, thread, opno, MakeStamp(options_.cycle, thread, opno));
    Status st = journal_->Append(op);
    if (st.ok()) st = Execute(fs_, top, op);
    if (!st.ok()) return st.WithContext(DescribeOp(op));
    Apply(&tree, op);
    ops_++;
    if (rng() % 3 != 0) continue;
    // The file the change left (or its directory), now and then the
    // thread's directory; plain fsync or fdatasync.
    uint64_t target = op.kind == FsOpKind::kRename ? op.path2 : op.path;
    if (op.kind == FsOpKind::kUnlink || op.kind == FsOpKind::kRmdir) target = 0;
    if (rng() % 8 == 0) target = 0;
    const bool datasync = rng() % 2;
    st = target == 0
             ? fs_->Fsync(top, datasync)
             : OnInode(fs_, top, target, [&](uint64_t ino) { return fs_->Fsync(ino, datasync); });
    if (!st.ok()) return st.WithContext("fsync after " + DescribeOp(op));
    FsOp done;
    done.kind = FsOpKind::kFsynced;
    done.thread = thread;
    done.opno = opno;
    // An fsync that returns OK once the crash has begun is noted (a = 1):
    // its changes must be there all the same.
    done.a = options_.crashed && options_.crashed();
    POOLFS_RETURN_IF_ERROR(journal_->Append(done));
    fsyncs_++;
  }
  return Status::Ok();
}

}  // namespace poolfs::stress::fsync
