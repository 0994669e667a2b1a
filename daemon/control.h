// ControlServer and ControlCall: the control socket of a mount.
//
// Each mount serves a unix-domain stream socket whose path is derived from
// the canonical mountpoint: <dir>/mnt-<hash>.sock, where <dir> is
// $XDG_RUNTIME_DIR/poolfs (when set and absolute) or /tmp/poolfs-<uid>,
// created with mode 0700 (an existing folder must belong to us and not be
// reachable by others), and <hash> is a hex hash of the canonical
// mountpoint (a path may be longer than sun_path allows). The canonical
// mountpoint is the real path of its parent folder plus its last component:
// the mountpoint itself is never stat'ed, so a client is not stuck on a hung
// or dead FUSE mount (a mountpoint that is itself a symlink must therefore
// be named the same way by the daemon and its clients).
//
// Protocol: one request per connection. The client writes the request and
// shuts down its writing side; the server reads to EOF (at most 64 KiB),
// calls the handler, writes its reply and closes (an empty request is a
// probe: closed without calling the handler). Peers are checked with
// SO_PEERCRED: only the daemon's uid or root may talk; others get the reply
// "error: permission denied" and the handler is not called.
//
// Stream requests. A request may carry one file descriptor (SCM_RIGHTS, on
// its first bytes): `poolfs send` and `poolfs receive` hand the daemon one
// end of a pipe that the client copies to its stdout or from its stdin. Such
// a request goes to the stream handler, on a thread of its own, because it
// lasts as long as the stream (minutes): the control thread goes on serving
// `status` and `dataset list` meanwhile. The server closes the descriptor
// when the stream handler returns, then writes its reply: the client sees
// the end of its pipe first, then the reply. At most kMaxStreams run at
// once; more are refused ("error: busy: ..."). A server without a stream
// handler refuses a descriptor.
//
// Thread safety: a ControlServer runs one thread that serves connections one
// at a time; the handler runs on it. Each stream request runs the stream
// handler on a thread of its own, concurrently with the handler and with
// other streams. The destructor stops the control thread, then waits for
// every stream thread (the owner makes the stream handlers return first:
// replication_request.h's StreamJobs::CancelAndWait), and removes the
// socket. ControlCall and ControlCallWithFd may be called from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "poolfs/status.h"

namespace poolfs::daemon {

// The folder that holds the control sockets and the pool registry (see
// above); nothing is created.
std::string ControlDir();
// strerror(err), for the messages of the control folder's files.
std::string ErrnoText(int err);
// A stable 64-bit name for a string (a mount point, a pool's name), for file
// names in ControlDir() that stay short: FNV-1a, not a security boundary
// (the folder's mode and SO_PEERCRED are).
uint64_t StableHash(std::string_view s);
// Creates ControlDir() 0700, or checks that the existing one is ours and
// closes it to others: a server's job (clients only connect).
poolfs::Status EnsureControlDir();

// Returns the socket path for `mountpoint` (see above). Fails with NotFound
// when the mountpoint's parent folder does not exist.
poolfs::Result<std::string> ControlSocketPath(const std::string& mountpoint);

class ControlServer {
 public:
  using Handler = std::function<std::string(std::string_view)>;
  // A stream request and its descriptor (closed by the server once this
  // returns); returns the reply.
  using StreamHandler = std::function<std::string(std::string_view request, int fd)>;
  // Stream requests running at once, at most.
  static constexpr int kMaxStreams = 8;

  // Binds the socket for `mountpoint` and starts serving. A stale socket
  // left by a dead daemon is replaced; Busy when a live server already
  // answers there. IOError (naming the path) when the folder or socket
  // cannot be created.
  // `stream_handler` serves the requests that carry a descriptor (none:
  // they are refused).
  static poolfs::Result<std::unique_ptr<ControlServer>> Start(const std::string& mountpoint,
                                                              Handler handler,
                                                              StreamHandler stream_handler = {});
  ~ControlServer();

  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& socket_path() const;

 private:
  struct Impl;
  explicit ControlServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Sends `request` to the daemon serving `mountpoint` and returns its reply.
// Fails with NotFound ("no poolfs daemon serves MOUNTPOINT") when no daemon
// answers there, PermissionDenied when the daemon refused us, IOError for
// other socket failures.
poolfs::Result<std::string> ControlCall(const std::string& mountpoint, std::string_view request);

// A stream request sent (ControlCallWithFd): the connection its reply will
// come on, once the daemon is done with the descriptor.
class PendingReply {
 public:
  PendingReply(int socket_fd, std::string mountpoint);
  ~PendingReply();
  PendingReply(PendingReply&& o) noexcept;
  PendingReply& operator=(PendingReply&&) = delete;
  PendingReply(const PendingReply&) = delete;

  // Waits for the reply (no time limit: a receive's last commit may take a
  // while; a daemon that dies closes the connection). IOError when the
  // connection ends without one, PermissionDenied as ControlCall.
  poolfs::Result<std::string> Wait();

 private:
  int fd_;
  std::string mountpoint_;
};

// Sends `request` with a duplicate of `fd` attached to the daemon serving
// `mountpoint` (the caller still owns `fd` and should close its copy, so
// that the pipe ends when the daemon's does). Errors as ControlCall's.
poolfs::Result<PendingReply> ControlCallWithFd(const std::string& mountpoint,
                                               std::string_view request, int fd);

}  // namespace poolfs::daemon
