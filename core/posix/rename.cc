// PosixFs: rename.
#include "posix/posix_fs.h"

namespace poolfs::core::posix {

Status PosixFs::Rename(const Creds&, uint64_t, std::string_view, uint64_t, std::string_view,
                       uint32_t) {
  return Status::NotSupported("rename: not yet");
}

}  // namespace poolfs::core::posix
