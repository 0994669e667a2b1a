#include "mount_plan.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "dead_mount.h"
#include "logging.h"
#include "mount_table.h"
#include "pool_registry.h"
#include "poolfs/dataset.h"

namespace poolfs::daemon {
namespace {

Result<std::string> Canonical(const std::string& path, const std::string& what) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) {
    // A mount whose daemon is gone: CheckMountpoint clears it when it is
    // this user's poolfs, and refuses it otherwise.
    if (errno == ENOTCONN) return CanonicalParentPath(path);
    if (errno == ENOENT || errno == ENOTDIR)
      return Status::NotFound(what + " " + path + " does not exist");
    return Status::InvalidArgument(what + " " + path + ": " + std::strerror(errno));
  }
  return std::string(buf);
}

// A mount in the way of this one: a dead mount of this user's poolfs is
// cleared (a line in *notes says so); Busy `busy` otherwise. At most a few
// (mounts may be stacked).
Status ClearDeadMounts(const std::function<Result<std::optional<MountEntry>>()>& find,
                       const std::function<Status(const MountEntry&)>& busy,
                       std::vector<std::string>* notes) {
  for (int attempt = 0; attempt < 8; attempt++) {
    POOLFS_ASSIGN_OR_RETURN(std::optional<MountEntry> mounted, find());
    if (!mounted) return Status::Ok();
    POOLFS_ASSIGN_OR_RETURN(std::optional<std::string> cleared, ClearIfDead(*mounted));
    if (!cleared) return busy(*mounted);
    notes->push_back(*cleared);
  }
  return Status::Busy("dead mounts keep coming back; unmount them by hand (fusermount3 -u -z)");
}

Status CheckPoolFile(const std::string& path, std::vector<std::string>* notes) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return Status::InvalidArgument("pool file " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    return Status::InvalidArgument(path +
                                   " is not a pool file (not a regular file or block device)");
  }
  return ClearDeadMounts(
      [&] { return FindPoolfsMountOf(path); },
      [&](const MountEntry& m) {
        return Status::Busy("pool " + path + " is already mounted on " + m.mountpoint);
      },
      notes);
}

Status CheckMountpoint(const std::string& path, std::vector<std::string>* notes) {
  POOLFS_RETURN_IF_ERROR(ClearDeadMounts([&] { return FindMountAt(path); },
                                         [&](const MountEntry& m) {
                                           return Status::Busy("mount point " + path +
                                                               " already has a mount (" + m.fstype +
                                                               " from " + m.source + ")");
                                         },
                                         notes));
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOTCONN) {
      return Status::InvalidArgument("mount point " + path +
                                     " is a FUSE mount whose daemon is gone; run fusermount3 -u " +
                                     path + " first");
    }
    return Status::InvalidArgument("mount point " + path + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return Status::InvalidArgument("mount point " + path + " is not a directory");
  DIR* d = opendir(path.c_str());
  if (d == nullptr) {
    return Status::InvalidArgument("mount point " + path + ": " + std::strerror(errno));
  }
  bool empty = true;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  closedir(d);
  if (!empty) return Status::InvalidArgument("mount point " + path + " is not empty");
  return Status::Ok();
}

// entry_timeout=S, attr_timeout=S, negative_timeout=S (seconds the kernel
// caches names, attributes, absent names): poolfs's own -o options, not
// passed to libfuse. Sets *ours when `opt` is one of them.
Status ParseTimeoutOption(const std::string& opt, fuse::FuseOptions* fuse, bool* ours) {
  const size_t eq = opt.find('=');
  const std::string key = opt.substr(0, eq);
  double* field = key == "entry_timeout"      ? &fuse->entry_timeout
                  : key == "attr_timeout"     ? &fuse->attr_timeout
                  : key == "negative_timeout" ? &fuse->negative_timeout
                                              : nullptr;
  *ours = field != nullptr;
  if (!field) return Status::Ok();
  char* end = nullptr;
  const std::string value = eq == std::string::npos ? "" : opt.substr(eq + 1);
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !(v >= 0 && v <= 86400)) {
    return Status::InvalidArgument("-o " + opt + ": expected " + key + "=SECONDS, from 0 to 86400");
  }
  *field = v;
  return Status::Ok();
}

