// Helpers shared by the poolfs-bench subcommands: timing, medians, JSON
// output, and the byte counter of the counting allocator.
#pragma once

#include <nlohmann/json.hpp>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "poolfs/status.h"

namespace poolfs::bench {

// A subcommand's scratch folder (its pool files, its streams): made by
// MakeScratch in `parent` as poolfs-bench-NAME.XXXXXX, removed at exit
// (std::atexit; DieOf's std::exit runs it too) or by RemoveScratch.
inline std::string& ScratchDir() {
  static std::string dir;
  return dir;
}
inline void RemoveScratch() {
  if (ScratchDir().empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(ScratchDir(), ec);
  ScratchDir().clear();
}
inline bool MakeScratch(const std::string& parent, const std::string& name) {
  std::string tmpl = parent + "/poolfs-bench-" + name + ".XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "poolfs-bench %s: cannot make a folder in %s\n", name.c_str(),
                 parent.c_str());
    return false;
  }
  ScratchDir() = tmpl;
  std::atexit(RemoveScratch);
  return true;
}
// Ends subcommand `name`, saying what failed.
[[noreturn]] inline void DieOf(const char* name, const Status& st, const std::string& what) {
  std::fprintf(stderr, "poolfs-bench %s: %s: %s\n", name, what.c_str(), st.ToString().c_str());
  std::exit(1);
}

// Bytes currently allocated through operator new, counted with
// malloc_usable_size (what the allocator really hands out, not what was asked
// for). Defined in counting_alloc.cc, which replaces the global operator new.
uint64_t LiveHeapBytes();

inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

// --json output: nlohmann's JSON (Debian's nlohmann-json3-dev), which
// escapes strings; ordered, so keys print in the order they were set.
using Json = nlohmann::ordered_json;

// Returns the path ("results[2].speedup") of the first number in `j` that is
// not finite, or "" when there is none.
inline std::string NonFiniteAt(const Json& j, const std::string& path = "") {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) return path.empty() ? "." : path;
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      std::string at = NonFiniteAt(value, path.empty() ? key : path + "." + key);
      if (!at.empty()) return at;
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); i++) {
      std::string at = NonFiniteAt(j[i], path + "[" + std::to_string(i) + "]");
      if (!at.empty()) return at;
    }
  }
  return "";
}

// Prints `j` on one line and returns 0; refuses (an error on stderr, exit
// code 1) when a figure is not a finite number: JSON has no nan or inf, and
// null in their place would pass for a measurement.
// "1,2,8" -> {1, 2, 8}: the list options of the benchmarks.
inline std::vector<uint32_t> ParseList(const std::string& s) {
  std::vector<uint32_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(uint32_t(std::stoul(item)));
  return v;
}

inline int PrintJson(const Json& j) {
  const std::string bad = NonFiniteAt(j);
  if (!bad.empty()) {
    std::fprintf(stderr, "poolfs-bench: %s is not a finite number; no JSON printed\n", bad.c_str());
    return 1;
  }
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int RunSpaceBench(int argc, char** argv);
int RunAllocBench(int argc, char** argv);
int RunPoolBench(int argc, char** argv);
int RunCreateBench(int argc, char** argv);
int RunArcBench(int argc, char** argv);
int RunSyncBench(int argc, char** argv);
int RunSnapshotBench(int argc, char** argv);
int RunSendBench(int argc, char** argv);

}  // namespace poolfs::bench
