// AsioExecutor: see asio_executor.h. The only file of the project that
// includes Boost.Asio.
//
// Run() groups the tasks by strand, posts one handler per strand that runs
// that strand's tasks in order, and waits on a countdown: each handler, when
// done, decrements the number of unfinished handlers under a mutex and the
// last one wakes Run(). The io_context's threads never wait for
// anything but the io_context itself, so one thread suffices for any number
// of strands (tasks do not wait for each other, as executor.h requires).
#include "asio_executor.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <optional>
#include <thread>

#include "poolfs/mutex.h"

namespace poolfs::daemon {

namespace asio = boost::asio;

struct AsioExecutor::Impl {
  using Strand = asio::strand<asio::io_context::executor_type>;

  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  std::vector<Strand> strands;
  std::vector<std::thread> threads;

  // The countdown of the Run in progress.
  util::Mutex mu;
  util::CondVar done_cv;
  size_t unfinished GUARDED_BY(mu) = 0;
};

AsioExecutor::AsioExecutor(size_t threads, size_t strands) : impl_(std::make_unique<Impl>()) {
  if (strands == 0) strands = 1;
  if (threads == 0) threads = strands;
  impl_->guard.emplace(asio::make_work_guard(impl_->io));
  impl_->strands.reserve(strands);
  for (size_t i = 0; i < strands; i++) impl_->strands.emplace_back(asio::make_strand(impl_->io));
  impl_->threads.reserve(threads);
  for (size_t i = 0; i < threads; i++) impl_->threads.emplace_back([this] { impl_->io.run(); });
}

AsioExecutor::~AsioExecutor() {
  impl_->guard.reset();  // run() returns once no work is left (there is none while idle)
  impl_->io.stop();
  for (std::thread& t : impl_->threads) t.join();
}

void AsioExecutor::Run(std::vector<StrandTask> tasks) {
  if (tasks.empty()) return;
  Impl& impl = *impl_;
  // One handler per strand that has work, running that strand's tasks in
  // order: one post instead of one per task, because a post costs about a
  // hundred times what calling a task in this loop does (no benchmark
  // isolates it; scripts/bench-fs.sh's write figure includes the syncs that
  // run here).
  std::vector<std::vector<std::function<void()>>> by_strand(impl.strands.size());
  for (StrandTask& task : tasks)
    by_strand[task.strand % impl.strands.size()].push_back(std::move(task.fn));
  size_t groups = 0;
  for (const auto& group : by_strand) groups += group.empty() ? 0 : 1;
  {
    util::MutexLock lock(&impl.mu);
    impl.unfinished = groups;
  }
  for (size_t s = 0; s < by_strand.size(); s++) {
    if (by_strand[s].empty()) continue;
    asio::post(impl.strands[s], [&impl, fns = std::move(by_strand[s])]() mutable {
      for (std::function<void()>& fn : fns) {
        if (fn) fn();
        fn = nullptr;  // release what the task holds before Run can return
      }
      util::MutexLock lock(&impl.mu);
      if (--impl.unfinished == 0) impl.done_cv.SignalAll();
    });
  }
  util::MutexLock lock(&impl.mu);
  while (impl.unfinished != 0) impl.done_cv.Wait(&impl.mu);
}

size_t AsioExecutor::threads() const { return impl_->threads.size(); }
size_t AsioExecutor::strands() const { return impl_->strands.size(); }

}  // namespace poolfs::daemon
