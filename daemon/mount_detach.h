// Starting `poolfs mount` in the background without losing its errors.
//
// The mount forks before it creates any thread (the sync executor, the
// Filesystem's txg thread and the FUSE workers must all live in the
// daemon). The parent then waits on a pipe: the daemon (the child) writes
// either "ok" once the mount is up, or an exit code and the error message,
// and only then does the parent exit, with that code (printing the
// message). So `poolfs mount` returns after the mount is usable, or fails
// with the real reason; a daemon that dies before it reports is reported
// too. The child starts its own session, leaves the caller's working
// directory, and on success puts /dev/null on its standard streams.
//
// In the foreground (-f) there is no fork: the same StartupReport prints
// a failure to stderr and does nothing on success.
//
// Thread safety: Detach before any other thread exists; then one thread at a
// time (the mount reports success from the thread that waits for the mount
// to answer a first request, while main's thread runs the request loop).
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace poolfs::daemon {

class StartupReport {
 public:
  // A report for a foreground mount.
  StartupReport() = default;
  ~StartupReport();
  StartupReport(const StartupReport&) = delete;
  StartupReport& operator=(const StartupReport&) = delete;

  // Forks. In the parent: waits for the daemon's report and returns the
  // exit code for `poolfs mount` (after printing the daemon's error, if
  // any). In the daemon: returns nullopt, and `*this` becomes the
  // daemon's side of the pipe.
  std::optional<int> Detach();

  // The mount is up: tells the parent (which prints `note`, when there is
  // one, as "poolfs mount: NOTE" to stderr, and exits 0) and detaches from
  // the terminal. Idempotent. In the foreground the note is only logged.
  void Succeeded(const std::string& note = "");
  // The mount failed: prints "poolfs mount: MESSAGE" to stderr in the
  // foreground, or hands the code and message to the parent.
  void Failed(int exit_code, const std::string& message);

  // The daemon's log, named when it dies before it reports.
  void set_log_path(std::string path) { log_path_ = std::move(path); }

 private:
  std::string log_path_;
  int fd_ = -1;  // the daemon's end of the pipe; -1 in the foreground
  bool done_ = false;
};

}  // namespace poolfs::daemon
