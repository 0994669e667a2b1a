#include "status_errno.h"

#include <cerrno>

namespace poolfs::fuse {

int StatusToErrno(const Status& st) {
  switch (st.code()) {
    case StatusCode::kOk: return 0;
    case StatusCode::kNotFound: return ENOENT;
    case StatusCode::kAlreadyExists: return EEXIST;
    case StatusCode::kNotEmpty: return ENOTEMPTY;
    case StatusCode::kNotADirectory: return ENOTDIR;
    case StatusCode::kIsADirectory: return EISDIR;
    case StatusCode::kPermissionDenied: return EACCES;
    case StatusCode::kNotPermitted: return EPERM;
    case StatusCode::kNameTooLong: return ENAMETOOLONG;
    case StatusCode::kNoSpace: return ENOSPC;
    case StatusCode::kNoData: return ENODATA;
    case StatusCode::kFileTooLarge: return EFBIG;
    case StatusCode::kTooManyLinks: return EMLINK;
    case StatusCode::kReadOnly: return EROFS;
    case StatusCode::kRange: return ERANGE;
    case StatusCode::kInvalidArgument: return EINVAL;
    case StatusCode::kNotSupported: return EOPNOTSUPP;
    case StatusCode::kLoop: return ELOOP;
    case StatusCode::kStale: return ESTALE;
    case StatusCode::kCrossDevice: return EXDEV;
    case StatusCode::kQuotaExceeded: return EDQUOT;
    case StatusCode::kNoSuchOffset: return ENXIO;
    case StatusCode::kBusy: return EBUSY;
    case StatusCode::kCorruption:
    case StatusCode::kIOError: return EIO;
    // The filesystem is unmounting: the mount is going away under the
    // caller, which is what ENOTCONN says for a FUSE mount.
    case StatusCode::kAborted: return ENOTCONN;
  }
  return EIO;
}

bool IsServerError(const Status& st) {
  switch (st.code()) {
    case StatusCode::kCorruption:
    case StatusCode::kIOError:
    case StatusCode::kAborted: return true;
    default: return false;
  }
}

}  // namespace poolfs::fuse
