// Leaf: one leaf block of a fat zap, decoded for reading and editing in
// place.
//
// A leaf holds the entries whose 46-bit name hash h starts with its
// `depth`-bit `prefix`. Layout (LeafHeaderPhys; core/doc/on-disk-format.md
// section 11.4):
//
//   [0, 64)                header
//   [64, 64 + 2*count)     slots: u16 offsets of the entries, in key order
//   [.., heap)             free gap (zeros)
//   [heap, block size)     the entry heap: entries and the holes left by
//                          removed ones (zeros)
//
// Keeping the slots in key order is what makes readdir cookies work: a leaf
// lists its entries in (h, cd) order with no sorting, and a lookup finds the
// run of entries with one h by search (interpolation, then bisection: the
// keys are hashes), then compares names. An insert that finds no room in
// the gap compacts the heap first (Fits says whether the entry fits even
// after compaction).
//
// The block's bytes are a dmu::SharedBlock: a change edits them in place
// when they are the dirty copy of the txg it is made in (or nobody's), and
// Commit hands them to the dnode without a copy (shared_block.h).
// BeginEdit(t) names that txg; every change after it copies the bytes
// first if an older txg's dirty copy is them.
//
// Thread safety: a value; one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dmu/shared_block.h"
#include "poolfs/status.h"
#include "poolfs/types.h"
#include "zap/zap_phys.h"

namespace poolfs::core::zap {

class Leaf {
 public:
  // An empty leaf stored at `block`, for the `depth`-bit `prefix`.
  Leaf(const BlockContext& ctx, uint64_t block, uint64_t prefix, uint8_t depth);

  // Decodes the bytes of `block`. Refuses with Corruption naming the zap
  // object and block: a bad size or magic; another object or block
  // number; a depth past kMaxDepth or a prefix that does not fit it; slots or
  // entries outside the block or overlapping the heap's size; keys not
  // strictly increasing, at or past 2^62, or whose hash lacks the prefix; a
  // name length of 0; a name a directory refuses; nonzero reserved fields.
  static Result<Leaf> Decode(std::string bytes, const BlockContext& ctx, uint64_t block);

  uint64_t block() const { return block_; }
  uint64_t prefix() const { return prefix_; }
  uint8_t depth() const { return depth_; }
  uint32_t count() const { return count_; }

  uint64_t KeyAt(uint32_t i) const;
  std::string_view NameAt(uint32_t i) const;
  Value ValueAt(uint32_t i) const;
  // The first slot whose key is >= key (count() when none). Interpolates
  // first (at most kInterpolationProbes probes), then bisects.
  static constexpr int kInterpolationProbes = 3;
  uint32_t LowerBound(uint64_t key) const;
  // The slot of `name`, whose hash is h, or count() when it is absent. If
  // free_cd is given, it gets the smallest cd that no entry with hash h
  // uses (kMaxCd + 1 when all are taken).
  uint32_t Find(uint64_t h, std::string_view name, uint32_t* free_cd) const;

  // True when an entry with a name of name_len bytes fits (after
  // compaction if need be).
  bool Fits(size_t name_len) const;
  // The changes that follow are made in txg t.
  void BeginEdit(Txg t) { edit_txg_ = t; }
  // Adds an entry. The key must be absent and within the prefix, and Fits.
  void Insert(uint64_t key, std::string_view name, const Value& v);
  void Erase(uint32_t slot);
  void SetValue(uint32_t slot, const Value& v);
  // Splits the leaf one bit deeper: entries whose next hash bit is 1 move to
  // the returned leaf, stored at new_block; this one keeps the rest.
  Leaf SplitOff(uint64_t new_block);

  // The block with its header brought up to date, for ObjectSet::PutBlock.
  dmu::SharedBlock& Encoded();

 private:
  Leaf() = default;
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(buf_.Edit(edit_txg_).data()); }
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(buf_.data()); }
  uint32_t SlotOffset(uint32_t i) const;
  uint32_t EntrySizeAt(uint32_t offset) const;
  uint32_t Gap() const { return heap_ - uint32_t(kLeafHeaderSize + 2 * count_); }
  uint32_t Holes() const { return uint32_t(buf_.size()) - heap_ - live_bytes_; }
  // Rewrites the heap with no holes, entries in slot order.
  void Compact();
  // Appends an entry whose key is above every key in the leaf.
  void Append(uint64_t key, std::string_view name, const Value& v);

  BlockContext ctx_;
  uint64_t block_ = 0;
  uint64_t prefix_ = 0;
  uint8_t depth_ = 0;
  uint32_t count_ = 0;
  uint32_t heap_ = 0;
  uint32_t live_bytes_ = 0;  // bytes of live entries in the heap
  dmu::SharedBlock buf_;
  Txg edit_txg_;  // the txg changes are made in (BeginEdit)
};

}  // namespace poolfs::core::zap
