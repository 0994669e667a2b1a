// The on-disk blocks of a zap object, their constants, and their refusing
// decoders. The byte-by-byte specification is section 11 of
// core/doc/on-disk-format.md; the Phys structs below are that layout (field
// offsets are static_assert'ed), and every field is read and written with
// explicit little-endian helpers at offsetof(...), never by casting a block
// to a struct.
//
// Every zap block is one data block of the zap object (all the object's
// blocks have the same size, 4 KiB .. 32 KiB, a power of two). Each starts
// with a magic naming its kind, then 8 unused bytes, then the zap's object
// id (and, past block 0, the block's own number), so that a block put in
// the wrong place is refused. Damage is the pool's block checksum's to find:
// zio verifies every block it reads. The unused bytes held an XXH3-64 of
// the rest of the block in development builds before the first release;
// they are written as zero now and never read, because a change edits a
// block in place, possibly many times a txg (dmu/shared_block.h), and
// hashing the whole block at every change cost a noticeable share of the
// create rate (`poolfs-bench create` measures it).
//
//   block 0, micro form:  MicroHeaderPhys, then fixed 64-byte MicroEntryPhys
//   block 0, fat form:    FatHeaderPhys, then the pointer table while small
//   pointer table blocks: TableHeaderPhys, then leaf block ids
//   leaf blocks:          LeafHeaderPhys, slot array, entry heap (leaf.h)
//
// Keys: an entry's key is (h << 16) | cd: h is the top 46 bits of the
// 64-bit hash of the name (XXH3-64 of the salt, little-endian, followed by
// the name), cd the collision differentiator, the smallest value not used by
// another entry with the same h when the entry was added. Keys are unique in
// a zap, never change while the entry exists, and are below 2^62.
//
// Thread safety: constants and pure functions.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "poolfs/status.h"

namespace poolfs::core::zap {

inline constexpr uint32_t kMinBlockSize = 4096;
inline constexpr uint32_t kMaxBlockSize = 32768;
// 8 KiB, chosen when every change copied, checksummed and rewrote a whole
// leaf and a lookup decoded one, so that an operation cost in proportion to
// the block: 8 KiB made adds and lookups about half again as fast as 16 KiB,
// and 4 KiB gained less again while leaving less to compression and only 63
// entries to a micro zap. zap_tests "[.bench]" measures it (adds and
// lookups per CPU-second with 1M names in one zap).
inline constexpr uint32_t kDefaultBlockSize = 8192;
inline constexpr size_t kMaxNameLen = 255;
inline constexpr int kHashBits = 46;
inline constexpr int kCdBits = 16;
inline constexpr uint32_t kMaxCd = (1u << kCdBits) - 1;
inline constexpr uint64_t kKeyLimit = uint64_t{1} << (kHashBits + kCdBits);  // 2^62
// The deepest a leaf (and so the pointer table) may go: 2^26 pointers, a
// 512 MiB table for some 10^10 names. Random hashes never get near it; names
// that share 26 leading hash bits beyond what one leaf holds get NoSpace.
inline constexpr uint8_t kMaxDepth = 26;
inline constexpr uint8_t kFormatVersion = 1;

inline constexpr uint64_t MakeMagic(const char (&s)[9]) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | uint8_t(s[i]);
  return v;
}
inline constexpr uint64_t kMicroMagic = MakeMagic("PFSZMICR");
inline constexpr uint64_t kFatMagic = MakeMagic("PFSZFATH");
inline constexpr uint64_t kTableMagic = MakeMagic("PFSZPTRT");
inline constexpr uint64_t kLeafMagic = MakeMagic("PFSZLEAF");

// Little-endian loads for the hot paths (a lookup decodes a whole leaf):
// one load each, where util::GetLE* assemble bytes one at a time.
inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
inline uint16_t LoadLE16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap16(v);
  return v;
}

inline constexpr uint64_t MakeKey(uint64_t h, uint32_t cd) { return (h << kCdBits) | cd; }
inline constexpr uint64_t KeyHash(uint64_t key) { return key >> kCdBits; }
inline constexpr uint32_t KeyCd(uint64_t key) { return uint32_t(key & kMaxCd); }

// What a zap stores under a name: 16 bytes, kept as two words. Directories
// put the entry's object id in `object` and its file type and flags in
// `attrs`; the zap does not interpret either.
struct Value {
  uint64_t object = 0;
  uint64_t attrs = 0;
  bool operator==(const Value&) const = default;
};

// Block 0 in the micro form. The entries follow at kMicroHeaderSize, sorted
// by key (strictly increasing); bytes past the last entry are zero.
struct MicroHeaderPhys {
  uint64_t magic;         // kMicroMagic
  uint64_t unused;        // written 0, not read (see the top)
  uint64_t object;        // the zap's object id
  uint64_t salt;          // mixed into every name hash
  uint8_t version;        // kFormatVersion
  uint8_t reserved0[3];   // zero
  uint32_t count;         // entries in use, <= MicroCapacity(block size)
  uint8_t reserved1[24];  // zero
};
static_assert(sizeof(MicroHeaderPhys) == 64);
static_assert(offsetof(MicroHeaderPhys, salt) == 24);
static_assert(offsetof(MicroHeaderPhys, count) == 36);

inline constexpr size_t kMicroMaxName = 39;
struct MicroEntryPhys {
  uint64_t key;              // (h << 16) | cd, < 2^62
  uint64_t object;           // Value::object
  uint64_t attrs;            // Value::attrs
  uint8_t name_len;          // 1 .. 39
  char name[kMicroMaxName];  // name_len bytes, then zeros
};
static_assert(sizeof(MicroEntryPhys) == 64);
static_assert(offsetof(MicroEntryPhys, name_len) == 24);
static_assert(offsetof(MicroEntryPhys, name) == 25);

