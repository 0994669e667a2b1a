#include "txg/txg_manager.h"

#include <algorithm>
#include <string>
#include <utility>

#include "util/check.h"

namespace poolfs::core::txg {
namespace {

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Bytes a hold stripe gathers before publishing: 1/1024 of the max (so the
// shared totals lag by at most a few percent of it), at most 1 MiB.
uint64_t PublishBatch(const TxgOptions& opts) {
  return std::min<uint64_t>(opts.dirty_max_bytes / (TxgHolds::kStripes * 64), uint64_t{1} << 20);
}

Status Closing() { return Status(StatusCode::kAborted, "txg: the pool is closing"); }

}  // namespace

TxgManager::TxgManager(Txg first_open, SyncFn sync, TxgOptions opts)
    : sync_(std::move(sync)), holds_(first_open) {
  POOLFS_CHECK(sync_ != nullptr);
  util::MutexLock l(&mu_);
  last_synced_ = first_open.value() - 1;
  last_synced_copy_.store(last_synced_, std::memory_order_release);
  opened_at_ = Clock::now();
  ApplyOptionsLocked(opts);
}

TxgManager::~TxgManager() {
  bool running;
  {
    util::MutexLock l(&mu_);
    running = running_;
  }
  if (running) (void)Stop();
}

void TxgManager::ApplyOptionsLocked(const TxgOptions& opts) {
  const Status st = ValidateTxgOptions(opts);
  POOLFS_CHECK(st.ok());
  opts_ = opts;
  delay_min_bytes_.store(DelayMinBytes(opts), std::memory_order_relaxed);
  sync_trigger_bytes_.store(SyncTriggerBytes(opts), std::memory_order_relaxed);
  holds_.set_publish_batch(PublishBatch(opts));
  holds_.PublishAll();  // the old batch may be large against a new, smaller max
}

void TxgManager::SetOptions(const TxgOptions& opts) {
  util::MutexLock l(&mu_);
  ApplyOptionsLocked(opts);
  driver_cv_.Signal();    // the deadline or a threshold may have moved
  space_cv_.SignalAll();  // so may the max
}

void TxgManager::Start() {
  util::MutexLock l(&mu_);
  if (running_ || stopped_ || stop_requested_) return;
  running_ = true;
  opened_at_ = Clock::now();
  driver_ = std::thread([this] { DriverLoop(); });
}

Status TxgManager::Stop() {
  {
    util::MutexLock l(&mu_);
    if (stop_requested_) {  // stopped, or another thread is stopping
      while (!stopped_) synced_cv_.Wait(&mu_);
      return suspended_;
    }
  }
  Start();
  // Refuse before the driver can see stop_requested_: it then syncs every
  // txg held so far and finds the next one empty for good.
  holds_.Refuse();
  {
    util::MutexLock l(&mu_);
    stop_requested_ = true;
    driver_cv_.Signal();
    space_cv_.SignalAll();
  }
  driver_.join();
  util::MutexLock l(&mu_);
  running_ = false;
  stopped_ = true;
  synced_cv_.SignalAll();
  return suspended_;
}

Result<Txg> TxgManager::Hold(uint64_t /*estimated_bytes*/) {
  if (!read_only_.ok()) return read_only_;
  if (suspended_flag_.load(std::memory_order_acquire)) {
    util::MutexLock l(&mu_);
    return suspended_;
  }
  POOLFS_RETURN_IF_ERROR(Throttle());
  const Txg txg = holds_.Join();
  if (txg.value() == 0) return Closing();
  return txg;
}

Status TxgManager::Throttle() {
  // Fast path: well below the max, no lock and no shared write.
  if (holds_.dirty_total() < delay_min_bytes_.load(std::memory_order_relaxed)) {
    return Status::Ok();
  }
  uint64_t now = 0;
  uint64_t wake = 0;
  {
    util::MutexLock l(&mu_);
    bool blocked = false;
    uint64_t dirty = 0;
    while (true) {
      if (!suspended_.ok()) return suspended_;
      if (stop_requested_) return Closing();
      dirty = holds_.dirty_total();
      if (dirty < opts_.dirty_max_bytes) break;
      if (!blocked) {
        blocked = true;
        stats_.blocked_waits++;
      }
      WantSyncLocked(holds_.open());
      space_cv_.Wait(&mu_);
    }
    const uint64_t delay = ThrottleDelayNs(dirty, opts_);
    if (delay == 0) return Status::Ok();
    now = NowNs();
    wake = DelayWakeupNs(now, last_delay_end_ns_, delay);
    last_delay_end_ns_ = wake;
    stats_.delays++;
    stats_.delay_ns_total += wake - now;
  }
  std::this_thread::sleep_for(std::chrono::nanoseconds(wake - now));
  return Status::Ok();
}

void TxgManager::Release(Txg txg, uint64_t dirtied_bytes) {
  const TxgHolds::LeaveResult r = holds_.Leave(txg, dirtied_bytes);
  if (r.txg_closed) {
    // The driver may be waiting for this txg to drain. It checks the stripes
    // under mu_, so taking mu_ after our decrement cannot lose the wakeup.
    util::MutexLock l(&mu_);
    drain_cv_.Signal();
    return;
  }
  if (r.published && holds_.open_dirty() >= sync_trigger_bytes_.load(std::memory_order_relaxed) &&
      want_through_.load(std::memory_order_relaxed) < txg.value()) {
    util::MutexLock l(&mu_);
    WantSyncLocked(txg);
  }
}

Status TxgManager::Abandon(Txg txg, const Status& cause) {
  util::MutexLock l(&mu_);
  SuspendLocked(Status(StatusCode::kIOError, "pool suspended: an operation failed halfway in txg " +
                                                 std::to_string(txg.value()) + ": " +
                                                 cause.ToString()));
  return suspended_;
}

void TxgManager::SuspendLocked(Status why) {
  if (!suspended_.ok()) return;  // the first cause is the one to report
  suspended_ = std::move(why);
  suspended_flag_.store(true, std::memory_order_release);
  driver_cv_.Signal();
  synced_cv_.SignalAll();  // WaitSynced returns the suspension
  space_cv_.SignalAll();   // so does a throttled Hold
}

Status TxgManager::suspended() const {
  util::MutexLock l(&mu_);
  return suspended_;
}

void TxgManager::WantSyncLocked(Txg txg) {
  if (want_through_.load(std::memory_order_relaxed) < txg.value()) {
    want_through_.store(txg.value(), std::memory_order_relaxed);
    driver_cv_.Signal();
  }
}

void TxgManager::Kick() {
  util::MutexLock l(&mu_);
  const Txg open = holds_.open();
  if (holds_.Held(open)) WantSyncLocked(open);
}

Status TxgManager::WaitSynced(Txg txg) {
  util::MutexLock l(&mu_);
  const uint64_t t = txg.value() != 0 ? txg.value() : holds_.open().value();
  if (t > holds_.open().value()) {
    return Status::InvalidArgument(
        "txg: WaitSynced(" + std::to_string(t) +
        "): that txg has not opened yet (open: " + std::to_string(holds_.open().value()) + ")");
  }
  while (true) {
    if (last_synced_ >= t) return Status::Ok();
    // A sync that was running when the pool suspended still completes.
    if (!suspended_.ok() && t > syncing_) return suspended_;
    // An open txg no one has held holds no change: only earlier ones matter.
    if (t == holds_.open().value() && !holds_.Held(Txg(t)) && last_synced_ + 1 >= t) {
      return Status::Ok();
    }
    if (!running_) {
      return Status(StatusCode::kAborted,
                    "txg: WaitSynced(" + std::to_string(t) + "): the txg driver is not running");
    }
    WantSyncLocked(Txg(t));
    synced_cv_.Wait(&mu_);
  }
}

TxgManager::Stats TxgManager::stats() const {
  util::MutexLock l(&mu_);
  Stats s = stats_;
  s.dirty_bytes = holds_.ExactDirtyTotal();
  return s;
}

bool TxgManager::SyncDueLocked(Txg open, Clock::time_point now) const {
  return stop_requested_ || want_through_.load(std::memory_order_relaxed) >= open.value() ||
         now >= opened_at_ + std::chrono::milliseconds(opts_.timeout_ms) ||
         holds_.open_dirty() >= SyncTriggerBytes(opts_) ||
         holds_.dirty_total() >= opts_.dirty_max_bytes;
}

void TxgManager::DriverLoop() {
  util::MutexLock l(&mu_);
  while (true) {
    if (!suspended_.ok()) {  // nothing more is synced; wait to be stopped
      if (stop_requested_) return;
      driver_cv_.Wait(&mu_);
      continue;
    }
    const Txg open = holds_.open();
    const auto timeout = std::chrono::milliseconds(opts_.timeout_ms);
    if (!holds_.Held(open)) {
      if (stop_requested_) return;  // holds are refused: nothing left to sync
      if (pending_work_ && (idle_chain_ || Clock::now() >= opened_at_ + timeout)) {
        // Idle, but syncs have work left: hold the empty txg ourselves, and
        // the next ones at once, until the work is done.
        mu_.Unlock();
        const bool pending = pending_work_();
        mu_.Lock();
        idle_chain_ = pending;
        if (pending && holds_.open() == open && !holds_.Held(open)) {
          const Txg joined = holds_.Join();
          if (joined.value() != 0) {
            POOLFS_CHECK_EQ(joined.value(), open.value());
            (void)holds_.Leave(joined, 0);
            want_through_.store(
                std::max(want_through_.load(std::memory_order_relaxed), open.value()),
                std::memory_order_relaxed);
            stats_.idle_syncs++;
          }
          continue;
        }
        opened_at_ = Clock::now();  // look again a timeout from now
      }
      // Idle. A hold wakes nobody; the next check is at most a timeout away,
      // and Kick/WaitSynced/thresholds signal.
      driver_cv_.WaitFor(&mu_, timeout);
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (!SyncDueLocked(open, now)) {
      driver_cv_.WaitFor(&mu_, opened_at_ + timeout - now);
      continue;
    }
    QuiesceAndSyncLocked();
  }
}

void TxgManager::QuiesceAndSyncLocked() {
  // Quiesce: close the txg (new holds go to the next one, open from now)...
  const Txg txg = holds_.Close();
  opened_at_ = Clock::now();
  // ...and wait for its holds to drain. Releases signal drain_cv_.
  while (holds_.Outstanding(txg) != 0) drain_cv_.Wait(&mu_);
  // A holder that abandoned this txg (or a later one) suspended us before
  // its release: this txg must not sync.
  if (!suspended_.ok()) return;
  const uint64_t bytes = holds_.Seal(txg);
  POOLFS_CHECK_EQ(last_synced_ + 1, txg.value());

  // Sync, with no lock held: writers keep holding the next txg.
  syncing_ = txg.value();
  syncing_dirty_bytes_.store(bytes, std::memory_order_relaxed);
  mu_.Unlock();
  const uint64_t start = NowNs();
  Status st = sync_(txg);
  const uint64_t took = NowNs() - start;
  mu_.Lock();
  syncing_ = 0;

  stats_.last_sync_ns = took;
  if (st.ok()) {
    holds_.Retire(txg, bytes);
    last_synced_ = txg.value();
    // Released after the sync's writes and holds_.Retire: whoever reads
    // this txg through last_synced() sees them, as under mu_.
    last_synced_copy_.store(last_synced_, std::memory_order_release);
    stats_.syncs++;
  } else {
    SuspendLocked(Status(st.code(), "pool suspended: sync of txg " + std::to_string(txg.value()) +
                                        " failed: " + st.message()));
  }
  synced_cv_.SignalAll();
  space_cv_.SignalAll();
}

}  // namespace poolfs::core::txg