// Reads the config file (--config, else the search paths). *used is the
// file's absolute path: the daemon reads it again on SIGHUP after it has
// detached and changed its folder to /, where a relative path would name
// another file or none.
Result<config::Config> LoadConfig(const std::string& explicit_path, std::string* used) {
  POOLFS_ASSIGN_OR_RETURN(auto path, config::FindConfigFile(explicit_path));
  if (!path) return config::Config();
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(*path, ec);
  if (ec) return Status::InvalidArgument("config file " + *path + ": " + ec.message());
  *used = abs.lexically_normal().string();
  return config::LoadConfigFile(*used);
}

// The access-time options (relatime, strictatime, noatime): poolfs's own,
// for the core (AtimeMode); the kernel keeps no atime for a FUSE mount.
// Sets *ours when `opt` is one of them.
void ParseAtimeOption(const std::string& opt, MountOptions* core, bool* ours) {
  *ours = true;
  if (opt == "relatime") {
    core->atime = AtimeMode::kRelatime;
  } else if (opt == "strictatime") {
    core->atime = AtimeMode::kStrict;
  } else if (opt == "noatime") {
    core->atime = AtimeMode::kNone;
  } else {
    *ours = false;
  }
}

// -o dev and -o suid: root's alone. fusermount3 mounts every user's FUSE
// filesystem nodev,nosuid (it would drop them with a warning): refused
// here, with the reason.
Status CheckDevSuid(const std::string& opt) {
  if (opt.starts_with("no") || geteuid() == 0) return Status::Ok();
  return Status::InvalidArgument(
      "-o " + opt + ": only root may mount with " + opt +
      " (fusermount3 mounts every user's FUSE filesystem nodev,nosuid, so device files and " +
      "setuid bits there take no effect); mount as root, or leave -o " + opt + " out");
}

// The -o options (each a comma-separated group) into plan->core and
// plan->fuse. *atime is the last access-time option given ("" for none).
Status ApplyMountOptions(const std::vector<std::string>& groups, MountPlan* plan,
                         std::string* atime) {
  bool dev = false, suid = false;  // -o dev, -o suid (root only)
  for (const std::string& group : groups) {
    size_t start = 0;
    while (start <= group.size()) {
      const size_t comma = std::min(group.find(',', start), group.size());
      const std::string opt = group.substr(start, comma - start);
      start = comma + 1;
      if (opt.empty()) return Status::InvalidArgument("empty option in -o '" + group + "'");
      if (opt == "ro") plan->core.read_only = true;
      if (opt == "rw") plan->core.read_only = false;
      if (opt == "rewind") {  // the pool's, not the kernel's
        plan->core.rewind = true;
        continue;
      }
      if (opt == "dev" || opt == "nodev" || opt == "suid" || opt == "nosuid") {
        // Decided here, and given to libfuse once below.
        POOLFS_RETURN_IF_ERROR(CheckDevSuid(opt));
        (opt.ends_with("dev") ? dev : suid) = !opt.starts_with("no");
        continue;
      }
      if (opt == "default_permissions") continue;  // always on, see below
      bool ours = false;
      POOLFS_RETURN_IF_ERROR(ParseTimeoutOption(opt, &plan->fuse, &ours));
      if (ours) continue;
      ParseAtimeOption(opt, &plan->core, &ours);
      if (ours) {
        *atime = opt;
        continue;
      }
      if (opt.rfind("fsname=", 0) == 0 || opt.rfind("subtype=", 0) == 0) {
        return Status::InvalidArgument("-o " + opt + ": poolfs sets fsname and subtype itself");
      }
      plan->fuse.mount_options.push_back(opt);
    }
  }
  // The kernel checks mode bits on every path walk, cached names included:
  // without default_permissions it asks the filesystem only for names it
  // has not cached, so a directory's search permission went unchecked for
  // those. The core keeps its own checks as well (kernel_checks_permissions
  // stays false): they cost little and hold for any other caller.
  plan->fuse.mount_options.push_back("default_permissions");
  // Device files and setuid bits take effect only when asked (as root).
  plan->fuse.mount_options.push_back(dev ? "dev" : "nodev");
  plan->fuse.mount_options.push_back(suid ? "suid" : "nosuid");
  return Status::Ok();
}

}  // namespace

bool IsDatasetMount(const MountArgs& args) {
  return args.pool_option.empty() && args.pool_file.find('/') != std::string::npos &&
         ValidateDatasetPath(args.pool_file).ok() && !std::filesystem::exists(args.pool_file);
}

