// libFuzzer target for resume tokens (core/send/resume_token.h).
//
// Input: any bytes, taken as a token's text.
//
// Properties checked (a violation aborts):
//   - DecodeResumeToken never crashes, and fails only with InvalidArgument
//     whose message starts "resume token: ";
//   - a token it accepts has what the decoder promises (nonzero guid and
//     object, a dataset and snapshot, a base name exactly when a base
//     guid), and encodes back to exactly the input text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "send/resume_token.h"

namespace {

using poolfs::core::send::DecodeResumeToken;
using poolfs::core::send::EncodeResumeToken;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "resume_token_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = DecodeResumeToken(text);
  if (!t.ok()) {
    if (t.status().code() != poolfs::StatusCode::kInvalidArgument ||
        !t.status().message().starts_with("resume token: "))
      Fail("unexpected error", t.status().ToString());
    return 0;
  }
  if (t->to_guid == 0 || t->object == 0 || t->dataset.empty() || t->snapshot.empty() ||
      (t->from_guid == 0) != t->from.empty())
    Fail("accepted a token the decoder should refuse", std::string(text));
  if (EncodeResumeToken(*t) != text) Fail("does not encode back to its text", std::string(text));
  return 0;
}
