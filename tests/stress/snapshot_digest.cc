#include "stress/snapshot_digest.h"

#include <algorithm>
#include <string>

#include "util/checksum.h"
#include "util/endian.h"

namespace poolfs::stress {

namespace {

namespace dmu = ::poolfs::core::dmu;

constexpr uint64_t kPage = 64 * 1024;
constexpr uint64_t kChunk = 16 * kPage;

// h folded with the bytes of `piece`.
uint64_t Fold(uint64_t h, std::string_view piece) {
  std::string buf(8, '\0');
  util::PutLE64(reinterpret_cast<uint8_t*>(buf.data()), h);
  buf.append(piece);
  return util::Xxh3_64(buf.data(), buf.size());
}

std::string LE64(uint64_t v) {
  std::string s(8, '\0');
  util::PutLE64(reinterpret_cast<uint8_t*>(s.data()), v);
  return s;
}

}  // namespace

Result<ObjectSetDigest> DigestObjectSet(dmu::ObjectSet* os) {
  ObjectSetDigest d;
  const uint64_t limit = os->next_object();
  for (uint64_t id = 1; id < limit; id++) {
    const std::string what = os->name() + ": digest of object " + std::to_string(id);
    auto info = os->Stat(ObjectId(id));
    if (!info.ok()) {
      if (info.status().code() == StatusCode::kNotFound) continue;
      return info.status().WithContext(what);
    }
    d.objects++;
    d.hash = Fold(d.hash, LE64(id) + LE64(uint64_t(info->type)) + LE64(info->block_size) +
                              LE64(info->length) + LE64(info->bonus_type) +
                              LE64(info->bonus.size()) + info->bonus);
    const uint64_t length = info->length;
    uint64_t off = 0;
    while (off < length) {
      auto data = os->Seek(ObjectId(id), off, length, /*hole=*/false);
      if (!data.ok()) return data.status().WithContext(what);
      if (*data >= length) break;
      auto hole = os->Seek(ObjectId(id), *data, length, /*hole=*/true);
      if (!hole.ok()) return hole.status().WithContext(what);
      // The whole pages that hold the region (a page shared with the next
      // region is read once, whole).
      const uint64_t end = (std::max(*hole, *data + 1) + kPage - 1) / kPage * kPage;
      for (uint64_t at = *data / kPage * kPage; at < end; at += kChunk) {
        const uint64_t n = std::min(kChunk, end - at);
        auto bytes = os->Read(ObjectId(id), at, n);
        if (!bytes.ok()) return bytes.status().WithContext(what);
        for (uint64_t p = 0; p < bytes->size(); p += kPage) {
          const std::string_view page =
              std::string_view(*bytes).substr(p, std::min<uint64_t>(kPage, bytes->size() - p));
          if (page.find_first_not_of('\0') == std::string_view::npos) continue;
          d.hash = Fold(d.hash, LE64(at + p) + std::string(page));
        }
      }
      off = end;
    }
  }
  d.hash = Fold(d.hash, LE64(d.objects));
  return d;
}

}  // namespace poolfs::stress