Result<MountPlan> PlanMount(const MountArgs& args) {
  MountPlan plan;
  std::string file = args.pool_file;
  if (!args.pool_option.empty()) {
    // `--pool FILE POOL/PATH MNT`: one dataset's tree.
    POOLFS_RETURN_IF_ERROR(ValidateDatasetPath(args.pool_file));
    plan.core.dataset = args.pool_file;
    file = args.pool_option;
  }
  POOLFS_ASSIGN_OR_RETURN(plan.pool_file, Canonical(file, "pool file"));
  POOLFS_ASSIGN_OR_RETURN(plan.mountpoint, Canonical(args.mountpoint, "mount point"));
  POOLFS_RETURN_IF_ERROR(CheckPoolFile(plan.pool_file, &plan.notes));
  POOLFS_RETURN_IF_ERROR(CheckMountpoint(plan.mountpoint, &plan.notes));
  plan.log_path = LogFilePath(plan.pool_file);

  POOLFS_ASSIGN_OR_RETURN(plan.config, LoadConfig(args.config_path, &plan.config_path));
  const config::Tunables& t = plan.config.values();
  plan.core.tunables = t.core;
  plan.sync_threads = t.daemon.sync_threads;

  plan.fuse.mountpoint = plan.mountpoint;
  plan.fuse.fsname = plan.pool_file;
  plan.fuse.threads = t.daemon.fuse_threads;
  plan.read_ahead_bytes = t.daemon.fuse_read_ahead_bytes;
  plan.fuse.writeback_cache = t.daemon.fuse_writeback_cache;
  plan.fuse.handle_killpriv = t.daemon.fuse_handle_killpriv;
  std::string atime;
  POOLFS_RETURN_IF_ERROR(ApplyMountOptions(args.options, &plan, &atime));
  if (plan.core.rewind && !plan.core.read_only)
    return Status::InvalidArgument(
        "-o rewind: a rewind opens an older txg read-only; mount with -o ro,rewind (a "
        "read-write mount of an older txg would write over the newer ones)");
  return plan;
}

Result<DatasetMountPlan> PlanDatasetMount(const MountArgs& args) {
  DatasetMountPlan plan;
  plan.request.dataset = args.pool_file;
  plan.pool = args.pool_file.substr(0, args.pool_file.find('/'));
  const std::string& dataset = plan.request.dataset;
  POOLFS_ASSIGN_OR_RETURN(std::optional<RegisteredPool> reg, FindRegisteredPool(plan.pool));
  if (!reg.has_value()) {
    return Status::NotFound("pool '" + plan.pool + "' is not mounted (and there is no file " +
                            dataset + "); mount dataset " + dataset +
                            " with its pool's file: poolfs mount --pool FILE " + dataset + " " +
                            args.mountpoint + " (or mount the pool first, then poolfs mount " +
                            dataset + " " + args.mountpoint + " mounts it beside the pool)");
  }
  plan.pool_mountpoint = reg->mountpoint;
  const std::string served = "pool '" + plan.pool + "' is mounted on " + reg->mountpoint +
                             " and its daemon (pid " + std::to_string(reg->pid) +
                             ") serves this mount too";
  if (args.foreground)
    return Status::InvalidArgument("-f: " + served + ", in the background; leave -f out");
  if (!args.config_path.empty())
    return Status::InvalidArgument("--config: " + served + ", with its tunables (poolfs tune " +
                                   plan.pool + " changes them); leave --config out");
  POOLFS_ASSIGN_OR_RETURN(plan.request.mountpoint, Canonical(args.mountpoint, "mount point"));
  POOLFS_RETURN_IF_ERROR(CheckMountpoint(plan.request.mountpoint, &plan.notes));
  MountPlan options;
  std::string atime;
  POOLFS_RETURN_IF_ERROR(ApplyMountOptions(args.options, &options, &atime));
  if (!atime.empty()) {
    return Status::InvalidArgument(
        "-o " + atime + ": " + served + ", whose access-time mode it shares; set the dataset's " +
        "atime property instead (poolfs dataset set atime=on|off|relatime " + dataset + ")");
  }
  if (options.core.rewind)
    return Status::InvalidArgument("-o rewind: " + served +
                                   ", already imported; a rewind is an option of the pool's "
                                   "own mount (unmount it, then poolfs mount -o ro,rewind FILE "
                                   "MNT)");
  plan.request.read_only = options.core.read_only;
  plan.request.fuse_options = options.fuse.mount_options;
  plan.request.entry_timeout = options.fuse.entry_timeout;
  plan.request.attr_timeout = options.fuse.attr_timeout;
  plan.request.negative_timeout = options.fuse.negative_timeout;
  return plan;
}

}  // namespace poolfs::daemon
