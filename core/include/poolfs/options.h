// The core's option structs: the one home of every core tunable's default.
//
// Each struct holds the tunables one layer of the core reads, and each
// field's initializer is that tunable's default: there is no other. The
// internal layers use these types under their own names (txg::TxgOptions,
// space::SpaceOptions, arc::ArcOptions, dmu::ReadAheadOptions), a mount takes
// them all at once (CoreTunables, embedded in MountOptions), and the config
// layer (config/tunables.cc) maps each key onto one field here and takes its
// default from a default-constructed struct, so `poolfs tunables`, the
// shipped poolfs.toml, the daemon and a program that mounts without the
// daemon (poolfs-bench) all see the same value. tests/config/tunables_test.cc
// checks that every field has a row and every row a field.
//
// Adding a core tunable: a field here with its default and a comment, a row
// in config/tunables.cc, and, when it is live, its part of
// Filesystem::SetLive (core/posix/space.cc).
//
// Thread safety: value types.
#pragma once

#include <cstdint>

namespace poolfs {

// txg.*: the txg state machine and the write throttle (core/txg).
struct TxgOptions {
  // txg.timeout_ms: sync at least this often while anything is dirty. Live.
  uint64_t timeout_ms = 5000;
  // txg.dirty_max_bytes: writers block while this much data is dirty, summed
  // over every txg not yet synced. Live. Not ZFS's tenth of the memory: the
  // daemon touches the pages of its dirty data afresh after each burst (a
  // page fault and a page clearing each), and the throttle lets dirty data
  // climb past 60% of the bound before it slows writers, so a larger bound
  // makes large writes through a mount slower, not faster, and creates no
  // faster than 256 MiB does (config/README.md; scripts/bench-fs.sh's write
  // figure and `poolfs-bench pool --dirty-max-mib N` measure it).
  uint64_t dirty_max_bytes = uint64_t{256} << 20;
  // txg.dirty_sync_percent: start a sync when the open txg alone holds this
  // percentage of dirty_max_bytes (1..100). Live.
  uint32_t dirty_sync_percent = 20;
  // txg.delay_min_dirty_percent: start delaying writers when the dirty total
  // passes this percentage of dirty_max_bytes (0..100). Live.
  uint32_t delay_min_dirty_percent = 60;
  // txg.delay_scale_ns: a writer's delay is
  //   delay_scale_ns * (dirty - min) / (max - dirty)
  // so it is delay_scale_ns halfway between the start of delays and the
  // maximum. Live.
  uint64_t delay_scale_ns = 500000;
  // txg.delay_max_ns: no single writer is delayed longer than this. Live.
  uint64_t delay_max_ns = 100000000;

  bool operator==(const TxgOptions&) const = default;
};

// alloc.*: metaslabs and allocators (core/space). At mount only.
struct SpaceOptions {
  // alloc.size_tree_floor: free segments below this stay out of a
  // metaslab's size-sorted tree.
  uint64_t size_tree_floor = uint64_t{16} << 10;
  // alloc.df_max_search: how far the first-fit cursor walks before falling
  // back to the size-sorted tree.
  uint64_t df_max_search = uint64_t{16} << 20;
  // alloc.allocators; 0: from the core count, at most 8.
  uint32_t allocators = 0;
  // alloc.aliquot: rotate to the next vdev after this many bytes (stripes
  // large writes).
  uint64_t aliquot = uint64_t{2} << 20;

  bool operator==(const SpaceOptions&) const = default;
};

// vdev.*: how the pool opens its vdev files (core/vdev's FileDevice, whose
// theory comment says what each does). At mount only.
struct VdevOptions {
  // vdev.writeback_bytes: start the kernel's writeback of a vdev file after
  // each this many bytes written to it; 0: the flush at the end of each sync
  // does all of it.
  uint64_t writeback_bytes = uint64_t{4} << 20;
  // vdev.direct_reads: read aligned blocks with O_DIRECT, into the cache's
  // buffers.
  bool direct_reads = true;
  // vdev.direct_writes: write aligned blocks with O_DIRECT.
  bool direct_writes = true;
  // vdev.direct_write_min_bytes: with direct_writes, shorter writes go
  // buffered.
  uint64_t direct_write_min_bytes = uint64_t{64} << 10;

  bool operator==(const VdevOptions&) const = default;
};

// dmu.metadnode_backfill: where the object allocator takes new object ids
// from (core/dmu/object_allocator.h says what each mode does). The order is
// the config table's choices ("auto", "on", "off", "legacy"; a test checks it).
enum class BackfillMode : uint8_t { kAuto, kOn, kOff, kLegacy };

// dmu.metadnode_backfill and dmu.alloc_chunk: object allocation in the root
// dataset (core/dmu). Live.
struct ObjectAllocOptions {
  BackfillMode backfill = BackfillMode::kAuto;
  // dmu.alloc_chunk: object ids handed to a thread at a time.
  uint32_t chunk = 128;

  bool operator==(const ObjectAllocOptions&) const = default;
};

// dmu.prefetch_*: reads ahead of sequential readers (core/dmu/read_ahead.h).
// At mount only.
struct ReadAheadOptions {
  // dmu.prefetch_distance_bytes: the farthest a stream reads ahead; 0: never.
  uint64_t distance_bytes = uint64_t{32} << 20;
  // dmu.prefetch_threads: threads that read ahead (disk reads in flight).
  uint32_t threads = 8;

  bool operator==(const ReadAheadOptions&) const = default;
};

// arc.*: the block cache (core/arc).
struct ArcOptions {
  // arc.max_bytes; 0: 1/8 of RAM, at least 64 MiB. Live.
  uint64_t max_bytes = 0;
  // arc.sublists; 0: one per core, at least 4. At mount only.
  uint32_t sublists = 0;
  // arc.evict_batch: blocks taken from a sublist at a time. At mount only.
  uint32_t evict_batch = 10;
  // Not tunables (no config key; tests and the offline check set them):
  // false: only inserting threads evict (deterministic tests).
  bool evict_thread = true;
  // Free bytes the BufferPool keeps for reuse per size class (and the
  // HeaderCache in headers), split over its shards; not counted in c.
  uint64_t pool_retain_bytes = uint64_t{8} << 20;

  bool operator==(const ArcOptions&) const = default;
};

// zil.*: the intent log (core/zil).
struct IntentLogOptions {
  // zil.indirect_write_bytes: a write record of at least this many bytes
  // within one block of its file is written to its place at the commit and
  // the log names the block (an indirect write), instead of copying its
  // bytes into the log; 0: never. At mount only.
  uint64_t indirect_write_bytes = 32 * 1024;

  bool operator==(const IntentLogOptions&) const = default;
};

// Every core tunable, by the layer that reads it: what a mount takes
// (MountOptions::tunables) and what Filesystem::SetLive changes.
struct CoreTunables {
  TxgOptions txg;
  SpaceOptions space;
  VdevOptions vdev;
  ObjectAllocOptions objects;
  ReadAheadOptions read_ahead;
  ArcOptions arc;
  IntentLogOptions zil;
  // arc.cache_whole_reads: blocks a read for a caller that keeps them
  // (kReadCallerKeeps) returns whole stay in the block cache too; false:
  // they are read once, outside it. Read by the POSIX layer. Live.
  bool cache_whole_reads = false;

  bool operator==(const CoreTunables&) const = default;
};

}  // namespace poolfs
