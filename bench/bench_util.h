// Helpers shared by the poolfs-bench subcommands: timing, medians, a JSON
// object printer, and the byte counter of the counting allocator.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace poolfs::bench {

// Bytes currently allocated through operator new, counted with
// malloc_usable_size (what the allocator really hands out, not what was asked
// for). Defined in counting_alloc.cc, which replaces the global operator new.
uint64_t LiveHeapBytes();

inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

// Collects "key": value pairs and prints them as one JSON object.
class JsonObject {
 public:
  void Add(const std::string& key, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    fields_.emplace_back(key, buf);
  }
  void Add(const std::string& key, uint64_t v) { fields_.emplace_back(key, std::to_string(v)); }
  void Add(const std::string& key, const std::string& v) {
    fields_.emplace_back(key, "\"" + v + "\"");
  }
  void AddRaw(const std::string& key, const std::string& json) { fields_.emplace_back(key, json); }
  std::string ToString() const {
    std::string s = "{";
    for (size_t i = 0; i < fields_.size(); i++) {
      if (i) s += ", ";
      s += "\"" + fields_[i].first + "\": " + fields_[i].second;
    }
    return s + "}";
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

int RunSpaceBench(int argc, char** argv);
int RunAllocBench(int argc, char** argv);
int RunPoolBench(int argc, char** argv);
int RunCreateBench(int argc, char** argv);
int RunArcBench(int argc, char** argv);

}  // namespace poolfs::bench
