#include "stress/stamp.h"

#include <algorithm>
#include <cstring>

#include "util/endian.h"

namespace poolfs::stress {

namespace {

constexpr char kMagic[4] = {'P', 'F', 'S', '1'};

uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// The 64-byte image of the chunk at `chunk_off` for a write of (object,
// txg, seq, fill); kZeros is all zeros.
void ChunkImage(uint64_t object, uint64_t chunk_off, uint64_t txg, uint64_t seq, Fill fill,
                uint8_t* img) {
  if (fill == Fill::kZeros) {
    std::memset(img, 0, kChunk);
    return;
  }
  std::memcpy(img, kMagic, 4);
  img[4] = uint8_t(fill);
  const uint64_t h = Mix(object * 31 + chunk_off * 17 + txg * 13 + seq);
  img[5] = uint8_t(h);
  img[6] = uint8_t(h >> 8);
  img[7] = uint8_t(h >> 16);
  util::PutLE64(img + 8, object);
  util::PutLE64(img + 16, chunk_off);
  util::PutLE64(img + 24, txg);
  util::PutLE64(img + 32, seq);
  if (fill == Fill::kCompressible) {
    std::memset(img + 40, int(0x41 + seq % 26), kChunk - 40);
  } else {
    uint64_t s = h;
    for (size_t i = 40; i < kChunk; i += 8) {
      s = Mix(s + i);
      util::PutLE64(img + i, s);
    }
  }
}

std::string Hex(std::string_view b) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += kDigits[c >> 4];
    s += kDigits[c & 15];
  }
  return s;
}

}  // namespace

void FillStamped(const WriteSpec& w, uint64_t from, uint64_t n, char* out) {
  if (w.fill == Fill::kZeros) {
    std::memset(out, 0, n);
    return;
  }
  uint8_t img[kChunk];
  uint64_t pos = from;
  const uint64_t end = from + n;
  while (pos < end) {
    const uint64_t chunk_off = pos / kChunk * kChunk;
    ChunkImage(w.object, chunk_off, w.txg, w.seq, w.fill, img);
    const uint64_t take = std::min(end, chunk_off + kChunk) - pos;
    std::memcpy(out + (pos - from), img + (pos - chunk_off), take);
    pos += take;
  }
}

std::string StampedData(const WriteSpec& w) {
  std::string s(w.len, '\0');
  FillStamped(w, w.off, w.len, s.data());
  return s;
}

std::string DescribeChunk(std::string_view chunk, uint64_t chunk_off) {
  if (std::all_of(chunk.begin(), chunk.end(), [](char c) { return c == 0; })) return "zeros";
  if (chunk.size() >= 40 && std::memcmp(chunk.data(), kMagic, 4) == 0) {
    const auto* p = reinterpret_cast<const uint8_t*>(chunk.data());
    const uint64_t object = util::GetLE64(p + 8), off = util::GetLE64(p + 16);
    const uint64_t txg = util::GetLE64(p + 24), seq = util::GetLE64(p + 32);
    uint8_t img[kChunk];
    ChunkImage(object, off, txg, seq, Fill(p[4] % kFillCount), img);
    size_t same = 0;
    for (size_t i = 0; i < chunk.size(); i++) same += uint8_t(chunk[i]) == img[i];
    std::string s = "stamp{obj " + std::to_string(object) + " off " + std::to_string(off) +
                    " txg " + std::to_string(txg) + " seq " + std::to_string(seq) + "}";
    if (same != chunk.size())
      s += " (" + std::to_string(same) + "/" + std::to_string(chunk.size()) +
           " bytes match that stamp)";
    if (off != chunk_off) s += " MISPLACED: found at offset " + std::to_string(chunk_off);
    return s;
  }
  return "unstamped bytes " + Hex(chunk.substr(0, 16)) + "...";
}

std::string BonusBytes(uint64_t object, uint64_t seq, uint64_t len) {
  std::string s(len, '\0');
  uint64_t h = Mix(object ^ (seq << 20));
  for (uint64_t i = 0; i < len; i++) {
    if (i % 8 == 0) h = Mix(h + i);
    s[i] = char(h >> (8 * (i % 8)));
  }
  return s;
}

}  // namespace poolfs::stress
