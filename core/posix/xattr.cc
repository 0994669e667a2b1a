// PosixFs: extended attributes.
#include "posix/posix_fs.h"

namespace poolfs::core::posix {

Result<std::string> PosixFs::GetXattr(const Creds&, uint64_t, std::string_view) {
  return Status::NotSupported("xattrs: not yet");
}
Status PosixFs::SetXattr(const Creds&, uint64_t, std::string_view, std::string_view, uint32_t) {
  return Status::NotSupported("xattrs: not yet");
}
Result<std::vector<std::string>> PosixFs::ListXattr(const Creds&, uint64_t) {
  return Status::NotSupported("xattrs: not yet");
}
Status PosixFs::RemoveXattr(const Creds&, uint64_t, std::string_view) {
  return Status::NotSupported("xattrs: not yet");
}

}  // namespace poolfs::core::posix
