// DatasetMounts; see dataset_mounts.h.
#include "dataset_mounts.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "dead_mount.h"
#include "mount_table.h"

namespace poolfs::daemon {

DatasetMounts::DatasetMounts(Filesystem* fs, const fuse::FuseOptions& base,
                             uint64_t read_ahead_bytes, Handler handler)
    : fs_(fs), base_(base), read_ahead_bytes_(read_ahead_bytes), handler_(std::move(handler)) {}

DatasetMounts::~DatasetMounts() { (void)UnmountAll(/*lazy=*/true); }

void DatasetMounts::Serve(Entry* e) {
  Status run = e->server->Run();
  if (!run.ok()) spdlog::error("{}", run.ToString());
  // Before the socket goes (what `poolfs unmount` waits for): the dataset
  // is no longer held, and its files no longer looked up, by this mount.
  Status st = e->view->Unmount();
  if (!st.ok())
    spdlog::error("end of the mount of {} on {}: {}", e->dataset, e->mountpoint, st.ToString());
  spdlog::info("unmounted dataset {} from {}", e->dataset, e->mountpoint);
  e->control.reset();
  e->done.store(true);
}

void DatasetMounts::Reap() {
  std::vector<std::unique_ptr<Entry>> ended;
  {
    util::MutexLock l(&mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if ((*it)->done.load()) {
        ended.push_back(std::move(*it));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (std::unique_ptr<Entry>& e : ended) {
    if (e->loop.joinable()) e->loop.join();  // UnmountAll may have joined it
    e->server.reset();                       // before the view it serves
    e->view.reset();
  }
}

Status DatasetMounts::Mount(const DatasetMountRequest& r) {
  util::MutexLock op(&op_mu_);
  Reap();
  {
    util::MutexLock l(&mu_);
    for (const std::unique_ptr<Entry>& e : entries_) {
      if (e->mountpoint == r.mountpoint)
        return Status::Busy("dataset " + e->dataset + " is already mounted on " + r.mountpoint);
    }
  }
  auto e = std::make_unique<Entry>();
  e->mountpoint = r.mountpoint;
  e->dataset = r.dataset;
  DatasetViewOptions vo;
  vo.read_only = r.read_only;
  vo.where = r.mountpoint;
  POOLFS_ASSIGN_OR_RETURN(e->view, fs_->OpenDatasetView(r.dataset, vo));
  if (DatasetAdmin* admin = fs_->datasets()) {
    Result<std::vector<DatasetInfo>> self = admin->List(r.dataset, /*recursive=*/false);
    if (self.ok() && !self->empty()) e->dataset_id = (*self)[0].id;
  }

  fuse::FuseOptions opts = base_;
  opts.mountpoint = r.mountpoint;
  opts.fsname = r.dataset;
  opts.mount_options = r.fuse_options;
  opts.entry_timeout = r.entry_timeout;
  opts.attr_timeout = r.attr_timeout;
  opts.negative_timeout = r.negative_timeout;
  POOLFS_ASSIGN_OR_RETURN(e->server, fuse::FuseServer::Mount(e->view.get(), opts));

  const std::string dataset = r.dataset, mountpoint = r.mountpoint;
  auto control = ControlServer::Start(mountpoint, [this, dataset, mountpoint](std::string_view q) {
    if (q == "ping") return std::string("pong");
    // Mount and UnmountAll belong to the pool's mount: from here they would
    // wait for this socket's own thread.
    if (q.starts_with("unmount-datasets")) return EncodeStatus(Status::Ok());
    if (q.starts_with("mount-dataset "))
      return EncodeStatus(Status::InvalidArgument("the mount on " + mountpoint +
                                                  " is a dataset mount: ask the pool's own mount"));
    std::string reply = handler_(q);
    if (q == "status" && !reply.starts_with("error: "))
      reply = "dataset mount:    " + dataset + " on " + mountpoint + "\n" + reply;
    return reply;
  });
  if (control.ok()) {
    e->control = std::move(control).value();
  } else {
    spdlog::warn("no control socket for {} (poolfs status/unmount will not reach it): {}",
                 mountpoint, control.status().ToString());
  }
  Entry* raw = e.get();
  raw->loop = std::thread([raw] { Serve(raw); });

  // The mount answers once the loop has answered INIT and this GETATTR.
  struct stat root;
  if (stat(mountpoint.c_str(), &root) != 0) {
    const int err = errno;
    Status unmounted = raw->server->RequestUnmount();
    if (!unmounted.ok()) spdlog::error("unmount after the failed start: {}", unmounted.ToString());
    raw->loop.join();
    raw->server.reset();
    raw->view.reset();
    return Status::IOError("the mount of " + dataset + " on " + mountpoint +
                           " does not answer: " + std::strerror(err));
  }
  if (read_ahead_bytes_ != 0) {
    Status ra = SetReadAhead(mountpoint, read_ahead_bytes_);
    if (!ra.ok())
      spdlog::info("readahead on {} left as the kernel set it (fuse.read_ahead_bytes): {}",
                   mountpoint, ra.ToString());
  }
  spdlog::info("mounted dataset {} on {} (options {})", dataset, mountpoint, [&] {
    std::string s;
    for (const std::string& o : r.fuse_options) s += (s.empty() ? "" : ",") + o;
    return s;
  }());
  util::MutexLock l(&mu_);
  entries_.push_back(std::move(e));
  return Status::Ok();
}

Status DatasetMounts::UnmountAll(bool lazy, bool wait) {
  util::MutexLock op(&op_mu_);
  Reap();
  std::vector<Entry*> live;
  {
    util::MutexLock l(&mu_);
    for (const std::unique_ptr<Entry>& e : entries_) live.push_back(e.get());
  }
  Status result = Status::Ok();
  for (Entry* e : live) {
    if (e->done.load()) continue;
    Status st = lazy ? e->server->RequestUnmount() : UnmountPath(e->mountpoint, /*lazy=*/false);
    if (!st.ok() && e->done.load()) continue;  // it went by itself meanwhile
    if (!st.ok()) {
      if (!lazy) {
        result = st;
        break;
      }
      spdlog::error("unmount of dataset mount {}: {}", e->mountpoint, st.ToString());
    }
  }
  if (!wait) return result;
  for (Entry* e : live) {
    // Those not asked to go (a busy one stopped the others) stay.
    if (!result.ok() && !e->done.load()) continue;
    if (e->loop.joinable()) e->loop.join();
  }
  Reap();
  return result;
}

std::string DatasetMounts::NameOf(uint64_t id) {
  DatasetAdmin* admin = fs_->datasets();
  if (admin == nullptr || id == 0) return "";
  Result<std::vector<DatasetInfo>> all = admin->List("", /*recursive=*/true);
  if (!all.ok()) return "";
  for (const DatasetInfo& d : *all)
    if (d.id == id) return d.name;
  return "";
}

std::vector<std::string> DatasetMounts::Describe() {
  std::vector<std::pair<std::string, uint64_t>> mounts;  // (mount point, id), and the name
  std::vector<std::string> names;
  {
    util::MutexLock l(&mu_);
    for (const std::unique_ptr<Entry>& e : entries_) {
      if (e->done.load()) continue;
      mounts.emplace_back(e->mountpoint, e->dataset_id);
      names.push_back(e->dataset);
    }
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < mounts.size(); i++) {
    const std::string now = NameOf(mounts[i].second);
    out.push_back((now.empty() ? names[i] : now) + " on " + mounts[i].first);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace poolfs::daemon
