// createmany's command line, parsed into Options.
//
//   createmany {-o|-m|-d|-l TARGET} [-r[UNLINKFMT]] [-t THREADS] [-D DIR]
//              [-i INTERVAL] FMT [[START] COUNT] [-SECONDS]
//   createmany {-o|-m|-d|-l TARGET} [-r[UNLINKFMT]] -D DIR ... [[START] COUNT] [-SECONDS]
//
// The same meanings as Lustre's lustre/tests/createmany.c where it has them:
// FMT is a file-name format with at most one integer conversion, receiving
// the index (START, START+1, ...; the index is appended when FMT has none);
// COUNT is how many files the whole command creates; -SECONDS (a trailing
// negative number, Lustre's older positional form) stops creating after that
// many seconds; -r unlinks (rmdir for -d) each name right after creating it,
// or the name UNLINKFMT gives for the same index; as in Lustre's getopt
// "r::", UNLINKFMT must be attached (-rFMT), and -u is a synonym. -r alone,
// without a create mode, only unlinks. -l takes its TARGET attached or as the
// next argument (a relative TARGET is relative to the working directory,
// with or without -D).
//
// Our additions (Lustre uses -t for the time limit; here -t is the thread
// count, as in the benchmarks' `createmany -o -t 32`, and -SECONDS the time
// limit):
//   -t THREADS  run THREADS threads; COUNT is the total across all of them.
//               Thread i handles the indices START+i, START+i+THREADS, ...,
//               so the files created are exactly those a single thread would
//               create, whatever the thread count.
//   -D DIR      each thread works in its own subdirectory DIR/t<i> (created,
//               with DIR, if missing), and FMT and UNLINKFMT are relative to
//               it. FMT may then be left out (default "f"); a first
//               positional argument made only of digits is START or COUNT.
//   -i SECONDS  a progress line every SECONDS (default 10, 0 for none).
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "poolfs/status.h"

namespace poolfs::createmany {

enum class Mode { kOpen, kMknod, kMkdir, kLink, kUnlinkOnly };

struct Options {
  bool help = false;  // -h or --help: print Usage and exit 0
  Mode mode = Mode::kOpen;
  std::string link_target;                   // -l TARGET
  bool unlink_after = false;                 // -r / -u
  std::optional<std::string> unlink_format;  // -rFMT
  int threads = 1;                           // -t
  std::string dir;                           // -D, empty when not given
  double interval_s = 10.0;                  // -i
  std::optional<double> time_limit_s;        // -SECONDS
  std::string format = "f";                  // FMT
  int64_t start = 0;                         // START
  std::optional<int64_t> count;              // COUNT; none: until the time limit
};

inline constexpr int kMaxThreads = 4096;

// Parses the arguments after the program name. Returns InvalidArgument with
// a message naming the bad argument when an option is unknown or lacks its
// value, a number does not parse or is out of range (THREADS 1..4096, START
// and COUNT >= 0, SECONDS > 0, INTERVAL >= 0), no mode or two modes are
// given, FMT is missing (without -D) or bad, there are too many positional
// arguments, or neither COUNT nor -SECONDS says when to stop.
Result<Options> ParseArgs(const std::vector<std::string>& args);

// The usage text, for `prog`.
std::string Usage(std::string_view prog);

}  // namespace poolfs::createmany
