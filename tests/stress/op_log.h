// OpLog: the record of what a poolfs-stress workload did, the parent's oracle.
//
// Every operation the workload makes under a Tx is appended as one 64-byte
// record with the txg of its Tx, before that Tx commits. A txg cannot sync
// before its Txs commit, so for every txg T that reached disk the log holds
// every operation of T, even when the writer is SIGKILLed a moment later.
// Records also say "txg T is durable" (kSynced) whenever the writer learns it
// (WaitSynced returned, or last_synced() moved): the pool found after a crash
// must be at least that new.
//
// Each operation record names its dataset (an index into the run's list) and
// object.
//
// Order. Each record has a sequence number. Creates and frees take their
// number, do the operation and append under one lock (SerialSection), so an
// object id freed by one thread and reused by another is logged free-then-
// create. Every other operation touches an object owned by one thread, whose
// own numbers increase. So sorting by (txg, seq) replays every object's
// history in the order the DMU saw it.
//
// Storage: a file opened O_APPEND; each record is one write(2) (the kernel
// keeps whole small appends, and a killed process keeps what it wrote). The
// reader drops a torn last record and refuses any other damage.
//
// Thread safety: Append, NextSeq and SerialSection from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "poolfs/status.h"
#include "util/mutex.h"

namespace poolfs::stress {

enum class OpKind : uint8_t {
  kCreate = 1,    // object; a = block size, aux = compression
  kWrite = 2,     // object; a = offset, b = length, aux = Fill
  kTruncate = 3,  // object; a = new length
  kPunch = 4,     // object; a = offset, b = length
  kFree = 5,      // object
  kBonus = 6,     // object; a = bonus length, aux = bonus type (bytes: BonusBytes)
  kSynced = 7,    // txg is durable
  // Dataset `dataset` (named DatasetName(dataset)) is being created (aux 0,
  // logged before the call; a = the open txg then, a lower bound of its txg)
  // or was created (aux 1, logged after; txg = the open txg then, an upper
  // bound).
  kCreateDataset = 8,
};

// The name of the run's dataset `index` other than the first (the pool's
// own): "ds<index>".
std::string DatasetName(uint16_t index);

struct OpRecord {
  OpKind kind = OpKind::kSynced;
  uint8_t aux = 0;
  uint16_t dataset = 0;  // index into the run's dataset list
  uint64_t seq = 0;
  uint64_t txg = 0;
  uint64_t object = 0;
  uint64_t a = 0;
  uint64_t b = 0;
};

std::string DescribeRecord(const OpRecord& r);

// Prints the log at `path` sorted by (txg, seq); when object != 0, only the
// records of objects with that id (in any dataset) and the kSynced ones.
// Returns an exit code.
int DumpLog(const std::string& path, uint64_t object);

class OpLog {
 public:
  static constexpr size_t kRecordSize = 64;

  // Opens the log at `path` for appending, creating it, and emptying it
  // when `truncate`. IOError on failure.
  static Result<std::unique_ptr<OpLog>> Open(const std::string& path, bool truncate);
  ~OpLog();
  OpLog(const OpLog&) = delete;
  OpLog& operator=(const OpLog&) = delete;

  uint64_t NextSeq() { return next_seq_.fetch_add(1, std::memory_order_relaxed); }
  // Appends one record. IOError on a failed or short write.
  Status Append(const OpRecord& r);
  // The lock creates and frees hold around (NextSeq, operation, Append).
  util::Mutex& serial_mu() { return serial_mu_; }

  // Reads a log; a torn last record is dropped (*torn set). Corruption for
  // a damaged record elsewhere, IOError when the file cannot be read.
  static Result<std::vector<OpRecord>> Read(const std::string& path, bool* torn);

 private:
  explicit OpLog(int fd) : fd_(fd) {}
  const int fd_;
  std::atomic<uint64_t> next_seq_{1};
  util::Mutex serial_mu_;
};

}  // namespace poolfs::stress
