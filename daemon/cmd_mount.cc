// `poolfs mount POOLFILE MOUNTPOINT [-o OPTIONS] [--config FILE] [-f]`:
// imports the pool and serves it through FUSE until it is unmounted.
//
// The daemon's life, in order:
//   1. PlanMount: arguments, config file, pool file and mount point checks
//      (mount_plan.h); errors go straight to stderr.
//   2. In the background (default) fork; the parent waits for the daemon's
//      report and exits with it (mount_detach.h).
//   3. Logging (daemon/logging.h), the Asio sync executor (txg.sync_threads
//      threads, one strand per allocator), Filesystem::Mount, the FUSE
//      mount, the pool's entry in the registry of this user's mounted pools
//      (pool_registry.h: a second pool of the same name is refused here),
//      the control socket (`poolfs status/tune`); then the report
//      "mounted", and the request loop.
//   4. A signal thread: SIGHUP reloads the config (LiveConfig), SIGTERM and
//      SIGINT detach the mount so the loop ends.
//   5. When the loop ends (signal, `fusermount3 -u`, `poolfs unmount`):
//      the sends and receives still running are cancelled (each fails,
//      saying the pool was unmounted) and waited for, then
//      Filesystem::Unmount (final sync, export), then the control socket
//      closes, which is what `poolfs unmount` waits for.
//
// Threads: main (the FUSE loop's owner), the FUSE workers, the signal
// thread, the control thread, a thread per running send or receive (the
// control socket's stream requests), the Asio sync pool and the core's
// own. The signals are blocked in all of them but the signal thread's
// sigtimedwait.
#include <signal.h>
#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "asio_executor.h"
#include "command.h"
#include "control.h"
#include "dataset_mounts.h"
#include "dataset_request.h"
#include "live_config.h"
#include "logging.h"
#include "mount_detach.h"
#include "mount_plan.h"
#include "mount_table.h"
#include "pool_registry.h"
#include "replication_request.h"

namespace poolfs::daemon {
namespace {

std::string JoinOptions(const std::vector<std::string>& opts) {
  std::string s;
  for (const std::string& o : opts) s += (s.empty() ? "" : ",") + o;
  return s.empty() ? "defaults" : s;
}

// Serves signals until `stop` is set: SIGHUP reloads, SIGTERM and SIGINT
// detach the mount.
void SignalLoop(const sigset_t& set, std::atomic<bool>& stop, fuse::FuseServer& server,
                LiveConfig& live, DatasetMounts& dataset_mounts) {
  const timespec tick{0, 200 * 1000 * 1000};
  while (!stop.load()) {
    const int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGHUP) {
      spdlog::info("SIGHUP: reloading {}",
                   live.config_path().empty() ? "(no config file: defaults)" : live.config_path());
      (void)live.Reload();  // logs what changed, or why the file was refused
    } else if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("{}: unmounting {} (final sync and export follow)",
                   sig == SIGTERM ? "SIGTERM" : "SIGINT", server.mountpoint());
      // The pool's dataset mounts first, as `poolfs unmount` does.
      Status ds = dataset_mounts.UnmountAll(/*lazy=*/true, /*wait=*/false);
      if (!ds.ok()) spdlog::error("unmount of the dataset mounts on signal: {}", ds.ToString());
      Status st = server.RequestUnmount();
      if (!st.ok()) spdlog::error("unmount on signal failed: {}", st.ToString());
    }
  }
}

