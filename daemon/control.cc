// ControlServer and ControlCall: see control.h.
#include "control.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <list>
#include <thread>
#include <utility>
#include <vector>

namespace poolfs::daemon {

namespace {

constexpr size_t kMaxRequest = 64 * 1024;
constexpr int kServerIoTimeoutSec = 5;   // a stuck client does not block the server longer
constexpr int kClientIoTimeoutSec = 60;  // a reload may take a moment

// Closes a file descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    Reset();
    fd_ = std::exchange(o.fd_, -1);
    return *this;
  }
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::string SocketDirPath() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') return std::string(runtime) + "/poolfs";
  return "/tmp/poolfs-" + std::to_string(geteuid());
}

// Creates the socket folder 0700, or checks that the existing one is ours
// (and closes it to others): a server's job. Clients only connect.
Status EnsureSocketDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::IOError("cannot create control folder " + dir + ": " + ErrnoText(errno));
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0)
    return Status::IOError("cannot examine control folder " + dir + ": " + ErrnoText(errno));
  if (!S_ISDIR(st.st_mode)) return Status::IOError("control folder " + dir + " is not a folder");
  if (st.st_uid != geteuid())
    return Status::IOError("control folder " + dir + " belongs to uid " +
                           std::to_string(st.st_uid) + ", not to us (uid " +
                           std::to_string(geteuid()) + ")");
  if ((st.st_mode & 077) != 0 && chmod(dir.c_str(), 0700) != 0)
    return Status::IOError("cannot close control folder " + dir +
                           " to others: " + ErrnoText(errno));
  return Status::Ok();
}

Result<std::string> CanonicalMountpoint(const std::string& mountpoint) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(mountpoint, ec);
  if (ec) return Status::InvalidArgument("bad mountpoint " + mountpoint + ": " + ec.message());
  p = p.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "/a/b/" -> "/a/b"
  if (p == p.root_path()) return p.string();
  fs::path parent = fs::canonical(p.parent_path(), ec);
  if (ec)
    return Status::NotFound("mountpoint " + mountpoint + ": folder " + p.parent_path().string() +
                            ": " + ec.message());
  return (parent / p.filename()).string();
}

Status FillAddress(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof addr->sun_path)
    return Status::InvalidArgument("control socket path " + path + " is too long");
  std::memcpy(addr->sun_path, path.data(), path.size());
  return Status::Ok();
}

void SetTimeouts(int fd, int seconds) {
  timeval tv{seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Writes all of `data`; false on error (errno set).
bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(size_t(n));
  }
  return true;
}

// Reads to EOF, at most `limit` bytes; false on error or past the limit.
bool RecvAll(int fd, size_t limit, std::string* out) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    if (out->size() + size_t(n) > limit) {
      errno = EMSGSIZE;
      return false;
    }
    out->append(buf, size_t(n));
  }
}

// Reads a request to EOF, at most `limit` bytes, as RecvAll, and the
// descriptors that came with it (SCM_RIGHTS) into `fds`; false on error or
// past the limit (errno set). Descriptors beyond the first few of a
// message are dropped by the kernel (MSG_CTRUNC): EINVAL then.
bool RecvRequest(int fd, size_t limit, std::string* out, std::vector<Fd>* fds) {
  char buf[4096];
  for (;;) {
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int received;
        std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof received);
        fds->emplace_back(received);
      }
    }
    if ((msg.msg_flags & MSG_CTRUNC) != 0) {
      errno = EINVAL;
      return false;
    }
    if (n == 0) return true;
    if (out->size() + size_t(n) > limit) {
      errno = EMSGSIZE;
      return false;
    }
    out->append(buf, size_t(n));
  }
}

// Sends `data` with a duplicate of `fd` attached to its first byte, then
// the rest; false on error (errno set).
bool SendWithFd(int sock, std::string_view data, int fd) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{const_cast<char*>(data.data()), data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t n;
  while ((n = ::sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  if (n < 0) return false;
  return SendAll(sock, data.substr(size_t(n)));
}

// Connects to `path`; the socket, or the errno of the failure.
Result<Fd> Connect(const std::string& path, int* err) {
  sockaddr_un addr;
  POOLFS_RETURN_IF_ERROR(FillAddress(path, &addr));
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Status::IOError("socket: " + ErrnoText(errno));
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == EINTR) continue;
    *err = errno;
    return Status::IOError("connect to " + path + ": " + ErrnoText(errno));
  }
  return fd;
}

}  // namespace

