// Zap: a hashed name -> value object, for directories (ObjectType::
// kDirectory) and generic tables (kZap) such as the dataset directory.
//
// Theory
// ------
// A zap is one dmu object whose data blocks (all of one size, 8 KiB by
// default, see kDefaultBlockSize) hold its entries; section 11 of
// core/doc/on-disk-format.md has every byte. A name is 1..255 bytes. A kZap
// object takes any bytes; a kDirectory object also refuses names holding
// '/' or NUL (the POSIX layer decides about "." and ".."). A value is 16 bytes (Value: two words).
//
// Every entry has a key, (h << 16) | cd: h is the top 46 bits of the 64-bit
// hash of the per-zap salt and the name, cd the collision differentiator,
// the smallest number not used by another entry with the same h when this
// one was added. A key is unique in the zap and does not change while its
// entry exists: not when other entries come and go, not when a leaf splits,
// not when the micro form becomes fat (the upgrade copies keys, it does not
// recompute them).
//
// Two forms:
//   - micro: block 0 is a header and fixed 64-byte entries (names up to 39
//     bytes) sorted by key; 127 entries in an 8 KiB block. The whole block
//     is kept in memory. An Add that finds it full, or a name longer than 39
//     bytes, upgrades the zap to the fat form in the same transaction.
//   - fat: extendible hashing. Block 0 is a header with a pointer table of
//     2^depth leaf block numbers, indexed by the top `depth` bits of h; past
//     what fits in block 0 (512 pointers in 8 KiB) the table moves to
//     blocks of its own. A leaf holds the entries whose h starts with its
//     `ldepth`-bit prefix, so it is pointed at by 2^(depth - ldepth)
//     consecutive table slots. A full leaf splits on the next bit of h into
//     itself and a new block; when its ldepth equals depth the table first
//     doubles (each pointer twice). Lookup, Add, Remove and Update read one
//     leaf: the header and the table are kept decoded in memory (loaded by
//     Open), so they stay one block read at any size. Leaves are never
//     merged; a zap that shrinks keeps its leaves (as ZFS's does) until
//     it is empty: the Remove of its last entry makes it an empty micro
//     zap again (same salt) and frees every other block, so a directory
//     emptied of many names gives their space back. With a
//     LeafCache (ZapOptions::leaf_cache, leaf_cache.h) a leaf is decoded
//     and checked once and then read in place; a change takes it over
//     (or edits a copy while someone else still holds it).
//
// Readdir cookies. Iterate lists entries in key order, micro or fat: in the
// micro form the entries are sorted by key; in the fat form the leaves cover
// consecutive ranges of h in table order, and each leaf keeps its slots in
// key order (leaf.h). The cookie of an entry is its key + 1, and
// Iterate(c, n) returns the n smallest keys >= c present at that moment
// (under the lock, so one call sees one state; 0 starts; fewer than n means
// the end). An iteration is calls with cookies c0 = 0 < c1 < c2 < ..., each
// c(i+1) the cookie of the last entry call i returned. Call i returns every
// key in [c(i), c(i+1)) present at its moment (they are the smallest keys
// >= c(i) up to the last one it returned), and the last call, which returned
// fewer than n, every key >= its cookie. These ranges are disjoint and cover
// all keys, so an entry present throughout the iteration - whose key k
// never changes - lies in exactly one range and is returned by exactly that
// call: never skipped, never repeated. Nothing here depends on which block
// holds k: a leaf split or the micro -> fat upgrade moves entries, not keys.
// (Entries added or removed meanwhile are returned at most once.) Cookies
// are in [1, 2^62], so the POSIX layer may add a small offset for "." and
// ".." and stay within a positive off_t.
//
// Writing. Block 0 and the leaves are dmu::SharedBlocks: a change edits the
// bytes in place and hands them to the dmu without a copy (ObjectSet::
// PutBlock); the first change of a txg copies a block the previous txg's
// sync may be writing, the later ones edit the txg's dirty copy itself.
// Changes must come from open context (a Tx of the open txg).
//
// Failures. A change reads first (the one leaf), then edits, then hands
// the blocks to the dmu, so an I/O error or damage found by a read leaves
// the zap unchanged. A leaf split that succeeded is written even when the
// Add then fails (NoSpace), as the split zap is valid. The dmu refuses a
// block only for an object that is no longer allocated.
//
// Thread safety: Lookup, Iterate and Count may run concurrently with each
// other and with changes (an internal reader-writer lock). Callers must still
// serialize changes to one zap from Tx::Assign to Commit (the dmu's rule for
// every object; the POSIX layer holds the directory's lock), and all changes
// to one object must go through one Zap (it caches block 0 and the table):
// keep one Zap per open directory.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmu/objset.h"
#include "poolfs/status.h"
#include "poolfs/types.h"
#include "util/mutex.h"
#include "zap/leaf.h"
#include "zap/leaf_cache.h"
#include "zap/zap_phys.h"

