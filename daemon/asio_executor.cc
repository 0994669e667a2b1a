// AsioExecutor: see asio_executor.h. The only file of the project that
// includes Boost.Asio.
//
// Post() counts the task as pending under a mutex and posts it to its
// strand; the handler runs it and decrements the count, and the one that
// reaches zero wakes Wait(). The io_context's threads never wait for
// anything but the io_context itself, so one thread suffices for any number
// of strands (tasks do not wait for each other, as executor.h requires).
// A handler per task, where this executor used to post one per strand with
// every task of the strand in it: a post costs a few microseconds, and a
// sync posts a handful of tasks per dataset (its dnode lists, shares of
// large dnodes, its FinishSync), so the cost is small beside the tasks, and
// it lets the threads interleave the strands and a dataset finish while
// others still sync.
#include "asio_executor.h"

#include <atomic>
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
  // Changed only by BeginSync (with nothing pending) and the constructor.
  std::vector<Strand> strands;
  std::vector<std::thread> threads;
  std::atomic<size_t> wanted{0};   // SetThreads' count
  std::atomic<size_t> running{0};  // threads.size(), for threads()

  // The countdown of the batch in progress.
  util::Mutex mu;
  util::CondVar done_cv;
  size_t pending GUARDED_BY(mu) = 0;

  void Start(size_t n) {
    guard.emplace(asio::make_work_guard(io));
    threads.reserve(n);
    for (size_t i = 0; i < n; i++) threads.emplace_back([this] { io.run(); });
    running.store(n, std::memory_order_relaxed);
  }
  void Stop() {
    guard.reset();  // run() returns once no work is left (there is none while idle)
    io.stop();
    for (std::thread& t : threads) t.join();
    threads.clear();
    running.store(0, std::memory_order_relaxed);
  }
};

AsioExecutor::AsioExecutor(size_t threads, size_t strands) : impl_(std::make_unique<Impl>()) {
  if (strands == 0) strands = 1;
  impl_->wanted.store(threads, std::memory_order_relaxed);
  impl_->strands.reserve(strands);
  for (size_t i = 0; i < strands; i++) impl_->strands.emplace_back(asio::make_strand(impl_->io));
  impl_->Start(threads != 0 ? threads : strands);
}

AsioExecutor::~AsioExecutor() { impl_->Stop(); }

void AsioExecutor::BeginSync(size_t strands) {
  Impl& impl = *impl_;
  if (strands == 0) strands = 1;
  {
    util::MutexLock lock(&impl.mu);
    if (impl.pending != 0) std::terminate();  // a batch not waited for: a bug
  }
  if (impl.strands.size() != strands) {
    impl.strands.clear();
    for (size_t i = 0; i < strands; i++) impl.strands.emplace_back(asio::make_strand(impl.io));
  }
  const size_t wanted = impl.wanted.load(std::memory_order_relaxed);
  const size_t n = wanted != 0 ? wanted : strands;
  if (n == impl.threads.size()) return;
  impl.Stop();
  impl.io.restart();
  impl.Start(n);
}

void AsioExecutor::Post(size_t strand, std::function<void()> fn) {
  Impl& impl = *impl_;
  {
    util::MutexLock lock(&impl.mu);
    impl.pending++;
  }
  asio::post(impl.strands[strand % impl.strands.size()], [&impl, fn = std::move(fn)]() mutable {
    fn();
    fn = nullptr;  // release what the task holds before Wait can return
    util::MutexLock lock(&impl.mu);
    if (--impl.pending == 0) impl.done_cv.SignalAll();
  });
}

void AsioExecutor::Wait() {
  Impl& impl = *impl_;
  util::MutexLock lock(&impl.mu);
  while (impl.pending != 0) impl.done_cv.Wait(&impl.mu);
}

void AsioExecutor::SetThreads(size_t threads) {
  impl_->wanted.store(threads, std::memory_order_relaxed);
}

size_t AsioExecutor::threads() const { return impl_->running.load(std::memory_order_relaxed); }
size_t AsioExecutor::strands() const { return impl_->strands.size(); }

}  // namespace poolfs::daemon
