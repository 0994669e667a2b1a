// Pool administration through the public API: create a pool in files, and
// check one offline (`poolfs create`, `poolfs check`).
//
// This is what daemon/ and fuse/ see of the pool layer for these two jobs;
// the implementation lives in core/pool (admin.cc, check.cc).
//
// Thread safety: free functions; each call works on its own files. A check
// holds a shared lock on every vdev file for its duration, so an import
// started meanwhile is refused (Busy) and two checks may run at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "poolfs/status.h"

namespace poolfs {

struct CreatePoolOptions {
  std::string name = "pool";  // also the name of the pool's first dataset
  uint32_t ashift = 12;       // log2 of the sector size, 9..16
  bool force = false;         // overwrite a non-empty file or an existing pool
};

// Creates a pool striped over `paths`, each a sparse file of `size_bytes`
// (an existing empty file is reused), and writes its first txg; the pool is
// left exported. Fails with InvalidArgument for no paths, a path given twice,
// a bad name or ashift, or a size below the minimum vdev size; AlreadyExists
// for a file that holds a pool or is not empty (unless options.force); Busy
// when a file is in use by another process (even with force); IOError from
// the files. Files this call created are removed again when it fails.
Status CreatePool(const std::vector<std::string>& paths, uint64_t size_bytes,
                  const CreatePoolOptions& options);

// One thing wrong with a pool, and where it is:
//   where: "dataset 'tank' object 17 L0 block 3 (vdev 0 offset 0x1234000)"
//   what:  "checksum mismatch (expected ..., computed ...)"
struct CheckProblem {
  std::string where;
  std::string what;
};

struct CheckReport {
  std::string pool;  // the pool's name
  size_t vdevs = 0;
  uint64_t txg = 0;         // the txg checked: the uberblock import would pick
  uint64_t newest_txg = 0;  // the newest valid uberblock's txg
  // With CheckOptions::rewind: "rewound to txg N (the newest, txg M, does
  // not verify: ...)", or that the newest verifies; "" otherwise.
  std::string rewind;
  size_t datasets = 0;
  size_t snapshots = 0;
  uint64_t objects = 0;                  // allocated objects, the MOS's included
  uint64_t blocks = 0;                   // stored (non-hole) blocks reached from the uberblock
  uint64_t bytes_referenced = 0;         // their allocated sizes, summed
  uint64_t bytes_allocated_by_maps = 0;  // what the space maps say is allocated
  uint64_t checksum_errors = 0;          // blocks whose stored bytes did not verify
  // Blocks the checked txg's MOS sync left for the next txg to free (still
  // allocated, referenced by the pool directory's list).
  uint64_t deferred_frees = 0;
  // The trial sync: the pool imported over in-memory overlays of its files,
  // one object changed, the next txg synced. Its txg (0: not tried, the
  // pool would not import) and the MOS passes it took (0: it failed, which
  // is a problem).
  uint64_t trial_sync_txg = 0;
  uint32_t trial_sync_passes = 0;
  // The intent log the checked txg names: the blocks of its chain, read and
  // verified, and the records the next read-write mount replays (the
  // blocks of its indirect writes read and verified too).
  uint64_t log_blocks = 0;
  uint64_t log_records = 0;
  // Block cloning: the blocks the block reference table counts (each named
  // by more than one block pointer), and the bytes the clones did not
  // write (the table's references beyond the first times each block's
  // allocated bytes). Zero when the pool has no table or it does not
  // decode.
  uint64_t cloned_blocks = 0;
  uint64_t clone_saved_bytes = 0;
  // Damage, in the order found (at most kMaxListed; problems_omitted counts
  // the rest).
  std::vector<CheckProblem> problems;
  uint64_t problems_omitted = 0;
  // Not damage, but worth saying: ring slots that do not decode (a torn
  // uberblock write after a power cut looks like this), older uberblocks
  // whose blocks have since been reused, a log that ends before an
  // indirect write whose block a crash left unwritten.
  std::vector<CheckProblem> warnings;

  static constexpr size_t kMaxListed = 1000;

  // True when nothing is wrong: no problem and no checksum error.
  bool ok() const { return problems.empty() && problems_omitted == 0 && checksum_errors == 0; }
  // A few lines: pool, txg, datasets, objects, blocks, bytes, errors.
  std::string Summary() const;
};

// Checks the pool on `paths` (all its vdevs, any order) offline, in the
// spirit of `zdb -b`: from the uberblock import would pick, reads every
// block (verifying its checksum) and decodes every structure; then checks
// space both ways (every referenced extent is allocated in the space maps
// exactly once, and every allocated extent is referenced: no leaks); then,
// when import would succeed, syncs one txg as a trial, in memory: a pool
// whose next sync cannot complete is damaged too.
//
// Opens the files read-only and never writes anything, not even to repair.
// Returns the report (damage is in the report, not the status). Fails with
// InvalidArgument (no paths, the wrong set of vdevs), NotFound (a missing
// file), Busy "<path> is in use by another process (pid N)" when the pool is
// imported, Corruption when a file is not a poolfs vdev at all (empty,
// truncated, random bytes, wrong magic) or the pool has no uberblock,
// NotSupported for another format version, IOError from the files.
//
// With options.rewind it checks the txg a read-only rewind import would open
// (`poolfs mount -o ro,rewind`): the newest one within two txgs of the
// newest whose tree verifies, as report.rewind says; the newer txgs that do
// not verify are warnings, so a clean rewound tree is ok(). No trial sync
// then (that import never writes).
struct CheckOptions {
  bool rewind = false;
};
Result<CheckReport> CheckPool(const std::vector<std::string>& paths,
                              const CheckOptions& options = {});

}  // namespace poolfs
