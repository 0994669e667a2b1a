#include "parity/parity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>

#include "parity/tree_walk.h"

namespace poolfs::e2e {
namespace {

// Runs one scenario in <base>/<name>; returns false with `error` set when the
// directory cannot be made.
bool RunSide(const Scenario& sc, const std::string& base, const OtherUser& other,
             std::vector<std::string>* log, std::vector<std::string>* tree, std::string* error) {
  std::string dir = base + "/" + sc.name;
  if (::mkdir(dir.c_str(), 0755) != 0 || ::chmod(dir.c_str(), 0755) != 0) {
    *error = "cannot make " + dir + ": " + std::strerror(errno);
    return false;
  }
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open " + dir + ": " + std::strerror(errno);
    return false;
  }
  Sys sys(fd, log, other);
  sc.body(sys);
  *tree = WalkTree(fd);
  ::close(fd);
  return true;
}

std::string PathOf(const std::string& line) {
  // Tree lines are "<type> <path>: ..." or "<path>: <error>".
  size_t colon = line.find(": ");
  std::string head = line.substr(0, colon);
  size_t space = head.find(' ');
  return space == std::string::npos ? head : head.substr(space + 1);
}

// The differences between two call logs, aligned on their longest common
// subsequence (as diff(1) does), so that one call that fails on one side
// and not the other shows as that call and its consequences, not as every
// later line shifted by one. A run of lines that differ is paired line by
// line; the surplus of the longer side is paired with "(none)".
std::vector<Difference> AlignLogs(const std::vector<std::string>& a,
                                  const std::vector<std::string>& b) {
  const size_t n = a.size(), m = b.size();
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::vector<Difference> out;
  std::vector<size_t> only_a, only_b;  // the current run of differing lines
  auto flush = [&]() {
    for (size_t k = 0; k < std::max(only_a.size(), only_b.size()); ++k) {
      Difference d;
      size_t line = k < only_a.size() ? only_a[k] : only_b[k];
      d.where = "call " + std::to_string(line + 1);
      d.a = k < only_a.size() ? a[only_a[k]] : "(none)";
      d.b = k < only_b.size() ? b[only_b[k]] : "(none)";
      out.push_back(d);
    }
    only_a.clear();
    only_b.clear();
  };
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      flush();
      ++i;
      ++j;
    } else if (j >= m || (i < n && lcs[i + 1][j] >= lcs[i][j + 1])) {
      only_a.push_back(i++);
    } else {
      only_b.push_back(j++);
    }
  }
  flush();
  return out;
}

}  // namespace

ParityReport RunParity(const std::vector<Scenario>& scenarios, const ParityOptions& options) {
  ParityReport report;
  ::umask(022);
  for (const auto& sc : scenarios) {
    if (!options.only.empty() && sc.name.find(options.only) == std::string::npos) continue;
    std::vector<std::string> log_a, log_b, tree_a, tree_b;
    if (!RunSide(sc, options.dir_a, options.other, &log_a, &tree_a, &report.error) ||
        !RunSide(sc, options.dir_b, options.other, &log_b, &tree_b, &report.error)) {
      return report;
    }
    ++report.scenarios;
    report.transcript_a.push_back("# scenario " + sc.name);
    for (const auto& l : log_a) report.transcript_a.push_back(l);
    for (const auto& l : tree_a) report.transcript_a.push_back("tree: " + l);
    report.lines_compared += std::max(log_a.size(), log_b.size());
    for (auto& d : AlignLogs(log_a, log_b)) {
      d.scenario = sc.name;
      report.differences.push_back(d);
    }
    std::map<std::string, std::pair<std::string, std::string>> entries;
    for (const auto& l : tree_a) entries[PathOf(l)].first = l;
    for (const auto& l : tree_b) entries[PathOf(l)].second = l;
    for (auto& [path, ab] : entries) {
      ++report.lines_compared;
      if (ab.first == ab.second) continue;
      report.differences.push_back({sc.name, "tree entry " + path,
                                    ab.first.empty() ? "(none)" : ab.first,
                                    ab.second.empty() ? "(none)" : ab.second, ""});
    }
  }
  return report;
}

bool ReadKnownDifferences(const std::string& path, std::vector<KnownDifference>* out,
                          std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    size_t t1 = line.find('\t');
    size_t t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    if (t2 == std::string::npos || t2 + 1 >= line.size()) {
      *error = path + ":" + std::to_string(number) +
               ": expected \"scenario<TAB>call prefix<TAB>reason\"";
      return false;
    }
    out->push_back({line.substr(0, t1), line.substr(t1 + 1, t2 - t1 - 1), line.substr(t2 + 1)});
  }
  return true;
}

void MarkKnown(const std::vector<KnownDifference>& known, std::vector<Difference>* diffs) {
  for (auto& d : *diffs) {
    for (const auto& k : known) {
      if (k.scenario == d.scenario &&
          (d.a.rfind(k.prefix, 0) == 0 || d.b.rfind(k.prefix, 0) == 0)) {
        d.known = k.reason;
        break;
      }
    }
  }
}

}  // namespace poolfs::e2e
