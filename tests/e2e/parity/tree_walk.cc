#include "parity/tree_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include "parity/sys.h"

namespace poolfs::e2e {
namespace {

std::string ErrName(int err) {
  const char* name = strerrorname_np(err);
  return name ? name : std::to_string(err);
}

struct Walker {
  bool identities = false;  // Snapshot: also inode numbers, handles, mtimes
  std::vector<std::string> out;
  std::map<std::pair<dev_t, ino_t>, std::string> first_path;  // hard link groups

  std::string Xattrs(const std::string& full) {
    std::string names(65536, '\0');
    ssize_t n = ::llistxattr(full.c_str(), names.data(), names.size());
    if (n < 0) return " xattrs:" + ErrName(errno);
    std::vector<std::string> list;
    for (ssize_t i = 0; i < n;) {
      std::string name(names.c_str() + i);
      i += static_cast<ssize_t>(name.size()) + 1;
      std::string value(65536, '\0');
      ssize_t v = ::lgetxattr(full.c_str(), name.c_str(), value.data(), value.size());
      list.push_back(name + "=" + (v < 0 ? ErrName(errno) : HashHex(value.substr(0, v))));
    }
    std::sort(list.begin(), list.end());
    std::string text;
    for (const auto& x : list) text += " " + x;
    return list.empty() ? "" : " xattrs:" + text;
  }

  std::string Handle(const std::string& full) {
    alignas(struct file_handle) unsigned char storage[sizeof(struct file_handle) + 128];
    auto* fh = reinterpret_cast<struct file_handle*>(storage);
    fh->handle_bytes = 128;
    int mount_id = 0;
    if (::name_to_handle_at(AT_FDCWD, full.c_str(), fh, &mount_id, 0) != 0) {
      return "handle:" + ErrName(errno);
    }
    const unsigned char* bytes = storage + sizeof(struct file_handle);
    std::string hex = "handle:" + std::to_string(fh->handle_type) + ":";
    static const char* digits = "0123456789abcdef";
    for (unsigned i = 0; i < fh->handle_bytes; ++i) {
      hex += digits[bytes[i] >> 4];
      hex += digits[bytes[i] & 15];
    }
    return hex;
  }

  void Entry(int parent_fd, const std::string& parent_full, const std::string& rel,
             const char* name) {
    std::string full = parent_full + "/" + name;
    struct stat st;
    if (::fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      out.push_back(rel + ": lstat " + ErrName(errno));
      return;
    }
    char mode[16];
    std::snprintf(mode, sizeof(mode), "0%o", st.st_mode & 07777);
    std::string line = rel + ": " + mode + " nlink=" + std::to_string(st.st_nlink) +
                       " uid=" + std::to_string(st.st_uid) + " gid=" + std::to_string(st.st_gid);
    // ctime is never older than mtime: every change of mtime changes ctime.
    bool ctime_ok =
        st.st_ctim.tv_sec > st.st_mtim.tv_sec ||
        (st.st_ctim.tv_sec == st.st_mtim.tv_sec && st.st_ctim.tv_nsec >= st.st_mtim.tv_nsec);
    // Except when a scenario set mtime into the future with utimensat.
    line += ctime_ok ? " ctime>=mtime" : " ctime<mtime";
    if (identities) {
      line += " ino=" + std::to_string(st.st_ino) + " " + Handle(full) +
              " mtime=" + std::to_string(st.st_mtim.tv_sec) + "." +
              std::to_string(st.st_mtim.tv_nsec);
    }
    if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
      auto [it, fresh] = first_path.emplace(std::make_pair(st.st_dev, st.st_ino), rel);
      if (!fresh) line += " same-file-as=" + it->second;
    }
    if (S_ISREG(st.st_mode)) {
      line = "reg " + line + " size=" + std::to_string(st.st_size);
      int fd = ::openat(parent_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) {
        line += " content:" + ErrName(errno);
      } else {
        std::string data, buf(1 << 16, '\0');
        ssize_t n;
        while ((n = ::read(fd, buf.data(), buf.size())) > 0) data.append(buf.data(), n);
        line += n < 0 ? " content:" + ErrName(errno) : " content:" + HashHex(data);
        ::close(fd);
      }
    } else if (S_ISDIR(st.st_mode)) {
      line = "dir " + line;
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(8192, '\0');
      ssize_t n = ::readlinkat(parent_fd, name, target.data(), target.size());
      line =
          "lnk " + line + " size=" + std::to_string(st.st_size) +
          (n < 0    ? " target:" + ErrName(errno)
           : n > 64 ? " -> <" + std::to_string(n) + " bytes h=" + HashHex(target.substr(0, n)) + ">"
                    : " -> " + target.substr(0, n));
    } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      line = std::string(S_ISCHR(st.st_mode) ? "chr " : "blk ") + line +
             " rdev=" + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
    } else if (S_ISFIFO(st.st_mode)) {
      line = "fifo " + line;
    } else if (S_ISSOCK(st.st_mode)) {
      line = "sock " + line;
    }
    line += Xattrs(full);
    out.push_back(line);
    if (S_ISDIR(st.st_mode)) {
      int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) {
        out.push_back(rel + "/: open " + ErrName(errno));
        return;
      }
      Dir(fd, full, rel);
    }
  }

  // Lists `fd` (closes it) and walks each entry, sorted by name.
  void Dir(int fd, const std::string& full, const std::string& rel) {
    DIR* dir = ::fdopendir(fd);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(dir)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
        names.push_back(e->d_name);
      }
    }
    if (errno != 0) out.push_back(rel + "/: readdir " + ErrName(errno));
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      Entry(fd, full, rel.empty() ? n : rel + "/" + n, n.c_str());
    }
    ::closedir(dir);
  }
};

}  // namespace

