#include "poolfs/status.h"

namespace poolfs {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kIOError: return "IOError";
    case StatusCode::kNoSpace: return "NoSpace";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kBusy: return "Busy";
    case StatusCode::kNotSupported: return "NotSupported";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kNotEmpty: return "NotEmpty";
    case StatusCode::kNameTooLong: return "NameTooLong";
    case StatusCode::kNotADirectory: return "NotADirectory";
    case StatusCode::kIsADirectory: return "IsADirectory";
    case StatusCode::kAborted: return "Aborted";
    case StatusCode::kNotPermitted: return "NotPermitted";
    case StatusCode::kNoData: return "NoData";
    case StatusCode::kFileTooLarge: return "FileTooLarge";
    case StatusCode::kTooManyLinks: return "TooManyLinks";
    case StatusCode::kReadOnly: return "ReadOnly";
    case StatusCode::kRange: return "Range";
    case StatusCode::kLoop: return "Loop";
    case StatusCode::kStale: return "Stale";
    case StatusCode::kCrossDevice: return "CrossDevice";
    case StatusCode::kQuotaExceeded: return "QuotaExceeded";
    case StatusCode::kNoSuchOffset: return "NoSuchOffset";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  Status out(code_, std::move(m));
  out.holder_pid_ = holder_pid_;
  return out;
}

}  // namespace poolfs
