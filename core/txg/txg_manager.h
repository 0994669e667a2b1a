// TxgManager: the transaction-group state machine and the write throttle.
//
// Theory
// ------
// Every change to the pool belongs to one txg. A txg goes through three
// states, and at any moment at most one txg is in each:
//
//   open       accepting holds: a Tx joins it (Hold) before it dirties
//              anything and leaves it (Release) when it commits.
//   quiescing  closed to new holds (they go to the next txg, which opened
//              at the same instant); waiting for its holds to be released.
//   syncing    the sync callback is writing it out. The next txg is open
//              meanwhile, so writers never wait for a sync unless throttled.
//
// A txg moves open -> quiescing -> syncing -> synced, in txg order, each
// txg number exactly once: the callback sees txgs N, N+1, N+2, ... with no
// gaps and never two at once. One driver thread does both quiesce and sync,
// so it quiesces T + 1 only after T's sync returned: quiescing and syncing
// never overlap. (A quiesce waits for transactions already running, which
// are short; overlapping it with a sync would buy little.) The open txg is closed when it has had
// at least one hold and one of these holds:
//   - txg.timeout_ms has passed since it opened;
//   - its dirty bytes reached txg.dirty_sync_percent of txg.dirty_max_bytes;
//   - the dirty total reached txg.dirty_max_bytes (writers are blocked);
//   - Kick() or WaitSynced() asked for it;
//   - Stop() was called.
//
// Empty txgs. A txg that no one has held since it opened is never closed:
// it stays open, keeps its number, and costs no sync — unless the pool has
// work that only syncs advance (SetPendingWork: blocks freed in earlier
// txgs wait out their deferral, a txg at a time), when the driver holds it
// itself once txg.timeout_ms has passed, and the next ones at once until
// the work is done, so that freed space comes back on an idle pool within
// about two timeouts of the free. Hence WaitSynced(T)
// on an open T that has no holds does not sync anything: it returns once
// T - 1 has synced, as every change made before the call is in a txg <= T - 1.
// In general WaitSynced(T) returns once every change made in txgs <= T is
// durable (fsync: pass the txg your Hold returned). A caller that needs a
// sync of its own (say, to write a fresh uberblock) holds and releases a
// txg with no bytes and waits for it.
//
// Holds are counted in per-thread stripes (TxgHolds), so a create-heavy
// workload does not bounce one cache line: closing a txg takes every
// stripe's lock once, and quiescing sums the stripes until they drain.
//
// Dirty accounting. Release adds its bytes to its txg; they leave the total
// when that txg's sync succeeds. The throttle looks at the total over all
// unsynced txgs (a slightly lagging, batched count; see TxgHolds):
//   below delay_min_dirty_percent of the max   no delay;
//   up to the max                              a delay on the curve of
//                                              write_throttle.h, each queued
//                                              behind the previous one;
//   at the max                                 block until a sync finishes.
// The throttle runs in Hold before the txg is joined: a writer waiting in it
// holds nothing, so it never delays a quiesce.
//
// Failure. A sync that fails suspends the manager: nothing more is synced,
// and every later Hold and WaitSynced (and Stop) returns the failure, with
// its code and "pool suspended: sync of txg T failed: ..." as the message.
// An operation that fails halfway (dmu::Tx's theory comment) suspends it
// the same way through Abandon, with IOError and "pool suspended: an
// operation failed halfway in txg T: ...". Abandon comes from a holder of
// T, before its Release, so T cannot have started to sync: the driver
// checks for a suspension after each quiesce, before the callback, so no
// sync starts after the suspension, T's least of all. A sync already
// running (of an earlier txg) finishes, and WaitSynced for it waits for
// its end; it holds nothing of the failed operation. Stop then only stops
// the driver, and the disk keeps the last synced txg. The first
// suspension's status is kept.
//
// Threads, and what may block on what:
//   writers (any thread)  Hold: the throttle (delay; at the max, the end of a
//                         sync). Release: never blocks beyond brief locks.
//                         WaitSynced: the end of the sync of its txg.
//   txg driver (one)      quiesce (writers' Releases), then the sync callback.
//                         It never waits for anything else a writer does.
// A writer must therefore not Hold (which may wait for a sync) or WaitSynced
// while it holds a txg itself, and the sync callback, which runs on the
// driver, must not call Hold, WaitSynced, Kick or Stop: each would wait for
// the driver. Locks: mu_ before stripe locks; Release takes a stripe lock and
// then, after dropping it, mu_; no lock is held across the sync callback.
//
// Thread safety: every public method may be called from any thread (see the
// rules above for what a txg holder and the sync callback may call).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

#include "dmu/tx_assigner.h"
#include "poolfs/status.h"
#include "poolfs/types.h"
#include "txg/txg_holds.h"
#include "txg/txg_options.h"
#include "txg/write_throttle.h"
#include "util/mutex.h"

namespace poolfs::core::txg {

class TxgManager : public dmu::TxAssigner {
 public:
  // Writes out txg T; called on the driver thread, in txg order, with no
  // holds on T left and no TxgManager lock held. Returns the sync's status.
  using SyncFn = std::function<Status(Txg)>;

  // `first_open` (at least 1) is the first txg to open; the txg before it
  // counts as synced. CHECK-fails on options that ValidateTxgOptions refuses.
  TxgManager(Txg first_open, SyncFn sync, TxgOptions opts);
  // Stop()s if running.
  ~TxgManager() override;
  TxgManager(const TxgManager&) = delete;
  TxgManager& operator=(const TxgManager&) = delete;

  // Starts the driver thread. Does nothing if it runs or has been stopped
  // (a stopped manager cannot restart).
  void Start();
  // Refuses new holds, syncs every txg that had holds (waiting for their
  // releases), stops the driver and returns OK or the failure that
  // suspended the manager. Starts the driver first if it never ran. Later
  // calls return the same status.
  Status Stop();

