// Resume tokens (resume_token.h).
#include "send/resume_token.h"

#include <cinttypes>
#include <cstdio>

#include "poolfs/replication.h"
#include "util/checksum.h"
#include "util/text.h"

namespace poolfs::core::send {

namespace {

constexpr std::string_view kPrefix = "1-";
constexpr size_t kMaxName = 1024;

void PutU64(std::string* s, uint64_t v) {
  for (int i = 0; i < 8; i++) s->push_back(char(v >> (8 * i)));
}

void PutName(std::string* s, std::string_view name) {
  s->push_back(char(name.size() & 0xff));
  s->push_back(char(name.size() >> 8));
  s->append(name);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string ToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    out.push_back(kDigits[uint8_t(c) >> 4]);
    out.push_back(kDigits[uint8_t(c) & 15]);
  }
  return out;
}

Result<std::string> FromHex(std::string_view hex, std::string_view what) {
  if (hex.size() % 2 != 0)
    return Status::InvalidArgument("resume token: " + std::string(what) +
                                   " has an odd number of hex digits");
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0)
      return Status::InvalidArgument("resume token: " + std::string(what) +
                                     " has a character that is not a lowercase hex digit at " +
                                     std::to_string(i));
    out.push_back(char(hi << 4 | lo));
  }
  return out;
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool U64(uint64_t* v) {
    if (in_.size() - pos_ < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; i++) *v |= uint64_t(uint8_t(in_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return true;
  }
  bool Name(std::string* s) {
    if (in_.size() - pos_ < 2) return false;
    const size_t n = uint8_t(in_[pos_]) | size_t(uint8_t(in_[pos_ + 1])) << 8;
    pos_ += 2;
    if (n > kMaxName || in_.size() - pos_ < n) return false;
    s->assign(in_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace

std::string EncodeResumeToken(const ResumeToken& t) {
  std::string payload;
  PutU64(&payload, t.to_guid);
  PutU64(&payload, t.from_guid);
  PutU64(&payload, t.object);
  PutU64(&payload, t.bytes);
  PutName(&payload, t.dataset);
  PutName(&payload, t.snapshot);
  PutName(&payload, t.from);
  char sum[17];
  std::snprintf(sum, sizeof sum, "%016" PRIx64, util::Xxh3_64(payload.data(), payload.size()));
  return std::string(kPrefix) + ToHex(payload) + "-" + sum;
}

Result<ResumeToken> DecodeResumeToken(std::string_view text) {
  auto bad = [](const std::string& why) { return Status::InvalidArgument("resume token: " + why); };
  if (!text.starts_with(kPrefix))
    return bad("does not start with \"1-\" (not a resume token, or of a newer poolfs)");
  const std::string_view body = text.substr(kPrefix.size());
  const size_t dash = body.rfind('-');
  if (dash == std::string_view::npos || body.size() - dash - 1 != 16)
    return bad("has no 16-digit checksum after its payload");
  POOLFS_ASSIGN_OR_RETURN(std::string payload, FromHex(body.substr(0, dash), "the payload"));
  POOLFS_ASSIGN_OR_RETURN(std::string sum, FromHex(body.substr(dash + 1), "the checksum"));
  uint64_t stored = 0;
  for (char c : sum) stored = stored << 8 | uint8_t(c);
  const uint64_t computed = util::Xxh3_64(payload.data(), payload.size());
  if (stored != computed)
    return bad("checksum mismatch (stored " + util::HexPadded(stored) + ", computed " +
               util::HexPadded(computed) + "): the token was changed or cut; copy it whole");
  ResumeToken t;
  Reader r(payload);
  if (!r.U64(&t.to_guid) || !r.U64(&t.from_guid) || !r.U64(&t.object) || !r.U64(&t.bytes) ||
      !r.Name(&t.dataset) || !r.Name(&t.snapshot) || !r.Name(&t.from))
    return bad("the payload is truncated or a name is longer than " + std::to_string(kMaxName) +
               " bytes");
  if (!r.done()) return bad("the payload has bytes after its names");
  if (t.to_guid == 0) return bad("the snapshot's guid is 0");
  if (t.object == 0) return bad("the resume object is 0");
  if (t.dataset.empty() || t.snapshot.empty()) return bad("names no dataset or snapshot");
  if ((t.from_guid == 0) != t.from.empty())
    return bad("names a base without its guid, or a base guid without its name");
  return t;
}

}  // namespace poolfs::core::send

namespace poolfs {

Result<std::string> ResumeTokenSnapshot(std::string_view token) {
  POOLFS_ASSIGN_OR_RETURN(core::send::ResumeToken t, core::send::DecodeResumeToken(token));
  return t.dataset + "@" + t.snapshot;
}

}  // namespace poolfs