std::vector<std::string> WalkTree(int dirfd) {
  Walker w;
  int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return {"open . " + ErrName(errno)};
  w.Dir(fd, "/proc/self/fd/" + std::to_string(dirfd), "");
  return w.out;
}

std::vector<std::string> Snapshot(const std::string& path) {
  Walker w;
  w.identities = true;
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return {"open " + path + " " + ErrName(errno)};
  w.Dir(fd, path, "");
  return w.out;
}

std::vector<std::string> OpenByHandles(const std::string& path,
                                       const std::vector<std::string>& snapshot, int* opened) {
  std::vector<std::string> out;
  *opened = 0;
  int mount_fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mount_fd < 0) return {"open " + path + " " + ErrName(errno)};
  for (const std::string& line : snapshot) {
    // "<type> <path>: <mode> ... ino=N handle:TYPE:HEX ..."
    const size_t name_at = line.find(' ') + 1, name_end = line.find(": ");
    const size_t ino_at = line.find(" ino="), handle_at = line.find(" handle:");
    if (name_at == 0 || name_end == std::string::npos || ino_at == std::string::npos ||
        handle_at == std::string::npos)
      continue;  // not an entry (an error line of the walk)
    const std::string rel = line.substr(name_at, name_end - name_at);
    const unsigned long long ino = std::strtoull(line.c_str() + ino_at + 5, nullptr, 10);
    const size_t type_at = handle_at + 8;
    const size_t hex_at = line.find(':', type_at) + 1;
    const size_t hex_end = line.find(' ', hex_at);
    const std::string hex = line.substr(hex_at, hex_end - hex_at);
    if (hex_at == 0 || hex.empty() || hex.size() % 2 != 0 || hex.size() > 256) {
      out.push_back(rel + ": no handle in the snapshot");
      continue;
    }
    alignas(struct file_handle) unsigned char storage[sizeof(struct file_handle) + 128];
    auto* fh = reinterpret_cast<struct file_handle*>(storage);
    fh->handle_bytes = unsigned(hex.size() / 2);
    fh->handle_type = std::atoi(line.c_str() + type_at);
    unsigned char* bytes = storage + sizeof(struct file_handle);
    for (size_t i = 0; i < hex.size() / 2; ++i)
      bytes[i] = static_cast<unsigned char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    int fd = ::open_by_handle_at(mount_fd, fh, O_PATH | O_CLOEXEC);
    if (fd < 0) {
      out.push_back(rel + ": open_by_handle_at " + ErrName(errno));
      continue;
    }
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      out.push_back(rel + ": fstat " + ErrName(errno));
    } else if (st.st_ino != ino) {
      out.push_back(rel + ": the handle opened inode " + std::to_string(st.st_ino) + ", not " +
                    std::to_string(ino));
    } else {
      ++*opened;
    }
    ::close(fd);
  }
  ::close(mount_fd);
  return out;
}

}  // namespace poolfs::e2e
