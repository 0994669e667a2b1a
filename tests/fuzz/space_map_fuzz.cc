// libFuzzer target for the space map decoder and writer.
//
// Each input is used three ways:
//   1. decoded as a space map against kSpaceMapFuzzGeometry, with checksums
//      verified and (to reach the record checks behind them) not verified;
//   2. decoded the same way against the geometry its own header claims, if
//      that geometry is valid;
//   3. read as a recipe (FuzzedDataProvider): a geometry and a history of
//      records that are appended (with a Resume somewhere), decoded and
//      compared; then one bit of the encoding is flipped and the map is cut
//      short, and both must be refused.
// Properties checked (a violation aborts): decoding never crashes and fails
// only with Corruption; a map that verifies also decodes without checksum
// checks to the same records; any map that decodes re-encodes (through
// SpaceMapWriter, whose CHECKs reject records the decoder should have refused)
// to a map that decodes to identical records with the same count and net
// allocation.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "space/space_map.h"
#include "space_map_fuzz.h"
#include "util/endian.h"

namespace {

using poolfs::Status;
using poolfs::Txg;
using namespace poolfs::core::space;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "space_map_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// The decoder's promise for every record it hands out, even from a map that
// fails later: a non-empty, sector-aligned run inside the map, in txg order.
// Checked here with independent (128-bit) arithmetic.
void CheckRecord(const SpaceMapGeometry& g, const SmEntry& e, const std::vector<SmEntry>& before) {
  const uint64_t mask = (uint64_t{1} << g.shift) - 1;
  const unsigned __int128 end = static_cast<unsigned __int128>(e.offset) + e.length;
  if (e.length == 0 || (e.offset & mask) != 0 || (e.length & mask) != 0 || e.offset < g.start ||
      end > static_cast<unsigned __int128>(g.start) + g.size ||
      (e.type != SmType::kAlloc && e.type != SmType::kFree) || e.txg.value() > kSpaceMapMaxTxg ||
      (!before.empty() && e.txg < before.back().txg)) {
    Fail("decoder handed out a bad record",
         "record " + std::to_string(before.size()) + " offset " + std::to_string(e.offset) +
             " length " + std::to_string(e.length) + " txg " + std::to_string(e.txg.value()));
  }
}

Status Decode(std::string_view bytes, const SpaceMapGeometry& g, bool verify,
              std::vector<SmEntry>* out, SpaceMapSummary* summary) {
  out->clear();
  return internal::DecodeSpaceMapForFuzzing(
      bytes, g, verify,
      [&g, out](const SmEntry& e) {
        CheckRecord(g, e, *out);
        out->push_back(e);
        return Status::Ok();
      },
      summary);
}

void CheckReencodes(const SpaceMapGeometry& g, const std::vector<SmEntry>& records,
                    const SpaceMapSummary& summary) {
  SpaceMapWriter w(g);
  for (const SmEntry& e : records) w.Append(e.type, e.txg, e.offset, e.length);
  if (w.record_count() != summary.record_count || w.alloc_bytes() != summary.alloc_bytes) {
    Fail("summary", "decoded summary disagrees with the records");
  }
  std::vector<SmEntry> again;
  SpaceMapSummary s;
  Status st = Decode(w.bytes(), g, true, &again, &s);
  if (!st.ok()) Fail("re-encoded map does not decode", st.ToString());
  if (again != records) Fail("re-encoded map", "decodes to different records");
}

void DecodeAndCheck(std::string_view bytes, const SpaceMapGeometry& g) {
  std::vector<SmEntry> checked, unchecked;
  SpaceMapSummary cs, us;
  const Status c = Decode(bytes, g, true, &checked, &cs);
  const Status u = Decode(bytes, g, false, &unchecked, &us);
  for (const Status* st : {&c, &u}) {
    if (!st->ok() && (!st->IsCorruption() || st->message().rfind("space map: ", 0) != 0)) {
      Fail("unexpected status", st->ToString());
    }
  }
  if (c.ok()) {
    if (!u.ok() || unchecked != checked) Fail("verified map", "differs without checksums");
    CheckReencodes(g, checked, cs);
  } else if (u.ok()) {
    CheckReencodes(g, unchecked, us);
  }
}

uint64_t NetAlloc(const std::vector<SmEntry>& h) {
  uint64_t a = 0;
  for (const SmEntry& e : h) a += e.type == SmType::kAlloc ? e.length : -e.length;
  return a;
}

void Recipe(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  SpaceMapGeometry g;
  g.shift = p.ConsumeIntegralInRange<uint32_t>(9, 16);
  const uint64_t max_sectors = UINT64_MAX >> g.shift;
  const uint32_t bits = p.ConsumeIntegralInRange<uint32_t>(1, 64 - g.shift);
  const uint64_t sectors = p.ConsumeIntegralInRange<uint64_t>(
      1, bits == 64 - g.shift ? max_sectors : uint64_t{1} << bits);
  g.size = sectors << g.shift;
  g.start = p.ConsumeIntegralInRange<uint64_t>(0, max_sectors - sectors) << g.shift;
  const uint32_t flip = p.ConsumeIntegral<uint32_t>();
  const uint32_t cut = p.ConsumeIntegral<uint32_t>();
  const size_t resume_at = p.ConsumeIntegral<uint8_t>();
  uint64_t txg = p.ConsumeIntegralInRange<uint64_t>(0, kSpaceMapMaxTxg);

  SpaceMapWriter w(g);
  std::vector<SmEntry> h;
  while (p.remaining_bytes() > 0 && h.size() < 4096) {
    txg = std::min(kSpaceMapMaxTxg, txg + p.ConsumeIntegralInRange<uint64_t>(0, 2));
    const SmType type = p.ConsumeBool() ? SmType::kFree : SmType::kAlloc;
    const uint64_t run = p.ConsumeIntegralInRange<uint64_t>(
        1, p.ConsumeBool() ? sectors : std::min<uint64_t>(sectors, 64));
    const uint64_t off = p.ConsumeIntegralInRange<uint64_t>(0, sectors - run);
    h.push_back({type, Txg(txg), g.start + (off << g.shift), run << g.shift});
    w.Append(type, Txg(txg), h.back().offset, h.back().length);
    if (h.size() == resume_at) {
      auto resumed = SpaceMapWriter::Resume(g, w.bytes());
      if (!resumed.ok()) Fail("Resume", resumed.status().ToString());
      w = std::move(*resumed);
    }
  }
  const std::string bytes = w.bytes();
  std::vector<SmEntry> out;
  SpaceMapSummary summary;
  Status st = Decode(bytes, g, true, &out, &summary);
  if (!st.ok()) Fail("recipe map does not decode", st.ToString());
  if (out != h) Fail("recipe map", "decodes to different records");
  if (summary.alloc_bytes != NetAlloc(h) || summary.record_count != h.size()) {
    Fail("recipe map", "summary disagrees");
  }

  std::string damaged = bytes;
  const size_t bit = flip % (bytes.size() * 8);
  damaged[bit / 8] = char(damaged[bit / 8] ^ (1 << (bit % 8)));
  st = Decode(damaged, g, true, &out, &summary);
  if (!st.IsCorruption()) Fail("bit flip not refused", std::to_string(bit) + " " + st.ToString());
  const size_t len = cut % bytes.size();
  st = Decode(std::string_view(bytes).substr(0, len), g, true, &out, &summary);
  if (!st.IsCorruption()) Fail("truncation not refused", std::to_string(len) + " " + st.ToString());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const SpaceMapGeometry fixed = poolfs::fuzz::kSpaceMapFuzzGeometry;
  DecodeAndCheck(bytes, fixed);
  if (size >= 40) {
    const SpaceMapGeometry own{poolfs::util::GetLE64(data + 16), poolfs::util::GetLE64(data + 24),
                               data[10]};
    if (ValidateGeometry(own).ok() && !(own == fixed)) DecodeAndCheck(bytes, own);
  }
  Recipe(data, size);
  return 0;
}
