#include "create_runner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>

#include "name_format.h"

namespace poolfs::createmany {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string ErrnoText(int err) {
  return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
}

// Creates `path` as a directory unless it is one already.
Status EnsureDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0) return Status::Ok();
  int err = errno;
  struct stat st;
  if (err == EEXIST && ::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::Ok();
    return Status::IOError("mkdir(" + path + "): exists and is not a directory");
  }
  return Status::IOError("mkdir(" + path + "): " + ErrnoText(err));
}

// mkdir -p: creates each missing component of `path`.
Status EnsureDirectories(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    if (path[slash - 1] == '/') continue;
    POOLFS_RETURN_IF_ERROR(EnsureDirectory(path.substr(0, slash)));
  }
  return EnsureDirectory(path);
}

// One thread's share and results; a cache line of its own for `done`.
struct alignas(64) Worker {
  int index = 0;
  int64_t share = 0;       // how many indices it handles (-1: until stopped)
  int dirfd = AT_FDCWD;    // its directory with -D
  std::string dir_prefix;  // "DIR/t<i>/" with -D, for messages
  std::atomic<int64_t> done{0};
  std::string error;  // its first failure
  Clock::time_point end;
};

// What every worker reads (set before the latch opens, then constant) and
// the few things they share: the stop flag, and the count of running
// workers that the calling thread waits on.
struct Shared {
  const Options* options = nullptr;
  const NameFormat* format = nullptr;
  const NameFormat* unlink_format = nullptr;  // null: unlink the created name
  std::optional<Clock::time_point> deadline;
  std::atomic<bool> stop{false};
  std::latch go{1};
  std::mutex mu;
  std::condition_variable finished_cv;
  int running = 0;  // guarded by mu
};

// Runs one operation for `name`; returns 0 or errno. `what` names it.
int Create(const Options& o, int dirfd, const std::string& name, const char** what) {
  switch (o.mode) {
    case Mode::kOpen: {
      *what = "open";
      int fd = ::openat(dirfd, name.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
      if (fd < 0) return errno;
      if (::close(fd) != 0) {
        *what = "close";
        return errno;
      }
      return 0;
    }
    case Mode::kMknod:
      *what = "mknod";
      return ::mknodat(dirfd, name.c_str(), S_IFREG | 0444, 0) == 0 ? 0 : errno;
    case Mode::kMkdir:
      *what = "mkdir";
      return ::mkdirat(dirfd, name.c_str(), 0755) == 0 ? 0 : errno;
    case Mode::kLink:
      *what = "link";
      return ::linkat(AT_FDCWD, o.link_target.c_str(), dirfd, name.c_str(), 0) == 0 ? 0 : errno;
    case Mode::kUnlinkOnly: return 0;
  }
  return 0;
}

void Work(Shared& s, Worker& w) {
  const Options& o = *s.options;
  const int64_t stride = o.threads;
  std::string name, unlink_name;
  s.go.wait();
  int64_t done = 0;
  for (int64_t k = 0; w.share < 0 || k < w.share; ++k) {
    if (s.stop.load(std::memory_order_relaxed)) break;
    if (s.deadline && Clock::now() >= *s.deadline) break;
    int64_t index = o.start + w.index + k * stride;
    s.format->Format(index, &name);
    const char* what = "";
    int err = Create(o, w.dirfd, name, &what);
    if (err == 0 && o.unlink_after) {
      const std::string* target = &name;
      if (s.unlink_format != nullptr) {
        s.unlink_format->Format(index, &unlink_name);
        target = &unlink_name;
      }
      bool dir = o.mode == Mode::kMkdir;
      what = dir ? "rmdir" : "unlink";
      if (::unlinkat(w.dirfd, target->c_str(), dir ? AT_REMOVEDIR : 0) != 0) err = errno;
      if (err != 0) name = *target;
    }
    if (err != 0) {
      w.error = std::string(what) + "(" + w.dir_prefix + name + "): " + ErrnoText(err);
      if (o.mode == Mode::kLink && std::string_view(what) == "link") {
        w.error = "link(" + o.link_target + ", " + w.dir_prefix + name + "): " + ErrnoText(err);
      }
      s.stop.store(true, std::memory_order_relaxed);
      break;
    }
    w.done.store(++done, std::memory_order_relaxed);
  }
  w.end = Clock::now();
  std::lock_guard lock(s.mu);
  --s.running;
  s.finished_cv.notify_all();
}

const char* Noun(const Options& o) { return o.mode == Mode::kUnlinkOnly ? "unlinks" : "creates"; }

int64_t Total(const std::vector<std::unique_ptr<Worker>>& workers) {
  int64_t total = 0;
  for (const auto& w : workers) total += w->done.load(std::memory_order_relaxed);
  return total;
}

}  // namespace