namespace poolfs::core::zap {

// A 64-bit hash of (salt, name); its top 46 bits are used.
using HashFn = uint64_t (*)(uint64_t salt, std::string_view name);

// The default hash: XXH3-64 of the salt (8 bytes, little-endian) then the
// name.
uint64_t DefaultHash(uint64_t salt, std::string_view name);

struct ZapOptions {
  uint32_t block_size = kDefaultBlockSize;  // Create only: 4 KiB .. 32 KiB, a power of two
  uint64_t salt = 0;                        // Create only: 0 picks a random salt
  HashFn hash = nullptr;  // tests only (forced collisions): replaces DefaultHash; the
                          // same function must be given at every Open
  // Decoded leaves kept for this zap (leaf_cache.h); it must outlive the
  // Zap. nullptr: every leaf is read and checked anew.
  LeafCache* leaf_cache = nullptr;
};

// One entry listed by Iterate.
struct Entry {
  std::string name;
  Value value;
  uint64_t cookie = 0;  // pass to Iterate to resume after this entry
};

// What a zap looks like inside, for tests and status output.
struct ZapShape {
  bool micro = true;
  uint8_t depth = 0;  // fat: the table has 2^depth pointers
  bool external_table = false;
  uint64_t leaves = 0;
  uint64_t blocks = 1;  // block numbers used (the next one to hand out)
};

// One open zap object: the handle through which its entries are read and
// changed (the theory comment above says how). It refers to `os`, which must
// outlive it, holds the object's dnode (ObjectSet::Hold), and caches block 0
// and the pointer table, so each object has
// at most one Zap that changes it. Thread safety: as in the theory comment
// (reads share an internal lock, changes take it alone; callers serialize
// changes from Tx::Assign to Commit).
class Zap {
 public:
  // Creates an empty zap (micro form) as a new object of `type` (kZap or
  // kDirectory) with `bonus`, in tx's txg. InvalidArgument for another type
  // or a bad block size; the dmu's errors (NoSpace when object ids run out).
  static Result<std::unique_ptr<Zap>> Create(dmu::Tx& tx, dmu::ObjectSet* os,
                                             dmu::ObjectType type = dmu::ObjectType::kZap,
                                             std::string_view bonus = {},
                                             const ZapOptions& options = {});
  // Opens the zap in object `id`: reads block 0 and, in the fat form, the
  // whole pointer table. NotFound for a free object, InvalidArgument for an
  // object that is not a kZap or kDirectory, Corruption (naming the object
  // and block) for a damaged block 0 or table, IOError.
  static Result<std::unique_ptr<Zap>> Open(dmu::ObjectSet* os, ObjectId id,
                                           const ZapOptions& options = {});

  Zap(const Zap&) = delete;
  Zap& operator=(const Zap&) = delete;
  ~Zap();

  ObjectId id() const { return id_; }
  // The object's dnode, held while the Zap lives (for calls by dnode).
  dmu::Dnode& dnode() const { return *dnode_; }

