#include "fuse_server.h"

#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <thread>

#include "adapter.h"
#include "cache_notifier.h"
#include "kernel_channel.h"
#include "poolfs/mutex.h"

extern char** environ;

namespace poolfs::fuse {
namespace {

// libfuse's messages go to our log; the last error is kept for the Status.
// libfuse writes some lines in pieces, so a line is logged at its '\n'.
util::Mutex g_log_mu;
std::string g_partial_line GUARDED_BY(g_log_mu);
std::string g_last_fuse_error GUARDED_BY(g_log_mu);

void LogFromFuse(enum fuse_log_level level, const char* fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, ap);
  std::string line;
  {
    util::MutexLock l(&g_log_mu);
    g_partial_line += buf;
    if (g_partial_line.empty() || g_partial_line.back() != '\n') return;
    g_partial_line.pop_back();
    line = std::move(g_partial_line);
    g_partial_line.clear();
    if (level <= FUSE_LOG_ERR) g_last_fuse_error = line;
  }
  if (level <= FUSE_LOG_ERR) {
    spdlog::error("libfuse: {}", line);
  } else if (level <= FUSE_LOG_NOTICE) {
    spdlog::info("libfuse: {}", line);
  } else {
    spdlog::debug("libfuse: {}", line);
  }
}

std::string TakeLastFuseError() {
  util::MutexLock l(&g_log_mu);
  std::string s = std::move(g_last_fuse_error);
  g_last_fuse_error.clear();
  return s.empty() ? "" : " (" + s + ")";
}

// libfuse splits -o values on ',' and reads '\' as an escape.
std::string EscapeOption(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == ',' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

uint32_t FuseOptions::DefaultThreads() {
  return std::clamp(std::thread::hardware_concurrency(), 2u, 16u);
}

FuseServer::FuseServer(Filesystem* fs, const FuseOptions& options)
    : options_(options), adapter_(std::make_unique<Adapter>()) {
  adapter_->fs = fs;
  adapter_->entry_timeout = options.entry_timeout;
  adapter_->attr_timeout = options.attr_timeout;
  adapter_->negative_timeout = options.negative_timeout;
  adapter_->writeback_cache = options.writeback_cache;
}

Result<std::unique_ptr<FuseServer>> FuseServer::Mount(Filesystem* fs, const FuseOptions& options) {
  fuse_set_log_func(LogFromFuse);
  std::unique_ptr<FuseServer> server(new FuseServer(fs, options));
  std::string opts = "subtype=poolfs";
  if (!options.fsname.empty()) opts += ",fsname=" + EscapeOption(options.fsname);
  for (const std::string& o : options.mount_options) opts += "," + o;
  std::vector<std::string> argv_store = {"poolfs", "-o", opts};
  std::vector<char*> argv;
  for (std::string& s : argv_store) argv.push_back(s.data());
  fuse_args args = FUSE_ARGS_INIT(int(argv.size()), argv.data());
  const fuse_lowlevel_ops ops = MakeOps();
  server->session_ = fuse_session_new(&args, &ops, sizeof ops, server->adapter_.get());
  fuse_opt_free_args(&args);
  if (server->session_ == nullptr) {
    return Status::InvalidArgument("FUSE session with options '" + opts + "' refused" +
                                   TakeLastFuseError());
  }
  server->notifier_ = std::make_unique<CacheNotifier>(server->session_);
  server->adapter_->notifier = server->notifier_.get();
  if (fuse_session_mount(server->session_, options.mountpoint.c_str()) != 0) {
    return Status::IOError("mounting on " + options.mountpoint + " failed" + TakeLastFuseError());
  }
  server->mounted_ = true;
  if (options.handle_killpriv) {
    server->channel_ = std::make_unique<KernelChannel>(kInitHandleKillprivV2);
    server->adapter_->channel = server->channel_.get();
    if (const int rc = server->channel_->Install(server->session_); rc != 0)
      return Status::IOError("FUSE session on " + options.mountpoint +
                             ": its device channel was refused: " + std::strerror(-rc));
  }
  // Names the filesystem changes on its own (datasets created, renamed,
  // destroyed) leave the kernel's cache at once. ENOENT: the kernel had
  // no such entry, nothing to forget.
  fuse_session* se = server->session_;
  fs->SetEntryInvalidator([se](uint64_t parent, std::string_view name) {
    const int rc = fuse_lowlevel_notify_inval_entry(se, parent, name.data(), name.size());
    if (rc != 0 && rc != -ENOENT)
      spdlog::debug("kernel entry {} in {} not invalidated: {}", name, parent, std::strerror(-rc));
  });
  // Files changed through another mount of the same files: attributes and
  // every cached page.
  fs->SetInodeInvalidator([se](uint64_t ino) {
    const int rc = fuse_lowlevel_notify_inval_inode(se, ino, 0, 0);
    if (rc != 0 && rc != -ENOENT)
      spdlog::debug("kernel cache of inode {} not invalidated: {}", ino, std::strerror(-rc));
  });
  // A change that leaves relatime's next read to a kernel that would
  // serve it from its pages (Filesystem::SetPageDropper).
  fs->SetPageDropper([notifier = server->notifier_.get()](uint64_t ino) {
    notifier->Post(ino, 0, 0, {});
  });
  return server;
}

FuseServer::~FuseServer() {
  if (session_ == nullptr) return;
  adapter_->fs->SetEntryInvalidator({});
  adapter_->fs->SetInodeInvalidator({});
  adapter_->fs->SetPageDropper({});
  if (notifier_) notifier_->Stop();
  if (mounted_) fuse_session_unmount(session_);
  fuse_session_destroy(session_);
}

bool FuseServer::filesystem_clears_privileges() const {
  return KernelLeavesPrivileges(*adapter_);
}

Status FuseServer::Run() {
  int rc;
  if (options_.single_threaded || options_.threads == 1) {
    rc = fuse_session_loop(session_);
  } else {
    fuse_loop_config* cfg = fuse_loop_cfg_create();
    const uint32_t threads =
        options_.threads != 0 ? options_.threads : FuseOptions::DefaultThreads();
    fuse_loop_cfg_set_max_threads(cfg, threads);
    fuse_loop_cfg_set_clone_fd(cfg, options_.clone_fd ? 1 : 0);
    rc = fuse_session_loop_mt(session_, cfg);
    fuse_loop_cfg_destroy(cfg);
  }
  // What the workers handed the notifier is done (its replies sent, to a
  // connection that may be gone) while the session's descriptor is open.
  notifier_->Stop();
  // The connection is gone (or the loop failed): release the mount point.
  fuse_session_unmount(session_);
  mounted_ = false;
  if (rc != 0) {
    return Status::IOError("FUSE request loop on " + options_.mountpoint + " ended with error " +
                           std::to_string(rc) + TakeLastFuseError());
  }
  return Status::Ok();
}

Status FuseServer::RequestUnmount() {
  const std::string& mp = options_.mountpoint;
  if (geteuid() == 0) {
    if (umount2(mp.c_str(), MNT_DETACH) != 0 && errno != EINVAL) {
      return Status::IOError("umount " + mp + ": " + std::strerror(errno));
    }
    return Status::Ok();
  }
  const char* argv[] = {"fusermount3", "-u", "-z", "-q", "--", mp.c_str(), nullptr};
  pid_t pid;
  int err = posix_spawnp(&pid, "fusermount3", nullptr, nullptr, const_cast<char**>(argv), environ);
  if (err != 0) return Status::IOError(std::string("running fusermount3: ") + std::strerror(err));
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status::IOError("fusermount3 -u -z " + mp + " failed");
  }
  return Status::Ok();
}

}  // namespace poolfs::fuse
