#include "mount_table.h"

#include <cerrno>
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

Result<std::vector<MountEntry>> ReadMountTable() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) {
    return Status::IOError(std::string("reading /proc/self/mountinfo: ") + std::strerror(errno));
  }
  std::vector<MountEntry> mounts;
  std::string line;
  while (std::getline(in, line)) {
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
    std::istringstream fields(line);
    std::string id, parent, dev, root, mountpoint, word;
    if (!(fields >> id >> parent >> dev >> root >> mountpoint)) continue;
    while (fields >> word && word != "-") {
    }
    MountEntry e;
    if (!(fields >> e.fstype >> e.source)) continue;
    e.mountpoint = UnescapeMountField(mountpoint);
    e.source = UnescapeMountField(e.source);
    mounts.push_back(std::move(e));
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

}  // namespace poolfs::daemon
