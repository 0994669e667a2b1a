#include "zap/zap.h"

#include <cstring>
#include <random>

#include "util/checksum.h"
#include "util/endian.h"

namespace poolfs::core::zap {

namespace {

bool IsZapType(dmu::ObjectType t) {
  return t == dmu::ObjectType::kZap || t == dmu::ObjectType::kDirectory;
}

bool GoodBlockSize(uint32_t bs) {
  return bs >= kMinBlockSize && bs <= kMaxBlockSize && (bs & (bs - 1)) == 0;
}

uint64_t RandomSalt() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t s;
  do s = rng();
  while (s == 0);
  return s;
}

}  // namespace

uint64_t DefaultHash(uint64_t salt, std::string_view name) {
  uint8_t buf[8 + kMaxNameLen];
  util::PutLE64(buf, salt);
  size_t len = std::min(name.size(), kMaxNameLen);
  std::memcpy(buf + 8, name.data(), len);
  return util::Xxh3_64(buf, 8 + len);
}

Zap::Zap(dmu::ObjectSet* os, ObjectId id, const BlockContext& ctx, uint64_t salt,
         const ZapOptions& options)
    : os_(os),
      id_(id),
      ctx_(ctx),
      salt_(salt),
      hash_(options.hash ? options.hash : &DefaultHash),
      leaf_cache_(options.leaf_cache),
      owner_(LeafCache::NewOwner()) {}

Zap::~Zap() = default;

uint64_t Zap::Hash(std::string_view name) const { return hash_(salt_, name) >> (64 - kHashBits); }

Result<std::string> Zap::ReadBlock(uint64_t block, std::string_view kind) const {
  auto r = os_->Read(*dnode_, block * ctx_.block_size, ctx_.block_size);
  if (!r.ok()) return r.status().WithContext(ctx_.Where(block, kind));
  return r;
}

Status Zap::PutBlock(dmu::Tx& tx, uint64_t block, dmu::SharedBlock& bytes) {
  POOLFS_DCHECK(bytes.size() == ctx_.block_size);
  Status s = os_->PutBlock(tx, *dnode_, block, bytes);
  return s.ok() ? s : s.WithContext(ctx_.Where(block, "write"));
}

Status Zap::WriteBlock(dmu::Tx& tx, uint64_t block, const std::string& bytes) {
  POOLFS_DCHECK(bytes.size() == ctx_.block_size);
  Status s = os_->Write(tx, *dnode_, block * ctx_.block_size, bytes);
  return s.ok() ? s : s.WithContext(ctx_.Where(block, "write"));
}

Result<std::unique_ptr<Zap>> Zap::Create(dmu::Tx& tx, dmu::ObjectSet* os, dmu::ObjectType type,
                                         std::string_view bonus, const ZapOptions& options) {
  if (!IsZapType(type))
    return Status::InvalidArgument("a zap is a zap or directory object, not " +
                                   std::string(dmu::ObjectTypeName(type)));
  if (!GoodBlockSize(options.block_size))
    return Status::InvalidArgument("zap block size " + std::to_string(options.block_size) +
                                   " is not a power of two from 4 KiB to 32 KiB");
  POOLFS_ASSIGN_OR_RETURN(ObjectId id,
                          os->Create(tx, type, options.block_size, util::Compression::kLz4, bonus));
  BlockContext ctx{id.value(), options.block_size, type == dmu::ObjectType::kDirectory};
  uint64_t salt = options.salt ? options.salt : RandomSalt();
  std::unique_ptr<Zap> z(new Zap(os, id, ctx, salt, options));
  POOLFS_ASSIGN_OR_RETURN(z->dnode_, os->Hold(id));
  util::WriterLock l(&z->mu_);
  z->micro_ = dmu::SharedBlock(EmptyMicroBlock(ctx, salt));
  POOLFS_RETURN_IF_ERROR(z->PutBlock(tx, 0, z->micro_));
  z->micro_form_ = true;
  z->micro_count_ = 0;
  return z;
}

