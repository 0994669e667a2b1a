#include "scrub_request.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "dataset_request.h"
#include "live_config.h"

namespace poolfs::daemon {

namespace {

// "1 error", "2 errors".
std::string ScrubCount(uint64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// "35% done" of a running scrub (examined over the pool's stored bytes
// when it started; at most 99% until it ends).
std::string ScrubPercent(const poolfs::ScrubStatus& s) {
  const uint64_t pct = s.total == 0 ? 0 : std::min<uint64_t>(99, s.examined * 100 / s.total);
  return std::to_string(pct) + "% done";
}

}  // namespace

std::string EncodeScrubRequest(ScrubAction a) {
  return a == ScrubAction::kStart ? "scrub start" : "scrub stop";
}

Result<ScrubAction> DecodeScrubRequest(std::string_view args) {
  if (args == "start") return ScrubAction::kStart;
  if (args == "stop") return ScrubAction::kStop;
  return Status::InvalidArgument("scrub request: expected start or stop, got '" +
                                 std::string(args) + "'");
}

std::string HandleScrubRequest(poolfs::Filesystem& fs, std::string_view args) {
  Result<ScrubAction> a = DecodeScrubRequest(args);
  if (!a.ok()) return EncodeStatus(a.status());
  return EncodeStatus(*a == ScrubAction::kStart ? fs.StartScrub() : fs.StopScrub());
}

std::string FormatElapsed(int64_t seconds) {
  if (seconds < 0) seconds = 0;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(seconds / 3600),
                static_cast<long long>(seconds / 60 % 60), static_cast<long long>(seconds % 60));
  return buf;
}

std::string FormatLocalTime(int64_t t) {
  const std::time_t tt = std::time_t(t);
  std::tm tm{};
  if (localtime_r(&tt, &tm) == nullptr) return std::to_string(t);
  char buf[64];
  if (std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tm) == 0) return std::to_string(t);
  return buf;
}

std::string RenderScrubStatus(const poolfs::ScrubStatus& s) {
  using State = poolfs::ScrubStatus::State;
  std::string out;
  auto line = [&out](std::string_view key, const std::string& value) {
    out += std::string(key);
    out.append(key.size() < 18 ? 18 - key.size() : 1, ' ');
    out += value + "\n";
  };
  const std::string found = ScrubCount(s.repaired, "repaired", "repaired") + ", " +
                            ScrubCount(s.errors, "error", "errors");
  const std::string examined =
      FormatBytesHuman(s.examined) + " of " + FormatBytesHuman(s.total) + " examined";
  switch (s.state) {
    case State::kNone: line("scan:", "no scrub has run"); break;
    case State::kRunning:
      line("scan:", "scrub in progress since " + FormatLocalTime(s.start_time) + ": " + examined +
                        " at " + FormatBytesHuman(s.rate) + "/s, " + ScrubPercent(s) + ", " +
                        found);
      break;
    case State::kFinished:
      line("scan:", "scrub repaired " + ScrubCount(s.repaired, "copy", "copies") + " in " +
                        FormatElapsed(s.end_time - s.start_time) + " with " +
                        ScrubCount(s.errors, "error", "errors") + " on " +
                        FormatLocalTime(s.end_time) + " (" + FormatBytesHuman(s.examined) + " in " +
                        ScrubCount(s.blocks, "block", "blocks") + " examined)");
      break;
    case State::kStopped:
      line("scan:", "scrub stopped on " + FormatLocalTime(s.end_time) + " after " +
                        FormatElapsed(s.end_time - s.start_time) + ": " + examined + ", " + found);
      break;
  }
  if (s.errors > 0) {
    line("errors:", "Permanent errors have been detected in the following files:");
    for (const poolfs::ScrubStatus::Error& e : s.error_list) out += "  " + e.where + "\n";
    if (s.errors > s.error_list.size())
      out += "  ... and " + std::to_string(s.errors - s.error_list.size()) +
             " more blocks, not listed\n";
  }
  return out;
}

}  // namespace poolfs::daemon
