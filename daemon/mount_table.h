// The kernel's mount table as `poolfs mount` and `poolfs unmount` need it:
// is a directory a mount point, of which filesystem type, mounted from
// what source; is a pool file already mounted somewhere.
//
// Reads /proc/self/mountinfo (one line per mount: ... MOUNTPOINT ... -
// FSTYPE SOURCE ...), whose paths escape space, tab, newline and backslash
// as octal (\040).
//
// Thread safety: free functions, reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "poolfs/status.h"

namespace poolfs::daemon {

// The filesystem type a poolfs mount has (libfuse's subtype).
inline constexpr const char* kPoolfsFsType = "fuse.poolfs";

struct MountEntry {
  std::string mountpoint;  // absolute
  std::string fstype;      // "fuse.poolfs", "ext4", ...
  std::string source;      // for poolfs: the pool file
  std::string device;      // "MAJOR:MINOR"; a FUSE mount's own, named in /sys/class/bdi
  // The filesystem's own options; a FUSE mount's name the user it belongs
  // to: "rw,user_id=1000,group_id=1000,default_permissions".
  std::string super_options;
};

// Parses one line of /proc/self/mountinfo; nullopt for a line that is not
// one.
std::optional<MountEntry> ParseMountInfoLine(const std::string& line);

// The uid a FUSE mount belongs to (its user_id= option), or nullopt for a
// mount that names none (not FUSE).
std::optional<uint32_t> FuseMountOwner(const MountEntry& m);

// Returns every mount, in the table's order. IOError when the table cannot
// be read.
Result<std::vector<MountEntry>> ReadMountTable();

// Returns the last (topmost) mount whose mount point is `canonical_path`
// (realpath'd by the caller), or nullopt. IOError as ReadMountTable.
Result<std::optional<MountEntry>> FindMountAt(const std::string& canonical_path);

// Returns the first poolfs mount whose source is `pool_path` (realpath'd),
// or nullopt. IOError as ReadMountTable.
Result<std::optional<MountEntry>> FindPoolfsMountOf(const std::string& pool_path);

// Undoes mountinfo's octal escapes ("a\040b" -> "a b").
std::string UnescapeMountField(const std::string& field);

// Sets how far the kernel reads ahead on the mount at `canonical_path`:
// writes `bytes` / 1024 to read_ahead_kb of its backing device info,
// `bdi_root`/MAJOR:MINOR/ (the mount table names the device). NotFound
// when nothing is mounted there; the errno of a failed open or write
// otherwise, naming the file (PermissionDenied for a user other than
// root). No FUSE request is made, so the mount's own daemon may call it
// before it answers any.
Status SetReadAhead(const std::string& canonical_path, uint64_t bytes,
                    const std::string& bdi_root = "/sys/class/bdi");

}  // namespace poolfs::daemon