// Steps 3 to 5 above, in the daemon (or the foreground process).
int ServeMount(const MountPlan& plan, bool foreground, StartupReport& report) {
  auto fail = [&](const Status& st, const char* what) {
    spdlog::error("mount of {} on {} failed ({}): {}", plan.pool_file, plan.mountpoint, what,
                  st.ToString());
    report.Failed(ExitCodeFor(st), st.message());
    return ExitCodeFor(st);
  };
  const config::TunableInfo* log_level = config::FindTunable("log.level");
  const std::string level = log_level->Format(plan.config.raw(*log_level));
  Status st = SetupLogging(foreground, plan.pool_file, level);
  if (!st.ok()) {
    report.Failed(kExitFailure, "logging: " + st.message());
    return kExitFailure;
  }

  // Its strands follow the imported pool's allocator count (the pool passes
  // it to each BeginSync); txg.sync_threads may change live (LiveConfig).
  AsioExecutor executor(plan.sync_threads);
  MountOptions core = plan.core;
  core.executor = &executor;
  core.on_txg_synced = [](uint64_t txg, uint64_t ns, uint64_t bytes) {
    spdlog::debug("txg {} synced in {:.1f} ms, {} bytes written", txg, double(ns) / 1e6, bytes);
  };
  auto fs = Filesystem::Mount({plan.pool_file}, core);
  if (!fs.ok()) return fail(fs.status(), "import");
  // A rewind's choice, labels repaired: for the log, and a rewind's for the
  // terminal too.
  std::string rewind_note;
  for (const std::string& note : (*fs)->GetStatus().import_notes) {
    spdlog::warn("{}: {}", plan.pool_file, note);
    if (core.rewind && rewind_note.empty()) rewind_note = note;
  }
  // One mount per pool name for this user: `poolfs dataset` and the other
  // commands find the mount by the pool's name.
  auto registration = PoolRegistration::Register((*fs)->GetStatus().pool, plan.mountpoint);
  if (!registration.ok()) {
    Status ust = (*fs)->Unmount();
    if (!ust.ok()) spdlog::error("export after the refused mount: {}", ust.ToString());
    return fail(registration.status(), "pool name");
  }

  auto server = fuse::FuseServer::Mount(fs->get(), plan.fuse);
  if (!server.ok()) {
    Status ust = (*fs)->Unmount();
    if (!ust.ok()) spdlog::error("export after the failed mount: {}", ust.ToString());
    return fail(server.status(), "FUSE mount");
  }

  LiveConfig live(plan.config, plan.config_path, fs->get());
  live.UseExecutor(&executor);
  std::atomic<bool> closing{false};
  Filesystem& filesystem = **fs;
  // The pool's datasets mounted on their own beside this mount (`poolfs
  // mount POOL/PATH MNT`); their control sockets serve what this one does.
  std::function<std::string(std::string_view)> serve;
  DatasetMounts dataset_mounts(&filesystem, plan.fuse, plan.read_ahead_bytes,
                               [&serve](std::string_view request) { return serve(request); });
  serve = [&](std::string_view request) {
    if (closing.load()) return std::string("error: unmounting");
    if (request == "status")
      return RenderStatus(filesystem.GetStatus(), live.Snapshot(), live.Pending(),
                          foreground ? "stderr (poolfs mount -f)" : plan.log_path,
                          dataset_mounts.Describe());
    return HandleControlRequest(live, filesystem, request);
  };
  // `poolfs send` and `poolfs receive`: each on a thread of the control
  // server's, until the unmount below cancels what still runs.
  StreamJobs streams;
  auto serve_stream = [&](std::string_view request, int fd) {
    if (closing.load())
      return EncodeStatus(Status(StatusCode::kAborted, "the pool is being unmounted"));
    return HandleStreamRequest(filesystem.datasets(), streams, request, fd);
  };
  auto control = ControlServer::Start(
      plan.mountpoint,
      [&](std::string_view request) {
        if (request == "ping") return std::string("pong");
        if (closing.load()) return std::string("error: unmounting");
        if (request.starts_with("mount-dataset ")) {
          Result<DatasetMountRequest> r = DecodeDatasetMountRequest(request.substr(14));
          return EncodeStatus(r.ok() ? dataset_mounts.Mount(*r) : r.status());
        }
        if (request == "unmount-datasets" || request == "unmount-datasets lazy") {
          const bool lazy = request.ends_with("lazy");
          return EncodeStatus(dataset_mounts.UnmountAll(lazy, /*wait=*/!lazy));
        }
        if (IsStreamRequest(request))
          return std::string(
              "error: a send or receive request needs its stream's pipe (poolfs send "
              "and poolfs receive give it)\n");
        return serve(request);
      },
      serve_stream);
  if (!control.ok()) {
    spdlog::warn("no control socket for {} (poolfs status/tune will not reach it): {}",
                 plan.mountpoint, control.status().ToString());
  }

  spdlog::info(
      "mounted pool {} on {} (options {}; config {}; {} FUSE threads, {} sync threads, "
      "{} strands, one per allocator)",
      plan.pool_file, plan.mountpoint, JoinOptions(plan.fuse.mount_options),
      plan.config_path.empty() ? "defaults" : plan.config_path,
      plan.fuse.threads ? plan.fuse.threads : fuse::FuseOptions::DefaultThreads(),
      executor.threads(), executor.strands());

  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  std::atomic<bool> stop{false};
  std::thread signals([&] { SignalLoop(set, stop, **server, live, dataset_mounts); });

  // `poolfs mount` returns once the mount answers a request: this thread's
  // stat of its root waits for the loop below to answer FUSE's INIT and
  // then the GETATTR. Only then can the readahead be set: the kernel sets
  // it from INIT's answer (to at most the 128 KiB it offers).
  fuse::FuseServer& fuse_server = **server;
  std::thread first_request([&plan, &report, &fuse_server, &rewind_note] {
    struct stat root;
    if (stat(plan.mountpoint.c_str(), &root) != 0) {
      const int err = errno;
      report.Failed(kExitFailure,
                    "the mount on " + plan.mountpoint + " does not answer: " + std::strerror(err));
      // `poolfs mount` said it failed: the daemon does not stay.
      Status unmounted = fuse_server.RequestUnmount();
      if (!unmounted.ok())
        spdlog::error("unmount after the failed start: {}", unmounted.ToString());
      return;
    }
    if (plan.read_ahead_bytes != 0) {
      Status ra = SetReadAhead(plan.mountpoint, plan.read_ahead_bytes);
      if (ra.ok()) {
        spdlog::debug("readahead on {} set to {} KiB", plan.mountpoint,
                      plan.read_ahead_bytes / 1024);
      } else {
        spdlog::info("readahead on {} left as the kernel set it (fuse.read_ahead_bytes): {}",
                     plan.mountpoint, ra.ToString());
      }
    }
    report.Succeeded(rewind_note);
  });
  Status run = (*server)->Run();
  if (!run.ok()) spdlog::error("{}", run.ToString());
  stop.store(true);
  signals.join();
  first_request.join();
  server->reset();

  closing.store(true);
  // No send or receive may outlive the pool: they fail now, saying why.
  if (streams.running() > 0)
    spdlog::info("unmounting {}: cancelling {} running send(s) and receive(s)", plan.mountpoint,
                 streams.running());
  streams.CancelAndWait("the pool's mount on " + plan.mountpoint +
                        " was unmounted while the stream ran; mount it again and run the "
                        "command again");
  // The dataset mounts end before the pool is exported (detached: one in
  // use ends when its last user leaves).
  Status ds = dataset_mounts.UnmountAll(/*lazy=*/true);
  if (!ds.ok()) spdlog::error("unmount of the dataset mounts: {}", ds.ToString());
  Status ust = (*fs)->Unmount();
  if (ust.ok()) {
    spdlog::info("unmounted {}: pool {} synced and exported", plan.mountpoint, plan.pool_file);
  } else {
    spdlog::error("unmount of {}: final sync or export of {} failed: {}", plan.mountpoint,
                  plan.pool_file, ust.ToString());
  }
  if (control.ok()) control->reset();  // `poolfs unmount` waits for the socket to go
  registration->reset();
  return ust.ok() && run.ok() ? kExitOk : kExitFailure;
}

