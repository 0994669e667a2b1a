// KernelChannel: the adapter's own reads and writes of the FUSE device
// (libfuse's fuse_session_custom_io), so that the session can take a kernel
// feature libfuse 3.14 cannot ask for.
//
// Theory. The kernel's INIT request lists the features it offers, and the
// INIT reply the ones the server takes. libfuse builds that reply from
// fuse_conn_info::want, but only for the features it knows: 3.14 never
// takes FUSE_HANDLE_KILLPRIV_V2. The channel reads every request as libfuse
// would (one read(2) of the device), notes the INIT request's unique id and
// offered flags, and adds to libfuse's INIT reply the extra flags asked for
// that the kernel offered, before writing it as libfuse would (one
// writev(2)). Every other request and reply passes through untouched.
//
// FUSE_HANDLE_KILLPRIV_V2 says the server clears setuid, setgid and file
// capabilities on write, truncate and chown itself (the Filesystem does:
// PosixFs::Write, SetAttr), so the kernel stops sending a GETXATTR of
// security.capability before each write to a file it has once found
// without one (it marks such an inode S_NOSEC), and a GETATTR before each
// chown. Without it a 4 KiB random write costs two requests, and an
// sqlite transaction a dozen more.
//
// Thread safety: Read and Writev run on every worker at once; the INIT
// exchange happens before any other request (the kernel sends nothing
// else until it is answered), and its fields are atomics.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

struct fuse_session;

namespace poolfs::fuse {

// FUSE_HANDLE_KILLPRIV_V2 (protocol 7.33), an INIT flag.
inline constexpr uint64_t kInitHandleKillprivV2 = uint64_t{1} << 28;

// The flags (flags | flags2 << 32) the kernel offers in `request`, if it is
// an INIT request (a fuse_in_header then a fuse_init_in); nullopt for any
// other request or a short one.
std::optional<uint64_t> OfferedInitFlags(std::span<const std::byte> request);

// Adds `extra` & `offered` to the flags of the fuse_init_out in `reply`
// (flags2 for bits 32 and up, which the reply carries only with
// FUSE_INIT_EXT); returns the flags added. A reply too short for the
// fields it would change is left alone (returns 0).
uint64_t AddInitFlags(std::span<std::byte> reply, uint64_t offered, uint64_t extra);

struct Adapter;

// Whether the session's kernel took FUSE_HANDLE_KILLPRIV_V2 from `ad`'s
// channel: it then leaves clearing setuid, setgid and capabilities to the
// Filesystem. False without a channel, and before INIT is answered.
bool KernelLeavesPrivileges(const Adapter& ad);

class KernelChannel {
 public:
  // `extra`: the INIT flags to add to libfuse's reply when offered.
  explicit KernelChannel(uint64_t extra) : extra_(extra) {}

  // Makes `se` read and write its device (fuse_session_fd, after
  // fuse_session_mount) through this channel, which must outlive the
  // session's loop. Returns libfuse's result (0 or -errno).
  int Install(fuse_session* se);

  // The flags added to the INIT reply (0 until it is sent).
  uint64_t added() const { return added_.load(std::memory_order_acquire); }

  // fuse_custom_io's read and writev; `userdata` is the session's
  // userdata (the Adapter), which holds the channel.
  static ssize_t Read(int fd, void* buf, size_t len, void* userdata);
  static ssize_t Writev(int fd, struct iovec* iov, int count, void* userdata);

 private:
  ssize_t DoRead(int fd, void* buf, size_t len);
  ssize_t DoWritev(int fd, struct iovec* iov, int count);

  const uint64_t extra_;
  std::atomic<bool> init_pending_{true};  // INIT not yet answered
  std::atomic<uint64_t> init_unique_{0};  // its unique id, once read
  std::atomic<uint64_t> offered_{0};
  std::atomic<uint64_t> added_{0};
};

}  // namespace poolfs::fuse