  // Throttles, then joins the open txg and returns it. Fails when suspended
  // (the sync failure) or stopping (Aborted). `estimated_bytes` is not used
  // yet: the throttle looks only at dirty data already released.
  Result<Txg> Hold(uint64_t estimated_bytes) override;
  // Leaves `txg` (returned by Hold, released exactly once, from any thread),
  // counting `dirtied_bytes` as its dirty data.
  void Release(Txg txg, uint64_t dirtied_bytes) override;
  // Suspends the manager: `txg` (held by the caller, who releases it
  // afterwards) holds a half-done change and never syncs; see Failure
  // above. Returns the suspension's status. Never blocks beyond mu_.
  Status Abandon(Txg txg, const Status& cause) override;
  // OK, or why the manager is suspended.
  Status suspended() const;

  // Returns OK once every change made in txgs <= `txg` has synced (Txg(0):
  // the txg open at the call), asking for a sync now rather than at the
  // timeout. Fails with the suspension status, with InvalidArgument for a
  // txg not opened yet, and with Aborted when the driver is not running and
  // the txg has not synced.
  Status WaitSynced(Txg txg);
  // Asks for a sync of the open txg soon, if it has had holds. Never blocks.
  void Kick();
  // `pending` (called on the driver thread, with no TxgManager lock held,
  // at most once per txg.timeout_ms while the open txg is empty) says
  // whether syncs have work left even with no change: then the open txg
  // syncs empty (see Empty txgs above). Set before Start.
  void SetPendingWork(std::function<bool()> pending) { pending_work_ = std::move(pending); }
  // A read-only pool: every Hold fails with `why` (the manager is not
  // suspended: nothing was lost), so no txg is ever held or synced. Call
  // before Start.
  void SetReadOnly(Status why) { read_only_ = std::move(why); }

  Txg open_txg() const { return holds_.open(); }
  // The newest txg whose sync has finished. Never blocks: it reads a copy
  // of last_synced_, without mu_.
  Txg last_synced() const { return Txg(last_synced_copy_.load(std::memory_order_acquire)); }
  // The dirty bytes of the txg being synced (as its Tx releases counted
  // them); for the sync callback, which runs while it is set.
  uint64_t syncing_dirty_bytes() const {
    return syncing_dirty_bytes_.load(std::memory_order_relaxed);
  }

  // Applies new options at once (timeout, dirty max, percents, delays).
  // CHECK-fails on options that ValidateTxgOptions refuses.
  void SetOptions(const TxgOptions& opts);

  struct Stats {
    uint64_t syncs = 0;           // successful syncs
    uint64_t delays = 0;          // writers delayed by the throttle
    uint64_t delay_ns_total = 0;  // sum of those delays
    uint64_t blocked_waits = 0;   // writers that blocked at the dirty max
    uint64_t dirty_bytes = 0;     // dirty bytes of all unsynced txgs, now
    uint64_t last_sync_ns = 0;    // how long the last sync callback took
    uint64_t idle_syncs = 0;      // empty txgs synced for pending work
  };
  Stats stats() const;

 private:
  using Clock = std::chrono::steady_clock;

  void DriverLoop();
  // Whether the open txg `open` (held) should be closed now.
  bool SyncDueLocked(Txg open, Clock::time_point now) const REQUIRES(mu_);
  // Quiesces and syncs the open txg; drops mu_ around the callback.
  void QuiesceAndSyncLocked() REQUIRES(mu_);
  // Asks the driver to sync through `txg`.
  void WantSyncLocked(Txg txg) REQUIRES(mu_);
  // Delays or blocks the caller as the dirty total asks.
  Status Throttle();
  // Records the first suspension and wakes everyone who waits for a sync.
  void SuspendLocked(Status why) REQUIRES(mu_);
  void ApplyOptionsLocked(const TxgOptions& opts) REQUIRES(mu_);

  const SyncFn sync_;
  std::function<bool()> pending_work_;       // set before Start
  Status read_only_;                         // OK, or why every Hold fails; set before Start
  bool idle_chain_ GUARDED_BY(mu_) = false;  // the last sync was idle, for pending work
  TxgHolds holds_;
  // Copies for paths that do not take mu_; written under mu_.
  std::atomic<uint64_t> delay_min_bytes_{0};
  std::atomic<uint64_t> sync_trigger_bytes_{0};
  std::atomic<uint64_t> want_through_{0};  // sync every txg up to this one
  std::atomic<bool> suspended_flag_{false};
  std::atomic<uint64_t> syncing_dirty_bytes_{0};
  std::atomic<uint64_t> last_synced_copy_{0};  // last_synced_, stored after it

  mutable util::Mutex mu_;
  TxgOptions opts_ GUARDED_BY(mu_);
  Status suspended_ GUARDED_BY(mu_);  // OK, or why syncing stopped
  uint64_t last_synced_ GUARDED_BY(mu_);
  uint64_t syncing_ GUARDED_BY(mu_) = 0;         // the txg the callback is writing, 0: none
  Clock::time_point opened_at_ GUARDED_BY(mu_);  // when the open txg opened
  uint64_t last_delay_end_ns_ GUARDED_BY(mu_) = 0;
  Stats stats_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  bool stop_requested_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
  util::CondVar driver_cv_;  // the driver waits for work or its deadline
  util::CondVar drain_cv_;   // the driver waits for a closed txg's holds
  util::CondVar synced_cv_;  // WaitSynced and Stop wait for the driver
  util::CondVar space_cv_;   // blocked writers wait for dirty data to drop
  std::thread driver_;
};

}  // namespace poolfs::core::txg
