// Space maps: the on-disk, append-only history of one metaslab's allocations
// and frees.
//
// Theory
// ------
// A metaslab is a region [start, start + size) of a vdev divided into sectors
// of 1 << shift bytes (shift 9..16). Its space map is a log of records, each
// "the run [offset, offset + length) was allocated (kAlloc) or freed (kFree)
// in txg T". Replaying the log in order, starting from a fully FREE metaslab,
// gives the metaslab's free space: kAlloc removes the run, kFree adds it back.
// The map itself checks nothing about that meaning (an allocation of space
// that is already allocated is the metaslab's business, not the map's); it
// guarantees that what is read back is exactly what was written, or an error.
//
// States of a map's bytes:
//   - written: header, then zero or more groups, then the end marker. Each
//     group holds the records of one txg (a txg with many records spans
//     several groups) and ends with a checksum that chains to the previous
//     one; the end marker holds the record count and net allocated bytes and
//     a last chained checksum. The exact layout is in section 10 of
//     core/doc/on-disk-format.md.
//   - appended to: SpaceMapWriter removes the end marker (and reopens the last
//     group if the txg is unchanged and it has room), adds the record, and
//     writes the end marker again when the bytes are next asked for. Every
//     record costs O(1) whatever the map's length; bytes before
//     frozen_bytes() never change again.
//   - condensed: when the history grows long, the metaslab replaces it with
//     CondenseSpaceMap(): one kAlloc record over the whole map, then one kFree
//     record per free segment (it then appends the frees still deferred,
//     with their own txgs). Replaying that gives the same free space.
//
// Invariants of a map that decodes: txgs never go backwards; every run lies
// inside the map and is a whole number of sectors long (at least one); the
// record count and net allocated bytes in the end marker match the records;
// every byte is covered by a checksum, and the chain of checksums makes a map
// with a group removed, duplicated, reordered or cut off fail to verify.
//
// Callers: the metaslab appends the records of each txg it syncs, decodes the
// map when it loads, and condenses it; the pool layer stores the bytes in an
// object. The fuzzer (tests/fuzz/space_map_fuzz.cc) decodes arbitrary bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "poolfs/status.h"
#include "poolfs/types.h"

namespace poolfs::core::space {

enum class SmType : uint8_t { kAlloc = 0, kFree = 1 };

// One decoded record: the run [offset, offset + length) of bytes, both
// multiples of the sector size, allocated or freed in txg. Offsets handed to
// and returned by the public functions are absolute vdev byte offsets.
struct SmEntry {
  SmType type = SmType::kAlloc;
  Txg txg;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const SmEntry&) const = default;
};

// What a map covers: [start, start + size) bytes of a vdev, sectors of
// 1 << shift bytes. Valid when 9 <= shift <= 16, size > 0, start and size are
// multiples of the sector size, and start + size does not overflow.
struct SpaceMapGeometry {
  uint64_t start = 0;
  uint64_t size = 0;
  uint32_t shift = 9;
  bool operator==(const SpaceMapGeometry&) const = default;
};

// Returns OK if `g` is valid (see SpaceMapGeometry), else InvalidArgument
// saying what is wrong.
Status ValidateGeometry(const SpaceMapGeometry& g);

// Largest txg a space map can record (txgs are stored in 50 bits).
inline constexpr uint64_t kSpaceMapMaxTxg = (uint64_t{1} << 50) - 1;

// What a verified map holds, from VerifySpaceMap().
struct SpaceMapSummary {
  uint64_t record_count = 0;
  uint64_t alloc_bytes = 0;  // allocs − frees, modulo 2^64
  uint64_t group_count = 0;
  Txg last_txg;              // txg of the last group; Txg(0) when empty
};

// Builds the encoded bytes of one space map by appending records.
//
// Append() is O(1) per record: the end marker (and the checksum of the last,
// still open group) is rewritten only when bytes() or TakeBytes() is called,
// and that costs at most one group (8 KiB) of hashing. Call bytes() once per
// txg, not once per record.
//
// Thread safety: none; one writer belongs to one metaslab's sync, and even the
// const accessor bytes() modifies internal state.
class SpaceMapWriter {
 public:
  // A new, empty map of geometry `g`. CHECKs that `g` is valid.
  explicit SpaceMapWriter(SpaceMapGeometry g);

