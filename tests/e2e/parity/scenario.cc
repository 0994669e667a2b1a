#include "parity/scenario.h"

#include <fcntl.h>

namespace poolfs::e2e {

void Touch(Sys& s, const std::string& path, const std::string& data, mode_t mode) {
  int fd = s.Open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
  if (fd < 0) return;
  if (!data.empty()) s.Write(fd, data);
  s.Close(fd);
}

void Cat(Sys& s, const std::string& path, size_t len) {
  int fd = s.Open(path, O_RDONLY);
  if (fd < 0) return;
  s.Read(fd, len);
  s.Close(fd);
}

std::string Pattern(size_t n, unsigned seed) {
  std::string out(n, '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<char>(x);
  }
  return out;
}

std::vector<Scenario> AllScenarios() {
  std::vector<Scenario> all;
  AddNameScenarios(&all);
  AddRenameScenarios(&all);
  AddDataScenarios(&all);
  AddAttrScenarios(&all);
  AddXattrScenarios(&all);
  return all;
}

}  // namespace poolfs::e2e
