// The dataset properties: one table (name, default, inherited or not,
// settable or read-only, the parser that validates a value and gives its
// stored form), what dataset.h lists, and the effective values the layers
// above read.
//
// A dataset stores only the properties set on it ("local"), as key/value
// pairs in its pool directory entry, each value in its canonical form (what
// Parse returns: "131072" for "128K", "0" for "none"). The effective value
// of an inheritable property comes from the nearest dataset up the tree
// that sets it, else the default; quota and reservation apply only where
// set. The read-only properties (used, available, ...) are computed by the
// pool and never stored.
//
// Thread safety: constant data and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "poolfs/status.h"
#include "util/compress.h"

namespace poolfs::core::pool {

struct PropertyDef {
  std::string_view name;
  bool settable;                   // false: computed by the pool (source "-")
  bool inheritable;                // settable ones only
  std::string_view default_value;  // canonical; settable ones only
  // The canonical stored form of `value`, or InvalidArgument saying what
  // is accepted (without the property's name; callers add it). Settable
  // ones only.
  Result<std::string> (*parse)(std::string_view value);
  // The stored form as `poolfs dataset get` shows it ("none" for a quota of
  // 0); nullptr: as stored.
  std::string (*show)(std::string_view stored);
};

// Every property, in the order "all" lists them.
std::span<const PropertyDef> Properties();
// nullptr for an unknown name.
const PropertyDef* FindProperty(std::string_view name);

// Bounds of the stored properties (the pool directory refuses more).
inline constexpr size_t kMaxPropertyKey = 64;
inline constexpr size_t kMaxPropertyValue = 1024;
inline constexpr size_t kMaxLocalProperties = 64;

// Checks a stored key/value pair as the pool directory decoder does: a
// known settable property whose value is in canonical form. InvalidArgument
// saying what is wrong.
Status ValidateStoredProperty(std::string_view key, std::string_view value);

enum class AtimeMode : uint8_t { kOn, kOff, kRelatime };
// When a change is durable (ZFS's sync property): at the next fsync
// (standard); before the call that made it returns (always); whenever its
// txg syncs, fsync included, which then returns at once (disabled).
enum class SyncMode : uint8_t { kStandard, kAlways, kDisabled };

// A dataset's effective settable properties, decoded: what the POSIX layer
// applies to it.
struct DatasetProps {
  poolfs::util::Compression compression = poolfs::util::Compression::kLz4;
  int compression_level = 0;  // zstd's level; 0: its default
  uint32_t recordsize = 128 * 1024;
  AtimeMode atime = AtimeMode::kRelatime;
  bool readonly = false;
  uint64_t quota = 0;        // 0: none
  uint64_t reservation = 0;  // 0: none
  uint32_t copies = 1;
  SyncMode sync = SyncMode::kStandard;
  // Whether .poolfs (the snapshots) is listed in the dataset's root
  // directory (snapdir=visible), or only reachable by name (hidden).
  bool snapdir_visible = false;
  bool operator==(const DatasetProps&) const = default;
};

// Decodes effective values (property name -> canonical value; every
// settable property present). Values come from Parse, so this cannot fail.
DatasetProps DecodeProps(const std::map<std::string, std::string, std::less<>>& values);

}  // namespace poolfs::core::pool