// `poolfs mount POOL/PATH MNT` while POOL is mounted: its daemon mounts
// the dataset (dataset_mounts.h).
int RunDatasetMount(const MountArgs& args) {
  auto plan = PlanDatasetMount(args);
  if (!plan.ok()) return ReportError("mount", plan.status());
  for (const std::string& note : plan->notes) std::cerr << "poolfs mount: " << note << "\n";
  auto reply = ControlCall(plan->pool_mountpoint,
                           "mount-dataset " + EncodeDatasetMountRequest(plan->request));
  if (!reply.ok()) return ReportError("mount", reply.status());
  if (reply->starts_with("error: ")) {
    return ReportError("mount", Status::IOError("the daemon of " + plan->pool_mountpoint + ": " +
                                                reply->substr(7)));
  }
  const Status st = DecodeStatus(*reply);
  return st.ok() ? kExitOk : ReportError("mount", st);
}

int RunMount(const MountArgs& args) {
  if (IsDatasetMount(args)) return RunDatasetMount(args);
  auto plan = PlanMount(args);
  if (!plan.ok()) return ReportError("mount", plan.status());
  for (const std::string& note : plan->notes) std::cerr << "poolfs mount: " << note << "\n";
  // Every thread inherits this mask; the signal thread takes them with
  // sigtimedwait, so a signal during the start waits for it.
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  StartupReport report;
  report.set_log_path(plan->log_path);
  if (!args.foreground) {
    if (std::optional<int> parent_exit = report.Detach()) return *parent_exit;
  }
  return ServeMount(*plan, args.foreground, report);
}

}  // namespace

Command AddMountCommand(CLI::App& parent) {
  auto args = std::make_shared<MountArgs>();
  CLI::App* app = parent.add_subcommand(
      "mount",
      "Mount a pool through FUSE (as any user, through fusermount3); runs in the background "
      "once the mount is up, until fusermount3 -u, poolfs unmount, SIGTERM or SIGINT");
  app->add_option("SOURCE", args->pool_file,
                  "the pool's vdev file; or a dataset, POOL/PATH: with --pool, one dataset's "
                  "tree from the pool's file; without, a dataset of a pool this user has "
                  "mounted, mounted beside it by its daemon")
      ->required();
  app->add_option("--pool", args->pool_option,
                  "the pool's vdev file, to mount one dataset's tree: --pool FILE POOL/PATH MNT");
  app->add_option("MOUNTPOINT", args->mountpoint, "an existing empty directory")->required();
  app->add_option("-o", args->options,
                  "mount options, comma-separated: ro, allow_other, dev and suid (root only: "
                  "mounts are nodev,nosuid unless asked), and poolfs's own "
                  "rewind (with ro: when the newest txg's tree does not verify, open the newest "
                  "older one, within two txgs, that does; it says which), "
                  "relatime (the default), strictatime, noatime (when reads move atime), "
                  "entry_timeout=S, attr_timeout=S, negative_timeout=S (seconds the kernel "
                  "caches names, attributes and absent names). default_permissions is always on "
                  "(the kernel checks mode bits, cached names included; poolfs checks them too) "
                  "and cannot be turned off")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--config", args->config_path,
                  "the config file (default: $XDG_CONFIG_HOME/poolfs/poolfs.toml, "
                  "~/.config/poolfs/poolfs.toml, /etc/poolfs/poolfs.toml); a relative path is "
                  "taken from the current folder, and SIGHUP reads the same file again");
  app->add_flag("-f,--foreground", args->foreground, "stay in the foreground, logging to stderr");
  return {app, [args] { return RunMount(*args); }};
}

}  // namespace poolfs::daemon