  // Adds `name` -> `value` in tx's txg. AlreadyExists if the name is there;
  // InvalidArgument or NameTooLong for a bad name (CheckName); NoSpace when
  // more than 65,536 names share one 46-bit hash, or a leaf is full of names
  // whose hashes agree on so many leading bits that splitting it would take
  // the table past 26 bits or 64 slots per leaf (none of which happens
  // without a forced hash); Corruption or IOError from reading the leaf
  // (nothing changed).
  Status Add(dmu::Tx& tx, std::string_view name, const Value& value) EXCLUDES(mu_);
  // The value of `name`. NotFound if absent; InvalidArgument or NameTooLong
  // for a bad name; Corruption or IOError from reading the leaf.
  Result<Value> Lookup(std::string_view name) const EXCLUDES(mu_);
  // Removes `name`. NotFound if absent; otherwise as Lookup.
  Status Remove(dmu::Tx& tx, std::string_view name) EXCLUDES(mu_);
  // Replaces the value of `name` (keeping its cookie). NotFound if absent;
  // otherwise as Lookup.
  Status Update(dmu::Tx& tx, std::string_view name, const Value& value) EXCLUDES(mu_);
  // The number of entries.
  uint64_t Count() const EXCLUDES(mu_);
  // Up to n entries with cookies >= `cookie` (0: from the start), in cookie
  // order; fewer than n means there are no more. Corruption or IOError from
  // reading a leaf. See the theory comment for what holds across changes.
  Result<std::vector<Entry>> Iterate(uint64_t cookie, size_t n) const EXCLUDES(mu_);

  ZapShape Shape() const EXCLUDES(mu_);

 private:
  struct FatState {
    uint8_t depth = 0;
    uint64_t count = 0;
    uint64_t next_block = 1;
    uint64_t leaves = 0;
    uint64_t table_block = 0;  // 0: the table is in block 0
    uint64_t table_blocks = 0;
    std::vector<uint64_t> table;
  };
  // The blocks one fat change touches, written together by Commit.
  struct Change {
    std::map<uint64_t, Leaf> leaves;  // by block number: read, split off or new
    std::set<uint64_t> table_blocks;  // external table blocks to rewrite, by position
    bool table_moved = false;         // a new external table: write all of it
    bool embedded_table = false;      // the table in block 0 (or its depth) changed
    std::vector<std::pair<uint64_t, uint64_t>> freed;  // (first block, blocks) to punch
  };

  Zap(dmu::ObjectSet* os, ObjectId id, const BlockContext& ctx, uint64_t salt,
      const ZapOptions& options);

  uint64_t Hash(std::string_view name) const;
  Result<std::string> ReadBlock(uint64_t block, std::string_view kind) const;
  Status WriteBlock(dmu::Tx& tx, uint64_t block, const std::string& bytes);
  // Makes `bytes` tx's dirty copy of `block`, shared (dmu/shared_block.h).
  Status PutBlock(dmu::Tx& tx, uint64_t block, dmu::SharedBlock& bytes);

  // Micro form (micro_zap.cc).
  static std::string EmptyMicroBlock(const BlockContext& ctx, uint64_t salt);
  Status LoadMicro(std::string block) REQUIRES(mu_);
  uint64_t MicroKeyAt(uint32_t i) const REQUIRES_SHARED(mu_);
  std::string_view MicroNameAt(uint32_t i) const REQUIRES_SHARED(mu_);
  Value MicroValueAt(uint32_t i) const REQUIRES_SHARED(mu_);
  uint32_t MicroLowerBound(uint64_t key) const REQUIRES_SHARED(mu_);
  uint32_t MicroFind(uint64_t h, std::string_view name, uint32_t* free_cd) const
      REQUIRES_SHARED(mu_);
  Status MicroAdd(dmu::Tx& tx, uint64_t h, std::string_view name, const Value& v) REQUIRES(mu_);
  Status MicroRemove(dmu::Tx& tx, uint32_t slot) REQUIRES(mu_);
  Status MicroUpdate(dmu::Tx& tx, uint32_t slot, const Value& v) REQUIRES(mu_);
  void MicroIterate(uint64_t cookie, size_t n, std::vector<Entry>* out) const REQUIRES_SHARED(mu_);
  // Rewrites the micro zap as a fat one, keys kept, in tx's txg.
  Status Upgrade(dmu::Tx& tx) REQUIRES(mu_);

