// LiveConfig: see live_config.h.
#include "live_config.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <utility>

#include "config/render.h"
#include "dataset_request.h"
#include "logging.h"
#include "scrub_request.h"

namespace poolfs::daemon {

namespace {

std::string_view LogLevelName(const config::Config& c) {
  auto level = c.GetEnum("log.level");
  return level.ok() ? *level : std::string_view("info");
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

LiveConfig::LiveConfig(config::Config running, std::string config_path, poolfs::Filesystem* fs,
                       config::ConfigSearchPaths search)
    : running_(running),
      wanted_(std::move(running)),
      config_path_(std::move(config_path)),
      search_(std::move(search)),
      fs_(fs) {}

Status LiveConfig::Reload() {
  std::string path = config_path();
  if (path.empty()) {  // the mount found no file: look again
    auto found = config::FindConfigFile("", search_);
    if (!found.ok()) {
      spdlog::error("reload refused, the running values stay: {}", found.status().message());
      return found.status();
    }
    if (*found) path = **found;
  }
  config::Config loaded;  // no file: the defaults
  if (!path.empty()) {
    auto result = config::LoadConfigFile(path);
    if (!result.ok()) {
      spdlog::error("reload of {} refused, the running values stay: {}", path,
                    result.status().message());
      return result.status();
    }
    loaded = std::move(result).value();
  }
  util::MutexLock lock(&mu_);
  const std::string what =
      path.empty() ? std::string("reload (no config file: defaults)") : "reload of " + path;
  POOLFS_RETURN_IF_ERROR(ApplyLocked(loaded, what, nullptr));
  if (config_path_.empty()) config_path_ = path;
  return Status::Ok();
}

std::string LiveConfig::config_path() const {
  util::MutexLock lock(&mu_);
  return config_path_;
}

Status LiveConfig::Tune(std::string_view assignment, std::string* note) {
  util::MutexLock lock(&mu_);
  auto result = config::ApplyAssignment(wanted_, TrimSpace(assignment), "poolfs tune");
  if (!result.ok()) {
    spdlog::error("poolfs tune {} refused: {}", assignment, result.status().message());
    return result.status();
  }
  return ApplyLocked(*result, "poolfs tune " + std::string(TrimSpace(assignment)), note);
}

Status LiveConfig::ApplyLocked(const config::Config& loaded, std::string_view what,
                               std::string* note) {
  const config::ConfigDiff diff = config::Diff(running_.values(), loaded.values());
  // Live changes go into effect: into the running values, with the origin
  // they have in `loaded`; the Filesystem gets them first, and when it
  // refuses them nothing changes.
  config::Config next = running_;
  for (const config::TunableChange& c : diff.live) {
    const Status st = next.Set(*c.tunable, c.new_value, loaded.origin(*c.tunable));
    if (!st.ok()) {  // loaded is valid: not reached
      spdlog::error("{} refused, the running values stay: {}", what, st.message());
      return st;
    }
  }
  next.set_source(loaded.source());
  if (fs_ != nullptr && next.values().core != running_.values().core) {
    const Status st = fs_->SetLive(next.values().core);
    if (!st.ok()) {
      spdlog::error("{} refused by the mount, the running values stay: {}", what, st.message());
      return st;
    }
  }
  // What this request asked for: the changes from the last accepted values
  // (the running live ones plus the pending at-mount ones).
  const config::ConfigDiff asked = config::Diff(wanted_.values(), loaded.values());
  const bool level_changed = next.values().daemon.log_level != running_.values().daemon.log_level;
  const bool sync_threads_changed =
      next.values().daemon.sync_threads != running_.values().daemon.sync_threads;
  running_ = std::move(next);
  wanted_ = loaded;
  if (level_changed) SetLogLevel(LogLevelName(running_));
  if (sync_threads_changed && executor_ != nullptr)
    executor_->SetThreads(running_.values().daemon.sync_threads);
  // One log line per request; a note for the caller about at-mount changes.
  std::string changes;
  if (note != nullptr) note->clear();
  for (const config::TunableChange& c : asked.live)
    changes += (changes.empty() ? "" : "; ") + c.ToString() + " (live, in effect)";
  for (const config::TunableChange& c : asked.at_mount) {
    const uint64_t running_value = c.tunable->get(running_.values());
    if (c.new_value == running_value) {
      changes += (changes.empty() ? "" : "; ") + c.ToString() + " (no longer pending)";
      continue;
    }
    const config::TunableChange pending{c.tunable, running_value, c.new_value};
    changes += (changes.empty() ? "" : "; ") + pending.ToString() + " (at the next mount)";
    if (note != nullptr) {
      *note +=
          pending.ToString() + " (at the next mount; poolfs tune does not change the config file";
      *note += config_path_.empty() ? ")\n" : ": set it in " + config_path_ + " to keep it)\n";
    }
  }
  spdlog::info("{}: {}", what, changes.empty() ? std::string("nothing changed") : changes);
  return Status::Ok();
}

void LiveConfig::UseExecutor(poolfs::Executor* executor) {
  util::MutexLock lock(&mu_);
  executor_ = executor;
}

config::Config LiveConfig::Snapshot() const {
  util::MutexLock lock(&mu_);
  return running_;
}

std::string LiveConfig::Pending() const {
  util::MutexLock lock(&mu_);
  config::ConfigDiff diff = config::Diff(running_.values(), wanted_.values());
  diff.live.clear();  // none: live changes are applied at once
  return diff.ToString();
}

std::string FormatBytesHuman(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + "B";
  double v = double(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    unit++;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf,
                v < 10    ? "%.2f%s"
                : v < 100 ? "%.1f%s"
                          : "%.0f%s",
                v, kUnits[unit]);
  return buf;
}

namespace {

std::string Millis(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fms", double(ns) / 1e6);
  return buf;
}

// MiB/s of `bytes` in `ns` (0 for no time).
std::string Rate(uint64_t bytes, uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f",
                ns == 0 ? 0.0 : double(bytes) / double(1 << 20) / (double(ns) / 1e9));
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}

// The last `count` syncs, a line each: what a user tuning txg.sync_threads
// looks at.
std::string RenderRecentSyncs(const std::vector<poolfs::FsStatus::SyncInfo>& syncs, size_t count) {
  std::string out = "recent syncs (newest last):\n";
  out += "  " + Pad("txg", 8) + Pad("time", 10) + Pad("dirty", 10) + Pad("written", 10) +
         Pad("blocks", 8) + Pad("MiB/s", 7) + Pad("threads", 8) + "  busy per strand\n";
  const size_t first = syncs.size() > count ? syncs.size() - count : 0;
  for (size_t i = first; i < syncs.size(); i++) {
    const poolfs::FsStatus::SyncInfo& r = syncs[i];
    std::string busy;
    for (uint64_t b : r.strand_busy_ns) busy += (busy.empty() ? "" : " ") + Millis(b);
    out += "  " + Pad(std::to_string(r.txg), 8) + Pad(Millis(r.duration_ns), 10) +
           Pad(FormatBytesHuman(r.dirty_bytes), 10) + Pad(FormatBytesHuman(r.bytes_written), 10) +
           Pad(std::to_string(r.blocks_written), 8) + Pad(Rate(r.bytes_written, r.duration_ns), 7) +
           Pad(std::to_string(r.threads), 8) + "  " + (busy.empty() ? "-" : busy) + "\n";
  }
  return out;
}

}  // namespace

std::string RenderIostatCounters(const poolfs::FsStatus& s) {
  std::string out = "poolfs-iostat 1\n";
  auto kv = [&out](std::string_view k, uint64_t v) {
    out += std::string(k) + " " + std::to_string(v) + "\n";
  };
  kv("syncs", s.syncs);
  kv("sync_ns", s.sync_ns_total);
  kv("bytes_written", s.bytes_written);
  kv("blocks_written", s.blocks_written);
  kv("bytes_read", s.bytes_read);
  kv("blocks_read", s.blocks_read);
  kv("creates", s.objects_allocated);
  kv("removes", s.objects_freed);
  kv("last_synced_txg", s.last_synced_txg);
  for (const poolfs::FsStatus::SyncInfo& r : s.recent_syncs)
    out += "sync " + std::to_string(r.txg) + " " + std::to_string(r.duration_ns) + "\n";
  return out;
}

poolfs::Result<IostatSample> ParseIostatCounters(std::string_view text) {
  IostatSample s;
  std::istringstream in{std::string(text)};
  std::string first;
  if (!std::getline(in, first) || first != "poolfs-iostat 1")
    return Status::InvalidArgument("not an iostat reply: " + first);
  std::string key;
  while (in >> key) {
    uint64_t v = 0;
    if (!(in >> v)) return Status::InvalidArgument("iostat reply: no value for " + key);
    if (key == "sync") {
      uint64_t ns = 0;
      if (!(in >> ns)) return Status::InvalidArgument("iostat reply: a sync without its time");
      s.recent.emplace_back(v, ns);
    } else if (key == "syncs") {
      s.syncs = v;
    } else if (key == "sync_ns") {
      s.sync_ns = v;
    } else if (key == "bytes_written") {
      s.bytes_written = v;
    } else if (key == "blocks_written") {
      s.blocks_written = v;
    } else if (key == "bytes_read") {
      s.bytes_read = v;
    } else if (key == "blocks_read") {
      s.blocks_read = v;
    } else if (key == "creates") {
      s.creates = v;
    } else if (key == "removes") {
      s.removes = v;
    } else if (key == "last_synced_txg") {
      s.last_synced_txg = v;
    }  // a key a newer daemon added: skipped
  }
  return s;
}

std::string IostatHeader() {
  return Pad("txgs", 6) + Pad("written", 10) + Pad("wblocks", 9) + Pad("read", 10) +
         Pad("rblocks", 9) + Pad("creates", 9) + Pad("removes", 9) + Pad("sync-mean", 11) +
         Pad("sync-max", 10) + "\n";
}

std::string IostatLine(const IostatSample& prev, const IostatSample& cur) {
  auto diff = [](uint64_t a, uint64_t b) { return b >= a ? b - a : 0; };
  const uint64_t syncs = diff(prev.syncs, cur.syncs);
  const uint64_t sync_ns = diff(prev.sync_ns, cur.sync_ns);
  uint64_t max_ns = 0;
  for (const auto& [txg, ns] : cur.recent)
    if (txg > prev.last_synced_txg) max_ns = std::max(max_ns, ns);
  return Pad(std::to_string(syncs), 6) +
         Pad(FormatBytesHuman(diff(prev.bytes_written, cur.bytes_written)), 10) +
         Pad(std::to_string(diff(prev.blocks_written, cur.blocks_written)), 9) +
         Pad(FormatBytesHuman(diff(prev.bytes_read, cur.bytes_read)), 10) +
         Pad(std::to_string(diff(prev.blocks_read, cur.blocks_read)), 9) +
         Pad(std::to_string(diff(prev.creates, cur.creates)), 9) +
         Pad(std::to_string(diff(prev.removes, cur.removes)), 9) +
         Pad(syncs == 0 ? std::string("-") : Millis(sync_ns / syncs), 11) +
         Pad(syncs == 0 ? std::string("-") : Millis(max_ns), 10) + "\n";
}

std::string RenderStatus(const poolfs::FsStatus& s, const config::Config& running,
                         std::string_view pending, std::string_view log,
                         const std::vector<std::string>& dataset_mounts) {
  std::string out;
  auto line = [&out](std::string_view key, const std::string& value) {
    out += std::string(key);
    out.append(key.size() < 18 ? 18 - key.size() : 1, ' ');
    out += value + "\n";
  };
  line("pool:", s.pool);
  line("state:", s.state + " (mounted)");
  if (!log.empty()) line("log:", std::string(log));
  for (size_t i = 0; i < dataset_mounts.size(); i++)
    line(i == 0 ? "dataset mounts:" : "", dataset_mounts[i]);
  out += RenderScrubStatus(s.scrub);
  for (size_t i = 0; i < s.import_notes.size(); i++)
    line(i == 0 ? "import:" : "", s.import_notes[i]);
  line("last synced txg:", std::to_string(s.last_synced_txg) + " (open txg " +
                               std::to_string(s.open_txg) + ", imported at txg " +
                               std::to_string(s.imported_txg) + ", " + std::to_string(s.syncs) +
                               " syncs since)");
  if (s.syncs > 0)
    line("MOS passes:", std::to_string(s.mos_passes_last) + " in the last sync, at most " +
                            std::to_string(s.mos_passes_max) + " since the mount");
  if (!s.recent_syncs.empty()) out += RenderRecentSyncs(s.recent_syncs, 5);
  line("space:", FormatBytesHuman(s.space_allocated) + " used, " + FormatBytesHuman(s.space_free) +
                     " free, " + FormatBytesHuman(s.space_deferred) +
                     " freed (free once the last txgs sync), " + FormatBytesHuman(s.space_total) +
                     " total");
  if (s.cloned_blocks > 0)
    line("block clones:", std::to_string(s.cloned_blocks) + " blocks shared by copies, " +
                              FormatBytesHuman(s.clone_saved_bytes) + " saved");
  if (s.log.enabled) {
    const uint64_t n = s.log.commits;
    line("intent log:", std::to_string(n) + " commits wrote " + std::to_string(s.log.records) +
                            " records in " + std::to_string(s.log.blocks) + " blocks (" +
                            FormatBytesHuman(s.log.bytes) + ", and " +
                            std::to_string(s.log.indirect) + " writes of " +
                            FormatBytesHuman(s.log.indirect_bytes) +
                            " to their place), " + std::to_string(s.log.commits_synced) +
                            " waited for a txg instead; commit " +
                            (n == 0 ? std::string("-") : Millis(s.log.commit_ns_total / n)) +
                            " mean, " + Millis(s.log.commit_ns_max) + " max; " +
                            std::to_string(s.log.replayed) + " records replayed at import");
  }
  line("checksum errors:", std::to_string(s.checksum_errors) + " (" +
                               std::to_string(s.repaired_copies) +
                               " bad copies rewritten from good ones)");
  if (s.copy_shortfalls > 0)
    line("copies left out:", std::to_string(s.copy_shortfalls) +
                                 " (blocks written with fewer copies than asked: the pool is "
                                 "nearly full)");
  if (s.format_version > 0) line("on-disk format:", std::to_string(s.format_version));
  if (s.dataset_space.empty()) {
    std::string datasets;
    for (const std::string& d : s.datasets) datasets += (datasets.empty() ? "" : ", ") + d;
    line("datasets:",
         std::to_string(s.datasets.size()) + (datasets.empty() ? "" : ": " + datasets));
  } else {
    // One line each, as `poolfs dataset list` shows them.
    line("datasets:", std::to_string(s.dataset_space.size()) + " (used, available, referenced)");
    size_t width = 0;
    for (const DatasetInfo& d : s.dataset_space) width = std::max(width, d.name.size());
    for (const DatasetInfo& d : s.dataset_space)
      out += "  " + d.name + std::string(width - d.name.size() + 2, ' ') +
             FormatBytesHuman(d.used) + " used, " + FormatBytesHuman(d.available) + " available, " +
             FormatBytesHuman(d.referenced) + " referenced, at " + d.mountpoint + "\n";
  }
  line("objects:", std::to_string(s.objects) + " (" + std::to_string(s.unlinked_pending) +
                       " unlinked, still open)");
  char density[32];
  std::snprintf(density, sizeof density, "%.3f", s.density);
  line("object allocation:", "backfill " + s.backfill + "; " + std::to_string(s.objects_allocated) +
                                 " allocated, " + std::to_string(s.objects_freed) + " freed, " +
                                 std::to_string(s.objects_reused) + " reused, " +
                                 std::to_string(s.failed_holds) + " failed holds since mount");
  line("object ids:", "high-water " + std::to_string(s.object_high_water) + ", density " + density +
                          ", " + std::to_string(s.dnode_blocks_in_use) + " dnode blocks in use");
  line("block cache:", FormatBytesHuman(s.arc_bytes) + " of " + FormatBytesHuman(s.arc_max_bytes) +
                           " (mru " + FormatBytesHuman(s.arc_mru_bytes) + ", mfu " +
                           FormatBytesHuman(s.arc_mfu_bytes) + "; ghosts " +
                           FormatBytesHuman(s.arc_mru_ghost_bytes) + " and " +
                           FormatBytesHuman(s.arc_mfu_ghost_bytes) + ")");
  line("cache activity:", std::to_string(s.arc_hits) + " hits, " + std::to_string(s.arc_misses) +
                              " misses, " + std::to_string(s.arc_evictions) + " evictions, " +
                              std::to_string(s.arc_sublist_lock_misses) + " sublist lock misses, " +
                              std::to_string(s.arc_sublists) + " sublists; " +
                              std::to_string(s.arc_read_once) +
                              " blocks read whole for the kernel, not cached");
  line("read ahead:", std::to_string(s.prefetch_requested) + " blocks asked for, " +
                          std::to_string(s.prefetch_hits) + " ready when read, " +
                          std::to_string(s.prefetch_waits) + " waited for, " +
                          std::to_string(s.prefetch_dropped) + " never read, " +
                          std::to_string(s.prefetch_failed) + " failed");
  line("objects in memory:",
       std::to_string(s.cached_dnodes) + " dnodes, " + std::to_string(s.cached_inodes) +
           " inodes (" + std::to_string(s.object_cache_limit) + " kept when idle; " +
           std::to_string(s.dnode_evictions) + " and " + std::to_string(s.inode_evictions) +
           " dropped); the kernel holds " + std::to_string(s.kernel_inodes) + " inodes");
  line("directory leaves:", std::to_string(s.cached_leaves) + " decoded (about " +
                                std::to_string(s.leaf_cache_limit) + " kept); " +
                                std::to_string(s.leaf_hits) + " hits, " +
                                std::to_string(s.leaf_misses) + " misses");
  out += "tunables in effect (" +
         (running.source().empty() ? std::string("defaults, no config file")
                                   : "from " + running.source()) +
         "):\n";
  const std::string table = config::RenderEffectiveTunables(running);
  size_t start = 0;
  while (start < table.size()) {
    const size_t end = table.find('\n', start);
    out += "  " + table.substr(start, end == std::string::npos ? end : end - start) + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!pending.empty()) {
    out += "pending, at the next mount:\n";
    start = 0;
    while (start < pending.size()) {
      const size_t end = pending.find('\n', start);
      out += "  " +
             std::string(pending.substr(start, end == std::string::npos ? end : end - start)) +
             "\n";
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return out;
}

std::string HandleControlRequest(LiveConfig& live, poolfs::Filesystem& fs,
                                 std::string_view request) {
  request = TrimSpace(request);
  if (request == "ping") return "pong\n";  // `poolfs unmount` waits for this to stop
  if (request == "status") return RenderStatus(fs.GetStatus(), live.Snapshot(), live.Pending());
  if (request == "iostat") return RenderIostatCounters(fs.GetStatus());
  if (request == "reload") {
    const Status st = live.Reload();
    return st.ok() ? "ok\n" : "error: " + st.message() + "\n";
  }
  if (request.starts_with("dataset "))
    return HandleDatasetRequest(fs.datasets(), request.substr(8));
  if (request.starts_with("scrub ")) return HandleScrubRequest(fs, request.substr(6));
  if (request.starts_with("tune ")) {
    std::string note;
    const Status st = live.Tune(request.substr(5), &note);
    return st.ok() ? "ok\n" + note : "error: " + st.message() + "\n";
  }
  spdlog::warn("control: unknown request '{}'", request);
  return "error: unknown request '" + std::string(request) +
         "' (expected status, reload, tune KEY=VALUE, dataset REQUEST, scrub start|stop or "
         "ping)\n";
}

}  // namespace poolfs::daemon
