// Invariant checks.
//
// POOLFS_CHECK*: always on, for on-disk invariants and space accounting; a
// failure prints both operands with file and line and aborts.
// POOLFS_DCHECK*: debug builds only (NDEBUG off), for the rest. The prefix
// keeps them apart from Catch2's CHECK, which the tests use beside them.
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

#define POOLFS_CHECK(cond)                                                        \
  do {                                                                            \
    if (__builtin_expect(!(cond), 0))                                             \
      ::poolfs::util::CheckFailed(__FILE__, __LINE__, "POOLFS_CHECK(" #cond ")"); \
  } while (0)

#define POOLFS_CHECK_OP(op, a, b)                                                   \
  do {                                                                              \
    const auto& _a = (a);                                                           \
    const auto& _b = (b);                                                           \
    if (__builtin_expect(!(_a op _b), 0))                                           \
      ::poolfs::util::CheckOpFailed(__FILE__, __LINE__, #a " " #op " " #b, _a, _b); \
  } while (0)

#define POOLFS_CHECK_EQ(a, b) POOLFS_CHECK_OP(==, a, b)
#define POOLFS_CHECK_NE(a, b) POOLFS_CHECK_OP(!=, a, b)
#define POOLFS_CHECK_LE(a, b) POOLFS_CHECK_OP(<=, a, b)
#define POOLFS_CHECK_LT(a, b) POOLFS_CHECK_OP(<, a, b)
#define POOLFS_CHECK_GE(a, b) POOLFS_CHECK_OP(>=, a, b)
#define POOLFS_CHECK_GT(a, b) POOLFS_CHECK_OP(>, a, b)

#ifdef NDEBUG
#define POOLFS_DCHECK(cond) \
  do {                      \
  } while (0 && (cond))
#define POOLFS_DCHECK_EQ(a, b) POOLFS_DCHECK((a) == (b))
#define POOLFS_DCHECK_LE(a, b) POOLFS_DCHECK((a) <= (b))
#define POOLFS_DCHECK_LT(a, b) POOLFS_DCHECK((a) < (b))
#define POOLFS_DCHECK_GE(a, b) POOLFS_DCHECK((a) >= (b))
#define POOLFS_DCHECK_GT(a, b) POOLFS_DCHECK((a) > (b))
#else
#define POOLFS_DCHECK(cond) POOLFS_CHECK(cond)
#define POOLFS_DCHECK_EQ(a, b) POOLFS_CHECK_EQ(a, b)
#define POOLFS_DCHECK_LE(a, b) POOLFS_CHECK_LE(a, b)
#define POOLFS_DCHECK_LT(a, b) POOLFS_CHECK_LT(a, b)
#define POOLFS_DCHECK_GE(a, b) POOLFS_CHECK_GE(a, b)
#define POOLFS_DCHECK_GT(a, b) POOLFS_CHECK_GT(a, b)
#endif