Result<std::unique_ptr<Zap>> Zap::Open(dmu::ObjectSet* os, ObjectId id, const ZapOptions& options) {
  POOLFS_ASSIGN_OR_RETURN(dmu::ObjectInfo info, os->Stat(id));
  if (!IsZapType(info.type))
    return Status::InvalidArgument("object " + std::to_string(id.value()) + " is a " +
                                   std::string(dmu::ObjectTypeName(info.type)) +
                                   " object, not a zap");
  BlockContext ctx{id.value(), info.block_size, info.type == dmu::ObjectType::kDirectory};
  if (!GoodBlockSize(info.block_size))
    return Status::Corruption("zap object " + std::to_string(id.value()) + " has " +
                              std::to_string(info.block_size) +
                              "-byte blocks (a zap's are 4 KiB .. 32 KiB)");
  auto r = os->Read(id, 0, ctx.block_size);
  if (!r.ok()) return r.status().WithContext(ctx.Where(0, "header"));
  std::string block = std::move(r).value();
  if (block.size() != ctx.block_size)
    return Status::Corruption(ctx.Where(0, "header") + ": the object is " +
                              std::to_string(info.length) + " bytes long");
  const auto* p = reinterpret_cast<const uint8_t*>(block.data());
  uint64_t magic = util::GetLE64(p);
  uint64_t salt = util::GetLE64(p + offsetof(MicroHeaderPhys, salt));
  static_assert(offsetof(MicroHeaderPhys, salt) == offsetof(FatHeaderPhys, salt));
  std::unique_ptr<Zap> z(new Zap(os, id, ctx, salt, options));
  POOLFS_ASSIGN_OR_RETURN(z->dnode_, os->Hold(id));
  util::WriterLock l(&z->mu_);
  if (magic == kMicroMagic) {
    POOLFS_RETURN_IF_ERROR(z->LoadMicro(std::move(block)));
  } else if (magic == kFatMagic) {
    POOLFS_RETURN_IF_ERROR(z->LoadFat(std::move(block), info.length));
  } else {
    return Status::Corruption(ctx.Where(0, "header") + ": neither a micro nor a fat header");
  }
  return z;
}

Status Zap::Add(dmu::Tx& tx, std::string_view name, const Value& value) {
  POOLFS_RETURN_IF_ERROR(CheckName(name, ctx_.directory));
  uint64_t h = Hash(name);
  util::WriterLock l(&mu_);
  if (micro_form_) return MicroAdd(tx, h, name, value);
  return FatAdd(tx, h, name, value);
}

Result<Value> Zap::Lookup(std::string_view name) const {
  POOLFS_RETURN_IF_ERROR(CheckName(name, ctx_.directory));
  uint64_t h = Hash(name);
  util::ReaderLock l(&mu_);
  if (!micro_form_) return FatLookup(h, name);
  uint32_t slot = MicroFind(h, name, nullptr);
  if (slot == micro_count_) return NoSuchName();
  return MicroValueAt(slot);
}

Status Zap::Remove(dmu::Tx& tx, std::string_view name) {
  POOLFS_RETURN_IF_ERROR(CheckName(name, ctx_.directory));
  uint64_t h = Hash(name);
  util::WriterLock l(&mu_);
  if (!micro_form_) return FatRemove(tx, h, name);
  uint32_t slot = MicroFind(h, name, nullptr);
  if (slot == micro_count_) return NoSuchName();
  return MicroRemove(tx, slot);
}

Status Zap::Update(dmu::Tx& tx, std::string_view name, const Value& value) {
  POOLFS_RETURN_IF_ERROR(CheckName(name, ctx_.directory));
  uint64_t h = Hash(name);
  util::WriterLock l(&mu_);
  if (!micro_form_) return FatUpdate(tx, h, name, value);
  uint32_t slot = MicroFind(h, name, nullptr);
  if (slot == micro_count_) return NoSuchName();
  return MicroUpdate(tx, slot, value);
}

uint64_t Zap::Count() const {
  util::ReaderLock l(&mu_);
  return micro_form_ ? micro_count_ : fat_.count;
}

Result<std::vector<Entry>> Zap::Iterate(uint64_t cookie, size_t n) const {
  std::vector<Entry> out;
  util::ReaderLock l(&mu_);
  if (micro_form_) {
    MicroIterate(cookie, n, &out);
  } else {
    POOLFS_RETURN_IF_ERROR(FatIterate(cookie, n, &out));
  }
  return out;
}

ZapShape Zap::Shape() const {
  util::ReaderLock l(&mu_);
  ZapShape s;
  s.micro = micro_form_;
  if (!micro_form_) {
    s.depth = fat_.depth;
    s.external_table = fat_.table_block != 0;
    s.leaves = fat_.leaves;
    s.blocks = fat_.next_block;
  }
  return s;
}

}  // namespace poolfs::core::zap
