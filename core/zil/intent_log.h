// IntentLog: a pool's intent log, which makes a change durable before its
// txg syncs.
//
// Theory
// ------
// Every change a caller may ask to make durable is added as a record
// (log_record.h) when it is made, in memory, with the txg it went into and
// a sequence number from one counter per pool, taken while the change still
// holds the locks of what it changed: records of changes that depend on
// each other are numbered in the order they happened. fsync asks for a
// commit: every record added so far, of every dataset, goes into log blocks
// (log_block.h; one dataset's records per block) written to the log area of
// one vdev (vdev_layout.h), and the area is flushed. A write's record holds
// only where it wrote until the commit, which reads the bytes from the file
// then (an object freed meanwhile drops its record: a later record removed
// it), so data that is never fsynced is never copied.
//
// Indirect writes. A write record of SetIndirectWriteBytes() or more that
// lies in one block of its file, whose txg is still open, does not copy
// its bytes: the commit writes the file's dirty block to its place in the
// pool (EarlyWriter, dmu::Dnode::WriteEarly) and the record names that
// block (kWriteIndirect). The txg's sync then keeps that block instead of
// writing it again, so the data is written once; a commit with such
// records flushes every vdev. Open reads the blocks before the replay (the
// imported space maps do not hold them: nothing may be allocated first)
// and turns the records into plain writes; one whose block does not verify
// ends the log there (on-disk-format.md, section 16.2).
//
// Commit batching: one commit writes at a time; a caller that finds one in
// flight waits, and the next commit takes what every waiter added, so many
// fsyncing threads share one block write and one flush.
//
// The area is a ring. Blocks follow each other from the head; one that
// would not fit before the end starts at offset 0. The pool keeps in each
// uberblock the log state (pool_phys.h): the chain id and where the oldest
// block that the txg's pool still needs lies (the first whose records are
// not all of txgs that synced; the head when there is none). Once that
// uberblock is durable, the space before it may be written again. When the
// ring has no room for a commit (or its records are more than a quarter of
// the ring), the commit waits for the records' txg to sync instead, which
// writes the data once, in its place.
//
// A block names where the next one starts (the next commit's first block
// goes exactly there; its header gives its size), so a reader following the
// chain finds it or stops. Each import starts a new chain (a random id):
// blocks of an older chain never pass a reader's check.
//
// Replay. Open reads the chain from the imported state's tail, block after
// block, until one is not the chain's next (the normal end: nothing there,
// or an older block) or does not verify; a block that verifies but breaks
// the format ends it too, and is noted. The records of txgs after the
// state's synced txg, and after its replayed seq, are what the pool lacks,
// in the order they were made. The caller applies them (NoteReplayed after
// each, so the uberblock of that txg says it is done: a crash during the
// replay goes on after it, never applies one twice), waits for the sync,
// then Start()s the new chain.
//
// Thread safety: every public method may be called from any thread; Add is
// cheap (a lock and a push); Commit blocks on I/O.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pool/pool.h"
#include "poolfs/options.h"
#include "poolfs/status.h"
#include "util/mutex.h"
#include "zil/log_block.h"
#include "zil/log_record.h"

