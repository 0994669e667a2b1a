// The fat form: block 0 is the header (and the pointer table while it fits),
// leaves hold the entries, an external table takes over when the table
// outgrows block 0. Zap keeps the header fields and the whole table decoded
// in fat_; a change reads the one leaf it needs, edits it (splitting and
// doubling the table as needed) in a Change, and Commit writes whole blocks.
#include <algorithm>
#include <unordered_set>

#include "util/check.h"
#include "util/endian.h"
#include "zap/zap.h"

namespace poolfs::core::zap {

using util::GetLE32;
using util::GetLE64;
using util::PutLE32;
using util::PutLE64;

namespace {

// The pointer table may grow to 64 slots per leaf (or 2^16 slots, 512 KiB,
// for a small zap). With a random salted hash the table stays within a few
// slots per leaf; only names whose hashes agree on many leading bits (a
// forced hash) would need more, and they get NoSpace instead of a table of
// hundreds of MiB.
constexpr uint64_t kTableSlotsPerLeaf = 64;
constexpr uint64_t kSmallTableSlots = uint64_t{1} << 16;

bool AllZero(const uint8_t* p, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (p[i] != 0) return false;
  return true;
}

}  // namespace

Status Zap::LoadFat(std::string block, uint64_t object_length) {
  POOLFS_RETURN_IF_ERROR(CheckBlock(block, ctx_, 0, kFatMagic, "fat header"));
  auto bad = [&](const std::string& what) {
    return Status::Corruption(ctx_.Where(0, "fat header") + ": " + what);
  };
  const auto* p = reinterpret_cast<const uint8_t*>(block.data());
  const uint32_t bs = ctx_.block_size;
  uint64_t object = GetLE64(p + offsetof(FatHeaderPhys, object));
  if (object != ctx_.object) return bad("belongs to object " + std::to_string(object));
  if (p[offsetof(FatHeaderPhys, version)] != kFormatVersion)
    return bad("version " + std::to_string(p[offsetof(FatHeaderPhys, version)]));
  if (!AllZero(p, offsetof(FatHeaderPhys, reserved0), offsetof(FatHeaderPhys, count)) ||
      !AllZero(p, offsetof(FatHeaderPhys, reserved1), kFatHeaderSize))
    return bad("nonzero reserved field");
  FatState f;
  f.depth = p[offsetof(FatHeaderPhys, depth)];
  f.count = GetLE64(p + offsetof(FatHeaderPhys, count));
  f.next_block = GetLE64(p + offsetof(FatHeaderPhys, next_block));
  f.leaves = GetLE64(p + offsetof(FatHeaderPhys, leaves));
  f.table_block = GetLE64(p + offsetof(FatHeaderPhys, table_block));
  f.table_blocks = GetLE64(p + offsetof(FatHeaderPhys, table_blocks));
  if (f.depth > kMaxDepth) return bad("table depth " + std::to_string(f.depth) + " past 26");
  // The highest block handed out is always written, so the object ends there.
  if (object_length % bs != 0 || f.next_block != object_length / bs || f.next_block < 2)
    return bad("next block " + std::to_string(f.next_block) + ", but the object is " +
               std::to_string(object_length) + " bytes");
  const uint64_t size = uint64_t{1} << f.depth;
  if (size <= EmbeddedTableCapacity(bs)) {
    if (f.table_block != 0 || f.table_blocks != 0)
      return bad("an external table for a table that fits in the header");
    f.table.resize(size);
    for (uint64_t i = 0; i < size; i++) f.table[i] = GetLE64(p + kFatHeaderSize + 8 * i);
    if (!AllZero(p, kFatHeaderSize + 8 * size, bs)) return bad("bytes after the table");
  } else {
    const uint64_t per = TablePerBlock(bs), need = (size + per - 1) / per;
    if (f.table_blocks != need || f.table_block == 0 || f.table_block >= f.next_block ||
        f.table_blocks > f.next_block - f.table_block)
      return bad("external table of " + std::to_string(f.table_blocks) + " blocks at " +
                 std::to_string(f.table_block) + " (a depth " + std::to_string(f.depth) +
                 " table needs " + std::to_string(need) + ")");
    if (!AllZero(p, kFatHeaderSize, bs)) return bad("bytes after the header");
    for (uint64_t i = 0; i < need; i++) {
      const uint64_t blk = f.table_block + i;
      POOLFS_ASSIGN_OR_RETURN(std::string tb, ReadBlock(blk, "table"));
      POOLFS_RETURN_IF_ERROR(CheckBlock(tb, ctx_, blk, kTableMagic, "table"));
      const auto* q = reinterpret_cast<const uint8_t*>(tb.data());
      auto tbad = [&](const std::string& what) {
        return Status::Corruption(ctx_.Where(blk, "table") + ": " + what);
      };
      const uint64_t first = i * per, count = std::min(per, size - first);
      if (GetLE64(q + offsetof(TableHeaderPhys, object)) != ctx_.object)
        return tbad("belongs to another object");
      if (GetLE64(q + offsetof(TableHeaderPhys, block)) != blk)
        return tbad("says it is block " +
                    std::to_string(GetLE64(q + offsetof(TableHeaderPhys, block))));
      if (q[offsetof(TableHeaderPhys, depth)] != f.depth)
        return tbad("depth " + std::to_string(q[offsetof(TableHeaderPhys, depth)]) +
                    ", the header's is " + std::to_string(f.depth));
      if (GetLE32(q + offsetof(TableHeaderPhys, count)) != count ||
          GetLE64(q + offsetof(TableHeaderPhys, first_index)) != first)
        return tbad("holds the wrong part of the table");
      if (!AllZero(q, offsetof(TableHeaderPhys, reserved0), offsetof(TableHeaderPhys, count)) ||
          !AllZero(q, offsetof(TableHeaderPhys, reserved1), kTableHeaderSize) ||
          !AllZero(q, kTableHeaderSize + 8 * count, bs))
        return tbad("nonzero reserved bytes");
      for (uint64_t j = 0; j < count; j++) f.table.push_back(GetLE64(q + kTableHeaderSize + 8 * j));
    }
  }
  POOLFS_RETURN_IF_ERROR(CheckTable(f));
  micro_form_ = false;
  fat_ = std::move(f);
  header_ = dmu::SharedBlock(std::move(block));
  return Status::Ok();
}

Status Zap::CheckTable(const FatState& f) const {
  // Each leaf must own one aligned run of 2^k slots; ReadLeaf then checks
  // that the leaf's depth is depth - k.
  const auto& t = f.table;
  std::unordered_set<uint64_t> seen;
  seen.reserve(std::min<uint64_t>(f.leaves, t.size()));
  for (uint64_t i = 0; i < t.size();) {
    const uint64_t blk = t[i];
    uint64_t j = i + 1;
    while (j < t.size() && t[j] == blk) j++;
    const uint64_t len = j - i;
    auto bad = [&](const std::string& what) {
      const std::string where =
          f.table_block == 0
              ? ctx_.Where(0, "fat header")
              : ctx_.Where(f.table_block + i / TablePerBlock(ctx_.block_size), "table");
      return Status::Corruption(where + ": slots " + std::to_string(i) + ".." +
                                std::to_string(j - 1) + " point at block " + std::to_string(blk) +
                                ", " + what);
    };
    if ((len & (len - 1)) != 0 || i % len != 0) return bad("not an aligned power-of-two run");
    if (blk == 0 || blk >= f.next_block ||
        (f.table_block != 0 && blk >= f.table_block && blk < f.table_block + f.table_blocks))
      return bad("which is not a leaf block");
    if (!seen.insert(blk).second) return bad("which other slots point at too");
    i = j;
  }
  if (seen.size() != f.leaves)
    return Status::Corruption(ctx_.Where(0, "fat header") + ": " + std::to_string(f.leaves) +
                              " leaves, the table points at " + std::to_string(seen.size()));
  return Status::Ok();
}

std::string Zap::EncodeFatHeader() const {
  std::string b(ctx_.block_size, '\0');
  auto* p = reinterpret_cast<uint8_t*>(b.data());
  PutLE64(p + offsetof(FatHeaderPhys, magic), kFatMagic);
  PutLE64(p + offsetof(FatHeaderPhys, object), ctx_.object);
  PutLE64(p + offsetof(FatHeaderPhys, salt), salt_);
  p[offsetof(FatHeaderPhys, version)] = kFormatVersion;
  p[offsetof(FatHeaderPhys, depth)] = fat_.depth;
  PutLE64(p + offsetof(FatHeaderPhys, count), fat_.count);
  PutLE64(p + offsetof(FatHeaderPhys, next_block), fat_.next_block);
  PutLE64(p + offsetof(FatHeaderPhys, leaves), fat_.leaves);
  PutLE64(p + offsetof(FatHeaderPhys, table_block), fat_.table_block);
  PutLE64(p + offsetof(FatHeaderPhys, table_blocks), fat_.table_blocks);
  if (fat_.table_block == 0)
    for (size_t i = 0; i < fat_.table.size(); i++)
      PutLE64(p + kFatHeaderSize + 8 * i, fat_.table[i]);
  return b;
}

std::string Zap::EncodeTableBlock(uint64_t i) const {
  const uint64_t per = TablePerBlock(ctx_.block_size), first = i * per;
  const uint64_t count = std::min<uint64_t>(per, fat_.table.size() - first);
  std::string b(ctx_.block_size, '\0');
  auto* p = reinterpret_cast<uint8_t*>(b.data());
  PutLE64(p + offsetof(TableHeaderPhys, magic), kTableMagic);
  PutLE64(p + offsetof(TableHeaderPhys, object), ctx_.object);
  PutLE64(p + offsetof(TableHeaderPhys, block), fat_.table_block + i);
  p[offsetof(TableHeaderPhys, depth)] = fat_.depth;
  PutLE32(p + offsetof(TableHeaderPhys, count), uint32_t(count));
  PutLE64(p + offsetof(TableHeaderPhys, first_index), first);
  for (uint64_t j = 0; j < count; j++) PutLE64(p + kTableHeaderSize + 8 * j, fat_.table[first + j]);
  return b;
}

std::string Zap::SlotWhere(uint64_t index) const {
  if (fat_.table_block == 0) return ctx_.Where(0, "fat header");
  return ctx_.Where(fat_.table_block + index / TablePerBlock(ctx_.block_size), "table");
}

uint64_t Zap::TableIndex(uint64_t h) const {
  return fat_.depth == 0 ? 0 : h >> (kHashBits - fat_.depth);
}

Result<std::shared_ptr<const Leaf>> Zap::ReadLeaf(uint64_t index) const {
  const auto& t = fat_.table;
  const uint64_t blk = t[index];
  std::shared_ptr<const Leaf> ref = leaf_cache_ ? leaf_cache_->Find(owner_, blk) : nullptr;
  if (!ref) {
    POOLFS_ASSIGN_OR_RETURN(std::string bytes, ReadBlock(blk, "leaf"));
    POOLFS_ASSIGN_OR_RETURN(Leaf decoded, Leaf::Decode(std::move(bytes), ctx_, blk));
    ref = leaf_cache_ ? leaf_cache_->Put(owner_, std::move(decoded))
                      : std::make_shared<const Leaf>(std::move(decoded));
  }
  // The table changes only through this Zap, which keeps its cached leaves
  // in step with it; checked on every read all the same (it is cheap).
  const Leaf& leaf = *ref;
  const uint8_t d = fat_.depth, ld = leaf.depth();
  auto bad = [&](const std::string& what) {
    return Status::Corruption(ctx_.Where(blk, "leaf") + ": prefix " +
                              std::to_string(leaf.prefix()) + " of depth " + std::to_string(ld) +
                              ", " + what);
  };
  if (ld > d || (index >> (d - ld)) != leaf.prefix())
    return bad("but table slot " + std::to_string(index) + " (" + SlotWhere(index) +
               ") points at it");
  // CheckTable made every leaf's slots one aligned run: its ends tell its length.
  const uint64_t span = uint64_t{1} << (d - ld), first = leaf.prefix() << (d - ld);
  if (t[first] != blk || t[first + span - 1] != blk || (first > 0 && t[first - 1] == blk) ||
      (first + span < t.size() && t[first + span] == blk))
    return bad("but the table (" + SlotWhere(first) + ") does not point at it from exactly its " +
               std::to_string(span) + " slots");
  return ref;
}

Result<Value> Zap::FatLookup(uint64_t h, std::string_view name) const {
  POOLFS_ASSIGN_OR_RETURN(std::shared_ptr<const Leaf> leaf, ReadLeaf(TableIndex(h)));
  uint32_t slot = leaf->Find(h, name, nullptr);
  if (slot == leaf->count()) return NoSuchName();
  return leaf->ValueAt(slot);
}

Leaf Zap::LeafToEdit(dmu::Tx& tx, std::shared_ptr<const Leaf> ref) {
  // The cache's reference and ours: no reader can be looking at it (they
  // hold mu_ shared while they do, a change holds it alone), and Commit
  // puts the edited leaf back or drops the entry. The Cached object that
  // holds it was not made const, so taking it is allowed. A copy copies
  // the bytes, so readers of the cached one never see it change.
  Leaf leaf = leaf_cache_ && ref.use_count() == 2 ? std::move(const_cast<Leaf&>(*ref)) : Leaf(*ref);
  leaf.BeginEdit(tx.txg());
  return leaf;
}

Status Zap::FatAdd(dmu::Tx& tx, uint64_t h, std::string_view name, const Value& v) {
  POOLFS_ASSIGN_OR_RETURN(std::shared_ptr<const Leaf> ref, ReadLeaf(TableIndex(h)));
  uint32_t cd;
  if (ref->Find(h, name, &cd) != ref->count())
    return Status::AlreadyExists(ctx_.Where(ref->block(), "leaf") + ": the name exists");
  if (cd > kMaxCd)
    return Status::NoSpace(ctx_.Where(ref->block(), "leaf") +
                           ": 65,536 names already share this name's hash");
  Leaf leaf = LeafToEdit(tx, std::move(ref));
  Change c;
  c.leaves.emplace(leaf.block(), std::move(leaf));
  Status s = FatInsert(c, MakeKey(h, cd), name, v);
  if (s.ok()) fat_.count++;
  // Splits done before a failed insert leave a valid zap: write them too.
  Status w = Commit(tx, c, true);
  return w.ok() ? s : w;
}

Status Zap::FatRemove(dmu::Tx& tx, uint64_t h, std::string_view name) {
  POOLFS_ASSIGN_OR_RETURN(std::shared_ptr<const Leaf> ref, ReadLeaf(TableIndex(h)));
  uint32_t slot = ref->Find(h, name, nullptr);
  if (slot == ref->count()) return NoSuchName();
  if (fat_.count == 0)
    return Status::Corruption(ctx_.Where(0, "fat header") + ": count 0, but " +
                              ctx_.Where(ref->block(), "leaf") + " has entries");
  if (fat_.count == 1) return Downgrade(tx, ref->block());
  Leaf leaf = LeafToEdit(tx, std::move(ref));
  leaf.Erase(slot);
  fat_.count--;
  Change c;
  c.leaves.emplace(leaf.block(), std::move(leaf));
  return Commit(tx, c, true);
}

Status Zap::Downgrade(dmu::Tx& tx, uint64_t last_leaf) {
  // Every other leaf must be empty, as the count says: a damaged count must
  // not make entries vanish. Each leaf owns one run of table slots.
  std::vector<uint64_t> leaves;
  for (uint64_t i = 0; i < fat_.table.size(); i++) {
    if (i > 0 && fat_.table[i] == fat_.table[i - 1]) continue;
    POOLFS_ASSIGN_OR_RETURN(std::shared_ptr<const Leaf> leaf, ReadLeaf(i));
    const uint32_t expected = leaf->block() == last_leaf ? 1 : 0;
    if (leaf->count() != expected)
      return Status::Corruption(ctx_.Where(0, "fat header") + ": count 1, but " +
                                ctx_.Where(leaf->block(), "leaf") + " has " +
                                std::to_string(leaf->count()) + " entries");
    leaves.push_back(leaf->block());
  }
  // Block 0 alone, in the micro form with the same salt; the leaves and
  // the table are freed.
  dmu::SharedBlock micro(EmptyMicroBlock(ctx_, salt_));
  POOLFS_RETURN_IF_ERROR(os_->Truncate(tx, id_, ctx_.block_size));
  POOLFS_RETURN_IF_ERROR(PutBlock(tx, 0, micro));
  if (leaf_cache_)
    for (uint64_t blk : leaves) leaf_cache_->Drop(owner_, blk);
  fat_ = FatState();
  header_ = dmu::SharedBlock();
  micro_ = std::move(micro);
  micro_form_ = true;
  micro_count_ = 0;
  return Status::Ok();
}

Status Zap::FatUpdate(dmu::Tx& tx, uint64_t h, std::string_view name, const Value& v) {
  POOLFS_ASSIGN_OR_RETURN(std::shared_ptr<const Leaf> ref, ReadLeaf(TableIndex(h)));
  uint32_t slot = ref->Find(h, name, nullptr);
  if (slot == ref->count()) return NoSuchName();
  Leaf leaf = LeafToEdit(tx, std::move(ref));
  leaf.SetValue(slot, v);
  Change c;
  c.leaves.emplace(leaf.block(), std::move(leaf));
  return Commit(tx, c, false);
}

Status Zap::FatIterate(uint64_t cookie, size_t n, std::vector<Entry>* out) const {
  while (out->size() < n && cookie < kKeyLimit) {
    POOLFS_ASSIGN_OR_RETURN(std::shared_ptr<const Leaf> ref, ReadLeaf(TableIndex(KeyHash(cookie))));
    const Leaf& leaf = *ref;
    for (uint32_t i = leaf.LowerBound(cookie); i < leaf.count() && out->size() < n; i++)
      out->push_back(Entry{std::string(leaf.NameAt(i)), leaf.ValueAt(i), leaf.KeyAt(i) + 1});
    // On to the leaf after this one's range of h (always past the cookie).
    const uint64_t next = (leaf.prefix() + 1) << (kHashBits - leaf.depth());
    if (next >= (uint64_t{1} << kHashBits)) break;
    cookie = MakeKey(next, 0);
  }
  return Status::Ok();
}

Status Zap::FatInsert(Change& c, uint64_t key, std::string_view name, const Value& v) {
  const uint64_t h = KeyHash(key);
  for (;;) {
    const uint64_t blk = fat_.table[TableIndex(h)];
    auto it = c.leaves.find(blk);
    POOLFS_CHECK(it != c.leaves.end());  // the leaf read for h, or one split off it
    Leaf& leaf = it->second;
    if (leaf.Fits(name.size())) {
      leaf.Insert(key, name, v);
      return Status::Ok();
    }
    // Splitting helps only if some entry's hash differs from h within the
    // first kMaxDepth bits (all of them share the leaf's prefix with h).
    uint64_t diff = 0;
    for (uint32_t i = 0; i < leaf.count(); i++) diff |= KeyHash(leaf.KeyAt(i)) ^ h;
    const int shared = diff == 0 ? kHashBits : kHashBits - 1 - (63 - __builtin_clzll(diff));
    if (shared >= kMaxDepth)
      return Status::NoSpace(ctx_.Where(blk, "leaf") +
                             ": full of names whose hashes share their first 26 bits");
    if (leaf.depth() == fat_.depth) {
      if (fat_.table.size() * 2 > std::max(kSmallTableSlots, kTableSlotsPerLeaf * fat_.leaves))
        return Status::NoSpace(ctx_.Where(blk, "leaf") + ": full of names whose hashes share " +
                               std::to_string(shared) + " leading bits; the table would grow to " +
                               std::to_string(fat_.table.size() * 2) + " slots for " +
                               std::to_string(fat_.leaves) + " leaves");
      DoubleTable(c);
    }
    SplitLeaf(c, leaf);
  }
}

void Zap::DoubleTable(Change& c) {
  POOLFS_CHECK_LT(fat_.depth, kMaxDepth);
  std::vector<uint64_t> t(fat_.table.size() * 2);
  for (size_t i = 0; i < fat_.table.size(); i++) t[2 * i] = t[2 * i + 1] = fat_.table[i];
  fat_.table.swap(t);
  fat_.depth++;
  c.embedded_table = true;  // the header's depth changed: encode it afresh
  if (fat_.table.size() > EmbeddedTableCapacity(ctx_.block_size)) {
    // A new external table past every used block; the old one is freed.
    if (fat_.table_block != 0) c.freed.emplace_back(fat_.table_block, fat_.table_blocks);
    const uint64_t per = TablePerBlock(ctx_.block_size);
    fat_.table_blocks = (fat_.table.size() + per - 1) / per;
    fat_.table_block = fat_.next_block;
    fat_.next_block += fat_.table_blocks;
    c.table_moved = true;
    c.table_blocks.clear();
  }
}

void Zap::SplitLeaf(Change& c, Leaf& leaf) {
  const uint64_t nb = fat_.next_block++;
  Leaf hi = leaf.SplitOff(nb);
  fat_.leaves++;
  const uint8_t shift = uint8_t(fat_.depth - hi.depth());
  const uint64_t first = hi.prefix() << shift, span = uint64_t{1} << shift;
  std::fill(fat_.table.begin() + first, fat_.table.begin() + first + span, nb);
  if (fat_.table_block == 0) c.embedded_table = true;
  if (fat_.table_block != 0 && !c.table_moved) {
    const uint64_t per = TablePerBlock(ctx_.block_size);
    for (uint64_t b = first / per; b <= (first + span - 1) / per; b++) c.table_blocks.insert(b);
  }
  c.leaves.emplace(nb, std::move(hi));
}

Status Zap::Commit(dmu::Tx& tx, Change& c, bool header) {
  Status s = WriteChange(tx, c, header);
  if (leaf_cache_) {
    for (auto& [blk, leaf] : c.leaves) {
      if (s.ok()) {
        leaf_cache_->Put(owner_, std::move(leaf));
      } else {
        leaf_cache_->Drop(owner_, blk);  // the dmu may hold either version
      }
    }
  }
  return s;
}

Status Zap::WriteChange(dmu::Tx& tx, Change& c, bool header) {
  for (auto& [blk, leaf] : c.leaves) POOLFS_RETURN_IF_ERROR(PutBlock(tx, blk, leaf.Encoded()));
  if (fat_.table_block != 0) {
    if (c.table_moved) {
      for (uint64_t i = 0; i < fat_.table_blocks; i++)
        POOLFS_RETURN_IF_ERROR(WriteBlock(tx, fat_.table_block + i, EncodeTableBlock(i)));
    } else {
      for (uint64_t i : c.table_blocks)
        POOLFS_RETURN_IF_ERROR(WriteBlock(tx, fat_.table_block + i, EncodeTableBlock(i)));
    }
  }
  if (header) {
    if (header_.empty() || c.table_moved || c.embedded_table) {
      header_.Reset(EncodeFatHeader());
    } else {
      // Only the counts changed: patch them into the block as last written.
      auto* p = reinterpret_cast<uint8_t*>(header_.Edit(tx.txg()).data());
      PutLE64(p + offsetof(FatHeaderPhys, count), fat_.count);
      PutLE64(p + offsetof(FatHeaderPhys, next_block), fat_.next_block);
      PutLE64(p + offsetof(FatHeaderPhys, leaves), fat_.leaves);
    }
    POOLFS_RETURN_IF_ERROR(PutBlock(tx, 0, header_));
  }
  const uint64_t bs = ctx_.block_size;
  for (const auto& [first, n] : c.freed) {
    Status s = os_->Punch(tx, id_, first * bs, n * bs);
    if (!s.ok()) return s.WithContext(ctx_.Where(first, "old table"));
  }
  return Status::Ok();
}

}  // namespace poolfs::core::zap
