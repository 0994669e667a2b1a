// Stream bytes on file descriptors, and their progress: see stream_io.h.
#include "stream_io.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include "dataset_request.h"

namespace poolfs::daemon {
namespace {

std::string ErrnoMessage(std::string_view doing, std::string_view what, int err) {
  return std::string(doing) + " " + std::string(what) + ": " + std::strerror(err);
}

// Blocks SIGPIPE on this thread for its scope; a SIGPIPE raised meanwhile
// (by a write to a pipe without reader) is taken back at the end, unless
// one was already pending before.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};

// Waits until `fd` is ready for `events` or `cancel` fires: OK, the
// cancel's status, or IOError.
Status WaitReady(int fd, short events, const StreamCancel& cancel, std::string_view doing,
                 std::string_view what) {
  for (;;) {
    if (cancel.cancelled()) return cancel.status();
    pollfd fds[2] = {{fd, events, 0}, {cancel.fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(ErrnoMessage(doing, what, errno));
    }
    if (fds[1].revents != 0) return cancel.status();
    // POLLHUP/POLLERR: the next read or write says what happened.
    if (fds[0].revents != 0) return Status::Ok();
  }
}

void MakeNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK) == 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

}  // namespace

StreamCancel::StreamCancel() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) == 0) {
    read_fd_ = fds[0];
    write_fd_ = fds[1];
  }
}

StreamCancel::~StreamCancel() {
  if (read_fd_ >= 0) ::close(read_fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
}

void StreamCancel::Cancel(std::string reason) {
  {
    util::MutexLock l(&mu_);
    if (cancelled_.load()) return;
    reason_ = std::move(reason);
    cancelled_.store(true);
  }
  const char byte = 1;
  while (write_fd_ >= 0 && ::write(write_fd_, &byte, 1) < 0 && errno == EINTR) {
  }
}

Status StreamCancel::status() const {
  util::MutexLock l(&mu_);
  return Status(StatusCode::kAborted, reason_);
}

Status WriteAll(int fd, std::string_view bytes, std::string_view what, const StreamCancel* cancel) {
  SigpipeGuard guard;
  if (cancel != nullptr) MakeNonBlocking(fd);
  while (!bytes.empty()) {
    if (cancel != nullptr) {
      POOLFS_RETURN_IF_ERROR(WaitReady(fd, POLLOUT, *cancel, "writing to", what));
    }
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::IOError(ErrnoMessage("writing to", what, errno));
    }
    bytes.remove_prefix(size_t(n));
  }
  return Status::Ok();
}

Result<size_t> ReadSome(int fd, std::span<char> buf, std::string_view what,
                        const StreamCancel* cancel) {
  if (buf.empty()) return size_t{0};
  if (cancel != nullptr) MakeNonBlocking(fd);
  for (;;) {
    if (cancel != nullptr) {
      POOLFS_RETURN_IF_ERROR(WaitReady(fd, POLLIN, *cancel, "reading", what));
    }
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n >= 0) return size_t(n);
    if (errno == EINTR || errno == EAGAIN) continue;
    return Status::IOError(ErrnoMessage("reading", what, errno));
  }
}

std::string HumanRate(uint64_t bytes, double seconds) {
  if (seconds <= 0) return "-";
  return HumanBytes(uint64_t(double(bytes) / seconds)) + "/s";
}

std::string HumanDuration(double seconds) {
  const uint64_t s = seconds <= 0 ? 0 : uint64_t(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%llu:%02llu:%02llu", (unsigned long long)(s / 3600),
                  (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llu:%02llu", (unsigned long long)(s / 60),
                  (unsigned long long)(s % 60));
  }
  return buf;
}

std::string ProgressLine(std::string_view verb, uint64_t bytes, double seconds,
                         std::optional<uint64_t> estimate) {
  std::string line = HumanBytes(bytes) + " " + std::string(verb) + ", " + HumanRate(bytes, seconds);
  if (estimate.has_value() && *estimate > 0) {
    const uint64_t total = std::max(*estimate, bytes);
    const int pct = int(double(bytes) * 100.0 / double(total));
    if (bytes > 0 && seconds > 0) {
      const double left = double(total - bytes) * seconds / double(bytes);
      line += ", " + HumanDuration(left) + " left";
    }
    line += " (" + std::to_string(pct) + "% of " + HumanBytes(total) + ")";
  }
  return line;
}

StreamProgress::StreamProgress(bool enabled, std::string verb, std::optional<uint64_t> estimate)
    : enabled_(enabled),
      verb_(std::move(verb)),
      estimate_(estimate),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

StreamProgress::~StreamProgress() { Finish(); }

double StreamProgress::Seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void StreamProgress::Add(size_t bytes) {
  bytes_ += bytes;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(500)) return;
  last_draw_ = now;
  // "\r" and clear to the end of the line: the line is redrawn in place.
  std::cerr << "\r" << ProgressLine(verb_, bytes_, Seconds(), estimate_) << "\033[K" << std::flush;
  drawn_ = true;
}

void StreamProgress::Finish() {
  if (drawn_) std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
}

Result<uint64_t> CopyFd(int in, int out, std::string_view in_name, std::string_view out_name,
                        const std::function<void(size_t)>& on_bytes) {
  std::vector<char> buf(256 * 1024);
  uint64_t total = 0;
  for (;;) {
    POOLFS_ASSIGN_OR_RETURN(size_t n, ReadSome(in, buf, in_name));
    if (n == 0) return total;
    POOLFS_RETURN_IF_ERROR(WriteAll(out, std::string_view(buf.data(), n), out_name));
    total += n;
    if (on_bytes) on_bytes(n);
  }
}

}  // namespace poolfs::daemon
