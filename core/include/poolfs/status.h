// Status and Result<T>: errors as values.
//
// Every fallible function in the core returns a Status (or a Result<T> that
// holds either a T or a non-OK Status). A Status carries a code and a message
// that says what went wrong and where ("space map record 17: run past end").
// The POSIX/FUSE boundary maps codes to errno in exactly one place.
//
// Thread safety: values; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace poolfs {

enum class StatusCode : uint8_t {
  kOk = 0,
  kNotFound,
  kCorruption,
  kIOError,
  kNoSpace,
  kInvalidArgument,
  kAlreadyExists,
  kBusy,
  kNotSupported,
  kPermissionDenied,
  kNotEmpty,
  kNameTooLong,
  kNotADirectory,
  kIsADirectory,
  kAborted,
  // POSIX distinctions the filesystem needs (the FUSE adapter maps each to
  // its own errno):
  kNotPermitted,   // EPERM: the operation is not allowed to this caller at all
                   // (chown by a non-owner, unlink in a sticky directory);
                   // kPermissionDenied (EACCES) is a failed mode-bit check
  kNoData,         // ENODATA: no such extended attribute
  kFileTooLarge,   // EFBIG
  kTooManyLinks,   // EMLINK
  kReadOnly,       // EROFS: a read-only mount
  kRange,          // ERANGE: a value does not fit the caller's buffer
  kLoop,           // ELOOP
  kStale,          // ESTALE: an inode or handle that no longer exists
  kCrossDevice,    // EXDEV: a rename or link between two datasets
  kQuotaExceeded,  // EDQUOT: a write past a dataset's quota
  kNoSuchOffset,   // ENXIO: lseek for data or a hole at or past a file's end
};
inline constexpr StatusCode kLastStatusCode = StatusCode::kNoSuchOffset;

// Returns the code's name, e.g. "Corruption".
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status NoSpace(std::string m) { return {StatusCode::kNoSpace, std::move(m)}; }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status Busy(std::string m) { return {StatusCode::kBusy, std::move(m)}; }
  // Busy because process `holder_pid` holds the resource (a lock on a vdev
  // file); 0: the holder is not known.
  static Status Busy(std::string m, int64_t holder_pid) {
    Status st(StatusCode::kBusy, std::move(m));
    st.holder_pid_ = holder_pid;
    return st;
  }
  static Status NotSupported(std::string m) { return {StatusCode::kNotSupported, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Busy: the process that holds the resource, when known (else 0). The
  // message names it too, for people; callers read it here.
  int64_t holder_pid() const { return holder_pid_; }
  bool IsCorruption() const { return code_ == StatusCode::kCorruption; }
  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  bool IsNoSpace() const { return code_ == StatusCode::kNoSpace; }

  // "Corruption: space map record 17: run past end", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: ` (the code and
  // the holder pid stay).
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int64_t holder_pid_ = 0;
};

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace poolfs

// Returns early from the enclosing function when `expr` is not OK.
#define POOLFS_RETURN_IF_ERROR(expr)           \
  do {                                         \
    ::poolfs::Status _st = (expr);             \
    if (!_st.ok()) return _st;                 \
  } while (0)

#define POOLFS_CONCAT_INNER(a, b) a##b
#define POOLFS_CONCAT(a, b) POOLFS_CONCAT_INNER(a, b)
// `POOLFS_ASSIGN_OR_RETURN(auto x, F())` binds x to F()'s value or returns its status.
#define POOLFS_ASSIGN_OR_RETURN(lhs, expr) \
  POOLFS_ASSIGN_OR_RETURN_IMPL(POOLFS_CONCAT(_res_, __LINE__), lhs, expr)
#define POOLFS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
