// Invariant checks.
//
// CHECK*: always on, for on-disk invariants and space accounting; a failure
// prints both operands with file and line and aborts. DCHECK*: debug builds
// only (NDEBUG off), for the rest.
#pragma once

#include <sstream>
#include <string>

namespace poolfs::util {

[[noreturn]] void CheckFailed(const char* file, int line, const std::string& what);

template <typename A, typename B>
[[noreturn]] void CheckOpFailed(const char* file, int line, const char* expr, const A& a,
                                const B& b) {
  std::ostringstream os;
  os << expr << " (" << a << " vs " << b << ")";
  CheckFailed(file, line, os.str());
}

}  // namespace poolfs::util

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (__builtin_expect(!(cond), 0))                                         \
      ::poolfs::util::CheckFailed(__FILE__, __LINE__, "CHECK(" #cond ")");    \
  } while (0)

#define POOLFS_CHECK_OP(op, a, b)                                             \
  do {                                                                        \
    const auto& _a = (a);                                                     \
    const auto& _b = (b);                                                     \
    if (__builtin_expect(!(_a op _b), 0))                                     \
      ::poolfs::util::CheckOpFailed(__FILE__, __LINE__, #a " " #op " " #b, _a, _b); \
  } while (0)

#define CHECK_EQ(a, b) POOLFS_CHECK_OP(==, a, b)
#define CHECK_NE(a, b) POOLFS_CHECK_OP(!=, a, b)
#define CHECK_LE(a, b) POOLFS_CHECK_OP(<=, a, b)
#define CHECK_LT(a, b) POOLFS_CHECK_OP(<, a, b)
#define CHECK_GE(a, b) POOLFS_CHECK_OP(>=, a, b)
#define CHECK_GT(a, b) POOLFS_CHECK_OP(>, a, b)

#ifdef NDEBUG
#define DCHECK(cond) \
  do {               \
  } while (0 && (cond))
#define DCHECK_EQ(a, b) DCHECK((a) == (b))
#define DCHECK_LE(a, b) DCHECK((a) <= (b))
#define DCHECK_LT(a, b) DCHECK((a) < (b))
#define DCHECK_GE(a, b) DCHECK((a) >= (b))
#define DCHECK_GT(a, b) DCHECK((a) > (b))
#else
#define DCHECK(cond) CHECK(cond)
#define DCHECK_EQ(a, b) CHECK_EQ(a, b)
#define DCHECK_LE(a, b) CHECK_LE(a, b)
#define DCHECK_LT(a, b) CHECK_LT(a, b)
#define DCHECK_GE(a, b) CHECK_GE(a, b)
#define DCHECK_GT(a, b) CHECK_GT(a, b)
#endif