  // Fat form (fat_zap.cc).
  Status LoadFat(std::string block, uint64_t object_length) REQUIRES(mu_);
  // Checks that every leaf owns one aligned power-of-two run of slots.
  Status CheckTable(const FatState& f) const;
  std::string EncodeFatHeader() const REQUIRES_SHARED(mu_);
  std::string EncodeTableBlock(uint64_t i) const REQUIRES_SHARED(mu_);
  uint64_t TableIndex(uint64_t h) const REQUIRES_SHARED(mu_);
  // "zap object 17 block 0 (fat header)": the block holding table slot `index`.
  std::string SlotWhere(uint64_t index) const REQUIRES_SHARED(mu_);
  // The leaf the table points at from slot `index`, checked against the
  // table: from the leaf cache, else read, decoded and cached. A change
  // edits a copy (Commit caches it).
  Result<std::shared_ptr<const Leaf>> ReadLeaf(uint64_t index) const REQUIRES_SHARED(mu_);
  // The leaf a change in tx's txg edits: the cached one taken over when
  // only the cache and `ref` hold it, else a copy.
  Leaf LeafToEdit(dmu::Tx& tx, std::shared_ptr<const Leaf> ref) REQUIRES(mu_);
  Status FatAdd(dmu::Tx& tx, uint64_t h, std::string_view name, const Value& v) REQUIRES(mu_);
  Status FatRemove(dmu::Tx& tx, uint64_t h, std::string_view name) REQUIRES(mu_);
  // Removing the last entry (held in leaf `last_leaf`): the zap becomes an
  // empty micro zap again, its leaves and table freed, in tx's txg.
  Status Downgrade(dmu::Tx& tx, uint64_t last_leaf) REQUIRES(mu_);
  Status FatUpdate(dmu::Tx& tx, uint64_t h, std::string_view name, const Value& v) REQUIRES(mu_);
  Result<Value> FatLookup(uint64_t h, std::string_view name) const REQUIRES_SHARED(mu_);
  Status FatIterate(uint64_t cookie, size_t n, std::vector<Entry>* out) const REQUIRES_SHARED(mu_);
  // Puts an entry with a known key into the leaves of `c`, splitting leaves
  // (and doubling the table) as needed.
  Status FatInsert(Change& c, uint64_t key, std::string_view name, const Value& v) REQUIRES(mu_);
  void DoubleTable(Change& c) REQUIRES(mu_);
  void SplitLeaf(Change& c, Leaf& leaf) REQUIRES(mu_);
  // Writes the blocks of `c` (and block 0 if `header`); its leaves go to
  // the leaf cache when all were written, and leave it otherwise.
  Status Commit(dmu::Tx& tx, Change& c, bool header) REQUIRES(mu_);
  Status WriteChange(dmu::Tx& tx, Change& c, bool header) REQUIRES(mu_);

  dmu::ObjectSet* const os_;
  const ObjectId id_;
  const BlockContext ctx_;
  const uint64_t salt_;
  const HashFn hash_;
  LeafCache* const leaf_cache_;
  const uint64_t owner_;  // this Zap's leaves in leaf_cache_
  // The object's dnode, held: every block read and write goes through it
  // without a lookup by id (and it stays in memory while the Zap lives).
  dmu::ObjectSet::DnodeRef dnode_;

  mutable util::SharedMutex mu_;
  bool micro_form_ GUARDED_BY(mu_) = true;
  dmu::SharedBlock micro_ GUARDED_BY(mu_);  // block 0 in the micro form
  uint32_t micro_count_ GUARDED_BY(mu_) = 0;
  FatState fat_ GUARDED_BY(mu_);
  dmu::SharedBlock header_ GUARDED_BY(mu_);  // block 0 in the fat form, as last written
};

}  // namespace poolfs::core::zap
