// The tunables table: every knob of poolfs, in one place.
//
// Theory. Each tunable is one row of a static table (AllTunables(), in
// tunables.cc): its dotted name ("txg.timeout_ms" is key `timeout_ms` of
// TOML table `[txg]`), its type, its accepted range or values, whether it
// applies live (SIGHUP or `poolfs tune`) or at the next mount, its doc
// string, and the field it maps onto. Defaults are not in the rows: each
// row reaches one field of `Tunables` through a getter/setter pair, and the
// field's initializer is the default. `Tunables` embeds the core's option
// structs (poolfs/options.h: TxgOptions, SpaceOptions, ...) as
// `Tunables::core`, so a core tunable's default is the core's own field
// initializer and nothing here repeats it; the daemon's own tunables
// (threads, FUSE, logging) live in `DaemonTunables` below. So there is
// exactly one place for a default (the struct) and one for everything else
// (the row); tests check that every row's default is inside its own range,
// that every field of the core's structs has a row, and that no two rows
// share a field.
//
// Every value is carried as a uint64_t while it is parsed and compared: a
// bool is 0 or 1, an enum is the index of its name in the row's `choices`
// (the C++ enums, poolfs::BackfillMode and LogLevel, list their values in
// the same order; a test checks it), a size is bytes, a duration is
// milliseconds.
//
// Layering: config/ sees only core/include/poolfs/. The daemon passes
// `Tunables::core` to the core as it is (MountOptions::tunables at mount,
// Filesystem::SetLive on a change): no field is copied on the way.
//
// Callers: the loader (config.h: ParseConfig, ApplyAssignment), the
// renderers (render.h: `poolfs tunables`, packaging/poolfs.toml), and the
// daemon.
//
// Thread safety: the table is immutable static data; Tunables is a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "poolfs/options.h"

namespace poolfs::config {

// Log level (log.level); the same order as spdlog::level::level_enum, so the
// daemon may static_cast one to the other.
enum class LogLevel : uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };

// The tunables the daemon reads itself, not the core; each initializer is
// the default.
struct DaemonTunables {
  // txg.sync_threads: threads of the Asio sync executor; 0: one per
  // allocator.
  uint32_t sync_threads = 0;
  // fuse.threads: FUSE worker threads; 0: the adapter chooses
  // (fuse::FuseOptions::DefaultThreads).
  uint32_t fuse_threads = 0;
  // fuse.writeback_cache: the kernel's writeback cache for the mount.
  bool fuse_writeback_cache = false;
  // fuse.handle_killpriv: the daemon clears setuid, setgid and file
  // capabilities on write, truncate and chown, and tells the kernel so.
  bool fuse_handle_killpriv = true;
  // fuse.read_ahead_bytes: the kernel's readahead of files on the mount.
  uint64_t fuse_read_ahead_bytes = uint64_t{1} << 20;
  // log.level.
  LogLevel log_level = LogLevel::kInfo;

  bool operator==(const DaemonTunables&) const = default;
};

// The value of every tunable, initialized to its default.
struct Tunables {
  CoreTunables core;      // what the core reads (poolfs/options.h)
  DaemonTunables daemon;  // what the daemon reads

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
  std::string_view doc;
  // What reads it: "core: TxgOptions::timeout_ms" (a field of
  // poolfs/options.h), "daemon: ...".
  std::string_view maps_to;
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
