#include "config/tunables.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "poolfs/fs.h"

namespace poolfs::config {
namespace {

TEST_CASE("The table has every tunable the issues name") {
  for (const char* name :
       {"txg.timeout_ms", "txg.sync_threads", "txg.dirty_max_bytes", "txg.dirty_sync_percent",
        "txg.delay_min_dirty_percent", "alloc.allocators", "alloc.size_tree_floor",
        "alloc.df_max_search", "fuse.threads", "log.level", "dmu.metadnode_backfill",
        "dmu.alloc_chunk", "arc.max_bytes", "arc.sublists", "arc.evict_batch"}) {
    INFO(name);
    CHECK(FindTunable(name) != nullptr);
  }
  CHECK(FindTunable("txg.nope") == nullptr);
  CHECK(FindTunable("timeout_ms") == nullptr);
}

TEST_CASE("Every row is well formed: unique dotted name, doc, mapping, default in range") {
  std::set<std::string_view> names;
  const auto tables = TunableTables();
  std::string_view last_table;
  std::set<std::string_view> tables_seen;
  for (const TunableInfo& t : AllTunables()) {
    INFO(t.name);
    CHECK(names.insert(t.name).second);
    CHECK(t.name.find('.') != std::string_view::npos);
    CHECK(t.key().find('.') == std::string_view::npos);
    CHECK(std::find(tables.begin(), tables.end(), t.table()) != tables.end());
    // Rows of one table are together (the rendered config has one [table] each).
    if (t.table() != last_table) {
      CHECK(tables_seen.insert(t.table()).second);
      last_table = t.table();
    }
    CHECK(t.doc.size() > 20);
    CHECK(t.doc.back() == '.');
    CHECK_FALSE(t.maps_to.empty());
    CHECK(t.get != nullptr);
    CHECK(t.set != nullptr);
    CHECK(t.Accepts(t.default_value()));
    CHECK(&AllTunables()[TunableIndex(t)] == &t);
    if (t.type == TunableType::kEnum) {
      CHECK(t.choices.size() >= 2);
    } else {
      CHECK(t.choices.empty());
    }
    if (!t.zero_means.empty()) CHECK(t.min > 0);  // else 0 would be special and in range
  }
  CHECK(tables_seen.size() == tables.size());
}

TEST_CASE("Each row's field holds every value in its range, both ends") {
  for (const TunableInfo& t : AllTunables()) {
    INFO(t.name);
    std::vector<uint64_t> values;
    switch (t.type) {
      case TunableType::kBool: values = {0, 1}; break;
      case TunableType::kEnum: values = {0, t.choices.size() - 1}; break;
      default: values = {t.min, t.max}; break;
    }
    for (uint64_t v : values) {
      Tunables tun;
      t.set(tun, v);
      CHECK(t.get(tun) == v);
      // And it changed that field only.
      for (const TunableInfo& other : AllTunables()) {
        if (&other != &t) CHECK(other.get(tun) == other.default_value());
      }
    }
  }
}

TEST_CASE("The C++ enums list their values in the order of the rows' choices") {
  const TunableInfo* b = FindTunable("dmu.metadnode_backfill");
  REQUIRE(b != nullptr);
  CHECK(b->choices[static_cast<size_t>(BackfillMode::kAuto)] == "auto");
  CHECK(b->choices[static_cast<size_t>(BackfillMode::kOn)] == "on");
  CHECK(b->choices[static_cast<size_t>(BackfillMode::kOff)] == "off");
  CHECK(b->choices[static_cast<size_t>(BackfillMode::kLegacy)] == "legacy");
  CHECK(b->choices.size() == 4);
  const TunableInfo* l = FindTunable("log.level");
  REQUIRE(l != nullptr);
  CHECK(l->choices.size() == 7);
  CHECK(l->choices[static_cast<size_t>(LogLevel::kTrace)] == "trace");
  CHECK(l->choices[static_cast<size_t>(LogLevel::kInfo)] == "info");
  CHECK(l->choices[static_cast<size_t>(LogLevel::kCritical)] == "critical");
  CHECK(l->choices[static_cast<size_t>(LogLevel::kOff)] == "off");
}

// The number of fields of aggregate T: the most initializers T{...} takes
// (each Any converts to any field's type, so none is taken by brace
// elision).
struct Any {
  template <typename T>
  operator T() const;  // NOLINT: implicit by design; only in unevaluated operands
};
template <typename T, typename... Fields>
constexpr size_t FieldCount() {
  if constexpr (requires { T{Fields{}..., Any{}}; }) {
    return FieldCount<T, Fields..., Any>();
  } else {
    return sizeof...(Fields);
  }
}

// The rows whose maps_to starts with `prefix` ("core: TxgOptions::").
size_t RowsMappedTo(std::string_view prefix) {
  size_t n = 0;
  for (const TunableInfo& t : AllTunables()) n += t.maps_to.starts_with(prefix) ? 1 : 0;
  return n;
}

TEST_CASE("Every field of the core's option structs has a row, and every row a field") {
  // The fields that are not tunables (poolfs/options.h says why).
  constexpr size_t kArcNotTunables = 2;  // evict_thread, pool_retain_bytes
  CHECK(RowsMappedTo("core: TxgOptions::") == FieldCount<TxgOptions>());
  CHECK(RowsMappedTo("core: SpaceOptions::") == FieldCount<SpaceOptions>());
  CHECK(RowsMappedTo("core: VdevOptions::") == FieldCount<VdevOptions>());
  CHECK(RowsMappedTo("core: ObjectAllocOptions::") == FieldCount<ObjectAllocOptions>());
  CHECK(RowsMappedTo("core: ReadAheadOptions::") == FieldCount<ReadAheadOptions>());
  CHECK(RowsMappedTo("core: ArcOptions::") + kArcNotTunables == FieldCount<ArcOptions>());
  CHECK(RowsMappedTo("core: IntentLogOptions::") == FieldCount<IntentLogOptions>());
  // CoreTunables: one struct per group above, and its own fields.
  CHECK(RowsMappedTo("core: CoreTunables::") + 7 == FieldCount<CoreTunables>());
  CHECK(RowsMappedTo("daemon: ") == FieldCount<DaemonTunables>());
  CHECK(RowsMappedTo("core: ") + RowsMappedTo("daemon: ") == AllTunables().size());
  CHECK(FieldCount<Tunables>() == 2);
  // And no two rows share a field: "Each row's field holds every value in
  // its range" changes one row at a time and checks that no other moves.
}

TEST_CASE("Every tunable's default is the core's: MountOptions and a plain Tunables agree") {
  // A program that mounts without the daemon (poolfs-bench) gets
  // MountOptions' defaults; the daemon gets the config's. Every row, core
  // and daemon alike, reads the same value from both.
  Tunables from_core;
  from_core.core = MountOptions().tunables;
  const Tunables defaults;
  for (const TunableInfo& t : AllTunables()) {
    INFO(t.name);
    CHECK(t.default_value() == t.get(from_core));
    CHECK(t.default_value() == t.get(defaults));
  }
  CHECK(from_core == defaults);
  CHECK(MountOptions().tunables == CoreTunables{});
}

TEST_CASE("Defaults are those of ARCHITECTURE.md, where it gives one") {
  const Tunables t;
  CHECK(t.core.txg.timeout_ms == 5000);
  CHECK(t.daemon.sync_threads == 0);
  // ARCHITECTURE.md's example file says 1GiB; config/README.md says why not.
  CHECK(t.core.txg.dirty_max_bytes == uint64_t{256} << 20);
  CHECK(t.core.space.allocators == 0);
  CHECK(t.core.space.size_tree_floor == 16 * 1024);
  CHECK(t.core.space.df_max_search == uint64_t{16} << 20);
  CHECK(t.core.objects.backfill == BackfillMode::kAuto);
  CHECK(t.core.objects.chunk == 128);
  CHECK(t.core.arc.max_bytes == 0);
  CHECK(t.core.arc.sublists == 0);
  CHECK(t.core.arc.evict_batch == 10);
  CHECK(t.daemon.fuse_threads == 0);
}

TEST_CASE("Every tunable is read: no doc string says it is without effect or read later") {
  // A tunable added before its reader said so ("Read from issue N on; until
  // then accepted and without effect"); every reader exists now.
  for (const TunableInfo& row : AllTunables()) {
    INFO(row.name);
    CHECK(std::string(row.doc).find("without effect") == std::string::npos);
    CHECK(std::string(row.doc).find("issue") == std::string::npos);
    CHECK(std::string(row.maps_to).find("issue") == std::string::npos);
  }
}

TEST_CASE("Expected names the range, what 0 means, the unit and the choices") {
  CHECK(FindTunable("txg.timeout_ms")->Expected() ==
        "an integer number of milliseconds from 1 to 600000");
  CHECK(FindTunable("txg.dirty_sync_percent")->Expected() == "an integer from 1 to 100");
  CHECK(FindTunable("txg.sync_threads")->Expected() ==
        "0 (one per allocator) or an integer from 1 to 256");
  CHECK(FindTunable("dmu.metadnode_backfill")->Expected() ==
        "one of \"auto\", \"on\", \"off\", \"legacy\"");
  CHECK(FindTunable("fuse.writeback_cache")->Expected() == "true or false");
  const std::string size = FindTunable("arc.max_bytes")->Expected();
  CHECK(size.find("0 (a share of RAM) or a size from 1MiB to 1PiB") == 0);
  CHECK(size.find("\"16KiB\"") != std::string::npos);
}

TEST_CASE("Values format for people and for TOML") {
  const TunableInfo& timeout = *FindTunable("txg.timeout_ms");
  CHECK(timeout.Format(5000) == "5000ms");
  CHECK(timeout.FormatToml(5000) == "5000");
  const TunableInfo& dirty = *FindTunable("txg.dirty_max_bytes");
  CHECK(dirty.Format(uint64_t{1} << 30) == "1GiB");
  CHECK(dirty.FormatToml(uint64_t{1} << 30) == "\"1GiB\"");
  CHECK(dirty.FormatToml(1000000) == "1000000");
  const TunableInfo& backfill = *FindTunable("dmu.metadnode_backfill");
  CHECK(backfill.Format(3) == "legacy");
  CHECK(backfill.FormatToml(3) == "\"legacy\"");
  CHECK(FindTunable("fuse.writeback_cache")->FormatToml(1) == "true");
  CHECK(FindTunable("arc.max_bytes")->RangeText() == "0, 1MiB..1PiB");
}

TEST_CASE("Accepts takes the range, the special 0, and nothing else") {
  const TunableInfo& arc = *FindTunable("arc.max_bytes");
  CHECK(arc.Accepts(0));
  CHECK_FALSE(arc.Accepts(1024));
  CHECK(arc.Accepts(uint64_t{1} << 20));
  CHECK_FALSE(arc.Accepts((uint64_t{1} << 50) + 1));
  const TunableInfo& timeout = *FindTunable("txg.timeout_ms");
  CHECK_FALSE(timeout.Accepts(0));
  CHECK(timeout.Accepts(1));
  CHECK(timeout.Accepts(600000));
  CHECK_FALSE(timeout.Accepts(600001));
  CHECK_FALSE(FindTunable("log.level")->Accepts(7));
  CHECK_FALSE(FindTunable("fuse.writeback_cache")->Accepts(2));
}

TEST_CASE("SuggestTunable finds typos, missing tables and keys in the wrong table") {
  CHECK(SuggestTunable("txg.timout_ms") == "txg.timeout_ms");
  CHECK(SuggestTunable("txg.tiemout_ms") == "txg.timeout_ms");
  CHECK(SuggestTunable("TXG.TIMEOUT_MS") == "txg.timeout_ms");
  CHECK(SuggestTunable("timeout_ms") == "txg.timeout_ms");
  CHECK(SuggestTunable("timeout") == "txg.timeout_ms");
  CHECK(SuggestTunable("txg.dirty_max") == "txg.dirty_max_bytes");
  CHECK(SuggestTunable("dmu.timeout_ms") == "txg.timeout_ms");
  CHECK(SuggestTunable("arc.max_byte") == "arc.max_bytes");
  CHECK(SuggestTunable("dmu.metadnode_backfil") == "dmu.metadnode_backfill");
  CHECK(SuggestTunable("log.levle") == "log.level");
  CHECK(SuggestTunable("completely.different_thing") == "");
  CHECK(SuggestTunable("") == "");
}

TEST_CASE("SuggestTable finds near table names only") {
  CHECK(SuggestTable("tgx") == "txg");
  CHECK(SuggestTable("TXG") == "txg");
  CHECK(SuggestTable("allocs") == "alloc");
  CHECK(SuggestTable("fues") == "fuse");
  CHECK(SuggestTable("logging") == "");
  CHECK(SuggestTable("zzz") == "");
}

}  // namespace
}  // namespace poolfs::config
