// Space map tests: random round trips, Resume, condensing, and damage (every
// bit flip and every truncation of a small map is refused, with a message that
// names the record or group and the byte).
#include "space/space_map.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "util/checksum.h"

namespace poolfs::core::space {
namespace {

using Segments = std::vector<std::pair<uint64_t, uint64_t>>;

// Decodes `bytes`, returning the status and the records seen before it.
Status DecodeAll(std::string_view bytes, SpaceMapGeometry g, std::vector<SmEntry>* out) {
  out->clear();
  return DecodeSpaceMap(bytes, g, [out](const SmEntry& e) {
    out->push_back(e);
    return Status::Ok();
  });
}

std::vector<SmEntry> MustDecode(std::string_view bytes, SpaceMapGeometry g) {
  std::vector<SmEntry> out;
  Status st = DecodeAll(bytes, g, &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out;
}

SpaceMapGeometry RandomGeometry(std::mt19937_64& rng) {
  SpaceMapGeometry g;
  g.shift = 9 + rng() % 8;
  // Mostly metaslab-like sizes; sometimes huge ones that need two-word offsets.
  const uint32_t size_bits = rng() % 8 == 0 ? 58 : g.shift + 4 + rng() % 22;
  g.size = uint64_t{1} << size_bits;
  g.start = size_bits >= 58 ? 0 : g.size * (rng() % 64);
  return g;
}

// A random history: short runs mostly, some long ones, txgs that sometimes
// stay and sometimes jump. Not a consistent allocation history.
std::vector<SmEntry> RandomHistory(std::mt19937_64& rng, const SpaceMapGeometry& g, size_t n) {
  const uint64_t sectors = g.size >> g.shift;
  std::vector<SmEntry> h;
  uint64_t txg = rng() % 1000;
  for (size_t i = 0; i < n; i++) {
    if (rng() % 4 == 0) txg += 1 + rng() % 3;
    uint64_t run;
    switch (rng() % 8) {
      case 0: run = 1 + rng() % (uint64_t{1} << 15); break;
      case 1: run = (uint64_t{1} << 15) + rng() % 3; break;  // around the one-word limit
      case 2: run = 1 + rng() % sectors; break;
      default: run = 1 + rng() % 64; break;
    }
    run = std::min(run, sectors);
    const uint64_t off = rng() % (sectors - run + 1);
    h.push_back(SmEntry{rng() % 2 ? SmType::kFree : SmType::kAlloc, Txg(txg),
                        g.start + (off << g.shift), run << g.shift});
  }
  return h;
}

uint64_t NetAlloc(const std::vector<SmEntry>& h) {
  uint64_t a = 0;
  for (const SmEntry& e : h) a += e.type == SmType::kAlloc ? e.length : -e.length;
  return a;
}

// The free space of a metaslab as disjoint [start, end) intervals.
class FreeSet {
 public:
  void Add(uint64_t s, uint64_t e) {
    auto it = m_.upper_bound(s);
    if (it != m_.begin() && std::prev(it)->second >= s) --it;
    while (it != m_.end() && it->first <= e) {
      s = std::min(s, it->first);
      e = std::max(e, it->second);
      it = m_.erase(it);
    }
    m_[s] = e;
  }
  void Remove(uint64_t s, uint64_t e) {
    auto it = m_.upper_bound(s);
    if (it != m_.begin()) --it;
    while (it != m_.end() && it->first < e) {
      const uint64_t a = it->first, b = it->second;
      if (b <= s) {
        ++it;
        continue;
      }
      it = m_.erase(it);
      if (a < s) m_[a] = s;
      if (b > e) m_[e] = b;
    }
  }
  void Apply(const SmEntry& x) {
    if (x.type == SmType::kAlloc) Remove(x.offset, x.offset + x.length);
    else Add(x.offset, x.offset + x.length);
  }
  Segments segments() const {
    Segments out;
    for (auto [s, e] : m_) out.emplace_back(s, e - s);
    return out;
  }
  uint64_t total() const {
    uint64_t t = 0;
    for (auto [s, e] : m_) t += e - s;
    return t;
  }
  bool operator==(const FreeSet&) const = default;

 private:
  std::map<uint64_t, uint64_t> m_;
};

FreeSet Replay(const std::vector<SmEntry>& h) {
  FreeSet f;
  for (const SmEntry& e : h) f.Apply(e);
  return f;
}

// A small map of several groups with one- and two-word entries.
std::string SmallMap(SpaceMapGeometry* g) {
  *g = SpaceMapGeometry{uint64_t{1} << 40, uint64_t{1} << 60, 12};
  SpaceMapWriter w(*g);
  w.Append(SmType::kAlloc, Txg(7), g->start, 4096);
  w.Append(SmType::kAlloc, Txg(7), g->start + (uint64_t{1} << 59), uint64_t{1} << 30);
  w.Append(SmType::kFree, Txg(9), g->start + 8192, 3 * 4096);
  w.Append(SmType::kAlloc, Txg(9), g->start + (uint64_t{1} << 20), uint64_t{1} << 28);
  w.Append(SmType::kFree, Txg(12), g->start + 4096 * 100, 4096);
  return w.bytes();
}

// ---- A raw encoder for crafting damage with valid checksums. It restates
// section 10 of core/doc/on-disk-format.md independently of space_map.cc.
// ----
struct Raw {
  std::vector<uint64_t> words;
  std::vector<size_t> sums;  // word indices holding chained checksums

  uint64_t Xxh(size_t first, size_t count) const {
    std::string b(count * 8, '\0');
    std::memcpy(b.data(), words.data() + first, count * 8);  // little-endian host
    return util::Xxh3_64(b.data(), b.size());
  }
  void Header(const SpaceMapGeometry& g, uint64_t version = 1) {
    words = {0x50414d532d534650, version | uint64_t{g.shift} << 16, g.start, g.size, 0};
    words[4] = Xxh(0, 4);
  }
  // Appends a group with the given entry words and its checksum.
  void Group(uint64_t txg, const std::vector<uint64_t>& entries) {
    const size_t prev = words.size() - 1;
    words.push_back(uint64_t{0xA} << 60 | (entries.size() - 1) << 50 | txg);
    words.insert(words.end(), entries.begin(), entries.end());
    words.push_back(Xxh(prev, words.size() - prev));
  }
  void End(uint64_t count, uint64_t alloc) {
    const size_t prev = words.size() - 1;
    words.push_back(uint64_t{0x5} << 60 | count);
    words.push_back(alloc);
    words.push_back(Xxh(prev, 3));
  }
  std::string bytes() const {
    std::string b(words.size() * 8, '\0');
    std::memcpy(b.data(), words.data(), b.size());
    return b;
  }
};
uint64_t Short(SmType t, uint64_t off, uint64_t run) {
  return uint64_t(t) << 62 | (run - 1) << 47 | off;
}

const SpaceMapGeometry kG{uint64_t{1} << 29, uint64_t{1} << 29, 9};  // 2^20 sectors

std::string Message(std::string_view bytes, SpaceMapGeometry g) {
  std::vector<SmEntry> out;
  Status st = DecodeAll(bytes, g, &out);
  CHECK(st.IsCorruption());
  return st.message();
}

}  // namespace

TEST_CASE("SpaceMap round-trips random histories record for record", "[space_map]") {
  for (uint64_t seed = 1; seed <= 300; seed++) {
    std::mt19937_64 rng(seed);
    const SpaceMapGeometry g = RandomGeometry(rng);
    const auto h = RandomHistory(rng, g, rng() % 4 == 0 ? rng() % 5000 : rng() % 300);
    INFO("seed " << seed << " records " << h.size());
    SpaceMapWriter w(g);
    std::string snapshot;
    uint64_t snapshot_frozen = 0;
    size_t snapshot_records = 0;
    for (size_t i = 0; i < h.size(); i++) {
      w.Append(h[i].type, h[i].txg, h[i].offset, h[i].length);
      if (rng() % 64 == 0) {
        // A map taken mid-way is complete on its own, and later appends
        // never change its frozen prefix.
        snapshot = w.bytes();
        snapshot_frozen = w.frozen_bytes();
        snapshot_records = i + 1;
        REQUIRE(MustDecode(snapshot, g) ==
                std::vector<SmEntry>(h.begin(), h.begin() + long(i) + 1));
      }
    }
    const std::string& bytes = w.bytes();
    REQUIRE(MustDecode(bytes, g) == h);
    REQUIRE(w.record_count() == h.size());
    REQUIRE(w.alloc_bytes() == NetAlloc(h));
    auto summary = VerifySpaceMap(bytes, g);
    REQUIRE(summary.ok());
    REQUIRE(summary->record_count == h.size());
    REQUIRE(summary->alloc_bytes == NetAlloc(h));
    REQUIRE(summary->last_txg == (h.empty() ? Txg(0) : h.back().txg));
    if (snapshot_records > 0) {
      REQUIRE(snapshot_frozen <= snapshot.size());
      REQUIRE(bytes.compare(0, snapshot_frozen, snapshot, 0, snapshot_frozen) == 0);
    }
  }
}

TEST_CASE("SpaceMap empty map round-trips", "[space_map]") {
  SpaceMapWriter w(kG);
  REQUIRE(w.bytes().size() == 40 + 24);
  REQUIRE(MustDecode(w.bytes(), kG).empty());
  auto summary = VerifySpaceMap(w.bytes(), kG);
  REQUIRE(summary.ok());
  REQUIRE(summary->record_count == 0);
  REQUIRE(summary->group_count == 0);
}

TEST_CASE("SpaceMap uses one word for short runs and two for long runs or far offsets",
          "[space_map]") {
  const SpaceMapGeometry big{0, uint64_t{1} << 60, 9};
  auto size_of = [&](uint64_t off_sectors, uint64_t run_sectors) {
    SpaceMapWriter w(big);
    w.Append(SmType::kAlloc, Txg(1), off_sectors << 9, run_sectors << 9);
    REQUIRE(MustDecode(w.bytes(), big).size() == 1);
    return w.bytes().size() - (40 + 8 + 8 + 24);  // minus header, group header/sum, end
  };
  REQUIRE(size_of(0, 1) == 8);
  REQUIRE(size_of(0, uint64_t{1} << 15) == 8);
  REQUIRE(size_of(0, (uint64_t{1} << 15) + 1) == 16);
  REQUIRE(size_of((uint64_t{1} << 47) - 1, 1) == 8);
  REQUIRE(size_of(uint64_t{1} << 47, 1) == 16);
}

TEST_CASE("SpaceMap splits a txg with many records into groups of at most 1024 words",
          "[space_map]") {
  SpaceMapWriter w(kG);
  std::vector<SmEntry> h;
  for (uint64_t i = 0; i < 3000; i++) {
    h.push_back({SmType::kAlloc, Txg(5), kG.start + i * 512, 512});
    w.Append(h.back().type, h.back().txg, h.back().offset, h.back().length);
  }
  REQUIRE(MustDecode(w.bytes(), kG) == h);
  auto summary = VerifySpaceMap(w.bytes(), kG);
  REQUIRE(summary.ok());
  REQUIRE(summary->group_count == 3);
  REQUIRE(w.bytes().size() == 40 + 3000 * 8 + 3 * 16 + 24);
}

TEST_CASE("SpaceMapWriter::Resume continues an existing map", "[space_map]") {
  for (uint64_t seed = 1; seed <= 100; seed++) {
    std::mt19937_64 rng(seed);
    const SpaceMapGeometry g = RandomGeometry(rng);
    const auto h = RandomHistory(rng, g, rng() % 600);
    const size_t cut = h.empty() ? 0 : rng() % (h.size() + 1);
    INFO("seed " << seed << " cut " << cut << " of " << h.size());
    SpaceMapWriter first(g);
    for (size_t i = 0; i < cut; i++) first.Append(h[i].type, h[i].txg, h[i].offset, h[i].length);
    auto resumed = SpaceMapWriter::Resume(g, first.bytes());
    REQUIRE(resumed.ok());
    REQUIRE(resumed->record_count() == cut);
    REQUIRE(resumed->alloc_bytes() == first.alloc_bytes());
    REQUIRE(resumed->bytes() == first.bytes());
    for (size_t i = cut; i < h.size(); i++) {
      resumed->Append(h[i].type, h[i].txg, h[i].offset, h[i].length);
    }
    REQUIRE(MustDecode(resumed->bytes(), g) == h);
    REQUIRE(resumed->alloc_bytes() == NetAlloc(h));
    REQUIRE(resumed->bytes().compare(0, first.frozen_bytes(), first.bytes(), 0,
                                     first.frozen_bytes()) == 0);
  }
}

TEST_CASE("SpaceMapWriter::Resume with a callback decodes the map once and continues it",
          "[space_map]") {
  SpaceMapGeometry g;
  const std::string bytes = SmallMap(&g);
  std::vector<SmEntry> seen;
  auto w = SpaceMapWriter::Resume(g, bytes, [&](const SmEntry& e) {
    seen.push_back(e);
    return Status::Ok();
  });
  REQUIRE(w.ok());
  REQUIRE(seen == MustDecode(bytes, g));
  w->Append(SmType::kFree, Txg(12), g.start, 4096);
  seen.push_back({SmType::kFree, Txg(12), g.start, 4096});
  REQUIRE(MustDecode(w->bytes(), g) == seen);
  // The callback's error stops the resume.
  auto stopped = SpaceMapWriter::Resume(g, bytes, [](const SmEntry&) {
    return Status(StatusCode::kAborted, "no");
  });
  REQUIRE(stopped.status().code() == StatusCode::kAborted);
  std::string damaged = bytes;
  damaged[damaged.size() - 30] ^= 1;
  REQUIRE(SpaceMapWriter::Resume(g, damaged, [](const SmEntry&) { return Status::Ok(); })
              .status()
              .IsCorruption());
}

TEST_CASE("SpaceMapWriter::Resume refuses damaged maps and wrong geometry", "[space_map]") {
  SpaceMapGeometry g;
  std::string bytes = SmallMap(&g);
  SpaceMapGeometry other = g;
  other.shift = 13;
  REQUIRE(SpaceMapWriter::Resume(other, bytes).status().IsCorruption());
  std::string damaged = bytes;
  damaged[60] ^= 4;
  REQUIRE(SpaceMapWriter::Resume(g, damaged).status().IsCorruption());
  REQUIRE(SpaceMapWriter::Resume(g, bytes.substr(0, bytes.size() - 8)).status().IsCorruption());
  SpaceMapGeometry invalid = g;
  invalid.shift = 8;
  REQUIRE(SpaceMapWriter::Resume(invalid, bytes).status().code() ==
          StatusCode::kInvalidArgument);
}

TEST_CASE("SpaceMap condensed map replays to the same free space as the full history",
          "[space_map]") {
  for (uint64_t seed = 1; seed <= 60; seed++) {
    std::mt19937_64 rng(seed);
    const uint32_t shift = 9 + rng() % 8;
    const uint64_t sectors = 64 + rng() % 4000;
    const SpaceMapGeometry g{(rng() % 100) << (shift + 12), sectors << shift, shift};
    // A consistent history: allocate free sectors, free allocated ones.
    std::vector<bool> allocated(sectors, false);
    std::vector<SmEntry> h;
    uint64_t txg = 1;
    for (int i = 0, n = int(rng() % 2000); i < n; i++) {
      if (rng() % 8 == 0) txg++;
      const uint64_t s = rng() % sectors;
      const bool alloc = !allocated[s];
      uint64_t e = s;
      const uint64_t max_run = 1 + rng() % 64;
      while (e < sectors && e - s < max_run && allocated[e] != alloc) allocated[e++] = alloc;
      h.push_back({alloc ? SmType::kAlloc : SmType::kFree, Txg(txg), g.start + (s << shift),
                   (e - s) << shift});
    }
    INFO("seed " << seed << " records " << h.size());
    FreeSet full;
    full.Add(g.start, g.start + g.size);  // replay starts from all free
    for (const SmEntry& e : h) full.Apply(e);
    // The model agrees with the sector bitmap.
    uint64_t free_sectors = 0;
    for (bool a : allocated) free_sectors += !a;
    REQUIRE(full.total() == free_sectors << shift);

    SpaceMapWriter w(g);
    for (const SmEntry& e : h) w.Append(e.type, e.txg, e.offset, e.length);
    REQUIRE(w.alloc_bytes() == g.size - full.total());

    const Segments segs = full.segments();
    const std::string condensed = CondenseSpaceMap(g, Txg(txg + 1), segs);
    const std::string by_producer = CondenseSpaceMap(g, Txg(txg + 1), [&](const auto& emit) {
      for (auto [o, l] : segs) emit(o, l);
    });
    REQUIRE(condensed == by_producer);
    const auto records = MustDecode(condensed, g);
    REQUIRE(records.size() == segs.size() + 1);
    REQUIRE(records[0] == SmEntry{SmType::kAlloc, Txg(txg + 1), g.start, g.size});
    FreeSet from_condensed = Replay(records);
    REQUIRE(from_condensed == full);
    REQUIRE(VerifySpaceMap(condensed, g)->alloc_bytes == g.size - full.total());
    // Replaying the full map from all-free gives the same set.
    FreeSet from_full;
    from_full.Add(g.start, g.start + g.size);
    for (const SmEntry& e : MustDecode(w.bytes(), g)) from_full.Apply(e);
    REQUIRE(from_full == full);
  }
}

TEST_CASE("SpaceMap condenses a large metaslab with a two-word whole-map record",
          "[space_map]") {
  // 2^20 sectors: the whole-map ALLOC needs a two-word entry.
  const Segments segs = {{kG.start, 512}, {kG.start + 1024, 40000 * 512},
                         {kG.start + kG.size - 1024, 1024}};
  const std::string m = CondenseSpaceMap(kG, Txg(kSpaceMapMaxTxg), segs);
  REQUIRE(m.size() == 40 + 8 + 16 + 8 + 16 + 8 + 8 + 24);
  FreeSet want;
  for (auto [o, l] : segs) want.Add(o, o + l);
  REQUIRE(Replay(MustDecode(m, kG)) == want);
  auto summary = VerifySpaceMap(m, kG);
  REQUIRE(summary.ok());
  REQUIRE(summary->last_txg == Txg(kSpaceMapMaxTxg));
  REQUIRE(summary->alloc_bytes == kG.size - want.total());
}

TEST_CASE("SpaceMap refuses every single-bit flip of a small map", "[space_map]") {
  SpaceMapGeometry g;
  const std::string bytes = SmallMap(&g);
  const auto original = MustDecode(bytes, g);
  const std::string empty = SpaceMapWriter(g).bytes();
  for (const std::string* map : {&bytes, &empty}) {
    size_t refused = 0, identical = 0, different = 0;
    for (size_t bit = 0; bit < map->size() * 8; bit++) {
      std::string damaged = *map;
      damaged[bit / 8] ^= char(1 << (bit % 8));
      std::vector<SmEntry> out;
      Status st = DecodeAll(damaged, g, &out);
      if (!st.ok()) {
        INFO("bit " << bit << ": " << st.ToString());
        REQUIRE(st.IsCorruption());
        refused++;
      } else if (out == (map == &bytes ? original : std::vector<SmEntry>{})) {
        identical++;
      } else {
        different++;
      }
    }
    REQUIRE(different == 0);
    REQUIRE(identical == 0);
    REQUIRE(refused == map->size() * 8);
  }
}

TEST_CASE("SpaceMap refuses every truncation and any trailing bytes", "[space_map]") {
  SpaceMapGeometry g;
  const std::string bytes = SmallMap(&g);
  for (size_t len = 0; len < bytes.size(); len++) {
    std::vector<SmEntry> out;
    Status st = DecodeAll(std::string_view(bytes).substr(0, len), g, &out);
    INFO("length " << len << ": " << st.ToString());
    REQUIRE(st.IsCorruption());
  }
  for (size_t extra = 1; extra <= 24; extra++) {
    INFO("extra " << extra);
    const std::string m = Message(bytes + std::string(extra, '\0'), g);
    REQUIRE(m.find("trailing garbage: " + std::to_string(extra) + " bytes") != std::string::npos);
    REQUIRE(m.find("at byte " + std::to_string(bytes.size())) != std::string::npos);
  }
}

TEST_CASE("SpaceMap refuses a map decoded with the wrong geometry", "[space_map]") {
  SpaceMapGeometry g;
  const std::string bytes = SmallMap(&g);
  for (auto change : {+[](SpaceMapGeometry& x) { x.start += 4096; },
                      +[](SpaceMapGeometry& x) { x.size /= 2; },
                      +[](SpaceMapGeometry& x) { x.shift = 9; }}) {
    SpaceMapGeometry other = g;
    change(other);
    REQUIRE(Message(bytes, other).find("geometry mismatch") != std::string::npos);
  }
  SpaceMapGeometry invalid = g;
  invalid.start += 1;
  std::vector<SmEntry> out;
  REQUIRE(DecodeAll(bytes, invalid, &out).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("SpaceMap damage messages name the record or group and the byte", "[space_map]") {
  Raw r;
  SECTION("run past the end of the map") {
    r.Header(kG);
    r.Group(3, {Short(SmType::kAlloc, 0, 1), Short(SmType::kAlloc, (1 << 20) - 1, 2)});
    r.End(2, 3 * 512);
    const std::string m = Message(r.bytes(), kG);
    CHECK(m.find("record 1 at byte 56") != std::string::npos);
    CHECK(m.find("past the end of the map") != std::string::npos);
  }
  SECTION("txg going backwards") {
    r.Header(kG);
    r.Group(5, {Short(SmType::kAlloc, 0, 1)});
    r.Group(4, {Short(SmType::kFree, 0, 1)});
    r.End(2, 0);
    const std::string m = Message(r.bytes(), kG);
    CHECK(m.find("group 1 at byte 64 (records from 1)") != std::string::npos);
    CHECK(m.find("txg 4 goes backwards") != std::string::npos);
  }
  SECTION("checksum mismatch") {
    r.Header(kG);
    r.Group(5, {Short(SmType::kAlloc, 0, 1)});
    r.Group(6, {Short(SmType::kAlloc, 8, 1), Short(SmType::kAlloc, 9, 1)});
    r.End(3, 3 * 512);
    r.words[9] ^= 1 << 5;  // the first entry of group 1
    const std::string m = Message(r.bytes(), kG);
    CHECK(m.find("group 1 at byte 64 (records from 1): checksum mismatch") != std::string::npos);
  }
  SECTION("two-word entry for a short run") {
    r.Header(kG);
    r.Group(5, {uint64_t{1} << 63 | 3, 100});
    r.End(1, 4 * 512);
    CHECK(Message(r.bytes(), kG).find("record 0 at byte 48") != std::string::npos);
    CHECK(Message(r.bytes(), kG).find("fits one word") != std::string::npos);
  }
  SECTION("two-word entry cut by its group's end") {
    r.Header(kG);
    r.Group(5, {Short(SmType::kAlloc, 0, 1), uint64_t{1} << 63 | (uint64_t{1} << 20)});
    r.End(2, 0);
    CHECK(Message(r.bytes(), kG).find("record 1 at byte 56") != std::string::npos);
    CHECK(Message(r.bytes(), kG).find("cut off") != std::string::npos);
  }
  SECTION("end marker disagrees with the records") {
    r.Header(kG);
    r.Group(5, {Short(SmType::kAlloc, 0, 1)});
    r.End(2, 512);
    CHECK(Message(r.bytes(), kG).find("counts 2 records, the map holds 1") != std::string::npos);
    r.words.resize(r.words.size() - 3);
    r.End(1, 1024);
    CHECK(Message(r.bytes(), kG).find("1024 bytes allocated") != std::string::npos);
  }
  SECTION("missing end marker") {
    r.Header(kG);
    r.Group(5, {Short(SmType::kAlloc, 0, 1)});
    CHECK(Message(r.bytes(), kG).find("ends at byte 64 after record 1 without an end marker") !=
          std::string::npos);
  }
  SECTION("a stray word between groups") {
    r.Header(kG);
    r.Group(5, {Short(SmType::kAlloc, 0, 1)});
    r.words.push_back(Short(SmType::kAlloc, 1, 1));
    CHECK(Message(r.bytes(), kG).find("record 1 at byte 64: expected a group header") !=
          std::string::npos);
  }
  SECTION("bad magic, version and reserved bytes") {
    r.Header(kG, 2);
    CHECK(Message(r.bytes(), kG).find("unsupported format version 2") != std::string::npos);
    r.Header(kG);
    r.End(0, 0);
    std::string b = r.bytes();
    b[0] = 'X';
    CHECK(Message(b, kG).find("bad magic") != std::string::npos);
    r.words[1] |= uint64_t{1} << 40;
    r.words[4] = r.Xxh(0, 4);
    CHECK(Message(r.bytes(), kG).find("reserved header bytes") != std::string::npos);
  }
  SECTION("a raw map that follows the spec decodes") {
    r.Header(kG);
    r.Group(5, {Short(SmType::kAlloc, 0, 4), uint64_t{1} << 63 | uint64_t{1} << 62 | 99999, 7});
    r.End(2, uint64_t(4 * 512) - 100000 * 512);
    REQUIRE(MustDecode(r.bytes(), kG) ==
            std::vector<SmEntry>{{SmType::kAlloc, Txg(5), kG.start, 4 * 512},
                                 {SmType::kFree, Txg(5), kG.start + 7 * 512, 100000 * 512}});
  }
}

TEST_CASE("SpaceMap decode stops at and returns the callback's error", "[space_map]") {
  SpaceMapGeometry g;
  const std::string bytes = SmallMap(&g);
  int calls = 0;
  Status st = DecodeSpaceMap(bytes, g, [&](const SmEntry&) {
    return ++calls == 3 ? Status(StatusCode::kAborted, "enough") : Status::Ok();
  });
  REQUIRE(st.code() == StatusCode::kAborted);
  REQUIRE(st.message() == "enough");
  REQUIRE(calls == 3);
}

}  // namespace poolfs::core::space
