// Resume tokens: where an interrupted receive (`poolfs receive -s`) can
// pick up, as a string the receiving side shows (the target's
// receive_resume_token property) and the sending side reads (`poolfs send
// -t TOKEN`). Specified in core/doc/send-stream-format.md, section 9.
//
// A token names the stream (the sender's dataset, snapshot and base, and
// their guids) and the object the resumed stream starts at: everything
// before that object has been received and synced; that object's records
// come again whole (applying them twice is harmless: a new object is
// started afresh, a kept one's writes and holes land the same way).
//
// Text form: "1-" then the payload in lowercase hex, "-", then the
// payload's XXH3-64 as 16 hex digits. Payload: u64 to_guid, u64
// from_guid, u64 object, u64 bytes (stream bytes received so far,
// informative), then three names, each a u16 length and its bytes:
// dataset, snapshot, base (empty for a full stream); little-endian.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "poolfs/status.h"

namespace poolfs::core::send {

struct ResumeToken {
  uint64_t to_guid = 0;    // nonzero
  uint64_t from_guid = 0;  // 0: a full stream
  uint64_t object = 0;     // where the stream resumes: 1 ..
  uint64_t bytes = 0;
  std::string dataset;   // "tank/home": the sender's
  std::string snapshot;  // "monday"
  std::string from;      // the base's name; empty: a full stream
  bool operator==(const ResumeToken&) const = default;
};

// The longest token text a pool stores (a property value's limit).
inline constexpr size_t kMaxResumeTokenText = 1024;

std::string EncodeResumeToken(const ResumeToken& t);
// InvalidArgument saying what is wrong with the text ("not a resume
// token", a checksum mismatch, a truncated or overlong payload, a zero
// guid or object, a base name without a base guid or the reverse).
Result<ResumeToken> DecodeResumeToken(std::string_view text);

}  // namespace poolfs::core::send
