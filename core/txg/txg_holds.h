// TxgHolds: who holds which txg, and how many bytes each txg has dirtied,
// counted in stripes so that writers on different threads do not share a
// cache line.
//
// Holds. A writer joins the open txg on its thread's stripe (one of
// kStripes, picked once per thread), under that stripe's lock: it reads the
// open txg and bumps the stripe's count for it. Close() takes every stripe
// lock, in index order, to move the open txg forward, so a Join lands either
// wholly before the close (in the old txg) or wholly after it (in the new).
// Leave may run on another thread than Join did: it decrements its own
// stripe's count, so one stripe's count can go negative, but the sum over
// stripes is the number of holds outstanding. Once a txg is closed no hold
// can join it, so its sum only falls, and Outstanding() == 0 is final.
//
// Dirty bytes. Leave adds the bytes to its stripe's exact count for the txg
// and to an unpublished count; when that reaches the publish batch, it moves
// to the shared atomic totals (all unsynced txgs, and per txg) that the
// throttle reads. So the shared totals lag by less than kStripes * batch
// bytes per txg, and a writer touches a shared cache line once per batch,
// not once per transaction. Seal() publishes what is left of a drained txg,
// making the totals exact for it; Retire() takes it out after its sync.
//
// A txg uses slot txg % kSlots. Close() of T resets the slot of T + 1, last
// used by T + 1 - kSlots; the caller guarantees that txg has been retired
// (the txg driver syncs one txg at a time, so only T - 1 may be unretired).
//
// Thread safety: Join, Leave, open, Held and the dirty readers from any
// thread. Close, Seal and Retire from one thread at a time (the driver).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "poolfs/types.h"
#include "util/mutex.h"

namespace poolfs::core::txg {

class TxgHolds {
 public:
  static constexpr size_t kStripes = 16;
  static constexpr size_t kSlots = 4;

  explicit TxgHolds(Txg first_open);
  TxgHolds(const TxgHolds&) = delete;
  TxgHolds& operator=(const TxgHolds&) = delete;

  // Joins the open txg and returns it; Txg(0) once Refuse() has been called.
  Txg Join();

  struct LeaveResult {
    bool txg_closed = false;  // `txg` was no longer open: its quiescer may be waiting
    bool published = false;   // the shared dirty totals moved
  };
  // Leaves `txg`, which the caller joined, adding `bytes` to its dirty data.
  LeaveResult Leave(Txg txg, uint64_t bytes);

  // Closes the open txg T, opens T + 1 and returns T.
  Txg Close();
  // Makes every later Join fail. Joins before it count as usual.
  void Refuse();

  // Returns the holds of `txg` not yet left (exact; locks every stripe).
  int64_t Outstanding(Txg txg) const;
  // For a closed txg with no holds left: publishes its remaining bytes and
  // returns its exact dirty bytes.
  uint64_t Seal(Txg txg);
  // After `txg` synced: removes its `bytes` (from Seal) from the total.
  void Retire(Txg txg, uint64_t bytes);

  Txg open() const { return Txg(open_.load(std::memory_order_acquire)); }
  // Whether anyone joined `txg` (open or just closed) since it opened.
  bool Held(Txg txg) const { return slots_[Slot(txg)].held.load(std::memory_order_acquire); }
  // Published dirty bytes of every txg not yet retired (lags, see above).
  uint64_t dirty_total() const;
  // Published dirty bytes of the open txg (lags, see above).
  uint64_t open_dirty() const;
  // Exact dirty bytes of every txg not yet retired (locks every stripe).
  uint64_t ExactDirtyTotal() const;

  // Sets how many bytes a stripe gathers before publishing (0: every Leave).
  void set_publish_batch(uint64_t bytes) { batch_.store(bytes, std::memory_order_relaxed); }
  // Publishes every stripe's gathered bytes now (after the batch shrank).
  void PublishAll();

 private:
  struct alignas(64) Stripe {
    mutable util::Mutex mu;
    int64_t holds[kSlots] GUARDED_BY(mu) = {};
    uint64_t dirty[kSlots] GUARDED_BY(mu) = {};
    uint64_t unpublished[kSlots] GUARDED_BY(mu) = {};
  };
  struct alignas(64) SlotTotals {
    std::atomic<bool> held{false};
    std::atomic<uint64_t> published{0};
  };

  static size_t Slot(Txg txg) { return txg.value() % kSlots; }
  static size_t MyStripe();
  void LockAll() const;
  void UnlockAll() const;

  std::array<Stripe, kStripes> stripes_;
  std::array<SlotTotals, kSlots> slots_;
  // Written only with every stripe lock held; read under any one of them.
  std::atomic<uint64_t> open_;
  std::atomic<bool> refused_{false};
  // Published bytes of all unretired txgs; changed under a stripe lock or by
  // Retire, so it never goes below zero.
  alignas(64) std::atomic<uint64_t> total_{0};
  std::atomic<uint64_t> batch_{0};
};

}  // namespace poolfs::core::txg
