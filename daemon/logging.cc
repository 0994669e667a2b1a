// Logging: see logging.h.
#include "logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>

#include "control.h"

namespace poolfs::daemon {

namespace {

// Parses a level name as config/ spells log.level; nullopt when unknown.
std::optional<spdlog::level::level_enum> ParseLevel(std::string_view level) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
      {"off", spdlog::level::off},
  };
  for (const auto& [name, value] : kLevels)
    if (name == level) return value;
  return std::nullopt;
}

// Creates `dir` and its missing parents; the folders created get mode 0700.
Status MakeDirs(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return Status::Ok();
  if (dir.has_parent_path() && dir.parent_path() != dir)
    POOLFS_RETURN_IF_ERROR(MakeDirs(dir.parent_path()));
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::IOError("cannot create log folder " + dir.string() + ": " +
                           std::strerror(errno));
  return Status::Ok();
}

}  // namespace

std::string LogName(const std::string& pool_file) {
  const std::string stem = std::filesystem::path(pool_file).stem().string();
  return stem.empty() ? "pool" : stem;
}

std::string LogFilePath(const std::string& pool_file) {
  std::filesystem::path dir;
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state != nullptr && state[0] == '/') {
    dir = state;
  } else {
    const char* home = std::getenv("HOME");
    dir = std::filesystem::path(home != nullptr && home[0] != '\0' ? home : "/tmp") / ".local" /
          "state";
  }
  char hash[16];
  std::snprintf(hash, sizeof hash, "-%08llx",
                static_cast<unsigned long long>(StableHash(pool_file) & 0xffffffffull));
  return (dir / "poolfs" / (LogName(pool_file) + hash + ".log")).string();
}

Status SetupLogging(bool foreground, const std::string& pool_file, std::string_view level) {
  const auto parsed = ParseLevel(level);
  if (!parsed)
    return Status::InvalidArgument("unknown log level '" + std::string(level) +
                                   "': expected trace, debug, info, warn, error, critical or off");
  std::shared_ptr<spdlog::logger> logger;
  if (foreground) {
    logger = std::make_shared<spdlog::logger>(
        "poolfs", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  } else {
    const std::filesystem::path path = LogFilePath(pool_file);
    POOLFS_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
    try {
      logger = std::make_shared<spdlog::logger>(
          "poolfs", std::make_shared<spdlog::sinks::basic_file_sink_mt>(path.string()));
    } catch (const spdlog::spdlog_ex& e) {
      return Status::IOError("cannot open log file " + path.string() + ": " + e.what());
    }
  }
  // "2026-11-30 10:15:02.123 [info] tank: mounted on /home/u/tank"
  std::string escaped;  // '%' starts a pattern flag
  for (char c : LogName(pool_file)) escaped += c == '%' ? std::string("%%") : std::string(1, c);
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e [%l] " + escaped + ": %v");
  logger->set_level(*parsed);
  // Every line reaches the file at once (there are few: no line per file
  // operation), so a crash or a kill loses nothing of what led to it.
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

void SetLogLevel(std::string_view level) {
  if (const auto parsed = ParseLevel(level)) spdlog::set_level(*parsed);
}

}  // namespace poolfs::daemon