inline constexpr size_t kMicroHeaderSize = sizeof(MicroHeaderPhys);
inline constexpr size_t kMicroEntrySize = sizeof(MicroEntryPhys);
inline constexpr uint32_t MicroCapacity(uint32_t block_size) {
  return uint32_t((block_size - kMicroHeaderSize) / kMicroEntrySize);
}

// Block 0 in the fat form. While 2^depth pointers fit (EmbeddedTableCapacity)
// the pointer table follows at kFatHeaderSize and table_block/table_blocks
// are zero; past that it lives in table_blocks blocks from table_block.
struct FatHeaderPhys {
  uint64_t magic;         // kFatMagic
  uint64_t unused;        // written 0, not read (see the top)
  uint64_t object;        // the zap's object id
  uint64_t salt;          // as in the micro form it came from
  uint8_t version;        // kFormatVersion
  uint8_t depth;          // the table has 2^depth pointers; <= kMaxDepth (26)
  uint8_t reserved0[6];   // zero
  uint64_t count;         // entries in the zap
  uint64_t next_block;    // every block the zap uses is below it
  uint64_t leaves;        // distinct leaves in the table
  uint64_t table_block;   // first block of the external table, or 0
  uint64_t table_blocks;  // blocks of the external table, or 0
  uint8_t reserved1[48];  // zero
};
static_assert(sizeof(FatHeaderPhys) == 128);
static_assert(offsetof(FatHeaderPhys, depth) == 33);
static_assert(offsetof(FatHeaderPhys, count) == 40);
static_assert(offsetof(FatHeaderPhys, table_blocks) == 72);

inline constexpr size_t kFatHeaderSize = sizeof(FatHeaderPhys);
// The largest power of two of pointers that fits after the fat header.
inline constexpr uint64_t EmbeddedTableCapacity(uint32_t block_size) {
  uint64_t fit = (block_size - kFatHeaderSize) / 8, cap = 1;
  while (cap * 2 <= fit) cap *= 2;
  return cap;
}

// A block of the external pointer table: pointers [first_index,
// first_index + count) of the table, as u64 leaf block ids at
// kTableHeaderSize; bytes past them are zero.
struct TableHeaderPhys {
  uint64_t magic;         // kTableMagic
  uint64_t unused;        // written 0, not read (see the top)
  uint64_t object;        // the zap's object id
  uint64_t block;         // this block's number in the object
  uint8_t depth;          // the depth of the table this block belongs to
  uint8_t reserved0[3];   // zero
  uint32_t count;         // pointers in this block, 1 .. TablePerBlock
  uint64_t first_index;   // index of its first pointer = i * TablePerBlock
  uint8_t reserved1[16];  // zero
};
static_assert(sizeof(TableHeaderPhys) == 64);
static_assert(offsetof(TableHeaderPhys, count) == 36);
static_assert(offsetof(TableHeaderPhys, first_index) == 40);

inline constexpr size_t kTableHeaderSize = sizeof(TableHeaderPhys);
inline constexpr uint64_t TablePerBlock(uint32_t block_size) {
  return (block_size - kTableHeaderSize) / 8;
}

// A leaf: the entries whose h starts with the `depth`-bit `prefix`. A slot
// array of u16 entry offsets (sorted by the entries' keys) grows up from
// kLeafHeaderSize; entries are allocated down from the end of the block;
// `heap` is the lowest byte of the heap. An entry is
//   key u64, object u64, attrs u64, name length u8 (1..255), name.
struct LeafHeaderPhys {
  uint64_t magic;         // kLeafMagic
  uint64_t unused;        // written 0, not read (see the top)
  uint64_t object;        // the zap's object id
  uint64_t block;         // this block's number in the object
  uint64_t prefix;        // the hash prefix this leaf holds, < 2^depth
  uint8_t depth;          // prefix bits, <= the table's depth
  uint8_t reserved0;      // zero
  uint16_t count;         // entries (slots)
  uint16_t heap;          // start of the entry heap
  uint16_t reserved1;     // zero
  uint8_t reserved2[16];  // zero
};
static_assert(sizeof(LeafHeaderPhys) == 64);
static_assert(offsetof(LeafHeaderPhys, depth) == 40);
static_assert(offsetof(LeafHeaderPhys, count) == 42);
static_assert(offsetof(LeafHeaderPhys, heap) == 44);

inline constexpr size_t kLeafHeaderSize = sizeof(LeafHeaderPhys);
inline constexpr size_t kLeafEntryFixed = 25;  // key, object, attrs, name length
inline constexpr size_t LeafEntrySize(size_t name_len) { return kLeafEntryFixed + name_len; }

// Where a block belongs, for decoders and their messages.
struct BlockContext {
  uint64_t object = 0;
  uint32_t block_size = kDefaultBlockSize;
  bool directory = false;  // names may not hold '/' or NUL
  // "zap object 17 block 3 (leaf)"
  std::string Where(uint64_t block, std::string_view kind) const;
};

// NotFound for a name a zap does not hold. Its message names no zap (the
// caller knows which directory it asked): short enough for the string's
// inline buffer, since a negative lookup is on every file create's path.
inline Status NoSuchName() { return Status::NotFound("no such name"); }
// Checks a block's size and magic. Corruption naming `where`.
Status CheckBlock(std::string_view block, const BlockContext& ctx, uint64_t block_no,
                  uint64_t magic, std::string_view kind);
// Checks a name: 1..255 bytes (InvalidArgument, NameTooLong), and for
// directories no '/' or NUL (InvalidArgument).
Status CheckName(std::string_view name, bool directory);
// True when `name` would be refused by CheckName for a directory.
bool BadDirectoryName(std::string_view name);

}  // namespace poolfs::core::zap
