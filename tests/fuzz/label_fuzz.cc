// libFuzzer target for the vdev label decoder (core/vdev/label.h).
//
// Input: [mode byte][label header, up to 512 bytes][config bytes...]. The
// header goes at offset 0 and the config bytes at kConfigOffset of a label
// buffer (the zero padding between them is not worth the fuzzer's time); the
// buffer ends where the input ends, so short inputs exercise truncation.
// Mode bit 0: recompute the header checksum first, so that inputs reach the
// version and field checks behind it (a random input never has a valid
// checksum). Mode bit 1: also decode the raw input (after the mode byte) as a
// label, without the layout above.
//
// Labels of both format versions this build reads (1 and 2) are decoded as
// they come: the version is in the input.
//
// Properties checked (a violation aborts): decoding never crashes; it fails
// only with Corruption, or with NotSupported for a format version outside
// 1..2; a label that decodes re-encodes (EncodeLabel, whose CHECKs reject
// headers the decoder should have refused) to a label that decodes to the
// same header (version included) and config.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "util/checksum.h"
#include "util/endian.h"
#include "vdev/label.h"

namespace {

using namespace poolfs::core::vdev;
using poolfs::Result;
using poolfs::Status;
using poolfs::StatusCode;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "label_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void DecodeAndCheck(const uint8_t* data, size_t len, int index) {
  Result<DecodedLabel> d = DecodeLabel(data, len, index);
  if (!d.ok()) {
    StatusCode c = d.status().code();
    if (c != StatusCode::kCorruption && c != StatusCode::kNotSupported) {
      Fail("unexpected status", d.status().ToString());
    }
    return;
  }
  std::vector<uint8_t> again = EncodeLabel(d->header, index, d->config);
  Result<DecodedLabel> back = DecodeLabel(again.data(), again.size(), index);
  if (!back.ok()) Fail("re-encoded label does not decode", back.status().ToString());
  if (!(back->header == d->header) || back->config != d->config) {
    Fail("re-encoded label", "decodes to a different header or config");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  data++;
  size--;
  if (mode & 2) {
    for (int i = 0; i < kLabelCount; i++) DecodeAndCheck(data, size, i);
  }
  const size_t header = std::min<size_t>(size, kLabelHeaderSize);
  const size_t config = size - header;
  std::vector<uint8_t> buf(header < kLabelHeaderSize ? header : kConfigOffset + config, 0);
  std::copy(data, data + header, buf.begin());
  if (config > 0) std::copy(data + header, data + size, buf.begin() + kConfigOffset);
  if ((mode & 1) && header == kLabelHeaderSize) {
    // The checksum covers header bytes [0, 496) and config_len config bytes.
    uint64_t config_len = poolfs::util::GetLE64(&buf[80]);
    if (config_len <= config) {
      std::string covered(buf.begin(), buf.begin() + 496);
      covered.append(buf.begin() + kConfigOffset, buf.begin() + kConfigOffset + config_len);
      poolfs::util::Checksum128 sum = poolfs::util::Xxh3_128(covered.data(), covered.size());
      poolfs::util::PutLE64(&buf[496], sum.lo);
      poolfs::util::PutLE64(&buf[504], sum.hi);
    }
  }
  for (int i = 0; i < kLabelCount; i++) DecodeAndCheck(buf.data(), buf.size(), i);
  return 0;
}
