// Config: a validated set of tunable values, and how one is read.
//
// A Config always holds a complete, valid Tunables: it starts from the
// defaults, and every way to change it (ParseConfig, LoadConfigFile,
// ApplyAssignment, Config::Set) validates first and either produces a whole
// new value or an error and nothing. So a bad file or a bad `poolfs tune`
// never half-applies: the caller keeps its running Config.
//
// Reading a file (ParseConfig; the TOML side lives in config_loader.cc, the
// only file that includes toml++):
//   - both `[txg]\ntimeout_ms = 5000` and `txg.timeout_ms = 5000` work;
//   - every mistake is reported, one line each, sorted by position, as
//     `FILE:LINE: KEY = VALUE: expected ...` (a value of the wrong type or
//     out of range: the accepted values follow "expected"),
//     `FILE:LINE: unknown key KEY; did you mean txg.timeout_ms?`,
//     `FILE:LINE: unknown table [NAME]; did you mean [txg]?`, or
//     `FILE:LINE:COL: TOML syntax error` (toml++'s description; duplicate
//     keys are reported this way);
//   - tunables the file does not name keep their defaults.
//
// Finding the file (FindConfigFile): --config, else
// $XDG_CONFIG_HOME/poolfs/poolfs.toml (~/.config/poolfs/poolfs.toml when
// XDG_CONFIG_HOME is unset or not absolute), else /etc/poolfs/poolfs.toml,
// else none (the defaults).
//
// Reloading (SIGHUP, `poolfs tune`): Diff(running, loaded) splits the changes
// into live ones, which apply now (ApplyLive), and at-mount ones, which the
// daemon logs and applies at the next mount.
//
// Thread safety: Config is a value type (no shared state); the functions are
// reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/tunables.h"
#include "poolfs/status.h"

namespace poolfs::config {

class Config {
 public:
  // Every tunable at its default; source() is "".
  Config();

  const Tunables& values() const { return values_; }
  // The file (or other source) the values were read from; "" for defaults.
  const std::string& source() const { return source_; }
  void set_source(std::string source) { source_ = std::move(source); }

  // Where `t` got its value ("poolfs.toml:7", "poolfs tune"), or "" when it
  // is the default.
  const std::string& origin(const TunableInfo& t) const { return origins_[TunableIndex(t)]; }
  // `t`'s value as a uint64_t (see tunables.h).
  uint64_t raw(const TunableInfo& t) const { return t.get(values_); }

  // Typed getters by name. They fail with NotFound for an unknown name and
  // with InvalidArgument when the tunable has another type (GetU64 serves
  // integers, sizes in bytes and durations in ms).
  Result<uint64_t> GetU64(std::string_view name) const;
  Result<bool> GetBool(std::string_view name) const;
  Result<std::string_view> GetEnum(std::string_view name) const;

  // Sets `t` to `value` and records `origin`, or returns InvalidArgument
  // ("txg.timeout_ms = 0: expected ...") and changes nothing when `t` does
  // not accept it.
  Status Set(const TunableInfo& t, uint64_t value, std::string origin);

 private:
  Tunables values_;
  std::string source_;
  std::vector<std::string> origins_;  // by TunableIndex
};

// Parses a TOML document. `source_name` (usually the file's path) starts
// every error line. Returns the Config (defaults, overridden by the file),
// or InvalidArgument listing every mistake (see above) and no Config.
Result<Config> ParseConfig(std::string_view text, std::string_view source_name);

// Reads `path` and parses it with ParseConfig. Fails with NotFound or
// IOError (naming the path) when the file cannot be read, InvalidArgument
// when it is larger than 1 MiB or does not parse.
Result<Config> LoadConfigFile(const std::string& path);

// Parses `text` as a value of `t` the way a command line writes it
// (`poolfs tune MNT txg.timeout_ms=5000`): "true"/"false", decimal digits,
// a size with or without a unit, an enum name (quotes optional). Returns
// the value or InvalidArgument ("expected ...").
Result<uint64_t> ParseValueText(const TunableInfo& t, std::string_view text);

// Applies one `KEY=VALUE` to a copy of `base` and returns it, with `origin`
// recorded for KEY. Fails with InvalidArgument (naming the key, suggesting
// the nearest one if unknown, or naming the accepted values) and no Config.
Result<Config> ApplyAssignment(const Config& base, std::string_view assignment,
                               std::string origin = "poolfs tune");

// Where FindConfigFile looks, after an explicit path.
struct ConfigSearchPaths {
  std::string xdg_config_home;  // $XDG_CONFIG_HOME; "" when unset
  std::string home;             // $HOME; "" when unset
  std::string system_file = "/etc/poolfs/poolfs.toml";

  // The paths from the process environment.
  static ConfigSearchPaths FromEnvironment();
};

// Returns the config file to read: `explicit_path` when not empty, else the
// first of the search paths (see above) that exists, else nullopt (use the
// defaults). Fails with NotFound when `explicit_path` does not exist, and
// with InvalidArgument or IOError (naming the path) when a candidate exists
// but is not a regular file or cannot be examined.
Result<std::optional<std::string>> FindConfigFile(std::string_view explicit_path,
                                                  const ConfigSearchPaths& paths);
Result<std::optional<std::string>> FindConfigFile(std::string_view explicit_path);

// One tunable whose value differs between two Tunables.
struct TunableChange {
  const TunableInfo* tunable;
  uint64_t old_value;
  uint64_t new_value;

  // "txg.timeout_ms: 5000ms -> 1000ms".
  std::string ToString() const;
};

// The changes between two Tunables, split by when they take effect, each in
// table order.
struct ConfigDiff {
  std::vector<TunableChange> live;
  std::vector<TunableChange> at_mount;

  bool empty() const { return live.empty() && at_mount.empty(); }
  // One line per change, "txg.timeout_ms: 5000ms -> 1000ms (live)" or
  // "... (at the next mount)"; "" when empty.
  std::string ToString() const;
};

// Returns what changed from `old_values` to `new_values`.
ConfigDiff Diff(const Tunables& old_values, const Tunables& new_values);

// Returns `running` with every live tunable taken from `loaded`: the values
// a reload puts into effect at once (the at-mount ones wait for a mount).
Tunables ApplyLive(const Tunables& running, const Tunables& loaded);

}  // namespace poolfs::config