namespace poolfs::core::zil {

struct IntentLogStats {
  uint64_t commits = 0;         // commits that wrote log blocks
  uint64_t commits_synced = 0;  // commits that waited for a txg sync instead
  uint64_t blocks = 0;          // log blocks written
  uint64_t records = 0;         // records written
  uint64_t bytes = 0;           // bytes of log blocks written
  uint64_t commit_ns_total = 0;  // time in commits that wrote blocks
  uint64_t commit_ns_max = 0;
  uint64_t replayed = 0;  // records replayed at this import
  uint64_t replayed_indirect = 0;  // of the records to replay, indirect writes (their blocks read)
  uint64_t indirect = 0;        // write records whose data went to its place (indirect)
  uint64_t indirect_bytes = 0;  // the bytes those records name
};

// What an EarlyWriter did with a write record's bytes.
struct EarlyBlock {
  uint64_t length = 0;    // the record's bytes still in the file (0: none: truncated since)
  std::string block_ptr;  // the pool's pointer to the block holding them; empty: copy them
};

// A record for the log, with the dataset it belongs to.
struct PendingRecord {
  uint64_t dataset = 0;
  LogRecord record;  // a kWrite's data is empty until the commit
  uint32_t write_length = 0;  // kWrite: bytes written at the record's offset
};

// A log chain as a reader finds it (ReadLogChain).
struct LogChain {
  std::vector<PendingRecord> records;  // what a replay applies, in order
  uint64_t blocks = 0;                 // blocks of the chain read
  std::string damage;  // why the chain ended, when not at its normal end
  // Set by ReadIndirectWrites: why the records end at an indirect write
  // whose block does not verify (a commit that never returned).
  std::string unwritten;
  uint64_t indirect = 0;  // indirect writes ReadIndirectWrites turned into writes
};
// Reads `bytes.size()` bytes at `offset` of the log area of the state's vdev.
using LogAreaReader = std::function<Status(uint64_t offset, std::span<uint8_t> bytes)>;
// Follows the chain `state` names (a pool's, `pool_guid`) from its tail:
// every block up to the first that is not the chain's next (its normal end)
// or that verifies but breaks the format (damage, said in `damage`). The
// records kept are those of txgs after the state's synced txg and after its
// replayed seq. Fails only with `read`'s errors.
Result<LogChain> ReadLogChain(const pool::LogState& state, uint64_t pool_guid,
                              const LogAreaReader& read);
// Reads the block an indirect write record names: (the pool's encoded
// pointer, where for the message) -> its lsize bytes, verified.
using LogBlockReader =
    std::function<Result<std::string>(std::string_view encoded, std::string_view where)>;
// Turns the chain's kWriteIndirect records into kWrite records of the bytes
// their blocks hold (on-disk-format.md, section 16.2). A block that does
// not verify (or does not hold the record's range) was written by a commit
// that never returned: the records end before it, and chain->unwritten
// says why.
void ReadIndirectWrites(LogChain* chain, const LogBlockReader& read);

class IntentLog {
 public:
  // A dataset's bytes: (object, offset, length, txg of the record) -> what
  // the file holds there now (shorter past its end; NotFound when the
  // object is gone: freed, or its number taken by a file created after
  // that txg).
  using DataReader = std::function<Result<std::string>(uint64_t, uint64_t, uint64_t, uint64_t)>;
  // A dataset's blocks written early: (object, offset, length, txg) ->
  // the block holding those bytes written to its place now (as t's sync
  // would: dmu::Dnode::WriteEarly) when it lies in txg's dirty copy of one
  // block and txg is still open; else an empty pointer (the commit copies
  // the bytes); NotFound when the object is gone.
  using EarlyWriter = std::function<Result<EarlyBlock>(uint64_t, uint64_t, uint64_t, uint64_t)>;

  // Reads what the import found (Pool::imported_log). Fails only with the
  // pool's read errors (a block that does not verify ends the log).
  static Result<std::unique_ptr<IntentLog>> Open(pool::Pool* pool);
  ~IntentLog();

  // The records to replay, in order, with their datasets; and what reading
  // the chain noticed (a damaged block that ended it), for the log.
  const std::vector<PendingRecord>& to_replay() const { return replay_; }
  const std::vector<std::string>& notes() const { return notes_; }
  // Record `seq` of to_replay() is applied, by a change in txg t.
  void NoteReplayed(uint64_t seq, Txg t);
  // Ends the replay (to_replay() is dropped; the caller has waited for the
  // replay's txgs to sync) and starts a new chain: from now on the pool's
  // uberblocks carry this log's state. Fails only to say that the log
  // area's storage could not be made to exist (Pool::PrepareLogArea): the
  // log is started all the same, and its commits work, each perhaps at the
  // cost of an allocation by the host.
  Status Start();
  // The log's state in the next uberblock: none once the pool is being
  // exported (every change is in its last txg).
  void StopForExport();

  // Reads `dataset`'s write data at commit time, and writes its blocks
  // early for large writes (none: every write's bytes are copied). Records
  // of a dataset with no reader are dropped at commit (a destroyed
  // dataset's).
  void SetReader(uint64_t dataset, DataReader reader, EarlyWriter early = nullptr);
  void RemoveReader(uint64_t dataset);

