#include "mount_table.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

namespace poolfs::daemon {

std::string UnescapeMountField(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); i++) {
    if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' && field[i + 1] <= '3') {
      const std::string oct = field.substr(i + 1, 3);
      if (oct.find_first_not_of("01234567") == std::string::npos) {
        out += char(std::stoi(oct, nullptr, 8));
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

std::optional<MountEntry> ParseMountInfoLine(const std::string& line) {
  // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
  std::istringstream fields(line);
  std::string id, parent, dev, root, mountpoint, word;
  if (!(fields >> id >> parent >> dev >> root >> mountpoint)) return std::nullopt;
  while (fields >> word && word != "-") {
  }
  MountEntry e;
  if (!(fields >> e.fstype >> e.source)) return std::nullopt;
  fields >> e.super_options;
  e.mountpoint = UnescapeMountField(mountpoint);
  e.device = dev;
  e.source = UnescapeMountField(e.source);
  return e;
}

std::optional<uint32_t> FuseMountOwner(const MountEntry& m) {
  const std::string& o = m.super_options;
  for (size_t start = 0; start <= o.size();) {
    const size_t comma = std::min(o.find(',', start), o.size());
    const std::string opt = o.substr(start, comma - start);
    start = comma + 1;
    if (!opt.starts_with("user_id=")) continue;
    const std::string digits = opt.substr(8);
    if (digits.empty() || digits.size() > 10 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    const uint64_t uid = std::stoull(digits);
    if (uid > UINT32_MAX) return std::nullopt;
    return uint32_t(uid);
  }
  return std::nullopt;
}

Result<std::vector<MountEntry>> ReadMountTable() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) {
    return Status::IOError(std::string("reading /proc/self/mountinfo: ") + std::strerror(errno));
  }
  std::vector<MountEntry> mounts;
  std::string line;
  while (std::getline(in, line)) {
    if (std::optional<MountEntry> e = ParseMountInfoLine(line)) mounts.push_back(std::move(*e));
  }
  return mounts;
}

Result<std::optional<MountEntry>> FindMountAt(const std::string& canonical_path) {
  POOLFS_ASSIGN_OR_RETURN(std::vector<MountEntry> mounts, ReadMountTable());
  std::optional<MountEntry> found;
  for (MountEntry& m : mounts) {
    if (m.mountpoint == canonical_path) found = std::move(m);
  }
  return found;
}

Result<std::optional<MountEntry>> FindPoolfsMountOf(const std::string& pool_path) {
  POOLFS_ASSIGN_OR_RETURN(std::vector<MountEntry> mounts, ReadMountTable());
  for (MountEntry& m : mounts) {
    if (m.fstype == kPoolfsFsType && m.source == pool_path) return std::optional(std::move(m));
  }
  return std::optional<MountEntry>();
}

Status SetReadAhead(const std::string& canonical_path, uint64_t bytes,
                    const std::string& bdi_root) {
  POOLFS_ASSIGN_OR_RETURN(std::optional<MountEntry> m, FindMountAt(canonical_path));
  if (!m) return Status::NotFound("nothing is mounted on " + canonical_path);
  const std::string file = bdi_root + "/" + m->device + "/read_ahead_kb";
  const std::string kib = std::to_string(bytes / 1024) + "\n";
  const int fd = open(file.c_str(), O_WRONLY | O_CLOEXEC);
  ssize_t n = -1;
  int err = 0;
  if (fd >= 0) {
    n = write(fd, kib.data(), kib.size());
    if (n < 0) err = errno;
    close(fd);
  } else {
    err = errno;
  }
  if (n == ssize_t(kib.size())) return Status::Ok();
  if (err == 0) err = EIO;  // a short write
  const std::string what = "cannot write " + file + ": " + std::strerror(err);
  if (err == EACCES || err == EPERM) return Status(StatusCode::kPermissionDenied, what);
  if (err == ENOENT) return Status::NotFound(what);
  return Status::IOError(what);
}

}  // namespace poolfs::daemon
