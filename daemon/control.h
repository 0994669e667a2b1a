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
// Thread safety: a ControlServer runs one thread that serves connections one
// at a time; the handler runs on it. The destructor stops that thread and
// removes the socket. ControlCall may be called from any thread.
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

  // Binds the socket for `mountpoint` and starts serving. A stale socket
  // left by a dead daemon is replaced; Busy when a live server already
  // answers there. IOError (naming the path) when the folder or socket
  // cannot be created.
  static poolfs::Result<std::unique_ptr<ControlServer>> Start(const std::string& mountpoint,
                                                              Handler handler);
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

}  // namespace poolfs::daemon