Result<RunReport> RunCreatemany(const Options& o, std::FILE* progress) {
  POOLFS_ASSIGN_OR_RETURN(NameFormat format, NameFormat::Parse(o.format));
  std::optional<NameFormat> unlink_format;
  if (o.unlink_format) {
    POOLFS_ASSIGN_OR_RETURN(unlink_format, NameFormat::Parse(*o.unlink_format));
  }

  // Setup, not timed: the shares, and with -D the directories.
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < o.threads; ++i) {
    auto w = std::make_unique<Worker>();
    w->index = i;
    if (o.count) {
      w->share = *o.count / o.threads + (i < *o.count % o.threads ? 1 : 0);
      if (w->share == 0) continue;
    } else {
      w->share = -1;
    }
    workers.push_back(std::move(w));
  }
  struct DirFds {
    std::vector<int> fds;
    ~DirFds() {
      for (int fd : fds) ::close(fd);
    }
  } dir_fds;
  if (!o.dir.empty()) {
    POOLFS_RETURN_IF_ERROR(EnsureDirectories(o.dir));
    for (auto& w : workers) {
      std::string path = o.dir + "/t" + std::to_string(w->index);
      POOLFS_RETURN_IF_ERROR(EnsureDirectory(path));
      w->dirfd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (w->dirfd < 0) return Status::IOError("open(" + path + "): " + ErrnoText(errno));
      dir_fds.fds.push_back(w->dirfd);
      w->dir_prefix = path + "/";
    }
  }

  Shared s;
  s.options = &o;
  s.format = &format;
  s.unlink_format = unlink_format ? &*unlink_format : nullptr;
  std::vector<std::thread> threads;
  Status spawn_error;
  for (auto& w : workers) {
    try {
      threads.emplace_back(Work, std::ref(s), std::ref(*w));
      std::lock_guard lock(s.mu);
      ++s.running;
    } catch (const std::system_error& e) {
      spawn_error = Status::IOError("starting thread " + std::to_string(w->index) + " of " +
                                    std::to_string(o.threads) + ": " + e.what());
      s.stop.store(true);
      break;
    }
  }

  // The timed part: from releasing the threads to the last one's stop.
  Clock::time_point start = Clock::now();
  if (o.time_limit_s) {
    s.deadline = start + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(*o.time_limit_s));
  }
  s.go.count_down();
  {
    std::unique_lock lock(s.mu);
    Clock::time_point last = start;
    int64_t last_done = 0;
    while (s.running > 0) {
      if (progress == nullptr || o.interval_s <= 0) {
        s.finished_cv.wait(lock, [&] { return s.running == 0; });
        break;
      }
      auto next = last + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(o.interval_s));
      if (s.finished_cv.wait_until(lock, next, [&] { return s.running == 0; })) break;
      Clock::time_point now = Clock::now();
      int64_t done = Total(workers);
      std::fprintf(progress, " - %lld %s in %.2f seconds (last %.2f seconds: %.2f %s/second)\n",
                   static_cast<long long>(done), Noun(o), SecondsBetween(start, now),
                   SecondsBetween(last, now),
                   static_cast<double>(done - last_done) / SecondsBetween(last, now), Noun(o));
      std::fflush(progress);
      last = now;
      last_done = done;
    }
  }
  for (auto& t : threads) t.join();
  POOLFS_RETURN_IF_ERROR(spawn_error);

  RunReport report;
  Clock::time_point end = start;
  for (size_t i = 0; i < threads.size(); ++i) {
    Worker& w = *workers[i];
    if (w.end > end) end = w.end;
    if (!w.error.empty()) report.errors.push_back(w.error);
  }
  report.done = Total(workers);
  report.seconds = SecondsBetween(start, end);
  return report;
}

std::string TotalLine(const Options& o, const RunReport& r) {
  char line[200];
  std::snprintf(line, sizeof line, "total: %lld %s in %.2f seconds: %.2f %s/second",
                static_cast<long long>(r.done), Noun(o), r.seconds, r.rate(), Noun(o));
  return line;
}

}  // namespace poolfs::createmany
