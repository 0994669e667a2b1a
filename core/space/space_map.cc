// Space map encoding and decoding. The byte layout is specified in section
// 10 of core/doc/on-disk-format.md; the constants below are its single
// source in code.
#include "space/space_map.h"

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "util/check.h"
#include "util/checksum.h"
#include "util/text.h"

namespace poolfs::core::space {
namespace {

// The map header, 40 bytes at byte 0. Encoded explicitly little-endian by
// EncodeHeader/DecodeHeader; the struct documents the layout and its size.
struct SpaceMapHeaderPhys {
  uint64_t magic;        // kMagic: the ASCII bytes "PFS-SMAP"
  uint16_t version;      // kVersion
  uint8_t shift;         // sector size is 1 << shift
  uint8_t reserved[5];   // zero
  uint64_t start;        // byte offset of the map's region on the vdev
  uint64_t size;         // byte size of the region
  uint64_t checksum;     // Xxh3_64 of the 32 bytes above
};
static_assert(sizeof(SpaceMapHeaderPhys) == 40);

// The end marker, 24 bytes, last in the map.
struct SpaceMapEndPhys {
  uint64_t tag_count;    // kEndTag << 60 | record count
  uint64_t alloc_bytes;  // allocs − frees, modulo 2^64
  uint64_t checksum;     // Xxh3_64 of the 8 bytes before tag_count and the 16 above
};
static_assert(sizeof(SpaceMapEndPhys) == 24);

constexpr uint64_t kMagic = 0x50414d532d534650;  // "PFS-SMAP" read as LE
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderBytes = sizeof(SpaceMapHeaderPhys);
constexpr size_t kEndBytes = sizeof(SpaceMapEndPhys);
constexpr size_t kWord = 8;

// Words outside groups carry a 4-bit tag in bits 63..60.
constexpr uint64_t kGroupTag = 0xA;
constexpr uint64_t kEndTag = 0x5;
// Group header: tag, (entry words - 1) in bits 59..50, txg in bits 49..0.
constexpr uint32_t kMaxGroupWords = 1024;
constexpr uint64_t kTxgMask = kSpaceMapMaxTxg;
constexpr uint64_t kCountMask = (uint64_t{1} << 60) - 1;
// One-word entry: bit 63 = 0, bit 62 type, bits 61..47 run - 1, bits 46..0
// offset (both in sectors, offset relative to the map start).
constexpr uint64_t kShortRunMax = uint64_t{1} << 15;
constexpr uint64_t kShortOffsetLimit = uint64_t{1} << 47;
constexpr uint64_t kShortOffsetMask = kShortOffsetLimit - 1;
// Two-word entry: bit 63 = 1, bit 62 type, bits 61..0 run - 1; then a word
// holding the offset. Used only when a one-word entry cannot hold the run.
constexpr uint64_t kLongRunMask = (uint64_t{1} << 62) - 1;

inline uint64_t LoadWord(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
inline void StoreWord(uint8_t* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, sizeof v);
}
inline void AppendWord(std::string* s, uint64_t v) {
  uint8_t b[kWord];
  StoreWord(b, v);
  s->append(reinterpret_cast<const char*>(b), kWord);
}
inline const uint8_t* U8(std::string_view s) {
  return reinterpret_cast<const uint8_t*>(s.data());
}

std::string GeometryString(const SpaceMapGeometry& g) {
  return "start " + util::Hex(g.start) + " size " + util::Hex(g.size) + " shift " +
         std::to_string(g.shift);
}

std::string EncodeHeader(const SpaceMapGeometry& g) {
  std::string h;
  h.reserve(kHeaderBytes);
  AppendWord(&h, kMagic);
  AppendWord(&h, uint64_t{kVersion} | uint64_t{g.shift} << 16);
  AppendWord(&h, g.start);
  AppendWord(&h, g.size);
  AppendWord(&h, util::Xxh3_64(h.data(), h.size()));
  return h;
}

Status Corrupt(std::string what) { return Status::Corruption("space map: " + std::move(what)); }

// The decoder. kVerify = false skips checksum comparisons (fuzzing only).
template <bool kVerify, typename Fn>
Status DecodeImpl(std::string_view bytes, const SpaceMapGeometry& g, Fn&& fn,
                  SpaceMapSummary* summary) {
  POOLFS_RETURN_IF_ERROR(ValidateGeometry(g));
  const uint8_t* data = U8(bytes);
  const size_t n = bytes.size();
  if (n < kHeaderBytes) {
    return Corrupt("header truncated: map is " + std::to_string(n) + " bytes, header needs " +
                   std::to_string(kHeaderBytes));
  }
  if (uint64_t magic = LoadWord(data); magic != kMagic) {
    return Corrupt("bad magic " + util::Hex(magic) + " at byte 0 (want " + util::Hex(kMagic) + ")");
  }
  if (uint64_t want = util::Xxh3_64(data, 32), got = LoadWord(data + 32);
      kVerify && want != got) {
    return Corrupt("header checksum mismatch at byte 32 (stored " + util::Hex(got) + ", computed " +
                   util::Hex(want) + ")");
  }
  const uint64_t w1 = LoadWord(data + 8);
  if ((w1 & 0xffff) != kVersion) {
    return Corrupt("unsupported format version " + std::to_string(w1 & 0xffff) +
                   " at byte 8 (this build reads version " + std::to_string(kVersion) + ")");
  }
  if ((w1 >> 24) != 0) return Corrupt("reserved header bytes 11..15 are not zero");
  const SpaceMapGeometry stored{LoadWord(data + 16), LoadWord(data + 24),
                                static_cast<uint32_t>((w1 >> 16) & 0xff)};
  if (!(stored == g)) {
    return Corrupt("geometry mismatch: map has " + GeometryString(stored) + ", caller expects " +
                   GeometryString(g));
  }

  const uint64_t size_sectors = g.size >> g.shift;
  uint64_t record = 0, alloc = 0, group = 0, last_txg = 0;
  size_t pos = kHeaderBytes;
  for (;;) {
    if (pos == n) {
      return Corrupt("map ends at byte " + std::to_string(pos) + " after record " +
                     std::to_string(record) + " without an end marker (truncated)");
    }
    if (n - pos < kWord) {
      return Corrupt("map ends in a partial word of " + std::to_string(n - pos) +
                     " bytes at byte " + std::to_string(pos) + " after record " +
                     std::to_string(record) + " (truncated)");
    }
    const uint64_t w = LoadWord(data + pos);
    const uint64_t tag = w >> 60;
    if (tag == kEndTag) {
      if (n - pos < kEndBytes) {
        return Corrupt("end marker at byte " + std::to_string(pos) + " after record " +
                       std::to_string(record) + " is truncated (" + std::to_string(n - pos) +
                       " of " + std::to_string(kEndBytes) + " bytes)");
      }
      const uint64_t want = util::Xxh3_64(data + pos - kWord, 3 * kWord);
      const uint64_t got = LoadWord(data + pos + 2 * kWord);
      if (kVerify && want != got) {
        return Corrupt("end marker at byte " + std::to_string(pos) + " after record " +
                       std::to_string(record) + ": checksum mismatch (stored " + util::Hex(got) +
                       ", computed " + util::Hex(want) + ")");
      }
      if ((w & kCountMask) != record) {
        return Corrupt("end marker at byte " + std::to_string(pos) + " counts " +
                       std::to_string(w & kCountMask) + " records, the map holds " +
                       std::to_string(record));
      }
      if (uint64_t a = LoadWord(data + pos + kWord); a != alloc) {
        return Corrupt("end marker at byte " + std::to_string(pos) + " says " + std::to_string(a) +
                       " bytes allocated, the records add up to " + std::to_string(alloc));
      }
      if (pos + kEndBytes != n) {
        return Corrupt("trailing garbage: " + std::to_string(n - pos - kEndBytes) +
                       " bytes after the end marker, at byte " + std::to_string(pos + kEndBytes));
      }
      if (summary != nullptr) *summary = {record, alloc, group, Txg(last_txg)};
      return Status::Ok();
    }
    if (tag != kGroupTag) {
      return Corrupt("record " + std::to_string(record) + " at byte " + std::to_string(pos) +
                     ": expected a group header or the end marker, found word " + util::Hex(w));
    }
    const size_t words = ((w >> 50) & (kMaxGroupWords - 1)) + 1;
    const uint64_t txg = w & kTxgMask;
    const size_t body = pos + kWord;
    const size_t body_end = body + words * kWord;
    // Built only for an error message: no allocation on the good path.
    const auto group_at = [&] {
      return "group " + std::to_string(group) + " at byte " + std::to_string(pos);
    };
    const auto group_name = [&, group_record = record] {
      return group_at() + " (records from " + std::to_string(group_record) + ")";
    };
    if (n - pos < (words + 2) * kWord) {
      return Corrupt(group_name() + " is truncated: it needs " +
                     std::to_string((words + 2) * kWord) + " bytes, " + std::to_string(n - pos) +
                     " remain");
    }
    if (kVerify) {
      const uint64_t want = util::Xxh3_64(data + pos - kWord, body_end - pos + kWord);
      const uint64_t got = LoadWord(data + body_end);
      if (want != got) {
        return Corrupt(group_name() + ": checksum mismatch (stored " + util::Hex(got) +
                       ", computed " + util::Hex(want) + ")");
      }
    }
    if (txg < last_txg) {
      return Corrupt(group_name() + ": txg " + std::to_string(txg) +
                     " goes backwards (previous group has txg " + std::to_string(last_txg) + ")");
    }
    last_txg = txg;

    // The hot loop: no allocation, one branch per entry form.
    const uint8_t* p = data + body;
    const uint8_t* const end = data + body_end;
    while (p < end) {
      const uint64_t e = LoadWord(p);
      uint64_t off, run;
      const uint8_t* next;
      if ((e >> 63) == 0) {
        off = e & kShortOffsetMask;
        run = ((e >> 47) & (kShortRunMax - 1)) + 1;
        next = p + kWord;
      } else {
        const std::string rec = "record " + std::to_string(record) + " at byte " +
                                std::to_string(p - data) + " (in " + group_at() + ")";
        if (end - p < 2 * static_cast<ptrdiff_t>(kWord)) {
          return Corrupt(rec + ": two-word entry cut off by the end of its group");
        }
        run = (e & kLongRunMask) + 1;
        off = LoadWord(p + kWord);
        if (run <= kShortRunMax && off < kShortOffsetLimit) {
          return Corrupt(rec + ": two-word entry for a run that fits one word (run " +
                         std::to_string(run) + " sectors at sector " + std::to_string(off) + ")");
        }
        next = p + 2 * kWord;
      }
      if (off >= size_sectors || run > size_sectors - off) [[unlikely]] {
        return Corrupt("record " + std::to_string(record) + " at byte " +
                       std::to_string(p - data) + " (in " + group_at() + "): run of " +
                       std::to_string(run) + " sectors at sector " + std::to_string(off) +
                       " goes past the end of the map (" + std::to_string(size_sectors) +
                       " sectors)");
      }
      const SmType type = static_cast<SmType>((e >> 62) & 1);
      const SmEntry entry{type, Txg(txg), g.start + (off << g.shift), run << g.shift};
      alloc += type == SmType::kAlloc ? entry.length : -entry.length;
      if (Status st = fn(entry); !st.ok()) [[unlikely]] return st;
      ++record;
      p = next;
    }
    pos = body_end + kWord;
    ++group;
  }
}

}  // namespace

Status ValidateGeometry(const SpaceMapGeometry& g) {
  if (g.shift < 9 || g.shift > 16) {
    return Status::InvalidArgument("space map geometry: shift " + std::to_string(g.shift) +
                                   " outside 9..16");
  }
  const uint64_t mask = (uint64_t{1} << g.shift) - 1;
  if (g.size == 0 || (g.start & mask) != 0 || (g.size & mask) != 0 ||
      g.start + g.size < g.start) {
    return Status::InvalidArgument("space map geometry " + GeometryString(g) +
                                   ": start and size must be non-zero multiples of the sector "
                                   "size (size) and must not overflow");
  }
  return Status::Ok();
}

// ---- SpaceMapWriter ----

SpaceMapWriter::SpaceMapWriter(SpaceMapGeometry g) : g_(g), bytes_(EncodeHeader(g)) {
  Status st = ValidateGeometry(g);
  if (!st.ok()) util::CheckFailed(__FILE__, __LINE__, st.ToString());
  size_sectors_ = g.size >> g.shift;
}

SpaceMapWriter::SpaceMapWriter(SpaceMapGeometry g, std::string bytes,
                               const SpaceMapSummary& summary)
    : g_(g),
      size_sectors_(g.size >> g.shift),
      bytes_(std::move(bytes)),
      sealed_(true),
      last_txg_(summary.last_txg),
      record_count_(summary.record_count),
      alloc_bytes_(summary.alloc_bytes) {}

Result<SpaceMapWriter> SpaceMapWriter::Resume(SpaceMapGeometry g, std::string bytes) {
  POOLFS_ASSIGN_OR_RETURN(SpaceMapSummary summary, VerifySpaceMap(bytes, g));
  return SpaceMapWriter(g, std::move(bytes), summary);
}

Result<SpaceMapWriter> SpaceMapWriter::Resume(SpaceMapGeometry g, std::string bytes,
                                              const std::function<Status(const SmEntry&)>& fn) {
  SpaceMapSummary summary;
  POOLFS_RETURN_IF_ERROR(DecodeImpl<true>(bytes, g, fn, &summary));
  return SpaceMapWriter(g, std::move(bytes), summary);
}

void SpaceMapWriter::Unseal() {
  if (!sealed_) return;
  bytes_.resize(bytes_.size() - kEndBytes - (open_pos_ != 0 ? kWord : 0));
  sealed_ = false;
}

void SpaceMapWriter::CloseGroup() {
  POOLFS_DCHECK(!sealed_);
  if (open_pos_ == 0) return;
  AppendWord(&bytes_, util::Xxh3_64(bytes_.data() + open_pos_ - kWord,
                                    bytes_.size() - open_pos_ + kWord));
  open_pos_ = 0;
  open_words_ = 0;
}

void SpaceMapWriter::Seal() const {
  if (sealed_) return;
  if (open_pos_ != 0) {
    AppendWord(&bytes_, util::Xxh3_64(bytes_.data() + open_pos_ - kWord,
                                      bytes_.size() - open_pos_ + kWord));
  }
  const size_t pos = bytes_.size();
  AppendWord(&bytes_, kEndTag << 60 | record_count_);
  AppendWord(&bytes_, alloc_bytes_);
  AppendWord(&bytes_, util::Xxh3_64(bytes_.data() + pos - kWord, 3 * kWord));
  sealed_ = true;
}

void SpaceMapWriter::Append(SmType type, Txg txg, uint64_t offset, uint64_t length) {
  const uint64_t mask = (uint64_t{1} << g_.shift) - 1;
  POOLFS_CHECK_GT(length, 0u);
  POOLFS_CHECK_EQ(offset & mask, 0u);
  POOLFS_CHECK_EQ(length & mask, 0u);
  POOLFS_CHECK_GE(offset, g_.start);
  POOLFS_CHECK_LE(length, g_.size);
  POOLFS_CHECK_LE(offset - g_.start, g_.size - length);
  POOLFS_CHECK_GE(txg.value(), last_txg_.value());
  POOLFS_CHECK_LE(txg.value(), kSpaceMapMaxTxg);
  POOLFS_CHECK_LT(record_count_, kCountMask);

  const uint64_t off = (offset - g_.start) >> g_.shift;
  const uint64_t run = length >> g_.shift;
  const bool one_word = run <= kShortRunMax && off < kShortOffsetLimit;
  const uint32_t need = one_word ? 1 : 2;

  Unseal();
  if (open_pos_ == 0 || txg != last_txg_ || open_words_ + need > kMaxGroupWords) {
    CloseGroup();
    open_pos_ = bytes_.size();
    AppendWord(&bytes_, 0);  // the group header, filled in below
  }
  const uint64_t t = uint64_t(type);
  if (one_word) {
    AppendWord(&bytes_, t << 62 | (run - 1) << 47 | off);
  } else {
    AppendWord(&bytes_, uint64_t{1} << 63 | t << 62 | (run - 1));
    AppendWord(&bytes_, off);
  }
  open_words_ += need;
  StoreWord(reinterpret_cast<uint8_t*>(bytes_.data()) + open_pos_,
            kGroupTag << 60 | uint64_t(open_words_ - 1) << 50 | txg.value());
  last_txg_ = txg;
  ++record_count_;
  alloc_bytes_ += type == SmType::kAlloc ? length : -length;
}

const std::string& SpaceMapWriter::bytes() const {
  Seal();
  return bytes_;
}

std::string SpaceMapWriter::TakeBytes() && {
  Seal();
  std::string out = std::move(bytes_);
  bytes_.clear();
  return out;
}

uint64_t SpaceMapWriter::frozen_bytes() const {
  if (open_pos_ != 0) return open_pos_;
  return bytes_.size() - (sealed_ ? kEndBytes : 0);
}

// ---- Decoding and condensing ----

Status DecodeSpaceMap(std::string_view bytes, SpaceMapGeometry g,
                      const std::function<Status(const SmEntry&)>& fn) {
  return DecodeImpl<true>(bytes, g, fn, nullptr);
}

Result<SpaceMapSummary> VerifySpaceMap(std::string_view bytes, SpaceMapGeometry g) {
  SpaceMapSummary summary;
  POOLFS_RETURN_IF_ERROR(
      DecodeImpl<true>(bytes, g, [](const SmEntry&) { return Status::Ok(); }, &summary));
  return summary;
}

std::string CondenseSpaceMap(SpaceMapGeometry g, Txg txg, const SegmentProducer& for_each_free) {
  SpaceMapWriter w(g);
  w.Append(SmType::kAlloc, txg, g.start, g.size);
  uint64_t prev_end = g.start;
  for_each_free([&](uint64_t offset, uint64_t length) {
    POOLFS_CHECK_GE(offset, prev_end);  // sorted and non-overlapping
    w.Append(SmType::kFree, txg, offset, length);
    prev_end = offset + length;
  });
  return std::move(w).TakeBytes();
}

std::string CondenseSpaceMap(SpaceMapGeometry g, Txg txg,
                             const std::vector<std::pair<uint64_t, uint64_t>>& free_segments) {
  return CondenseSpaceMap(g, txg, [&](const auto& emit) {
    for (const auto& [offset, length] : free_segments) emit(offset, length);
  });
}

namespace internal {
Status DecodeSpaceMapForFuzzing(std::string_view bytes, SpaceMapGeometry g, bool verify_checksums,
                                const std::function<Status(const SmEntry&)>& fn,
                                SpaceMapSummary* summary) {
  return verify_checksums ? DecodeImpl<true>(bytes, g, fn, summary)
                          : DecodeImpl<false>(bytes, g, fn, summary);
}
}  // namespace internal

}  // namespace poolfs::core::space
