// `poolfs status MOUNTPOINT` and `poolfs status POOLFILE...`.
//
// A mountpoint: the daemon serving it answers through its control socket
// (control.h) with the pool's live state and the tunables in effect
// (live_config.h's RenderStatus). Pool files that are not mounted: read
// offline without writing (poolfs/pool_admin.h's CheckPool, which reads and
// verifies every block, so its time grows with the pool's contents), with
// the tunables the next mount would use. A pool in use by another process
// is reported as such, with that process and the poolfs mounts found.
//
// The daemon is asked first, before anything stats the target, so a hung
// FUSE mount cannot hang `status` on a stat of its mountpoint. When no
// daemon answers and the target is a poolfs mount whose daemon died
// (dead_mount.h), status says so and how to recover.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"
#include "config/config.h"
#include "config/render.h"
#include "control.h"
#include "dead_mount.h"
#include "live_config.h"
#include "pool_registry.h"
#include "poolfs/pool_admin.h"

namespace poolfs::daemon {

namespace {

struct StatusArgs {
  std::vector<std::string> targets;
  std::string config_path;
};

// The command line of process `pid`, space-separated ("" when unreadable).
std::string ProcessCommandLine(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : all)
    if (c == '\0') c = ' ';
  while (!all.empty() && all.back() == ' ') all.pop_back();
  return all;
}

// Mountpoints of FUSE filesystems whose type or source names poolfs; those
// whose source is `pool_file` (what `poolfs mount` records) first, and
// `*exact` counts them.
std::vector<std::string> PoolfsMounts(const std::string& pool_file, size_t* exact) {
  std::error_code ec;
  const std::string canonical = std::filesystem::canonical(pool_file, ec).string();
  std::vector<std::string> mine, others;
  std::ifstream in("/proc/self/mounts");
  std::string source, target, type, rest;
  while (in >> source >> target >> type && std::getline(in, rest)) {
    if (!type.starts_with("fuse")) continue;
    if (!ec && source == canonical)
      mine.push_back(target);
    else if (type.find("poolfs") != std::string::npos || source.find("poolfs") != std::string::npos)
      others.push_back(target);
  }
  *exact = mine.size();
  mine.insert(mine.end(), others.begin(), others.end());
  return mine;
}

int ReportBusy(const std::string& pool_file, const Status& st) {
  std::cerr << "poolfs status: " << st.message() << "\n";
  if (const int64_t pid = st.holder_pid(); pid > 0) {
    const std::string cmd = ProcessCommandLine(pid);
    if (!cmd.empty()) std::cerr << "  process " << pid << ": " << cmd << "\n";
  }
  size_t exact = 0;
  const std::vector<std::string> mounts = PoolfsMounts(pool_file, &exact);
  for (size_t i = 0; i < mounts.size(); i++)
    std::cerr << "  " << (i < exact ? "mounted on: " : "another poolfs mount: ") << mounts[i]
              << "\n";
  std::cerr << "  ask the daemon of the mount: poolfs status "
            << (exact == 1 ? mounts[0] : std::string("MOUNTPOINT")) << "\n";
  return ExitCodeFor(st);
}

// The poolfs mount at `target` when its daemon is gone (dead_mount.h), or
// nullopt.
std::optional<MountEntry> DeadPoolfsMountAt(const std::string& target) {
  Result<std::string> mp = CanonicalParentPath(target);
  if (!mp.ok()) return std::nullopt;
  Result<std::optional<MountEntry>> m = FindMountAt(*mp);
  if (!m.ok() || !m->has_value() || (*m)->fstype != kPoolfsFsType) return std::nullopt;
  if (ProbeMount(*mp).state != MountState::kDead) return std::nullopt;
  return **m;
}

// What `poolfs status` says of a dead mount: what happened and how to
// recover.
int ReportDeadMount(const MountEntry& m) {
  // A pool's mount names the pool's file; a dataset mount (dataset_mounts.h)
  // its dataset, POOL/PATH.
  const bool dataset = !m.source.starts_with("/");
  std::cerr << "poolfs status: " << m.mountpoint << ": the poolfs daemon of this mount died (the "
            << "mount answers \"" << std::strerror(ENOTCONN) << "\"); "
            << (dataset ? "dataset " : "pool ") << m.source << " is as of its last synced txg\n";
  if (dataset) {
    std::cerr << "  to mount it again: mount its pool (poolfs mount POOLFILE MOUNTPOINT), then "
              << "poolfs mount " << m.source << " " << m.mountpoint
              << " (it clears the dead mount first)\n";
  } else {
    std::cerr << "  to mount it again: poolfs mount " << m.source << " " << m.mountpoint
              << " (it clears the dead mount first)\n";
  }
  std::cerr << "  to only remove the dead mount: poolfs unmount " << m.mountpoint << "\n";
  return kExitFailure;
}

// The tunables a mount would use now, or the config error.
Result<config::Config> NextMountConfig(const std::string& explicit_path) {
  POOLFS_ASSIGN_OR_RETURN(std::optional<std::string> path, config::FindConfigFile(explicit_path));
  if (!path) return config::Config();
  return config::LoadConfigFile(*path);
}

int RunOffline(const StatusArgs& args) {
  auto report = CheckPool(args.targets);
  if (!report.ok()) {
    if (report.status().code() == StatusCode::kBusy)
      return ReportBusy(args.targets[0], report.status());
    return ReportError("status", report.status());
  }
  uint64_t vdev_bytes = 0;
  for (const std::string& p : args.targets) {
    struct stat st;
    if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) vdev_bytes += uint64_t(st.st_size);
  }
  const CheckReport& r = *report;
  auto line = [](std::string_view key, const std::string& value) {
    std::cout << key << std::string(key.size() < 18 ? 18 - key.size() : 1, ' ') << value << "\n";
  };
  line("pool:", r.pool);
  line("state:", std::string("not mounted (read offline, nothing written)"));
  line("health:", r.ok() ? std::string("healthy")
                         : "DAMAGED: " + std::to_string(r.problems.size() + r.problems_omitted) +
                               " problems (`poolfs check` lists them)");
  line("last synced txg:", std::to_string(r.txg));
  std::string space = FormatBytesHuman(r.bytes_allocated_by_maps) + " used";
  if (vdev_bytes > 0)
    space += " of " + FormatBytesHuman(vdev_bytes) + " in " + std::to_string(r.vdevs) +
             (r.vdevs == 1 ? " vdev file" : " vdev files") +
             " (free is a little less than the difference: labels and reserves)";
  line("space:", space);
  line("checksum errors:", std::to_string(r.checksum_errors));
  line("datasets:", std::to_string(r.datasets));
  line("objects:", std::to_string(r.objects) + " (the MOS's included), " +
                       std::to_string(r.blocks) + " blocks");
  if (r.cloned_blocks > 0)
    line("block clones:", std::to_string(r.cloned_blocks) + " blocks shared by copies, " +
                              FormatBytesHuman(r.clone_saved_bytes) + " saved");
  auto cfg = NextMountConfig(args.config_path);
  if (!cfg.ok()) {
    std::cout << "tunables at the next mount: the config file does not load:\n";
    std::cerr << "poolfs status: " << cfg.status().message() << "\n";
    return kExitFailure;
  }
  std::cout << "tunables at the next mount ("
            << (cfg->source().empty() ? std::string("defaults, no config file")
                                      : "from " + cfg->source())
            << "):\n";
  std::istringstream table(config::RenderEffectiveTunables(*cfg));
  for (std::string l; std::getline(table, l);) std::cout << "  " << l << "\n";
  return kExitOk;
}