  // Continues appending to `bytes`, an existing map of geometry `g`. Returns
  // InvalidArgument for an invalid `g`, and Corruption (from the decoder) if
  // `bytes` does not verify or has a different geometry.
  static Result<SpaceMapWriter> Resume(SpaceMapGeometry g, std::string bytes);
  // The same, calling `fn` for each record as DecodeSpaceMap does, so that a
  // metaslab load decodes its map once. Returns the first non-OK status of
  // `fn` as DecodeSpaceMap does.
  static Result<SpaceMapWriter> Resume(SpaceMapGeometry g, std::string bytes,
                                       const std::function<Status(const SmEntry&)>& fn);

  SpaceMapWriter(SpaceMapWriter&&) = default;
  SpaceMapWriter& operator=(SpaceMapWriter&&) = default;

  // Appends one record. `offset` and `length` are absolute vdev byte offsets.
  // CHECKs (programming errors): length > 0, both multiples of the sector
  // size, the run inside the map, txg no less than the previous record's and
  // at most kSpaceMapMaxTxg.
  void Append(SmType type, Txg txg, uint64_t offset, uint64_t length);

  // The complete encoded map, end marker included. Valid until the next
  // Append(); costs at most one group of hashing if records were appended
  // since the last call.
  const std::string& bytes() const;

  // Returns the complete encoded map and leaves the writer empty (usable only
  // to be destroyed or assigned to).
  std::string TakeBytes() &&;

  // Bytes [0, frozen_bytes()) of bytes() will never change again, whatever is
  // appended later: a store of the map needs to rewrite only what follows.
  uint64_t frozen_bytes() const;

  // Net bytes allocated by the recorded history: allocs − frees, modulo 2^64
  // (for a consistent history replayed from all-free, the allocated bytes).
  uint64_t alloc_bytes() const { return alloc_bytes_; }
  // Number of records appended since the map was created.
  size_t record_count() const { return record_count_; }
  const SpaceMapGeometry& geometry() const { return g_; }

 private:
  SpaceMapWriter(SpaceMapGeometry g, std::string bytes, const SpaceMapSummary& summary);

  void Unseal();
  void CloseGroup();
  void Seal() const;

  SpaceMapGeometry g_;
  uint64_t size_sectors_ = 0;
  // The encoding; when sealed_, it ends with the open group's checksum (if a
  // group is open) and the end marker, else it ends with the last entry word.
  mutable std::string bytes_;
  mutable bool sealed_ = false;
  size_t open_pos_ = 0;  // byte position of the open group's header; 0: none
  uint32_t open_words_ = 0;
  Txg last_txg_;
  uint64_t record_count_ = 0;
  uint64_t alloc_bytes_ = 0;
};

// Decodes and verifies `bytes` as a map of geometry `g`, calling `fn` for each
// record in order, with absolute offsets. Each group is verified against its
// checksum before any of its records is passed to `fn`; on error, `fn` may
// already have seen the records of earlier groups, so the caller must discard
// what it built. Returns OK; InvalidArgument if `g` is invalid; Corruption
// naming the record index (or group) and byte position and what is wrong
// (bad magic or version, geometry mismatch, checksum mismatch, run past the
// end of the map, txg going backwards, truncation, trailing bytes, ...); or
// the first non-OK status `fn` returns, which stops the decode.
Status DecodeSpaceMap(std::string_view bytes, SpaceMapGeometry g,
                      const std::function<Status(const SmEntry&)>& fn);

// Verifies `bytes` as DecodeSpaceMap does and returns what it holds.
Result<SpaceMapSummary> VerifySpaceMap(std::string_view bytes, SpaceMapGeometry g);

// Calls `emit(offset, length)` for each free segment, in offset order.
using SegmentProducer =
    std::function<void(const std::function<void(uint64_t offset, uint64_t length)>& emit)>;

// Returns the condensed encoding of a metaslab whose free space is the given
// segments: one kAlloc record covering the whole map, then one kFree record
// per segment, all stamped with `txg`. Segments are absolute (offset, length)
// pairs; CHECKs that they are sector-aligned, non-empty, sorted,
// non-overlapping and inside the map.
std::string CondenseSpaceMap(SpaceMapGeometry g, Txg txg,
                             const std::vector<std::pair<uint64_t, uint64_t>>& free_segments);
std::string CondenseSpaceMap(SpaceMapGeometry g, Txg txg, const SegmentProducer& for_each_free);

namespace internal {
// For the fuzzer only: DecodeSpaceMap with checksum verification switchable,
// so that mutated inputs reach the record checks behind the checksums.
// Returns the decoded summary in `*summary` (if not null) on success.
Status DecodeSpaceMapForFuzzing(std::string_view bytes, SpaceMapGeometry g,
                                bool verify_checksums,
                                const std::function<Status(const SmEntry&)>& fn,
                                SpaceMapSummary* summary);
}  // namespace internal

}  // namespace poolfs::core::space
