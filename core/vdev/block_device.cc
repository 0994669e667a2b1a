#include "vdev/block_device.h"

#include <system_error>

namespace poolfs::core::vdev {

Status BlockDevice::FillHoles(uint64_t off, size_t len) {
  return CheckRange(name(), "fill", size(), off, len);
}

Status BlockDevice::WriteParts(uint64_t off, std::span<const WritePart> parts) {
  for (const WritePart& part : parts) {
    POOLFS_RETURN_IF_ERROR(Write(off, part.data, part.len));
    off += part.len;
  }
  return Status::Ok();
}

Status BlockDevice::ReadParts(uint64_t off, std::span<const ReadPart> parts) {
  for (const ReadPart& part : parts) {
    POOLFS_RETURN_IF_ERROR(Read(off, part.data, part.len));
    off += part.len;
  }
  return Status::Ok();
}

std::string ErrnoText(int err) { return std::system_category().message(err); }

Status CheckRange(std::string_view name, std::string_view op, uint64_t size, uint64_t off,
                  size_t len) {
  if (off <= size && len <= size - off) return Status::Ok();
  return Status::InvalidArgument(std::string(op) + " of " + std::to_string(len) +
                                 " bytes at offset " + std::to_string(off) + " is outside " +
                                 std::string(name) + " (size " + std::to_string(size) + ")");
}

Status DeviceIoError(std::string_view name, std::string_view op, uint64_t off, size_t len, int err,
                     size_t done) {
  std::string m = std::string(op) + " of " + std::to_string(len) + " bytes at offset " +
                  std::to_string(off) + " on " + std::string(name) + " failed: ";
  if (err != 0) {
    m += ErrnoText(err);
  } else {
    m += "short " + std::string(op) + " (" + std::to_string(done) + " bytes)";
  }
  return Status::IOError(std::move(m));
}

}  // namespace poolfs::core::vdev
