// The micro form: block 0 holds a header and up to MicroCapacity fixed
// 64-byte entries sorted by key. Zap keeps the block in memory (micro_),
// hands it to the dmu as the txg's dirty copy, then edits it in place
// (dmu/shared_block.h).
#include <cstring>

#include "util/check.h"
#include "util/endian.h"
#include "zap/zap.h"

namespace poolfs::core::zap {

using util::GetLE32;
using util::GetLE64;
using util::PutLE32;
using util::PutLE64;

namespace {

uint8_t* EntryAt(std::string& block, uint32_t i) {
  return reinterpret_cast<uint8_t*>(block.data()) + kMicroHeaderSize + kMicroEntrySize * i;
}
const uint8_t* EntryAt(const std::string& block, uint32_t i) {
  return reinterpret_cast<const uint8_t*>(block.data()) + kMicroHeaderSize + kMicroEntrySize * i;
}

void SetCount(std::string& block, uint32_t count) {
  PutLE32(reinterpret_cast<uint8_t*>(block.data()) + offsetof(MicroHeaderPhys, count), count);
}

}  // namespace

std::string Zap::EmptyMicroBlock(const BlockContext& ctx, uint64_t salt) {
  std::string b(ctx.block_size, '\0');
  auto* p = reinterpret_cast<uint8_t*>(b.data());
  PutLE64(p + offsetof(MicroHeaderPhys, magic), kMicroMagic);
  PutLE64(p + offsetof(MicroHeaderPhys, object), ctx.object);
  PutLE64(p + offsetof(MicroHeaderPhys, salt), salt);
  p[offsetof(MicroHeaderPhys, version)] = kFormatVersion;
  return b;
}

Status Zap::LoadMicro(std::string block) {
  POOLFS_RETURN_IF_ERROR(CheckBlock(block, ctx_, 0, kMicroMagic, "micro block"));
  auto bad = [&](const std::string& what) {
    return Status::Corruption(ctx_.Where(0, "micro block") + ": " + what);
  };
  const auto* p = reinterpret_cast<const uint8_t*>(block.data());
  uint64_t object = GetLE64(p + offsetof(MicroHeaderPhys, object));
  if (object != ctx_.object) return bad("belongs to object " + std::to_string(object));
  if (p[offsetof(MicroHeaderPhys, version)] != kFormatVersion)
    return bad("version " + std::to_string(p[offsetof(MicroHeaderPhys, version)]));
  for (size_t i = offsetof(MicroHeaderPhys, reserved0); i < offsetof(MicroHeaderPhys, count); i++)
    if (p[i] != 0) return bad("nonzero reserved field");
  for (size_t i = offsetof(MicroHeaderPhys, reserved1); i < kMicroHeaderSize; i++)
    if (p[i] != 0) return bad("nonzero reserved field");
  uint32_t count = GetLE32(p + offsetof(MicroHeaderPhys, count));
  const uint32_t cap = MicroCapacity(ctx_.block_size);
  if (count > cap) return bad(std::to_string(count) + " entries, room for " + std::to_string(cap));
  uint64_t prev = 0;
  for (uint32_t i = 0; i < count; i++) {
    const uint8_t* e = EntryAt(block, i);
    const std::string where = "entry " + std::to_string(i);  // Open only: not hot
    uint64_t key = GetLE64(e);
    if (key >= kKeyLimit) return bad(where + " has a key past 2^62");
    if (i > 0 && key <= prev) return bad(where + " is out of key order");
    prev = key;
    uint32_t len = e[offsetof(MicroEntryPhys, name_len)];
    if (len == 0 || len > kMicroMaxName)
      return bad(where + " has a name length of " + std::to_string(len));
    std::string_view name(reinterpret_cast<const char*>(e + offsetof(MicroEntryPhys, name)), len);
    for (size_t j = offsetof(MicroEntryPhys, name) + len; j < kMicroEntrySize; j++)
      if (e[j] != 0) return bad(where + " has bytes after its name");
    if (ctx_.directory && BadDirectoryName(name))
      return bad(where + " has a name with '/' or NUL in a directory");
    if (KeyHash(key) != Hash(name)) return bad(where + " has a key that is not its name's hash");
  }
  for (size_t j = kMicroHeaderSize + kMicroEntrySize * count; j < block.size(); j++)
    if (block[j] != 0) return bad("bytes after the last entry");
  micro_form_ = true;
  micro_ = dmu::SharedBlock(std::move(block));
  micro_count_ = count;
  return Status::Ok();
}

uint64_t Zap::MicroKeyAt(uint32_t i) const { return LoadLE64(EntryAt(micro_.bytes(), i)); }

std::string_view Zap::MicroNameAt(uint32_t i) const {
  const uint8_t* e = EntryAt(micro_.bytes(), i);
  return {reinterpret_cast<const char*>(e + offsetof(MicroEntryPhys, name)),
          e[offsetof(MicroEntryPhys, name_len)]};
}

Value Zap::MicroValueAt(uint32_t i) const {
  const uint8_t* e = EntryAt(micro_.bytes(), i);
  return Value{GetLE64(e + offsetof(MicroEntryPhys, object)),
               GetLE64(e + offsetof(MicroEntryPhys, attrs))};
}

uint32_t Zap::MicroLowerBound(uint64_t key) const {
  uint32_t lo = 0, hi = micro_count_;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (MicroKeyAt(mid) < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

uint32_t Zap::MicroFind(uint64_t h, std::string_view name, uint32_t* free_cd) const {
  uint32_t found = micro_count_, cd = 0;
  for (uint32_t i = MicroLowerBound(MakeKey(h, 0)); i < micro_count_; i++) {
    uint64_t key = MicroKeyAt(i);
    if (KeyHash(key) != h) break;
    if (KeyCd(key) == cd) cd++;  // cds of one h are in order: the first gap is free
    if (found == micro_count_ && MicroNameAt(i) == name) found = i;
  }
  if (free_cd) *free_cd = cd;
  return found;
}

Status Zap::MicroAdd(dmu::Tx& tx, uint64_t h, std::string_view name, const Value& v) {
  uint32_t cd;
  if (MicroFind(h, name, &cd) != micro_count_)
    return Status::AlreadyExists(ctx_.Where(0, "micro block") + ": the name exists");
  if (name.size() > kMicroMaxName || micro_count_ == MicroCapacity(ctx_.block_size)) {
    POOLFS_RETURN_IF_ERROR(Upgrade(tx));
    return FatAdd(tx, h, name, v);
  }
  // A micro zap has fewer entries than cds, so cd is always free.
  const uint64_t key = MakeKey(h, cd);
  const uint32_t pos = MicroLowerBound(key);
  // Handed to the dmu first, then edited: a refusal leaves it unchanged.
  std::string& next = micro_.Edit(tx.txg());
  POOLFS_RETURN_IF_ERROR(PutBlock(tx, 0, micro_));
  uint8_t* e = EntryAt(next, pos);
  std::memmove(e + kMicroEntrySize, e, kMicroEntrySize * size_t{micro_count_ - pos});
  std::memset(e, 0, kMicroEntrySize);
  PutLE64(e + offsetof(MicroEntryPhys, key), key);
  PutLE64(e + offsetof(MicroEntryPhys, object), v.object);
  PutLE64(e + offsetof(MicroEntryPhys, attrs), v.attrs);
  e[offsetof(MicroEntryPhys, name_len)] = uint8_t(name.size());
  std::memcpy(e + offsetof(MicroEntryPhys, name), name.data(), name.size());
  SetCount(next, micro_count_ + 1);
  micro_count_++;
  return Status::Ok();
}

Status Zap::MicroRemove(dmu::Tx& tx, uint32_t slot) {
  std::string& next = micro_.Edit(tx.txg());
  POOLFS_RETURN_IF_ERROR(PutBlock(tx, 0, micro_));
  uint8_t* e = EntryAt(next, slot);
  std::memmove(e, e + kMicroEntrySize, kMicroEntrySize * size_t{micro_count_ - slot - 1});
  std::memset(EntryAt(next, micro_count_ - 1), 0, kMicroEntrySize);
  SetCount(next, micro_count_ - 1);
  micro_count_--;
  return Status::Ok();
}

Status Zap::MicroUpdate(dmu::Tx& tx, uint32_t slot, const Value& v) {
  std::string& next = micro_.Edit(tx.txg());
  POOLFS_RETURN_IF_ERROR(PutBlock(tx, 0, micro_));
  uint8_t* e = EntryAt(next, slot);
  PutLE64(e + offsetof(MicroEntryPhys, object), v.object);
  PutLE64(e + offsetof(MicroEntryPhys, attrs), v.attrs);
  return Status::Ok();
}

void Zap::MicroIterate(uint64_t cookie, size_t n, std::vector<Entry>* out) const {
  for (uint32_t i = MicroLowerBound(cookie); i < micro_count_ && out->size() < n; i++) {
    uint64_t key = MicroKeyAt(i);
    out->push_back(Entry{std::string(MicroNameAt(i)), MicroValueAt(i), key + 1});
  }
}

Status Zap::Upgrade(dmu::Tx& tx) {
  FatState fat;
  fat.depth = 0;
  fat.count = micro_count_;
  fat.next_block = 2;
  fat.leaves = 1;
  fat.table = {1};
  fat_ = std::move(fat);
  micro_form_ = false;
  Change c;
  c.leaves.emplace(1, Leaf(ctx_, 1, 0, 0));
  Status s;
  for (uint32_t i = 0; i < micro_count_ && s.ok(); i++)
    s = FatInsert(c, MicroKeyAt(i), MicroNameAt(i), MicroValueAt(i));
  if (s.ok()) s = Commit(tx, c, true);
  if (!s.ok()) {
    // Nothing was written (an insert failed) or the dmu refused a whole-block
    // write; either way block 0 is still the micro block we hold.
    fat_ = FatState();
    header_ = dmu::SharedBlock();
    micro_form_ = true;
    return s;
  }
  micro_ = dmu::SharedBlock();
  micro_count_ = 0;
  return Status::Ok();
}

}  // namespace poolfs::core::zap
