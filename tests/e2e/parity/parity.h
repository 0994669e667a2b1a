// The parity engine: runs each scenario in a fresh directory on filesystem
// A (the reference, tmpfs) and on filesystem B (the one under test), and
// compares what the calls returned and the tree they left behind.
//
// Per scenario, the call logs are compared line by line (a scenario makes
// the same calls on both sides, so line i is the same call), and the tree
// walks entry by entry (by path). Every mismatch is a Difference; an empty
// list means B behaved exactly as A for everything the scenarios look at.
//
// Known differences (one place, each with its reason) are read from a file
// of lines "scenario<TAB>call prefix<TAB>reason"; a difference whose
// scenario matches and whose A or B line starts with the prefix is
// reported as known and does not count as a failure.
//
// Thread safety: none; one RunParity at a time per process (it changes the
// umask).
#pragma once

#include <string>
#include <vector>

#include "parity/scenario.h"
#include "parity/sys.h"

namespace poolfs::e2e {

struct ParityOptions {
  std::string dir_a, dir_b;  // existing directories; scenario S runs in <dir>/S
  OtherUser other;           // for Sys::AsOther
  std::string only;          // run only scenarios whose name contains this
};

struct Difference {
  std::string scenario;
  std::string where;  // "call 12" or "tree entry d/f"
  std::string a, b;   // the lines ("(none)" when one side has no such line)
  std::string known;  // the reason, when it is a known difference
};

struct ParityReport {
  int scenarios = 0;
  size_t lines_compared = 0;
  std::vector<Difference> differences;
  std::vector<std::string> transcript_a;  // every call and tree line of side A
  std::string error;                      // set when a scenario directory could not be made
};

// Runs `scenarios` as described above. Fails (report.error) only when a
// scenario's directory cannot be created or opened on either side.
ParityReport RunParity(const std::vector<Scenario>& scenarios, const ParityOptions& options);

// Reads a known-differences file (see above); blank lines and lines
// starting with '#' are skipped. Returns false with `error` set when a line
// does not have three tab-separated fields or the file cannot be read.
struct KnownDifference {
  std::string scenario, prefix, reason;
};
bool ReadKnownDifferences(const std::string& path, std::vector<KnownDifference>* out,
                          std::string* error);
// Sets `known` on each difference that a known difference matches.
void MarkKnown(const std::vector<KnownDifference>& known, std::vector<Difference>* diffs);

}  // namespace poolfs::e2e
