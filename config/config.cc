#include "config/config.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "config/units.h"

namespace poolfs::config {
namespace {

// Strips one pair of matching quotes, as a shell user may leave them.
std::string_view Unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    return s.substr(1, s.size() - 2);
  }
  return s;
}

Result<const TunableInfo*> Lookup(std::string_view name) {
  const TunableInfo* t = FindTunable(name);
  if (t == nullptr) return Status::NotFound("unknown tunable " + std::string(name));
  return t;
}

// Returns OK when `path` does not exist (false) or is a regular file (true).
Result<bool> RegularFileExists(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return Status::IOError(path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(path + ": not a regular file");
  }
  return true;
}

}  // namespace

Config::Config() : origins_(AllTunables().size()) {}

Result<uint64_t> Config::GetU64(std::string_view name) const {
  POOLFS_ASSIGN_OR_RETURN(const TunableInfo* t, Lookup(name));
  if (t->type == TunableType::kBool || t->type == TunableType::kEnum) {
    return Status::InvalidArgument(std::string(name) + " is a " + std::string(TypeName(t->type)) +
                                   ", not a number");
  }
  return raw(*t);
}

Result<bool> Config::GetBool(std::string_view name) const {
  POOLFS_ASSIGN_OR_RETURN(const TunableInfo* t, Lookup(name));
  if (t->type != TunableType::kBool) {
    return Status::InvalidArgument(std::string(name) + " is a " + std::string(TypeName(t->type)) +
                                   ", not a bool");
  }
  return raw(*t) != 0;
}

Result<std::string_view> Config::GetEnum(std::string_view name) const {
  POOLFS_ASSIGN_OR_RETURN(const TunableInfo* t, Lookup(name));
  if (t->type != TunableType::kEnum) {
    return Status::InvalidArgument(std::string(name) + " is a " + std::string(TypeName(t->type)) +
                                   ", not an enum");
  }
  return t->choices[raw(*t)];
}

Status Config::Set(const TunableInfo& t, uint64_t value, std::string origin) {
  if (!t.Accepts(value)) {
    return Status::InvalidArgument(std::string(t.name) + " = " + t.Format(value) +
                                   ": expected " + t.Expected());
  }
  t.set(values_, value);
  origins_[TunableIndex(t)] = std::move(origin);
  return Status::Ok();
}

Result<uint64_t> ParseValueText(const TunableInfo& t, std::string_view text) {
  const std::string_view v = Unquote(Trim(text));
  const auto expected = [&] {
    return Status::InvalidArgument(std::string(t.name) + "=" + std::string(text) +
                                   ": expected " + t.Expected());
  };
  uint64_t value = 0;
  switch (t.type) {
    case TunableType::kBool:
      if (v != "true" && v != "false") return expected();
      value = v == "true" ? 1 : 0;
      break;
    case TunableType::kEnum: {
      bool found = false;
      for (size_t i = 0; i < t.choices.size(); i++) {
        if (t.choices[i] == v) {
          value = i;
          found = true;
        }
      }
      if (!found) return expected();
      break;
    }
    case TunableType::kInteger:
    case TunableType::kDuration: {
      Result<uint64_t> n = ParseDecimal(v);
      if (!n.ok()) return expected();
      value = *n;
      break;
    }
    case TunableType::kSize: {
      Result<uint64_t> n = ParseSize(v);
      if (!n.ok()) {
        return Status::InvalidArgument(std::string(t.name) + "=" + std::string(text) + ": " +
                                       n.status().message() + "; expected " + t.Expected());
      }
      value = *n;
      break;
    }
  }
  if (!t.Accepts(value)) return expected();
  return value;
}

Result<Config> ApplyAssignment(const Config& base, std::string_view assignment,
                               std::string origin) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    return Status::InvalidArgument("\"" + std::string(assignment) +
                                   "\": expected KEY=VALUE, e.g. txg.timeout_ms=5000");
  }
  const std::string_view key = Trim(assignment.substr(0, eq));
  const TunableInfo* t = FindTunable(key);
  if (t == nullptr) {
    std::string message = "unknown key " + std::string(key);
    const std::string_view near = SuggestTunable(key);
    if (!near.empty()) message += "; did you mean " + std::string(near) + "?";
    message += " (`poolfs tunables` lists them all)";
    return Status::InvalidArgument(message);
  }
  POOLFS_ASSIGN_OR_RETURN(uint64_t value,
                          ParseValueText(*t, assignment.substr(eq + 1)));
  Config out = base;
  POOLFS_RETURN_IF_ERROR(out.Set(*t, value, std::move(origin)));
  return out;
}

ConfigSearchPaths ConfigSearchPaths::FromEnvironment() {
  ConfigSearchPaths p;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME")) p.xdg_config_home = xdg;
  if (const char* home = std::getenv("HOME")) p.home = home;
  return p;
}

Result<std::optional<std::string>> FindConfigFile(std::string_view explicit_path,
                                                  const ConfigSearchPaths& paths) {
  if (!explicit_path.empty()) {
    const std::string path(explicit_path);
    POOLFS_ASSIGN_OR_RETURN(bool exists, RegularFileExists(path));
    if (!exists) return Status::NotFound(path + ": no such file (given with --config)");
    return std::optional<std::string>(path);
  }
  std::vector<std::string> candidates;
  // The XDG base directory spec: a relative $XDG_CONFIG_HOME is ignored.
  if (!paths.xdg_config_home.empty() && paths.xdg_config_home.front() == '/') {
    candidates.push_back(paths.xdg_config_home + "/poolfs/poolfs.toml");
  } else if (!paths.home.empty()) {
    candidates.push_back(paths.home + "/.config/poolfs/poolfs.toml");
  }
  if (!paths.system_file.empty()) candidates.push_back(paths.system_file);
  for (const std::string& path : candidates) {
    POOLFS_ASSIGN_OR_RETURN(bool exists, RegularFileExists(path));
    if (exists) return std::optional<std::string>(path);
  }
  return std::optional<std::string>();
}

Result<std::optional<std::string>> FindConfigFile(std::string_view explicit_path) {
  return FindConfigFile(explicit_path, ConfigSearchPaths::FromEnvironment());
}

std::string TunableChange::ToString() const {
  return std::string(tunable->name) + ": " + tunable->Format(old_value) + " -> " +
         tunable->Format(new_value);
}

std::string ConfigDiff::ToString() const {
  std::string out;
  for (const TunableChange& c : live) out += c.ToString() + " (live)\n";
  for (const TunableChange& c : at_mount) out += c.ToString() + " (at the next mount)\n";
  return out;
}

ConfigDiff Diff(const Tunables& old_values, const Tunables& new_values) {
  ConfigDiff diff;
  for (const TunableInfo& t : AllTunables()) {
    const uint64_t a = t.get(old_values), b = t.get(new_values);
    if (a == b) continue;
    (t.applies == Applies::kLive ? diff.live : diff.at_mount).push_back({&t, a, b});
  }
  return diff;
}

Tunables ApplyLive(const Tunables& running, const Tunables& loaded) {
  Tunables out = running;
  for (const TunableInfo& t : AllTunables()) {
    if (t.applies == Applies::kLive) t.set(out, t.get(loaded));
  }
  return out;
}

}  // namespace poolfs::config
