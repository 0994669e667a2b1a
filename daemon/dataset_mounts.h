// DatasetMounts: the mounts of one dataset each that a pool's daemon serves
// beside the pool's own mount (`poolfs mount POOL/PATH MNT` while POOL is
// mounted, as `zfs mount` mounts a dataset of an imported pool).
//
// Each is a FUSE mount of its own in this process, over a view of the
// pool's filesystem (Filesystem::OpenDatasetView: the same files, locks and
// caches as the pool's mount), with its own request loop thread and its own
// control socket at its mount point (so `poolfs status MNT` and `poolfs
// unmount MNT` work on it as on any mount). The source /proc/mounts shows
// is the dataset's name. While it is mounted, destroying its dataset is
// Busy; a rename moves it along (status names the dataset as it is now).
//
// Its life: Mount opens the view, mounts it, starts its control socket and
// its loop thread, and returns once the mount answers a stat. When the
// loop ends (`poolfs unmount MNT`, fusermount3 -u, UnmountAll), the loop
// thread ends the view (dropping what its kernel held) and then closes the
// control socket: the socket going is what `poolfs unmount` waits for.
// Ended mounts are reaped (their thread joined) by the next Mount or
// UnmountAll. The pool's mount goes last: UnmountAll runs before the
// daemon exports the pool, and `poolfs unmount` of the pool's mount asks
// for it before it unmounts the pool.
//
// Threads: Mount, UnmountAll and Describe come from the control thread of
// the pool's mount and from main's thread (UnmountAll, at the end); an
// internal mutex serializes Mount and UnmountAll. Each mount adds a loop
// thread (with libfuse's workers) and a control thread; a dataset mount's
// control requests never call Mount or UnmountAll (they would wait for
// their own thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "control.h"
#include "dataset_request.h"
#include "fuse/fuse_server.h"
#include "poolfs/fs.h"
#include "poolfs/mutex.h"
#include "poolfs/status.h"

namespace poolfs::daemon {

class DatasetMounts {
 public:
  using Handler = std::function<std::string(std::string_view)>;

  // Mounts over `fs` (which must outlive this object), with `base`'s
  // worker threads and writeback cache, setting `read_ahead_bytes` of
  // readahead on each (0: the kernel's). `handler` serves a dataset
  // mount's control requests as the pool mount's would (status, tune,
  // dataset, iostat, reload).
  DatasetMounts(Filesystem* fs, const fuse::FuseOptions& base, uint64_t read_ahead_bytes,
                Handler handler);
  // Unmounts what is still mounted (UnmountAll lazily).
  ~DatasetMounts();
  DatasetMounts(const DatasetMounts&) = delete;
  DatasetMounts& operator=(const DatasetMounts&) = delete;

  // Mounts `r.dataset`'s tree on `r.mountpoint`. Returns once the mount
  // answers. Busy when this daemon already serves that mount point;
  // OpenDatasetView's errors (NotFound for no such dataset); IOError from
  // the FUSE mount, or when the mount does not answer (it is undone then).
  Status Mount(const DatasetMountRequest& r) EXCLUDES(op_mu_, mu_);

  // Unmounts every dataset mount and waits until each has ended. `lazy`:
  // detaches them (a busy one ends once its last user leaves; with
  // `wait` false this returns without waiting for that). Otherwise Busy,
  // naming the mount point, at the first busy mount (those before it are
  // unmounted).
  Status UnmountAll(bool lazy, bool wait = true) EXCLUDES(op_mu_, mu_);

  // "DATASET on MOUNTPOINT" for each mount, by mount point, with the
  // dataset's name as it is now.
  std::vector<std::string> Describe() EXCLUDES(mu_);

 private:
  struct Entry {
    std::string mountpoint;
    std::string dataset;  // the name it was mounted by
    uint64_t dataset_id = 0;
    std::unique_ptr<Filesystem> view;
    std::unique_ptr<fuse::FuseServer> server;
    std::unique_ptr<ControlServer> control;
    std::thread loop;
    std::atomic<bool> done{false};  // the loop ended and the view with it
  };

  // The loop thread of `e`: serves until the mount goes, then ends the
  // view and the control socket.
  static void Serve(Entry* e);
  // Joins and frees the mounts whose loop ended.
  void Reap() REQUIRES(op_mu_) EXCLUDES(mu_);
  // The dataset named by id `id` now ("" when gone).
  std::string NameOf(uint64_t id);

  Filesystem* const fs_;
  const fuse::FuseOptions base_;
  const uint64_t read_ahead_bytes_;
  const Handler handler_;

  util::Mutex op_mu_;  // Mount and UnmountAll, one at a time
  util::Mutex mu_;     // entries_
  std::vector<std::unique_ptr<Entry>> entries_ GUARDED_BY(mu_);
};

}  // namespace poolfs::daemon
