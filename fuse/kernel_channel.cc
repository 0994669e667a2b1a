#include "kernel_channel.h"

#include <linux/fuse.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "adapter.h"

namespace poolfs::fuse {
namespace {

static_assert(kInitHandleKillprivV2 == FUSE_HANDLE_KILLPRIV_V2);

template <typename T>
T Load(std::span<const std::byte> bytes, size_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

template <typename T>
void Store(std::span<std::byte> bytes, size_t offset, T v) {
  std::memcpy(bytes.data() + offset, &v, sizeof v);
}

}  // namespace

std::optional<uint64_t> OfferedInitFlags(std::span<const std::byte> request) {
  constexpr size_t kHeader = sizeof(fuse_in_header);
  if (request.size() < kHeader + offsetof(fuse_init_in, flags) + sizeof(uint32_t))
    return std::nullopt;
  if (Load<uint32_t>(request, offsetof(fuse_in_header, opcode)) != FUSE_INIT) return std::nullopt;
  uint64_t flags = Load<uint32_t>(request, kHeader + offsetof(fuse_init_in, flags));
  if ((flags & FUSE_INIT_EXT) &&
      request.size() >= kHeader + offsetof(fuse_init_in, flags2) + sizeof(uint32_t))
    flags |= uint64_t{Load<uint32_t>(request, kHeader + offsetof(fuse_init_in, flags2))} << 32;
  return flags;
}

uint64_t AddInitFlags(std::span<std::byte> reply, uint64_t offered, uint64_t extra) {
  constexpr size_t kFlags = offsetof(fuse_init_out, flags);
  constexpr size_t kFlags2 = offsetof(fuse_init_out, flags2);
  if (reply.size() < kFlags + sizeof(uint32_t)) return 0;
  const uint32_t flags = Load<uint32_t>(reply, kFlags);
  uint64_t add = extra & offered;
  const bool has_flags2 = (flags & FUSE_INIT_EXT) && reply.size() >= kFlags2 + sizeof(uint32_t);
  if (!has_flags2) add &= 0xffffffffu;
  if (add == 0) return 0;
  Store<uint32_t>(reply, kFlags, flags | uint32_t(add));
  if (add >> 32) Store<uint32_t>(reply, kFlags2, Load<uint32_t>(reply, kFlags2) | uint32_t(add >> 32));
  return add;
}

bool KernelLeavesPrivileges(const Adapter& ad) {
  return ad.channel != nullptr && (ad.channel->added() & kInitHandleKillprivV2) != 0;
}

int KernelChannel::Install(fuse_session* se) {
  static constexpr fuse_custom_io kIo = {
      .writev = &KernelChannel::Writev,
      .read = &KernelChannel::Read,
      .splice_receive = nullptr,
      .splice_send = nullptr,
  };
  return fuse_session_custom_io(se, &kIo, fuse_session_fd(se));
}

ssize_t KernelChannel::Read(int fd, void* buf, size_t len, void* userdata) {
  return static_cast<Adapter*>(userdata)->channel->DoRead(fd, buf, len);
}

ssize_t KernelChannel::Writev(int fd, struct iovec* iov, int count, void* userdata) {
  return static_cast<Adapter*>(userdata)->channel->DoWritev(fd, iov, count);
}

ssize_t KernelChannel::DoRead(int fd, void* buf, size_t len) {
  const ssize_t n = ::read(fd, buf, len);
  if (n > 0 && init_pending_.load(std::memory_order_acquire)) {
    const std::span<const std::byte> req(static_cast<const std::byte*>(buf), size_t(n));
    if (std::optional<uint64_t> offered = OfferedInitFlags(req)) {
      offered_.store(*offered, std::memory_order_relaxed);
      init_unique_.store(Load<uint64_t>(req, offsetof(fuse_in_header, unique)),
                         std::memory_order_release);
    }
  }
  return n;
}

ssize_t KernelChannel::DoWritev(int fd, struct iovec* iov, int count) {
  if (!init_pending_.load(std::memory_order_acquire) || count < 2 ||
      iov[0].iov_len < sizeof(fuse_out_header))
    return ::writev(fd, iov, count);
  const std::span<const std::byte> head(static_cast<const std::byte*>(iov[0].iov_base),
                                        iov[0].iov_len);
  const uint64_t unique = init_unique_.load(std::memory_order_acquire);
  if (unique == 0 || Load<uint64_t>(head, offsetof(fuse_out_header, unique)) != unique)
    return ::writev(fd, iov, count);
  // libfuse's INIT reply: the header, then the fuse_init_out, changed in a
  // copy of ours.
  init_pending_.store(false, std::memory_order_release);
  if (Load<int32_t>(head, offsetof(fuse_out_header, error)) != 0) return ::writev(fd, iov, count);
  std::vector<std::byte> out(static_cast<const std::byte*>(iov[1].iov_base),
                             static_cast<const std::byte*>(iov[1].iov_base) + iov[1].iov_len);
  const uint64_t offered = offered_.load(std::memory_order_relaxed);
  const uint64_t added = AddInitFlags(out, offered, extra_);
  added_.store(added, std::memory_order_release);
  spdlog::debug("fuse: INIT reply: flags {:#x} added to libfuse's (asked for {:#x}, offered {:#x})",
                added, extra_, offered);
  std::vector<struct iovec> mine(iov, iov + count);
  mine[1].iov_base = out.data();
  return ::writev(fd, mine.data(), count);
}

}  // namespace poolfs::fuse
