#include "pool/dataset_props.h"

#include <array>

#include "util/byte_units.h"
#include "util/check.h"

namespace poolfs::core::pool {

namespace {

Result<std::string> OneOf(std::string_view value, std::initializer_list<std::string_view> choices) {
  std::string list;
  for (std::string_view c : choices) {
    if (value == c) return std::string(c);
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  return Status::InvalidArgument("'" + std::string(value) + "' is not one of " + list);
}

Result<std::string> ParseCompression(std::string_view v) {
  if (v == "off" || v == "lz4" || v == "zstd") return std::string(v);
  if (v.substr(0, 5) == "zstd-") {
    // One or two digits, no leading zero, 1..19: looked at before any
    // arithmetic, so that no text can overflow it.
    const std::string_view n = v.substr(5);
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (!n.empty() && n.size() <= 2 && n[0] != '0' && digit(n[0]) &&
        (n.size() == 1 || digit(n[1]))) {
      const int level = n.size() == 1 ? n[0] - '0' : (n[0] - '0') * 10 + (n[1] - '0');
      if (level <= 19) return std::string(v);
    }
  }
  return Status::InvalidArgument("'" + std::string(v) +
                                 "' is not off, lz4, zstd or zstd-1..zstd-19");
}

Result<std::string> ParseOnOff(std::string_view v) { return OneOf(v, {"on", "off"}); }
Result<std::string> ParseAtime(std::string_view v) { return OneOf(v, {"on", "off", "relatime"}); }
Result<std::string> ParseCopies(std::string_view v) { return OneOf(v, {"1", "2", "3"}); }
Result<std::string> ParseSync(std::string_view v) {
  return OneOf(v, {"standard", "always", "disabled"});
}
Result<std::string> ParseSnapdir(std::string_view v) { return OneOf(v, {"hidden", "visible"}); }

Result<std::string> ParseRecordsize(std::string_view v) {
  auto bytes = util::ParseBytes(v);
  if (!bytes.ok())
    return Status::InvalidArgument("'" + std::string(v) + "': " + bytes.status().message());
  if (*bytes < 4096 || *bytes > (1u << 20) || (*bytes & (*bytes - 1)) != 0)
    return Status::InvalidArgument("'" + std::string(v) + "' is not a power of two from 4K to 1M");
  return std::to_string(*bytes);
}

Result<std::string> ParseLimit(std::string_view v) {
  if (v == "none") return std::string("0");
  auto bytes = util::ParseBytes(v);
  if (!bytes.ok())
    return Status::InvalidArgument("'" + std::string(v) + "': " + bytes.status().message() +
                                   " (a byte count such as 10G, or none)");
  return std::to_string(*bytes);
}

std::string ShowLimit(std::string_view stored) {
  return stored == "0" ? "none" : std::string(stored);
}

constexpr std::array<PropertyDef, 22> kProperties = {{
    {"name", false, false, "", nullptr, nullptr},
    {"type", false, false, "", nullptr, nullptr},
    {"creation", false, false, "", nullptr, nullptr},
    {"used", false, false, "", nullptr, nullptr},
    {"available", false, false, "", nullptr, nullptr},
    {"referenced", false, false, "", nullptr, nullptr},
    {"usedbysnapshots", false, false, "", nullptr, nullptr},
    {"usedbydataset", false, false, "", nullptr, nullptr},
    {"compressratio", false, false, "", nullptr, nullptr},
    {"objects", false, false, "", nullptr, nullptr},
    {"mountpoint", false, false, "", nullptr, nullptr},
    {"origin", false, false, "", nullptr, nullptr},
    {"receive_resume_token", false, false, "", nullptr, nullptr},
    {"compression", true, true, "lz4", ParseCompression, nullptr},
    {"recordsize", true, true, "131072", ParseRecordsize, nullptr},
    {"atime", true, true, "relatime", ParseAtime, nullptr},
    {"readonly", true, true, "off", ParseOnOff, nullptr},
    {"quota", true, false, "0", ParseLimit, ShowLimit},
    {"reservation", true, false, "0", ParseLimit, ShowLimit},
    {"copies", true, true, "1", ParseCopies, nullptr},
    {"sync", true, true, "standard", ParseSync, nullptr},
    {"snapdir", true, true, "hidden", ParseSnapdir, nullptr},
}};

}  // namespace

std::span<const PropertyDef> Properties() { return kProperties; }

const PropertyDef* FindProperty(std::string_view name) {
  for (const PropertyDef& p : kProperties)
    if (p.name == name) return &p;
  return nullptr;
}

Status ValidateStoredProperty(std::string_view key, std::string_view value) {
  const PropertyDef* p = FindProperty(key);
  if (p == nullptr || !p->settable)
    return Status::InvalidArgument("'" + std::string(key.substr(0, kMaxPropertyKey)) +
                                   "' is not a settable property");
  auto parsed = p->parse(value);
  if (!parsed.ok()) return parsed.status().WithContext(std::string(key));
  if (*parsed != value)
    return Status::InvalidArgument(std::string(key) + " value '" + std::string(value) +
                                   "' is not in its stored form");
  return Status::Ok();
}

DatasetProps DecodeProps(const std::map<std::string, std::string, std::less<>>& values) {
  DatasetProps d;
  auto get = [&](std::string_view name) -> const std::string& {
    auto it = values.find(name);
    POOLFS_CHECK(it != values.end());
    return it->second;
  };
  const std::string& c = get("compression");
  if (c == "off") {
    d.compression = poolfs::util::Compression::kOff;
  } else if (c == "lz4") {
    d.compression = poolfs::util::Compression::kLz4;
  } else {
    d.compression = poolfs::util::Compression::kZstd;
    d.compression_level = c.size() > 5 ? std::stoi(c.substr(5)) : 0;
  }
  d.recordsize = uint32_t(std::stoul(get("recordsize")));
  const std::string& a = get("atime");
  d.atime = a == "on" ? AtimeMode::kOn : a == "off" ? AtimeMode::kOff : AtimeMode::kRelatime;
  d.readonly = get("readonly") == "on";
  d.quota = std::stoull(get("quota"));
  d.reservation = std::stoull(get("reservation"));
  d.copies = uint32_t(std::stoul(get("copies")));
  const std::string& sync = get("sync");
  d.sync = sync == "always"     ? SyncMode::kAlways
           : sync == "disabled" ? SyncMode::kDisabled
                                : SyncMode::kStandard;
  d.snapdir_visible = get("snapdir") == "visible";
  return d;
}

}  // namespace poolfs::core::pool
