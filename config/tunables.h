// The tunables table: every knob of poolfs, in one place.
//
// Theory. Each tunable is one row of a static table (AllTunables(), in
// tunables.cc): its dotted name ("txg.timeout_ms" is key `timeout_ms` of
// TOML table `[txg]`), its type, its accepted range or values, whether it
// applies live (SIGHUP or `poolfs tune`) or at the next mount, what it maps
// onto, and its doc string. Defaults are not in the rows: they are the field
// initializers of `Tunables`, the plain struct below with one field per
// tunable, and each row reaches its field through a getter/setter pair. So
// there is exactly one place for a default (the struct) and one for
// everything else (the row), and a test checks that every row's default is
// inside its own range.
//
// Every value is carried as a uint64_t while it is parsed and compared: a
// bool is 0 or 1, an enum is the index of its name in the row's `choices`
// (the C++ enums below list their values in the same order; a test checks
// it), a size is bytes, a duration is milliseconds.
//
// Layering: config/ sees only core/include/poolfs/. The core's option
// structs (space::SpaceOptions, txg::TxgOptions, ...) are filled by the
// daemon from `Tunables`; each row's `maps_to` names the field it feeds.
// Every row has a reader (a test checks that no doc string says otherwise).
//
// Callers: the loader (config.h: ParseConfig, ApplyAssignment), the
// renderers (render.h: `poolfs tunables`, packaging/poolfs.toml), and the
// daemon, which maps `Tunables` onto core options.
//
// Thread safety: the table is immutable static data; Tunables is a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace poolfs::config {

// Object id reuse policy of the object allocator (dmu.metadnode_backfill).
enum class Backfill : uint8_t { kAuto, kOn, kOff, kLegacy };

// Log level (log.level); the same order as spdlog::level::level_enum, so the
// daemon may static_cast one to the other.
enum class LogLevel : uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };

// The value of every tunable, initialized to its default. Field names are
// the tunable names with '.' replaced by '_'.
struct Tunables {
  // txg
  uint64_t txg_timeout_ms = 5000;
  uint32_t txg_sync_threads = 0;
  uint64_t txg_dirty_max_bytes = uint64_t{256} << 20;
  uint32_t txg_dirty_sync_percent = 20;
  uint32_t txg_delay_min_dirty_percent = 60;
  uint64_t txg_delay_scale_ns = 500000;
  uint64_t txg_delay_max_ns = 100000000;
  // alloc
  uint32_t alloc_allocators = 0;
  uint64_t alloc_size_tree_floor = uint64_t{16} << 10;
  uint64_t alloc_df_max_search = uint64_t{16} << 20;
  uint64_t alloc_aliquot = uint64_t{2} << 20;
  // vdev
  uint64_t vdev_writeback_bytes = uint64_t{4} << 20;
  bool vdev_direct_reads = true;
  bool vdev_direct_writes = true;
  // dmu
  Backfill dmu_metadnode_backfill = Backfill::kAuto;
  uint32_t dmu_alloc_chunk = 128;
  uint64_t dmu_prefetch_distance_bytes = uint64_t{32} << 20;
  uint32_t dmu_prefetch_threads = 8;
  // arc
  uint64_t arc_max_bytes = 0;
  uint32_t arc_sublists = 0;
  uint32_t arc_evict_batch = 10;
  bool arc_cache_whole_reads = false;
  // fuse
  uint32_t fuse_threads = 0;
  bool fuse_writeback_cache = false;
  uint64_t fuse_read_ahead_bytes = uint64_t{1} << 20;
  // log
  LogLevel log_level = LogLevel::kInfo;

  bool operator==(const Tunables&) const = default;
};

enum class TunableType : uint8_t {
  kBool,      // TOML true/false
  kInteger,   // a TOML integer
  kSize,      // bytes: a TOML integer, or a string with a unit ("16KiB")
  kEnum,      // a TOML string, one of `choices`
  kDuration,  // milliseconds: a TOML integer
};

// When a new value takes effect.
enum class Applies : uint8_t {
  kLive,   // at once, on SIGHUP or `poolfs tune`
  kMount,  // at the next mount
};

// One row of the table. See the theory comment above.
struct TunableInfo {
  std::string_view name;  // "txg.timeout_ms"
  TunableType type;
  Applies applies;
  // kInteger, kSize, kDuration: the accepted range [min, max]. When
  // `zero_means` is not empty, 0 is accepted too and means that.
  uint64_t min = 0;
  uint64_t max = 0;
  std::string_view zero_means = {};
  // kEnum: the accepted names, in the order of the C++ enum.
  std::span<const std::string_view> choices = {};
  // What reads it: "core: txg::TxgOptions::timeout_ms", "daemon: ...".
  std::string_view maps_to;
  std::string_view doc;
  uint64_t (*get)(const Tunables&) = nullptr;
  void (*set)(Tunables&, uint64_t) = nullptr;

  // "txg" of "txg.timeout_ms".
  std::string_view table() const { return name.substr(0, name.find('.')); }
  // "timeout_ms" of "txg.timeout_ms".
  std::string_view key() const { return name.substr(name.find('.') + 1); }
  // This row's default (the value in a default-constructed Tunables).
  uint64_t default_value() const { return get(Tunables{}); }
  // Whether `v` is accepted (in range, a valid choice index, 0 or 1).
  bool Accepts(uint64_t v) const;
  // The phrase that follows "expected" in errors: "an integer number of
  // milliseconds from 1 to 600000", "one of \"auto\", \"on\", ...".
  std::string Expected() const;
  // The accepted values, short, for tables: "1..600000", "auto|on|off".
  std::string RangeText() const;
  // `v` for people: "5000ms", "1GiB", "auto", "true", "20".
  std::string Format(uint64_t v) const;
  // `v` as a TOML value: 5000, "1GiB", "auto", true.
  std::string FormatToml(uint64_t v) const;
};

// Returns the whole table, in the order `poolfs tunables` prints it (grouped
// by TOML table).
std::span<const TunableInfo> AllTunables();

// Returns the row named `name` ("txg.timeout_ms"), or nullptr.
const TunableInfo* FindTunable(std::string_view name);

// Returns the index of `t` in AllTunables().
size_t TunableIndex(const TunableInfo& t);

// Returns the TOML table names in table order: "txg", "alloc", ...
std::span<const std::string_view> TunableTables();

// Returns the known tunable name nearest to the unknown `name` (a typo, a
// missing table prefix, a key put in the wrong table), or "" when none is
// close enough to be a useful suggestion.
std::string_view SuggestTunable(std::string_view name);

// Returns the known table name nearest to the unknown `table`, or "".
std::string_view SuggestTable(std::string_view table);

// Returns the name of a type: "bool", "integer", "size", "enum", "duration".
std::string_view TypeName(TunableType type);

}  // namespace poolfs::config
