// Parity scenarios: each a short sequence of syscalls that exercises one
// corner of POSIX, run once in a fresh directory on each filesystem. The
// lists are grouped by family of operations, one file each.
//
// A scenario must be deterministic (same calls, same data every run) and
// must not depend on who runs it beyond what the calls themselves check:
// the whole list runs as root and again as an unprivileged user, and a
// call that only root may make simply records EPERM on both sides.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "parity/sys.h"

namespace poolfs::e2e {

struct Scenario {
  std::string name;  // unique, no spaces
  std::function<void(Sys&)> body;
};

// Lookup, create, mknod, mkdir, unlink, rmdir, symlink, readlink, link.
void AddNameScenarios(std::vector<Scenario>* out);
// rename and renameat2 (NOREPLACE, EXCHANGE), directory renames.
void AddRenameScenarios(std::vector<Scenario>* out);
// open, read, write, truncate, fallocate, fsync, statfs, readdir.
void AddDataScenarios(std::vector<Scenario>* out);
// setattr (mode, owner, size, times), permissions, setuid/setgid clearing.
void AddAttrScenarios(std::vector<Scenario>* out);
// Extended attributes in the user, trusted and security namespaces.
void AddXattrScenarios(std::vector<Scenario>* out);

// Every scenario, in a fixed order.
std::vector<Scenario> AllScenarios();

// Creates (or truncates) `path` with `data`, through open/write/close.
void Touch(Sys& s, const std::string& path, const std::string& data = "", mode_t mode = 0644);
// Opens `path` read-only, reads up to `len` bytes, closes.
void Cat(Sys& s, const std::string& path, size_t len = 1 << 20);

// Test data: `n` bytes that depend on `seed` (not all one byte, so a
// misplaced block shows up in the hash).
std::string Pattern(size_t n, unsigned seed);

}  // namespace poolfs::e2e
