// Scrub: the online walk that reads every copy of every block of a pool,
// verifies it, and rewrites each bad copy from a good one.
//
// Theory
// ------
// What is walked. The tree of the last synced txg: the MOS (its root block,
// dnode blocks, and every object's block tree) and then each dataset's,
// in dataset id order, each object's blocks in block order. Every block
// is read once per copy (zio::Zio::ReadEveryCopy). A copy that fails
// (an I/O error, or bytes that fail the checksum) while another copy
// verifies is rewritten with the good bytes (Zio::RepairCopy): repaired.
// A block none of whose copies verifies is an error, remembered with its
// dataset, object and block (the POSIX layer turns them into paths), and
// its subtree (an indirect or dnode block's children) is skipped.
//
// Rounds. The scrub thread works in rounds of at most kRoundBytes read or
// kRoundTime spent. A round holds back the reuse of freed space
// (SpaceManager::HoldReuse), then takes the roots of the last synced txg:
// every block of that tree then keeps its bytes until the round ends, so a
// block freed meanwhile is never misread as damage, and a repair never
// lands on space handed to a new block. It walks from its bookmark
// (objset, object, block) until its budget is spent, releases the hold and
// records where it stopped. The next round walks the tree of a newer txg
// from there: blocks written since behind the bookmark are not walked
// (they were written, and checksummed, after the scrub began).
//
// What was written since the scrub began (born at or after its start txg)
// is not verified ahead of the bookmark either, as it is not behind it: an
// object created since (its generation) is skipped, a data block written
// since is skipped, and an indirect or dnode block written since is only
// read through (one copy, not counted) to reach the older blocks below
// it. So the walk has an end however fast writers create objects.
//
// Throttle. After each round the thread sleeps: as long as the round took
// when the pool had no other I/O during it, twice as long when it had
// (the foreground then keeps at least two thirds of the time, more than
// half its speed on a busy machine). Stop ends the walk within a round.
//
// Persistence. The scrub's state (running or not, its bookmark, counters,
// the first errors) is part of the pool directory (pool_phys.h, version
// 4), stored with the next txg after each round (the scrub holds a Tx to
// make one): a remount resumes a running scrub from its bookmark, and
// `poolfs status` says when the last one ran and what it found.
//
// Thread safety: Start, Stop, status() from any thread; one scrub thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "pool/pool_phys.h"
#include "poolfs/status.h"
#include "poolfs/types.h"
#include "util/mutex.h"
#include "zio/block_ptr.h"

namespace poolfs::core::zio {
class Zio;
}
namespace poolfs::core::space {
class SpaceManager;
}

namespace poolfs::core::pool {

// The roots of one synced txg, as a scrub round walks them.
struct SyncedRoots {
  Txg txg;
  zio::BlockPtr mos;
  std::vector<std::pair<uint64_t, zio::BlockPtr>> datasets;  // (id, root), by id
};

// What the scrub does to the pool, given by the pool.
struct ScrubHooks {
  zio::Zio* zio = nullptr;
  space::SpaceManager* space = nullptr;
  // The last synced txg's roots (called with reuse held back).
  std::function<SyncedRoots()> roots;
  // Stores the scrub's state with the next txg (and syncs it soon).
  std::function<void(const ScrubPhys&)> save;
  // Bytes read and written by everyone since the pool was imported.
  std::function<uint64_t()> io_bytes;
};

class Scrub {
 public:
  static constexpr uint64_t kRoundBytes = uint64_t{64} << 20;
  static constexpr std::chrono::milliseconds kRoundTime{200};

  // `state`: what the pool directory held at import (a scrub that was
  // running resumes when Resume is called).
  Scrub(ScrubHooks hooks, ScrubPhys state);
  ~Scrub();  // stops the thread (the state stays running on disk)
  Scrub(const Scrub&) = delete;
  Scrub& operator=(const Scrub&) = delete;

  // Starts a scrub from the beginning at txg `txg` (the open one), or
  // AlreadyExists when one is running.
  Status Start(Txg txg) EXCLUDES(mu_);
  // Stops a running scrub (NotFound when none runs): its state becomes
  // stopped, with what it found so far.
  Status Stop() EXCLUDES(mu_);
  // Starts the thread again for a scrub that was running when the pool was
  // last exported. Nothing when none was.
  void Resume() EXCLUDES(mu_);
  // Ends the thread without changing the state (export).
  void Halt() EXCLUDES(mu_);

  ScrubPhys status() const EXCLUDES(mu_);
  // Whole rounds done since the last Start or Resume (tests wait on it).
  uint64_t rounds() const { return rounds_.load(std::memory_order_acquire); }

 private:
  class Walker;
  void Run();
  // One round from the bookmark; false when the walk reached the end.
  bool Round(ScrubPhys* state);
  void StartThread() REQUIRES(mu_);

  ScrubHooks hooks_;
  mutable util::Mutex mu_;
  ScrubPhys state_ GUARDED_BY(mu_);
  bool halt_ GUARDED_BY(mu_) = false;
  util::CondVar wake_;
  std::thread thread_;
  std::atomic<uint64_t> rounds_{0};
};

}  // namespace poolfs::core::pool
