// RunCreatemany: the body of createmany, many threads creating files.
//
// The run has three parts. Setup (not timed): with -D, DIR and one
// subdirectory DIR/t<i> per thread are created when missing and opened, so
// every operation is relative to its thread's directory fd (openat, mknodat,
// ...) and costs no path walk through DIR; without -D, names are used as
// given (relative to the working directory), as in Lustre. The timed part
// starts when every thread is ready and one latch releases them all, and
// ends when the last thread stops: after its share of COUNT, at the time
// limit, or as soon as any thread has failed. Each thread counts into its
// own cache line, so counting costs no shared write; the calling thread
// meanwhile prints a progress line every interval.
//
// Work split: thread i of T handles the indices START+i, START+i+T, ... (its
// share of COUNT is COUNT/T, plus one for the first COUNT%T threads), so the
// set of names created never depends on T, and with a time limit the indices
// done form a nearly contiguous range.
//
// Times come from std::chrono::steady_clock.
//
// Thread safety: RunCreatemany may be called from any thread; it starts and
// joins its own threads and returns only when they have all stopped.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "createmany_options.h"
#include "poolfs/status.h"

namespace poolfs::createmany {

struct RunReport {
  int64_t done = 0;                 // operations (create, plus unlink with -r) completed
  double seconds = 0;               // from the release of the threads to the last one's stop
  std::vector<std::string> errors;  // one per failed thread: "open(t3/f17): ... (errno 2)"

  bool ok() const { return errors.empty(); }
  double rate() const { return seconds > 0 ? static_cast<double>(done) / seconds : 0.0; }
};

// Runs `options`. Progress lines go to `progress` (none when null or when
// options.interval_s is 0). Returns the report, whose errors list every
// failed operation (each failing thread stops at its first failure, and the
// others stop soon after); returns a non-OK Status only when the setup fails
// (a directory of -D that cannot be created or opened, a thread that cannot
// be started), naming the path and errno.
Result<RunReport> RunCreatemany(const Options& options, std::FILE* progress);

// The final line: "total: N creates in S seconds: R creates/second"
// ("unlinks" for the unlink-only mode).
std::string TotalLine(const Options& options, const RunReport& report);

}  // namespace poolfs::createmany
