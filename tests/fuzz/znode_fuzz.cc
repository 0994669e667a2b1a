// libFuzzer target for the POSIX layer's decoders (core/posix/znode_phys.h):
// DecodeZnode on dnode bonus buffers and DecodeXattrs on xattr objects.
//
// Input: [mode byte][bytes...]. Mode bit 0 clear: the bytes are a bonus
// buffer (any length: short, long and exact ones are all tried). Mode bit 0
// set: the bytes are the contents of an xattr object.
//
// Properties checked (a violation aborts):
//   - decoding never crashes and fails only with Corruption whose message
//     names the object it was given ("object 77 ...");
//   - the encoding is canonical: whatever decodes re-encodes to exactly the
//     input bytes (reserved bytes must be zero, names strictly ordered, no
//     trailing bytes), so no two inputs decode to the same value;
//   - what decodes obeys section 12 of core/doc/on-disk-format.md, checked
//     here with separate arithmetic: a known file type, nanoseconds below
//     10^9, an inline target only on a symlink and of its size, a device
//     number only on a device; xattr names of 1..255 bytes, values of at
//     most 64 KiB.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "posix/znode_phys.h"

namespace {

using namespace poolfs::core::posix;
using poolfs::StatusCode;

constexpr uint64_t kObject = 77;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "znode_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void CheckFailure(const poolfs::Status& st) {
  if (st.code() != StatusCode::kCorruption) Fail("failure is not Corruption", st.ToString());
  if (st.message().rfind("object 77 ", 0) != 0)
    Fail("failure does not name the object", st.ToString());
}

void FuzzZnode(std::string_view in) {
  auto z = DecodeZnode(in, kObject);
  if (!z.ok()) return CheckFailure(z.status());
  const uint32_t type = z->mode & S_IFMT;
  if (type != S_IFREG && type != S_IFDIR && type != S_IFLNK && type != S_IFIFO &&
      type != S_IFSOCK && type != S_IFCHR && type != S_IFBLK)
    Fail("decoded an unknown file type", std::to_string(z->mode));
  for (const auto* t : {&z->atime, &z->mtime, &z->ctime, &z->btime})
    if (t->nsec >= 1000000000u) Fail("decoded nanoseconds out of range", std::to_string(t->nsec));
  if (!z->inline_target.empty() && (type != S_IFLNK || z->inline_target.size() != z->size))
    Fail("inline target on a non-symlink or of the wrong size", std::to_string(z->size));
  if (z->rdev != 0 && type != S_IFCHR && type != S_IFBLK) Fail("rdev on a non-device", "");
  if (in.size() != kZnodeSize + z->inline_target.size()) Fail("length not accounted for", "");
  if (EncodeZnode(*z) != in) Fail("not canonical", "re-encoding differs from the input");
}

void FuzzXattrs(std::string_view in) {
  auto x = DecodeXattrs(in, kObject);
  if (!x.ok()) return CheckFailure(x.status());
  for (const auto& [name, value] : *x) {
    if (name.empty() || name.size() > 255)
      Fail("decoded a bad name length", std::to_string(name.size()));
    if (value.size() > 65536) Fail("decoded a value over 64 KiB", std::to_string(value.size()));
  }
  if (EncodeXattrs(*x) != in) Fail("not canonical", "re-encoding differs from the input");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    FuzzXattrs(in);
  } else {
    FuzzZnode(in);
  }
  return 0;
}
