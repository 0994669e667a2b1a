#include "config/tunables.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <type_traits>
#include <vector>

#include "config/units.h"

namespace poolfs::config {
namespace {

// A row's getter and setter reach its field through a path of member
// pointers (&Tunables::core, &CoreTunables::txg, &TxgOptions::timeout_ms):
// the field's own initializer is the default, and `maps_to` is spelled from
// the same names, so neither can drift from the struct.
// Not formatted: clang-format 14 glues the fold expressions into
// "t.*....*Path", and packs the macros' lines unevenly.
// clang-format off
template <auto... Path>
uint64_t GetField(const Tunables& t) {
  return static_cast<uint64_t>((t .* ... .* Path));
}

template <auto... Path>
void SetField(Tunables& t, uint64_t v) {
  auto& field = (t .* ... .* Path);
  field = static_cast<std::remove_reference_t<decltype(field)>>(v);
}

// A field of one of the core's option structs (poolfs/options.h).
#define POOLFS_CORE_FIELD(group, type, field)                            \
  .maps_to = "core: " #type "::" #field,                                 \
  .get = &GetField<&Tunables::core, &CoreTunables::group, &type::field>, \
  .set = &SetField<&Tunables::core, &CoreTunables::group, &type::field>
// A field of CoreTunables itself.
#define POOLFS_CORE_TOP_FIELD(field)                       \
  .maps_to = "core: CoreTunables::" #field,                \
  .get = &GetField<&Tunables::core, &CoreTunables::field>, \
  .set = &SetField<&Tunables::core, &CoreTunables::field>
// A field of DaemonTunables, and what the daemon does with it.
#define POOLFS_DAEMON_FIELD(field, what)                       \
  .maps_to = "daemon: " what,                                  \
  .get = &GetField<&Tunables::daemon, &DaemonTunables::field>, \
  .set = &SetField<&Tunables::daemon, &DaemonTunables::field>
// clang-format on

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kTiB = uint64_t{1} << 40;
constexpr uint64_t kPiB = uint64_t{1} << 50;

constexpr std::string_view kBackfillChoices[] = {"auto", "on", "off", "legacy"};
constexpr std::string_view kLogLevelChoices[] = {"trace", "debug", "info",    "warn",
                                                 "error", "critical", "off"};

// The table. Keep the rows of one TOML table together; the order here is the
// order of `poolfs tunables` and of packaging/poolfs.toml.
// One tunable per entry, its fields packed by hand (the formatter would
// give every field its own line).
// clang-format off
constexpr TunableInfo kTable[] = {
    // ---- txg ----
    {.name = "txg.timeout_ms", .type = TunableType::kDuration, .applies = Applies::kLive,
     .min = 1, .max = 600000,
     .doc = "A transaction group that holds changes syncs at the latest this long after it "
            "opened. Shorter loses less unsynced work in a crash; longer makes fewer, larger "
            "syncs.",
     POOLFS_CORE_FIELD(txg, TxgOptions, timeout_ms)},
    {.name = "txg.sync_threads", .type = TunableType::kInteger, .applies = Applies::kLive,
     .min = 1, .max = 256, .zero_means = "one per allocator",
     .doc = "Threads of the daemon's Asio pool that runs txg sync, with one strand per "
            "allocator. A change takes effect at the next txg boundary, never in the middle "
            "of a sync. Programs that open a pool without the daemon sync on the pool's own "
            "threads, one per allocator.",
     POOLFS_DAEMON_FIELD(sync_threads,
                         "threads of the Asio sync executor (Executor::SetThreads)")},
    {.name = "txg.dirty_max_bytes", .type = TunableType::kSize, .applies = Applies::kLive,
     .min = kMiB, .max = kTiB,
     .doc = "Dirty data, summed over every txg not yet synced, at which writers block until a "
            "sync completes. The write throttle delays them well before that. More absorbs "
            "longer bursts of writes, but costs memory the daemon must touch afresh.",
     POOLFS_CORE_FIELD(txg, TxgOptions, dirty_max_bytes)},
    {.name = "txg.dirty_sync_percent", .type = TunableType::kInteger, .applies = Applies::kLive,
     .min = 1, .max = 100,
     .doc = "A sync starts before txg.timeout_ms when the open txg alone holds this percentage "
            "of txg.dirty_max_bytes.",
     POOLFS_CORE_FIELD(txg, TxgOptions, dirty_sync_percent)},
    {.name = "txg.delay_min_dirty_percent", .type = TunableType::kInteger,
     .applies = Applies::kLive, .min = 0, .max = 100,
     .doc = "The write throttle starts delaying writers when dirty data passes this percentage "
            "of txg.dirty_max_bytes.",
     POOLFS_CORE_FIELD(txg, TxgOptions, delay_min_dirty_percent)},
    {.name = "txg.delay_scale_ns", .type = TunableType::kInteger, .applies = Applies::kLive,
     .min = 1, .max = 1000000000,
     .doc = "Shape of the throttle's curve, in nanoseconds: a writer waits delay_scale_ns * "
            "(dirty - start) / (max - dirty), so this long halfway between the start of "
            "delays and txg.dirty_max_bytes.",
     POOLFS_CORE_FIELD(txg, TxgOptions, delay_scale_ns)},
    {.name = "txg.delay_max_ns", .type = TunableType::kInteger, .applies = Applies::kLive,
     .min = 0, .max = 10000000000,
     .doc = "No single writer is delayed longer than this many nanoseconds by the throttle. "
            "0 disables the delays (writers then only block at txg.dirty_max_bytes).",
     POOLFS_CORE_FIELD(txg, TxgOptions, delay_max_ns)},
    // ---- alloc ----
    {.name = "alloc.allocators", .type = TunableType::kInteger, .applies = Applies::kMount,
     .min = 1, .max = 64, .zero_means = "from the core count, at most 8",
     .doc = "Allocators, each with its own lock, its own active metaslab per vdev and its own "
            "sync strand: more of them let more threads allocate at once. At mount only: the "
            "sync pool's strands, and the dnode lists each dataset syncs at once, follow the "
            "imported pool's allocator count.",
     POOLFS_CORE_FIELD(space, SpaceOptions, allocators)},
    {.name = "alloc.size_tree_floor", .type = TunableType::kSize, .applies = Applies::kMount,
     .min = 0, .max = 16 * kMiB,
     .doc = "Free segments smaller than this stay out of a metaslab's size-sorted tree (they "
            "remain in the offset-sorted one), which keeps that tree small on fragmented "
            "space. 0 puts every segment in it.",
     POOLFS_CORE_FIELD(space, SpaceOptions, size_tree_floor)},
    {.name = "alloc.df_max_search", .type = TunableType::kSize, .applies = Applies::kMount,
     .min = 0, .max = 16 * kGiB,
     .doc = "How far the first-fit cursor walks past its first candidate (and at least 100 "
            "segments) before allocation falls back to the size-sorted tree.",
     POOLFS_CORE_FIELD(space, SpaceOptions, df_max_search)},
    {.name = "alloc.aliquot", .type = TunableType::kSize, .applies = Applies::kMount,
     .min = 4 * kKiB, .max = kGiB,
     .doc = "Bytes an allocator places on one vdev before it moves to the next, striping "
            "large writes across vdevs.",
     POOLFS_CORE_FIELD(space, SpaceOptions, aliquot)},
    // ---- vdev ----
    {.name = "vdev.writeback_bytes", .type = TunableType::kSize, .applies = Applies::kMount,
     .min = 0, .max = kGiB,
     .doc = "A txg sync starts the kernel's writeback of a vdev file each time it has written "
            "this much to it, so the disk works while the sync goes on and the flush at its "
            "end finds little left. 0: the flush does all the writeback. Only buffered writes "
            "count (see vdev.direct_writes).",
     POOLFS_CORE_FIELD(vdev, VdevOptions, writeback_bytes)},
    {.name = "vdev.direct_reads", .type = TunableType::kBool, .applies = Applies::kMount,
     .doc = "Read blocks from a vdev file with O_DIRECT, straight into the block cache's "
            "buffers: no copy through the kernel's page cache and no second cache of the same "
            "blocks there, but no kernel readahead either: sequential reads rely on poolfs's "
            "own (dmu.prefetch_distance_bytes). Where the file system refuses O_DIRECT, reads "
            "stay buffered.",
     POOLFS_CORE_FIELD(vdev, VdevOptions, direct_reads)},
    {.name = "vdev.direct_writes", .type = TunableType::kBool, .applies = Applies::kMount,
     .doc = "Write blocks to a vdev file with O_DIRECT: no copy into the kernel's page cache "
            "and no second cache of the same blocks there; each block write waits for the "
            "disk. Blocks not aligned to 4 KiB, and all blocks where the file system refuses "
            "O_DIRECT, are written buffered.",
     POOLFS_CORE_FIELD(vdev, VdevOptions, direct_writes)},
    {.name = "vdev.direct_write_min_bytes", .type = TunableType::kSize,
     .applies = Applies::kMount, .min = 0, .max = kGiB,
     .doc = "With vdev.direct_writes, writes shorter than this go buffered all the same: the "
            "many small blocks of a txg (metadata, small files) then cost a copy each instead "
            "of a wait for the disk each, and the flush at the end of the sync writes them "
            "together, so an fsync that waits for a small txg returns sooner. 0: every "
            "aligned write goes direct.",
     POOLFS_CORE_FIELD(vdev, VdevOptions, direct_write_min_bytes)},
    // ---- dmu ----
    {.name = "dmu.metadnode_backfill", .type = TunableType::kEnum, .applies = Applies::kLive,
     .choices = kBackfillChoices,
     .doc = "How the object allocator reuses freed object ids. auto: never while the workload "
            "only creates, lowest free ids first once enough objects were freed; on: always "
            "the lowest free id; off: ids only grow (fast, but the metadnode stays sparse "
            "after deletes); legacy: the old probe-the-holes search, kept to reproduce and "
            "measure its pathology.",
     POOLFS_CORE_FIELD(objects, ObjectAllocOptions, backfill)},
    {.name = "dmu.alloc_chunk", .type = TunableType::kInteger, .applies = Applies::kLive,
     .min = 1, .max = 65536,
     .doc = "Object ids handed to a thread at a time, so that creating threads do not share a "
            "lock per create.",
     POOLFS_CORE_FIELD(objects, ObjectAllocOptions, chunk)},
    {.name = "dmu.prefetch_distance_bytes", .type = TunableType::kSize,
     .applies = Applies::kMount, .min = 128 * kKiB, .max = kGiB, .zero_means = "no read ahead",
     .doc = "How far poolfs reads a file ahead of a sequential reader (ZFS's prefetch): from "
            "2 MiB, doubling with each read that follows the last, up to this. Blocks read "
            "ahead wait outside the block cache until a read takes them; at most 4 times this "
            "waits in all. With vdev.direct_reads the disk then works while the daemon "
            "replies, instead of once per request.",
     POOLFS_CORE_FIELD(read_ahead, ReadAheadOptions, distance_bytes)},
    {.name = "dmu.prefetch_threads", .type = TunableType::kInteger, .applies = Applies::kMount,
     .min = 1, .max = 64,
     .doc = "Threads that read ahead: at most this many disk reads of up to 1 MiB in flight "
            "for it.",
     POOLFS_CORE_FIELD(read_ahead, ReadAheadOptions, threads)},
    // ---- arc ----
    {.name = "arc.max_bytes", .type = TunableType::kSize, .applies = Applies::kLive,
     .min = kMiB, .max = kPiB, .zero_means = "a share of RAM",
     .doc = "Hard bound on the decoded blocks the cache of synced data, directory and dnode "
            "blocks holds (1/8 of RAM, at least 64 MiB, by default).",
     POOLFS_CORE_FIELD(arc, ArcOptions, max_bytes)},
    {.name = "arc.sublists", .type = TunableType::kInteger, .applies = Applies::kMount,
     .min = 1, .max = 1024, .zero_means = "one per core, at least 4",
     .doc = "Sublists each cache list is split into, picked by hash, each with its own lock.",
     POOLFS_CORE_FIELD(arc, ArcOptions, sublists)},
    {.name = "arc.evict_batch", .type = TunableType::kInteger, .applies = Applies::kMount,
     .min = 1, .max = 100000,
     .doc = "Buffers the evictor takes from one sublist before it moves to the next, and frees "
            "together outside any list lock.",
     POOLFS_CORE_FIELD(arc, ArcOptions, evict_batch)},
    {.name = "arc.cache_whole_reads", .type = TunableType::kBool, .applies = Applies::kLive,
     .doc = "Keep in the cache the file blocks a read through the mount returns whole. Off: "
            "such a block is read from disk straight into the reply (one copy less), because "
            "the kernel's page cache keeps the file's pages (across opens too), so streaming a "
            "file neither stores it twice nor pushes other blocks out. Blocks read in part, and "
            "reads with O_DIRECT, are always cached.",
     POOLFS_CORE_TOP_FIELD(cache_whole_reads)},
    // ---- fuse ----
    {.name = "fuse.threads", .type = TunableType::kInteger, .applies = Applies::kMount,
     .min = 1, .max = 1024, .zero_means = "chosen by the FUSE adapter",
     .doc = "Threads answering FUSE requests.",
     POOLFS_DAEMON_FIELD(fuse_threads,
                         "worker threads of the FUSE request loop (fuse::FuseOptions::threads)")},
    {.name = "fuse.writeback_cache", .type = TunableType::kBool, .applies = Applies::kMount,
     .doc = "Let the kernel cache writes and send them in larger requests (FUSE's writeback "
            "cache); the kernel then keeps file sizes and mtimes itself between requests. Reads "
            "served from the kernel's cache then do not move atime: only reads that reach the "
            "daemon do.",
     POOLFS_DAEMON_FIELD(fuse_writeback_cache,
                         "FUSE_CAP_WRITEBACK_CACHE (fuse::FuseOptions::writeback_cache)")},
    {.name = "fuse.handle_killpriv", .type = TunableType::kBool, .applies = Applies::kMount,
     .doc = "Clear setuid, setgid and file capabilities on write, truncate and chown in the "
            "daemon, and tell the kernel so (FUSE_HANDLE_KILLPRIV_V2). The kernel then no longer "
            "asks for a file's security.capability before each write, nor for its attributes "
            "before each chown: one request less per write. false: the kernel clears them itself, "
            "with those requests.",
     POOLFS_DAEMON_FIELD(fuse_handle_killpriv,
                         "FUSE_HANDLE_KILLPRIV_V2 (fuse::FuseOptions::handle_killpriv)")},
    {.name = "fuse.read_ahead_bytes", .type = TunableType::kSize, .applies = Applies::kMount,
     .min = 4 * kKiB, .max = 256 * kMiB, .zero_means = "the kernel's (128 KiB for a FUSE mount)",
     .doc = "How far the kernel reads ahead of a sequential reader of a file on the mount. The "
            "kernel asks for at most 128 KiB ahead of a FUSE mount, one READ request each; 1 "
            "MiB makes it one request per MiB, the largest a request can be. Only root may set "
            "it: for other users the mount keeps the kernel's, and says so in its log.",
     POOLFS_DAEMON_FIELD(fuse_read_ahead_bytes,
                         "/sys/class/bdi/MAJ:MIN/read_ahead_kb of the mount")},
    // ---- zil ----
    {.name = "zil.indirect_write_bytes", .type = TunableType::kSize, .applies = Applies::kMount,
     .min = 4 * kKiB, .max = 16 * kMiB,
     .zero_means = "never: fsync copies every byte it makes durable into the log",
     .doc = "A write that fsync must make durable, of at least this many bytes within one "
            "record of its file, is written to its place in the pool at the commit and the "
            "intent log names it, instead of being copied into the log and written again by "
            "the txg sync: its bytes are written once. Smaller writes are copied, which costs "
            "one write to the log where the other way costs two (the block, then the log).",
     POOLFS_CORE_FIELD(zil, IntentLogOptions, indirect_write_bytes)},
    // ---- log ----
    {.name = "log.level", .type = TunableType::kEnum, .applies = Applies::kLive,
     .choices = kLogLevelChoices,
     .doc = "Lowest level of the lines logged: mounts, unmounts and reloads are info, each txg "
            "sync is debug, errors are error.",
     POOLFS_DAEMON_FIELD(log_level, "the spdlog level")},
};
// clang-format on

#undef POOLFS_CORE_FIELD
#undef POOLFS_CORE_TOP_FIELD
#undef POOLFS_DAEMON_FIELD

constexpr std::string_view kTables[] = {"txg", "alloc", "vdev", "dmu",
                                        "arc", "fuse", "zil", "log"};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance (Levenshtein plus adjacent
// transpositions), or limit + 1 once it must exceed `limit`.
size_t EditDistance(std::string_view a, std::string_view b, size_t limit) {
  const size_t n = a.size(), m = b.size();
  if ((n > m ? n - m : m - n) > limit) return limit + 1;
  std::vector<size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; j++) prev[j] = j;
  for (size_t i = 1; i <= n; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= m; j++) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return std::min(prev[m], limit + 1);
}

std::string DecimalRange(uint64_t min, uint64_t max) {
  return "from " + std::to_string(min) + " to " + std::to_string(max);
}

}  // namespace

std::span<const TunableInfo> AllTunables() { return kTable; }

std::span<const std::string_view> TunableTables() { return kTables; }

const TunableInfo* FindTunable(std::string_view name) {
  for (const TunableInfo& t : kTable) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

size_t TunableIndex(const TunableInfo& t) { return static_cast<size_t>(&t - kTable); }

std::string_view TypeName(TunableType type) {
  switch (type) {
    case TunableType::kBool: return "bool";
    case TunableType::kInteger: return "integer";
    case TunableType::kSize: return "size";
    case TunableType::kEnum: return "enum";
    case TunableType::kDuration: return "duration";
  }
  return "?";
}

bool TunableInfo::Accepts(uint64_t v) const {
  switch (type) {
    case TunableType::kBool: return v <= 1;
    case TunableType::kEnum: return v < choices.size();
    case TunableType::kInteger:
    case TunableType::kSize:
    case TunableType::kDuration:
      return (v >= min && v <= max) || (v == 0 && !zero_means.empty());
  }
  return false;
}

std::string TunableInfo::Expected() const {
  std::string zero;
  if (!zero_means.empty()) zero = "0 (" + std::string(zero_means) + ") or ";
  switch (type) {
    case TunableType::kBool: return "true or false";
    case TunableType::kEnum: {
      std::string out = "one of ";
      for (size_t i = 0; i < choices.size(); i++) {
        if (i > 0) out += ", ";
        out += "\"" + std::string(choices[i]) + "\"";
      }
      return out;
    }
    case TunableType::kInteger: return zero + "an integer " + DecimalRange(min, max);
    case TunableType::kDuration:
      return zero + "an integer number of milliseconds " + DecimalRange(min, max);
    case TunableType::kSize:
      return zero + "a size from " + FormatSize(min) + " to " + FormatSize(max) +
             ": a number of bytes, or a string with a unit (\"16KiB\", \"512M\", \"1GiB\")";
  }
  return "?";
}

std::string TunableInfo::RangeText() const {
  std::string zero = zero_means.empty() ? "" : "0, ";
  switch (type) {
    case TunableType::kBool: return "true|false";
    case TunableType::kEnum: {
      std::string out;
      for (size_t i = 0; i < choices.size(); i++) {
        if (i > 0) out += "|";
        out += choices[i];
      }
      return out;
    }
    case TunableType::kInteger: return zero + std::to_string(min) + ".." + std::to_string(max);
    case TunableType::kDuration:
      return zero + std::to_string(min) + ".." + std::to_string(max) + " ms";
    case TunableType::kSize: return zero + FormatSize(min) + ".." + FormatSize(max);
  }
  return "?";
}

std::string TunableInfo::Format(uint64_t v) const {
  switch (type) {
    case TunableType::kBool: return v ? "true" : "false";
    case TunableType::kEnum: return v < choices.size() ? std::string(choices[v]) : "?";
    case TunableType::kInteger: return std::to_string(v);
    case TunableType::kDuration: return std::to_string(v) + "ms";
    case TunableType::kSize: return FormatSize(v);
  }
  return "?";
}

std::string TunableInfo::FormatToml(uint64_t v) const {
  switch (type) {
    case TunableType::kBool:
    case TunableType::kInteger: return Format(v);
    case TunableType::kDuration: return std::to_string(v);
    case TunableType::kEnum: return "\"" + Format(v) + "\"";
    case TunableType::kSize: {
      std::string s = FormatSize(v);
      const bool digits_only = s.find_first_not_of("0123456789") == std::string::npos;
      return digits_only ? s : "\"" + s + "\"";
    }
  }
  return "?";
}

std::string_view SuggestTunable(std::string_view name) {
  const std::string lower = Lower(name);
  const size_t dot = lower.find('.');
  const std::string_view leaf =
      dot == std::string::npos ? std::string_view(lower) : std::string_view(lower).substr(dot + 1);
  std::string_view best;
  size_t best_distance = SIZE_MAX;
  for (const TunableInfo& t : kTable) {
    const size_t limit = std::max<size_t>(2, t.name.size() / 4);
    // A typo anywhere, or the right key in the wrong (or no) table.
    size_t d = EditDistance(lower, t.name, limit);
    const size_t d_leaf = EditDistance(leaf, t.key(), limit) + 1;
    d = std::min(d, d_leaf);
    // A key cut short ("timeout" for "timeout_ms").
    if (leaf.size() >= 4 && t.key().substr(0, leaf.size()) == leaf) d = std::min<size_t>(d, 2);
    if (d <= limit && d < best_distance) {
      best = t.name;
      best_distance = d;
    }
  }
  return best;
}

std::string_view SuggestTable(std::string_view table) {
  const std::string lower = Lower(table);
  std::string_view best;
  size_t best_distance = SIZE_MAX;
  for (std::string_view t : kTables) {
    const size_t limit = t.size() <= 3 ? 1 : 2;
    const size_t d = EditDistance(lower, t, limit);
    if (d <= limit && d < best_distance) {
      best = t;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace poolfs::config