int RunStatus(const StatusArgs& args) {
  if (args.targets.size() == 1) {
    auto resolved = ResolveMountTarget(args.targets[0]);
    if (!resolved.ok()) return ReportError("status", resolved.status());
    const std::string& target = *resolved;
    auto reply = ControlCall(target, "status");
    if (reply.ok()) {
      if (reply->starts_with("error: ")) {
        std::cerr << "poolfs status: " << target << ": " << reply->substr(7);
        return kExitFailure;
      }
      std::cout << *reply;
      return kExitOk;
    }
    if (reply.status().code() != StatusCode::kNotFound)
      return ReportError("status", reply.status());
    if (std::optional<MountEntry> dead = DeadPoolfsMountAt(target)) return ReportDeadMount(*dead);
    struct stat st;
    if (stat(target.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ENOTCONN)
        return ReportError("status", Status::IOError(target + ": " + std::strerror(err) +
                                                     " (its daemon died? `fusermount3 -u " +
                                                     target + "` clears it)"));
      return ReportError("status", Status::NotFound(target + ": " + std::strerror(err)));
    }
    if (S_ISDIR(st.st_mode))
      return ReportError("status", Status::NotFound("no poolfs daemon serves " + target +
                                                    " (not mounted, or mounted by another "
                                                    "user)"));
  }
  return RunOffline(args);
}

}  // namespace

Command AddStatusCommand(CLI::App& parent) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* app = parent.add_subcommand(
      "status",
      "Show a pool: state, last synced txg, space, datasets, checksum errors, tunables in "
      "effect; asks the daemon for a MOUNTPOINT, reads POOLFILEs offline without writing");
  app->add_option("TARGET", args->targets,
                  "a mounted pool's name or MOUNTPOINT, or all the vdev files of an unmounted pool")
      ->required();
  app->add_option("--config", args->config_path,
                  "for POOLFILEs: the config file whose tunables to show (default: the one a "
                  "mount would read)");
  return {app, [args] { return RunStatus(*args); }};
}

}  // namespace poolfs::daemon
