// The one place where a poolfs::Status becomes an errno for the kernel.
//
// The mapping is the one listed in core/include/poolfs/fs.h ("Errors").
// Codes the contract does not list (Aborted: the filesystem is unmounting)
// map to the nearest errno a caller can act on.
//
// Thread safety: a pure function.
#pragma once

#include "poolfs/status.h"

namespace poolfs::fuse {

// Returns the positive errno for `st` (0 for OK): ENOENT for NotFound,
// EIO for Corruption and IOError, ... (see fs.h). Never fails.
int StatusToErrno(const Status& st);

// True for the codes that mean something is wrong with the pool or the
// daemon (EIO-class), which the adapter logs at error level; the others
// (ENOENT, EEXIST, EACCES, ...) are ordinary answers.
bool IsServerError(const Status& st);

}  // namespace poolfs::fuse
