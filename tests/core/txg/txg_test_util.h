// Helpers for the txg tests: a gate a sync callback can wait on, a bounded
// poll, and a sync callback that records what it saw.
//
// Catch2 assertions are not thread-safe, so helpers running on other threads
// count anomalies in atomics that the test thread checks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "poolfs/status.h"
#include "poolfs/types.h"
#include "txg/txg_options.h"

namespace poolfs::core::txg::testing {

// Blocks waiters until Open().
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Options under which nothing syncs unless asked: no timeout (an hour), no
// threshold.
inline TxgOptions Quiet() {
  TxgOptions o;
  o.timeout_ms = 3600 * 1000;
  return o;
}

// Polls `pred` until it holds or a generous bound (60 s) passes; returns
// whether it held. Not a timing assertion: only a guard against hanging.
inline bool Eventually(const std::function<bool()>& pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A sync callback that records the txgs it synced, checks that no two syncs
// overlap, can wait on a gate before finishing, and can fail one txg.
class SyncRecorder {
 public:
  std::function<Status(Txg)> Fn() {
    return [this](Txg t) { return Sync(t); };
  }
  // The next syncs wait on `gate` (null: none) after they start.
  void set_gate(Gate* gate) { gate_.store(gate); }
  // The sync of `txg` fails with IOError.
  void FailAt(Txg txg) { fail_at_.store(txg.value()); }
  // Runs before each sync returns (on the driver thread).
  void set_hook(std::function<void(Txg)> hook) { hook_ = std::move(hook); }

  std::vector<uint64_t> synced() const {
    std::lock_guard<std::mutex> l(mu_);
    return synced_;
  }
  bool Synced(Txg t) const {
    std::lock_guard<std::mutex> l(mu_);
    for (uint64_t s : synced_) {
      if (s == t.value()) return true;
    }
    return false;
  }
  uint64_t started() const { return started_.load(); }
  uint64_t overlaps() const { return overlaps_.load(); }

 private:
  Status Sync(Txg t) {
    started_++;
    if (in_sync_.exchange(true)) overlaps_++;
    if (Gate* g = gate_.load()) g->Wait();
    if (hook_) hook_(t);
    Status st;
    if (fail_at_.load() == t.value()) {
      st = Status::IOError("disk gone");
    } else {
      std::lock_guard<std::mutex> l(mu_);
      synced_.push_back(t.value());
    }
    in_sync_.store(false);
    return st;
  }

  mutable std::mutex mu_;
  std::vector<uint64_t> synced_;
  std::atomic<Gate*> gate_{nullptr};
  std::atomic<uint64_t> fail_at_{0};
  std::function<void(Txg)> hook_;
  std::atomic<bool> in_sync_{false};
  std::atomic<uint64_t> started_{0};
  std::atomic<uint64_t> overlaps_{0};
};

}  // namespace poolfs::core::txg::testing
