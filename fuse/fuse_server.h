// FuseServer: a Filesystem served to the kernel through libfuse3's
// low-level API.
//
// Theory. The kernel sends requests on /dev/fuse; a pool of libfuse worker
// threads reads them and calls the adapter's handlers (adapter.h, one file
// per family of operations), each of which makes one Filesystem call and
// replies. The adapter keeps no state of its own: inode numbers are the
// Filesystem's, directory offsets are its readdir cookies, and open files
// carry no handle (the kernel opens them without asking where it can,
// file_ops.cc), so a handler needs nothing but the request.
//
// Request loop. fuse_session_loop_mt with at most FuseOptions::threads
// workers (0: DefaultThreads(), one per core), built with
// FUSE_USE_VERSION 312: below that, libfuse 3.14's loop config silently
// spawns a thread per request. threads = 1 is libfuse's single-threaded
// loop. Workers may block in the Filesystem (the write throttle, fsync
// waiting for a txg, disk reads); they never wait for each other
// (core/doc/threading.md).
//
// The worker count. tests/mount/measure_create_rate.sh compares mounts in
// one run, by create rate and by the daemon's CPU time per create (the
// steadier figure on a shared machine). Over an in-memory fake
// (FakeFilesystem) the adapter costs about what memfs_ceiling does per
// create: the adapter costs little. With poolfs, one worker costs the
// least CPU per create and more workers somewhat more, but no worker count
// gives a rate consistently above the others. One worker would let a
// single fsync or throttled write stall every other request. For one
// client at a time (an untar, sqlite) the count decides something else:
// where the workers run against the client's CPU, and a wake-up across
// CPUs costs a virtual machine far more than a request's work (bench/
// README.md, "Where a FUSE request's time goes"). One worker per core
// made scripts/bench-peers.sh's untar 1.7 times and its random writes in
// 4 KiB records 1.5 times what two per core did, dbench 0.8 times, the
// rest alike; so one per core, at least two.
//
// Caching. Only this mount changes the pool, and every change goes
// through the kernel, which updates or drops its cached names and
// attributes as it sends the change. So names, attributes and "no such
// name" are cached for 60 s (kDefault*Timeout). With timeouts of 0 each
// create costs the daemon more CPU and the create rate is the lowest of
// the settings tests/mount/measure_create_rate.sh compares. There is no
// FLUSH handler (a round trip per close for nothing) and open files keep
// their page cache across opens. What the kernel cannot see coming (pages
// read while an asynchronous direct write was in flight) a thread of the
// server's drops (CacheNotifier, cache_notifier.h).
//
// Ending. The mount ends when the kernel's connection ends: `fusermount3
// -u`, umount(8), or RequestUnmount (a lazy unmount, as `fusermount3 -u
// -z` does, used for SIGTERM). Run then returns; the caller unmounts the
// Filesystem (final sync, export) afterwards.
//
// Thread safety: Mount, Run and the destructor from one thread;
// RequestUnmount from any thread (not from a signal handler).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "poolfs/fs.h"
#include "poolfs/status.h"

struct fuse_session;

namespace poolfs::fuse {

struct Adapter;
class CacheNotifier;
class KernelChannel;

struct FuseOptions {
  // See "The worker count" and "Caching" above for why.
  // One worker per core, at least 2 and at most 16.
  static uint32_t DefaultThreads();
  static constexpr double kDefaultEntryTimeout = 60;
  static constexpr double kDefaultAttrTimeout = 60;
  static constexpr double kDefaultNegativeTimeout = 60;

  std::string mountpoint;  // an existing empty directory
  std::string fsname;      // the source /proc/mounts shows (the pool file)
  // libfuse mount options, one per entry: allow_other, default_permissions,
  // ro, ... (the subtype "poolfs" and fsname are added).
  std::vector<std::string> mount_options;
  // Worker threads; 0: DefaultThreads(); 1: fuse_session_loop (requests are
  // answered on the thread that reads them, no hand-off at all).
  uint32_t threads = 0;
  bool single_threaded = false;  // as threads = 1
  bool clone_fd = false;         // one /dev/fuse descriptor per worker
  bool writeback_cache = false;  // fuse.writeback_cache
  // fuse.handle_killpriv: the Filesystem clears setuid, setgid and
  // capabilities itself and the kernel is told so (kernel_channel.h).
  bool handle_killpriv = true;
  double entry_timeout = kDefaultEntryTimeout;
  double attr_timeout = kDefaultAttrTimeout;
  double negative_timeout = kDefaultNegativeTimeout;
};

class FuseServer {
 public:
  // Creates a FUSE session serving `fs` (which must outlive the server) and
  // mounts it (through fusermount3 when not root). Fails with
  // InvalidArgument when libfuse refuses an option, IOError when the mount
  // fails; the message includes libfuse's own words.
  static Result<std::unique_ptr<FuseServer>> Mount(Filesystem* fs, const FuseOptions& options);

  // Unmounts if still mounted and frees the session.
  ~FuseServer();
  FuseServer(const FuseServer&) = delete;
  FuseServer& operator=(const FuseServer&) = delete;

  // Serves requests until the mount goes away. Returns OK then, IOError
  // when the loop failed.
  Status Run();

  // Detaches the mount (lazily: processes inside it keep working until
  // they leave), so that Run returns once the kernel lets go. Fails with
  // IOError when umount2 or fusermount3 fails.
  Status RequestUnmount();

  const std::string& mountpoint() const { return options_.mountpoint; }

  // Whether the kernel leaves clearing setuid, setgid and capabilities to
  // the Filesystem (FUSE_HANDLE_KILLPRIV_V2, kernel_channel.h): known once
  // the session's INIT is answered, false before.
  bool filesystem_clears_privileges() const;

 private:
  FuseServer(Filesystem* fs, const FuseOptions& options);

  FuseOptions options_;
  std::unique_ptr<Adapter> adapter_;
  std::unique_ptr<CacheNotifier> notifier_;  // stopped once the loop has ended
  std::unique_ptr<KernelChannel> channel_;   // null unless handle_killpriv
  fuse_session* session_ = nullptr;
  bool mounted_ = false;
};

}  // namespace poolfs::fuse
