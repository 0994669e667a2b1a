#include "util/check.h"

#include <cstdio>
#include <cstdlib>

namespace poolfs::util {

void CheckFailed(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace poolfs::util