std::string ErrnoText(int err) { return std::strerror(err); }

std::string ControlDir() { return SocketDirPath(); }

uint64_t StableHash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

Status EnsureControlDir() { return EnsureSocketDir(SocketDirPath()); }

Result<std::string> ControlSocketPath(const std::string& mountpoint) {
  POOLFS_ASSIGN_OR_RETURN(std::string canonical, CanonicalMountpoint(mountpoint));
  const std::string dir = SocketDirPath();
  char name[40];
  std::snprintf(name, sizeof name, "/mnt-%016llx.sock",
                static_cast<unsigned long long>(StableHash(canonical)));
  return dir + name;
}

struct ControlServer::Impl {
  std::string mountpoint;
  std::string path;
  Handler handler;
  StreamHandler stream_handler;
  Fd listen_fd;
  Fd stop_read, stop_write;  // a pipe: writing to it ends the thread
  dev_t dev = 0;
  ino_t ino = 0;
  std::thread thread;

  // The threads of the stream requests. Only the control thread starts
  // and reaps them, and the destructor joins them once that thread has
  // ended: no lock needed.
  struct Stream {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  std::list<std::unique_ptr<Stream>> streams;

  void Serve();
  void ServeOne(Fd conn);
  // Starts the stream handler on its own thread for `request` and `fd`,
  // replying on `conn`.
  void StartStream(Fd conn, std::string request, Fd fd, pid_t pid);
  // Joins the stream threads that have ended.
  void ReapStreams();
};

void ControlServer::Impl::Serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd.get(), POLLIN, 0}, {stop_read.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("control socket {}: poll: {}", path, ErrnoText(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    Fd conn(::accept4(listen_fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.get() < 0) {
      if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
        spdlog::warn("control socket {}: accept: {}", path, ErrnoText(errno));
      continue;
    }
    ReapStreams();
    ServeOne(std::move(conn));
  }
}

void ControlServer::Impl::ReapStreams() {
  for (auto it = streams.begin(); it != streams.end();) {
    if ((*it)->done.load()) {
      (*it)->thread.join();
      it = streams.erase(it);
    } else {
      ++it;
    }
  }
}

void ControlServer::Impl::StartStream(Fd conn, std::string request, Fd fd, pid_t pid) {
  auto stream = std::make_unique<Stream>();
  Stream* raw = stream.get();
  stream->thread = std::thread(
      [this, raw, pid, c = std::move(conn), r = std::move(request), f = std::move(fd)]() mutable {
        std::string reply = stream_handler(r, f.get());
        // The pipe ends before the reply comes: the client has copied all of
        // the stream by the time it reads the reply.
        f.Reset();
        if (!SendAll(c.get(), reply))
          spdlog::warn("control socket {}: replying to pid {}: {}", path, pid, ErrnoText(errno));
        raw->done.store(true);
      });
  streams.push_back(std::move(stream));
}

void ControlServer::Impl::ServeOne(Fd conn) {
  const int fd = conn.get();
  SetTimeouts(fd, kServerIoTimeoutSec);
  ucred peer{};
  socklen_t len = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) {
    spdlog::warn("control socket {}: SO_PEERCRED: {}", path, ErrnoText(errno));
    return;
  }
  // The request is read before anything is decided, so the peer always gets
  // the reply (closing with unread data would reset the connection).
  std::string request;
  std::vector<Fd> fds;
  if (!RecvRequest(fd, kMaxRequest, &request, &fds)) {
    spdlog::warn("control socket {}: reading a request from pid {}: {}", path, peer.pid,
                 ErrnoText(errno));
    return;
  }
  if (peer.uid != 0 && peer.uid != geteuid()) {
    spdlog::warn(
        "control socket {}: refused uid {} (pid {}): only uid {} or root may control "
        "this mount",
        path, peer.uid, peer.pid, geteuid());
    SendAll(fd, "error: permission denied: uid " + std::to_string(peer.uid) +
                    " may not control the mount on " + mountpoint + "\n");
    return;
  }
  if (request.empty()) return;  // a probe: someone checking that we answer
  if (!fds.empty()) {
    std::string refusal;
    if (fds.size() > 1) {
      refusal = "error: a request carries at most one file descriptor, not " +
                std::to_string(fds.size()) + "\n";
    } else if (!stream_handler) {
      refusal = "error: this mount takes no stream (no send or receive here)\n";
    } else if (streams.size() >= size_t(kMaxStreams)) {
      refusal = "error: busy: " + std::to_string(kMaxStreams) +
                " sends and receives already run on the mount on " + mountpoint +
                "; wait for one to end\n";
    }
    if (!refusal.empty()) {
      fds.clear();  // the client's pipe ends before the reply comes
      SendAll(fd, refusal);
      return;
    }
    StartStream(std::move(conn), std::move(request), std::move(fds[0]), peer.pid);
    return;
  }
  const std::string reply = handler(request);
  if (!SendAll(fd, reply))
    spdlog::warn("control socket {}: replying to pid {}: {}", path, peer.pid, ErrnoText(errno));
}

Result<std::unique_ptr<ControlServer>> ControlServer::Start(const std::string& mountpoint,
                                                            Handler handler,
                                                            StreamHandler stream_handler) {
  auto impl = std::make_unique<Impl>();
  impl->mountpoint = mountpoint;
  impl->handler = std::move(handler);
  impl->stream_handler = std::move(stream_handler);
  POOLFS_ASSIGN_OR_RETURN(impl->path, ControlSocketPath(mountpoint));
  const std::string& path = impl->path;
  POOLFS_RETURN_IF_ERROR(EnsureSocketDir(SocketDirPath()));

  // A socket already there: a live daemon (Busy) or one left by a dead one.
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    int err = 0;
    if (Connect(path, &err).ok())
      return Status::Busy("a poolfs daemon already serves " + mountpoint + " (" + path + ")");
    if (!S_ISSOCK(st.st_mode))
      return Status::IOError(path + " exists and is not a socket; not replacing it");
    if (unlink(path.c_str()) != 0 && errno != ENOENT)
      return Status::IOError("cannot remove stale control socket " + path + ": " +
                             ErrnoText(errno));
  }

  sockaddr_un addr;
  POOLFS_RETURN_IF_ERROR(FillAddress(path, &addr));
  impl->listen_fd = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (impl->listen_fd.get() < 0) return Status::IOError("socket: " + ErrnoText(errno));
  const mode_t old_mask = umask(077);  // the socket is born 0600
  const int bound = ::bind(impl->listen_fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int bind_err = errno;
  umask(old_mask);
  if (bound != 0)
    return Status::IOError("cannot bind control socket " + path + ": " + ErrnoText(bind_err));
  if (lstat(path.c_str(), &st) == 0) {
    impl->dev = st.st_dev;
    impl->ino = st.st_ino;
  }
  if (::listen(impl->listen_fd.get(), 16) != 0) {
    const int err = errno;
    unlink(path.c_str());
    return Status::IOError("cannot listen on control socket " + path + ": " + ErrnoText(err));
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    const int err = errno;
    unlink(path.c_str());
    return Status::IOError("pipe: " + ErrnoText(err));
  }
  impl->stop_read = Fd(pipe_fds[0]);
  impl->stop_write = Fd(pipe_fds[1]);
  Impl* raw = impl.get();
  // Logged before the thread starts: its first log call must not be the one
  // that makes spdlog's registry (a static that libspdlog builds on first
  // use, out of TSan's sight).
  spdlog::debug("control socket for {} at {}", mountpoint, path);
  impl->thread = std::thread([raw] { raw->Serve(); });
  return std::unique_ptr<ControlServer>(new ControlServer(std::move(impl)));
}

ControlServer::ControlServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ControlServer::~ControlServer() {
  const char byte = 0;
  while (::write(impl_->stop_write.get(), &byte, 1) < 0 && errno == EINTR) {
  }
  impl_->thread.join();
  for (auto& s : impl_->streams) s->thread.join();
  impl_->streams.clear();
  // Remove the socket only if it is still ours (not one a later daemon bound).
  struct stat st;
  if (lstat(impl_->path.c_str(), &st) == 0 && st.st_dev == impl_->dev && st.st_ino == impl_->ino)
    unlink(impl_->path.c_str());
}

const std::string& ControlServer::socket_path() const { return impl_->path; }

namespace {

// The client's connection to the daemon serving `mountpoint`.
Result<Fd> ConnectToDaemon(const std::string& mountpoint) {
  POOLFS_ASSIGN_OR_RETURN(std::string path, ControlSocketPath(mountpoint));
  int err = 0;
  auto fd = Connect(path, &err);
  if (!fd.ok()) {
    if (err == ENOENT || err == ECONNREFUSED)
      return Status::NotFound("no poolfs daemon serves " + mountpoint);
    if (err == EACCES || err == EPERM)
      return Status(StatusCode::kPermissionDenied,
                    "not allowed to talk to the daemon serving " + mountpoint + " (" + path + ")");
    return fd.status();
  }
  return fd;
}

}  // namespace

Result<std::string> ControlCall(const std::string& mountpoint, std::string_view request) {
  POOLFS_ASSIGN_OR_RETURN(Fd fd, ConnectToDaemon(mountpoint));
  SetTimeouts(fd.get(), kClientIoTimeoutSec);
  if (!SendAll(fd.get(), request) || ::shutdown(fd.get(), SHUT_WR) != 0) {
    // The server may have refused us before reading (another uid): read its reply anyway.
    if (errno != EPIPE && errno != ECONNRESET)
      return Status::IOError("sending to the daemon serving " + mountpoint + ": " +
                             ErrnoText(errno));
  }
  std::string reply;
  if (!RecvAll(fd.get(), 16 << 20, &reply))
    return Status::IOError("reading the reply of the daemon serving " + mountpoint + ": " +
                           ErrnoText(errno));
  if (reply.starts_with("error: permission denied"))
    return Status(StatusCode::kPermissionDenied, reply.substr(7));
  return reply;
}

PendingReply::PendingReply(int socket_fd, std::string mountpoint)
    : fd_(socket_fd), mountpoint_(std::move(mountpoint)) {}

PendingReply::~PendingReply() {
  if (fd_ >= 0) ::close(fd_);
}

PendingReply::PendingReply(PendingReply&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), mountpoint_(std::move(o.mountpoint_)) {}

Result<std::string> PendingReply::Wait() {
  if (fd_ < 0) return Status::InvalidArgument("no reply to wait for");
  SetTimeouts(fd_, 0);  // 0: no limit
  std::string reply;
  const bool read = RecvAll(fd_, 16 << 20, &reply);
  const int err = errno;
  ::close(fd_);
  fd_ = -1;
  if (!read)
    return Status::IOError("reading the reply of the daemon serving " + mountpoint_ + ": " +
                           ErrnoText(err));
  if (reply.empty())
    return Status::IOError("the daemon serving " + mountpoint_ +
                           " closed the connection without a reply (did it stop?)");
  if (reply.starts_with("error: permission denied"))
    return Status(StatusCode::kPermissionDenied, reply.substr(7));
  return reply;
}

Result<PendingReply> ControlCallWithFd(const std::string& mountpoint, std::string_view request,
                                       int fd) {
  POOLFS_ASSIGN_OR_RETURN(Fd sock, ConnectToDaemon(mountpoint));
  SetTimeouts(sock.get(), kClientIoTimeoutSec);
  if (!SendWithFd(sock.get(), request, fd) || ::shutdown(sock.get(), SHUT_WR) != 0) {
    // Refused before reading (another uid): the reply says why.
    if (errno != EPIPE && errno != ECONNRESET)
      return Status::IOError("sending to the daemon serving " + mountpoint + ": " +
                             ErrnoText(errno));
  }
  return PendingReply(sock.Release(), mountpoint);
}

}  // namespace poolfs::daemon
