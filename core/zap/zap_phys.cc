#include "zap/zap_phys.h"

#include <cstring>

#include "util/endian.h"

namespace poolfs::core::zap {

std::string BlockContext::Where(uint64_t block, std::string_view kind) const {
  std::string s = "zap object " + std::to_string(object) + " block " + std::to_string(block);
  s += " (";
  s += kind;
  s += ")";
  return s;
}

Status CheckBlock(std::string_view block, const BlockContext& ctx, uint64_t block_no,
                  uint64_t magic, std::string_view kind) {
  if (block.size() != ctx.block_size)
    return Status::Corruption(ctx.Where(block_no, kind) + ": " + std::to_string(block.size()) +
                              " bytes, the zap's blocks are " + std::to_string(ctx.block_size) +
                              " (past the object's end?)");
  const auto* p = reinterpret_cast<const uint8_t*>(block.data());
  uint64_t got = util::GetLE64(p);
  if (got != magic) {
    std::string what = got == 0 ? "a hole or zeroed block"
                                : "magic " + std::to_string(got) + ", not the expected kind";
    return Status::Corruption(ctx.Where(block_no, kind) + ": " + what);
  }
  return Status::Ok();
}

namespace {
constexpr uint64_t kOnes = 0x0101010101010101ull;
bool HasZeroByte(uint64_t v) { return ((v - kOnes) & ~v & (kOnes << 7)) != 0; }
}  // namespace

bool BadDirectoryName(std::string_view name) {
  // Eight bytes at a time (every leaf read checks every name); a name of 8
  // bytes or more ends with a load of its last 8, overlapping the one before.
  const char* p = name.data();
  const size_t n = name.size();
  auto bad_word = [](const char* at) {
    uint64_t v;
    std::memcpy(&v, at, 8);
    return HasZeroByte(v) || HasZeroByte(v ^ (kOnes * '/'));
  };
  if (n < 8) {
    for (size_t i = 0; i < n; i++)
      if (p[i] == '/' || p[i] == '\0') return true;
    return false;
  }
  for (size_t i = 0; i + 8 < n; i += 8)
    if (bad_word(p + i)) return true;
  return bad_word(p + n - 8);
}

Status CheckName(std::string_view name, bool directory) {
  if (name.empty()) return Status::InvalidArgument("empty name");
  if (name.size() > kMaxNameLen)
    return Status(StatusCode::kNameTooLong,
                  "name of " + std::to_string(name.size()) + " bytes (at most 255)");
  if (directory && BadDirectoryName(name))
    return Status::InvalidArgument("a directory entry name may not contain '/' or NUL");
  return Status::Ok();
}

}  // namespace poolfs::core::zap