  // Write records of at least `bytes` (0: none), within one block of
  // their file, go to the log as kWriteIndirect when the block can be
  // written to its place at the commit (EarlyWriter): the data is written
  // once, where the txg's sync then leaves it, instead of into the log and
  // again by the sync. IntentLogOptions' default until set.
  void SetIndirectWriteBytes(uint64_t bytes) EXCLUDES(mu_) {
    util::MutexLock l(&mu_);
    indirect_write_bytes_ = bytes;
  }

  // Adds a record of `dataset` (its seq is set here; `pending.record.txg`
  // is the txg of the change). For kWrite give the length, not the data.
  void Add(uint64_t dataset, LogRecord record, uint32_t write_length = 0);
  // Returns once every record added before the call is durable: written
  // to the log and flushed, or in a synced txg. A commit that can do
  // neither (the pool is suspended) fails, and so does every later one:
  // its records are lost to this import.
  Status Commit();
  // Whether records wait for a commit (no record waiting: fsync is free).
  bool idle() EXCLUDES(mu_);
  // Start()ed: changes are recorded and Commit makes them durable.
  bool started() EXCLUDES(mu_) {
    util::MutexLock l(&mu_);
    return started_ && !stopped_;
  }

  IntentLogStats stats();

 private:
  struct Block {
    uint64_t offset = 0;
    uint32_t size = 0;
    uint64_t seq = 0;
    uint64_t max_txg = 0;
  };
  explicit IntentLog(pool::Pool* pool);
  // The state the uberblock of t carries; and t's durability.
  pool::LogState StateFor(Txg t);
  void Durable(Txg t);
  // Writes `records` (taken from pending_) to the ring, or waits for
  // their txgs when they do not fit. Called without mu_.
  Status Write(std::vector<PendingRecord> records);
  // Free bytes of the ring from `at` to the durable tail (REQUIRES mu_).
  uint64_t FreeFrom(uint64_t at) const REQUIRES(mu_);

  pool::Pool* const pool_;
  const uint32_t vdev_ = 0;
  std::vector<PendingRecord> replay_;
  std::vector<std::string> notes_;
  pool::LogState imported_;

  util::Mutex mu_;
  util::CondVar cv_;  // a commit ended, or a txg became durable
  bool started_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
  uint64_t chain_ GUARDED_BY(mu_) = 0;
  uint64_t next_seq_ GUARDED_BY(mu_) = 1;    // the next record's
  uint64_t next_block_ GUARDED_BY(mu_) = 1;  // the next block's seq
  uint64_t head_ GUARDED_BY(mu_) = 0;        // where the next block goes
  uint64_t durable_tail_ GUARDED_BY(mu_) = 0;  // the tail of the newest durable uberblock
  uint64_t durable_tail_seq_ GUARDED_BY(mu_) = 1;
  std::deque<Block> blocks_ GUARDED_BY(mu_);  // written, from the oldest still needed
  // txg -> the tail (offset, seq) its uberblock carries
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> tails_ GUARDED_BY(mu_);
  std::deque<PendingRecord> pending_ GUARDED_BY(mu_);  // added, not committed, by seq
  bool committing_ GUARDED_BY(mu_) = false;
  Status failed_ GUARDED_BY(mu_);  // a commit's failure: every later one fails
  uint64_t inflight_first_ GUARDED_BY(mu_) = 0;  // the first seq of the commit in flight
  std::map<uint64_t, uint64_t> replayed_by_txg_ GUARDED_BY(mu_);  // txg -> last seq applied
  struct Source {
    DataReader read;
    EarlyWriter early;
  };
  std::map<uint64_t, Source> readers_ GUARDED_BY(mu_);
  uint64_t indirect_write_bytes_ GUARDED_BY(mu_) = IntentLogOptions().indirect_write_bytes;
  pool::LogState last_state_ GUARDED_BY(mu_);  // what StateFor gave last
  IntentLogStats stats_ GUARDED_BY(mu_);
};

}  // namespace poolfs::core::zil
