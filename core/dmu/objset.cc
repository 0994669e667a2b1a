#include "dmu/objset.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

#include "dmu/objset_walk.h"
#include "util/check.h"

namespace poolfs::core::dmu {

namespace {
DnodePhys NewMetadnode() {
  DnodePhys m;
  m.type = ObjectType::kMetadnode;
  m.block_size = kDnodeBlockSize;
  m.compression = uint8_t(util::Compression::kLz4);
  return m;
}

bool IsDataBlockSize(uint64_t bs) {
  return bs >= kMinBlockSize && bs <= kMaxBlockSize && (bs & (bs - 1)) == 0;
}

Status NotDataBlockSize(uint64_t bs) {
  return Status::InvalidArgument("block size " + std::to_string(bs) +
                                 " is not a power of two from 512 B to 1 MiB");
}
}  // namespace

ObjectSet::ObjectSet(zio::Zio* zio, ObjsetType type, std::string name)
    : zio_(zio), type_(type), name_(std::move(name)), copies_(type == ObjsetType::kMos) {
  DnodePhys m = NewMetadnode();
  metadnode_ = std::make_unique<Dnode>(zio_, ObjectId(0), m);
  metadnode_->SetSpaceCounter(&space_);
  metadnode_->SetCopyPolicy(&copies_);
  util::MutexLock l(&dirty_mu_);
  metadnode_phys_ = m;
}

ObjectSet::~ObjectSet() = default;

Result<std::unique_ptr<ObjectSet>> ObjectSet::Open(zio::Zio* zio, const zio::BlockPtr& root,
                                                   std::string name) {
  if (root.IsHole() || root.type != zio::BlockType::kObjset)
    return Status::Corruption(name + ": root pointer is not an object set block (" +
                              root.ToString() + ")");
  POOLFS_ASSIGN_OR_RETURN(std::string bytes, zio->Read(root));
  POOLFS_ASSIGN_OR_RETURN(ObjsetPhys phys, DecodeObjset(bytes, name, zio->format()));
  // A version 1 root: counted once, stored by the next sync. A tree that
  // cannot be walked whole (damage poolfs check reports) must not make the
  // set unusable: its totals start from zero, marked inexact.
  bool inexact = false;
  if (!phys.space_known) {
    Result<ObjsetSpace> counted = CountObjsetSpace(zio, root, name);
    inexact = !counted.ok();
    phys.space = counted.ok() ? *counted : ObjsetSpace{};
  }
  auto os = std::make_unique<ObjectSet>(zio, phys.type, std::move(name));
  os->space_inexact_ = inexact;
  os->metadnode_ = std::make_unique<Dnode>(zio, ObjectId(0), phys.metadnode);
  os->metadnode_->SetSpaceCounter(&os->space_);
  os->metadnode_->SetCopyPolicy(&os->copies_);
  os->space_.allocated = int64_t(phys.space.referenced);
  os->space_.logical = int64_t(phys.space.logical);
  os->space_.physical = int64_t(phys.space.physical);
  {
    util::MutexLock l(&os->dirty_mu_);
    os->synced_space_ = phys.space;
    os->root_ = root;
    os->metadnode_phys_ = phys.metadnode;
    os->synced_next_object_ = phys.next_object;
    os->synced_live_ = phys.live_objects;
  }
  POOLFS_RETURN_IF_ERROR(os->LoadAllocator(phys.next_object));
  return os;
}

Status ObjectSet::LoadAllocator(uint64_t next_object) {
  next_object = std::clamp<uint64_t>(next_object, 1, kMaxObjectId + 1);  // decoded: in range
  std::vector<std::pair<uint64_t, uint64_t>> in_use;
  auto use = [&](uint64_t first, uint64_t end) {
    if (!in_use.empty() && in_use.back().second == first)
      in_use.back().second = end;
    else
      in_use.emplace_back(first, end);
  };
  // Only the metadnode's blocks are visited, never its holes: a next id of
  // 2^48 over a few blocks costs those blocks.
  // A damaged metadnode whose indirect blocks share children (a few blocks
  // describing 2^40 dnode blocks) costs its distinct blocks too: see
  // BlockTree::Walk.
  const uint64_t blocks = (next_object + kDnodesPerBlock - 1) / kDnodesPerBlock;
  BlockTree::Walk walk;
  for (uint64_t blk = 0; blk < blocks;) {
    const BlockTree::NextBlock next = metadnode_->NextBlock(blk, &walk);
    if (next.first == next.end || next.first >= blocks) break;  // none left
    if (!next.status.ok()) {  // an unreadable indirect block: as damaged dnode blocks
      use(std::max<uint64_t>(next.first * kDnodesPerBlock, 1),
          std::min(std::min(next.end, blocks) * kDnodesPerBlock, next_object));
      damaged_dnode_blocks_++;
      blk = next.end;
      continue;
    }
    const uint64_t b = next.first;
    blk = b + 1;
    const uint64_t first = std::max<uint64_t>(b * kDnodesPerBlock, 1);
    const uint64_t end = std::min((b + 1) * kDnodesPerBlock, next_object);
    const zio::BlockPtr& bp = next.bp;
    if (bp.type == zio::BlockType::kDnodes && bp.fill == 0) continue;
    if (bp.type == zio::BlockType::kDnodes && bp.fill == kDnodesPerBlock && b > 0) {
      use(first, end);  // full: no need to read it
      continue;
    }
    Result<std::string> read =
        metadnode_->Read(b * kDnodesPerBlock * kDnodeSize, kDnodesPerBlock * kDnodeSize);
    if (!read.ok()) {
      // A damaged dnode block must not make the whole object set (and so
      // the pool's newest txg) unusable: its ids count as taken, so none is
      // handed out twice, and the objects in it fail when used. (poolfs
      // check reports the damage; Open refuses no more than it did before
      // the allocator read the metadnode.)
      use(first, end);
      damaged_dnode_blocks_++;
      continue;
    }
    const std::string& data = *read;
    uint64_t count = 0;
    bool odd = false;
    for (uint64_t id = b * kDnodesPerBlock; id < (b + 1) * kDnodesPerBlock; id++) {
      const size_t at = (id % kDnodesPerBlock) * kDnodeSize;
      if (at >= data.size() || data[at] == 0) continue;  // type none: free
      count++;
      odd |= id == 0 || id >= next_object;
    }
    // A block that disagrees with its pointer or with the next object id is
    // damage poolfs check reports; here its ids count as taken.
    if (odd || (bp.type == zio::BlockType::kDnodes && bp.fill != count)) {
      use(first, end);
      damaged_dnode_blocks_++;
      continue;
    }
    for (uint64_t id = first; id < end; id++) {
      const size_t at = (id % kDnodesPerBlock) * kDnodeSize;
      if (at < data.size() && data[at] != 0) use(id, id + 1);
    }
  }
  return alloc_.Load(next_object, in_use);
}

ObjectSet::DnodeRef ObjectSet::NewDnode(ObjectId id, const DnodePhys& phys) {
  auto d = std::make_shared<Dnode>(zio_, id, phys);
  d->on_dirty = [this](Dnode* dn, Txg t) { OnDirty(dn, t); };
  d->SetSpaceCounter(&space_);
  d->SetCopyPolicy(&copies_);
  d->block_buffers = block_buffers_;
  d->cache = cache_;
  d->read_ahead = read_ahead_;
  return d;
}

Result<ObjectSet::DnodeRef> ObjectSet::Get(ObjectId id) {
  if (id.value() == 0 || id.value() > kMaxObjectId)
    return Status::InvalidArgument(name_ + ": object id " + std::to_string(id.value()) +
                                   " is not a user object");
  // Loaded under the cache's shard lock: a dnode dropped as idle has
  // everything it held in its metadnode slot (written by FinishSync before
  // SyncDone made it idle), and one object never has two Dnodes.
  return dnodes_.FindOrLoad(id.value(), [&]() -> Result<DnodeRef> {
    POOLFS_ASSIGN_OR_RETURN(std::string slot,
                            metadnode_->Read(id.value() * kDnodeSize, kDnodeSize));
    DnodePhys phys;
    if (slot.size() == kDnodeSize) {
      const auto* bytes = reinterpret_cast<const uint8_t*>(slot.data());
      Result<DnodePhys> decoded = DecodeDnode(bytes, name_, zio_->format());
      // Decoded again to name the object: its name is built only for damage.
      if (!decoded.ok())
        decoded =
            DecodeDnode(bytes, name_ + " object " + std::to_string(id.value()), zio_->format());
      POOLFS_ASSIGN_OR_RETURN(phys, std::move(decoded));
    }
    return NewDnode(id, phys);
  });
}

Result<ObjectSet::DnodeRef> ObjectSet::GetAllocated(ObjectId id) {
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, Get(id));
  if (d->IsFree())
    return Status::NotFound(name_ + ": object " + std::to_string(id.value()) + " does not exist");
  return d;
}

Status ObjectSet::Admit(const Tx& tx) const {
  POOLFS_CHECK(tx.assigned());
  if (tx.txg().value() >= first_txg_) return Status::Ok();
  return Status::InvalidArgument(name_ + " was created in txg " + std::to_string(first_txg_) +
                                 ": a transaction of txg " + std::to_string(tx.txg().value()) +
                                 " (assigned before it existed) cannot change it");
}

ObjectSet::TxgLists& ObjectSet::ListsFor(uint64_t t) {
  TxgLists& l = lists_[t % Dnode::kTxgSlots];
  if (l.txg != t) {
    POOLFS_CHECK(l.dirty.empty() && l.synced.empty() && l.results.empty());
    l = TxgLists();
    l.txg = t;
  }
  return l;
}

void ObjectSet::OnDirty(Dnode* d, Txg t) {
  util::MutexLock l(&dirty_mu_);
  ListsFor(t.value()).dirty.push_back(d);
}

Status ObjectSet::CheckNewObject(ObjectType type, uint32_t block_size,
                                 std::string_view bonus) const {
  if (type == ObjectType::kNone || type == ObjectType::kMetadnode)
    return Status::InvalidArgument("cannot create an object of type " +
                                   std::string(ObjectTypeName(type)));
  if (!IsDataBlockSize(block_size)) return NotDataBlockSize(block_size);
  if (bonus.size() > max_bonus())
    return Status::InvalidArgument("bonus larger than " + std::to_string(max_bonus()) + " bytes");
  return Status::Ok();
}

Status ObjectSet::Install(Tx& tx, uint64_t id, Txg generation, ObjectType type, uint32_t block_size,
                          util::Compression compression, std::string_view bonus,
                          uint8_t bonus_type) {
  // The dnode first (it may have to be read from its metadnode block): a
  // failure there leaves the txg's counts alone and gives the id back.
  auto got = Get(ObjectId(id));
  if (!got.ok()) {
    alloc_.Free(ObjectId(id), tx.txg());
    return got.status();
  }
  DnodeRef d = std::move(got).value();
  if (!d->IsFree())  // the allocator had it free: its metadnode block disagrees
    return Status::Corruption(name_ + ": object " + std::to_string(id) +
                              " is free in the object allocator but its dnode is in use");
  {
    util::MutexLock l(&dirty_mu_);
    TxgLists& lists = ListsFor(tx.txg().value());
    lists.live_delta++;
    lists.high_water = std::max(lists.high_water, id + 1);
  }
  d->Allocate(tx.txg(), generation, type, block_size, compression, bonus, bonus_type);
  tx.Dirtied(kDnodeSize);
  return Status::Ok();
}

Result<ObjectId> ObjectSet::Create(Tx& tx, ObjectType type, uint32_t block_size,
                                   util::Compression compression, std::string_view bonus,
                                   uint8_t bonus_type) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  POOLFS_RETURN_IF_ERROR(CheckNewObject(type, block_size, bonus));
  // The allocator's slot: per thread, so that one thread's creates take
  // consecutive ids.
  static thread_local const size_t slot_hint =
      std::hash<std::thread::id>()(std::this_thread::get_id());
  uint64_t id;
  if (alloc_.mode() == BackfillMode::kLegacy) {
    auto allocated = LegacyAllocate();
    if (!allocated.ok()) return allocated.status().WithContext(name_);
    id = *allocated;
  } else {
    auto allocated = alloc_.Allocate(slot_hint);
    if (!allocated.ok()) return allocated.status().WithContext(name_);
    id = allocated->value();
  }
  POOLFS_RETURN_IF_ERROR(
      Install(tx, id, tx.txg(), type, block_size, compression, bonus, bonus_type));
  return ObjectId(id);
}

Status ObjectSet::Claim(Tx& tx, ObjectId id, ObjectType type, uint32_t block_size,
                        util::Compression compression, Txg generation, std::string_view bonus,
                        uint8_t bonus_type) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  const std::string what = name_ + ": cannot claim object " + std::to_string(id.value());
  if (id.value() == 0 || id.value() > kMaxObjectId)
    return Status::InvalidArgument(what + ": ids run from 1 to " + std::to_string(kMaxObjectId));
  POOLFS_RETURN_IF_ERROR(CheckNewObject(type, block_size, bonus).WithContext(what));
  POOLFS_RETURN_IF_ERROR(alloc_.Claim(id, tx.txg()).WithContext(what));
  return Install(tx, id.value(), generation, type, block_size, compression, bonus, bonus_type)
      .WithContext(what);
}

// The legacy search (dmu.metadnode_backfill = legacy), kept so that the
// backfill pathology can be reproduced and measured: the object allocator
// of ZFS before its fix, step for step. Under one lock, the cursor moves up
// one id per attempt; each time it reaches a span boundary (kLegacySpan
// ids) it looks for a sparse dnode block — from id 0 the first time in a
// call, from the cursor after that — judging sparseness by the synced fill
// counts only, which do not see dnodes allocated since the last sync. It
// then tries to hold each id in turn, and a hold fails for every dnode that
// is allocated in memory (or freed but not yet synced): the failed holds
// this mode counts. Under a create storm the search lands among the
// txg's unsynced creates and walks through them one failed hold at a time.
namespace {
constexpr uint64_t kLegacySpan = 8192;     // the old L2 span: 2^13 objects
constexpr uint64_t kLegacySparseFill = 8;  // at most a quarter of 32 dnodes
}  // namespace

Result<uint64_t> ObjectSet::SyncedSparseBlock(uint64_t from) {
  for (uint64_t blk = from / kDnodesPerBlock;; blk++) {
    if (blk * kDnodesPerBlock > kMaxObjectId) return Status::NoSpace("out of object ids");
    POOLFS_ASSIGN_OR_RETURN(zio::BlockPtr bp, metadnode_->BlockPointer(blk));
    if (bp.IsHole() || bp.fill <= kLegacySparseFill)
      return std::max(from, std::max<uint64_t>(blk * kDnodesPerBlock, 1));
  }
}

Result<uint64_t> ObjectSet::LegacyAllocate() {
  util::MutexLock l(&legacy_mu_);
  bool restarted = false;
  for (;;) {
    uint64_t object = legacy_next_;
    if (object % kLegacySpan == 0 || object == 1) {
      POOLFS_ASSIGN_OR_RETURN(object, SyncedSparseBlock(restarted ? object : 1));
      restarted = true;
    }
    if (object > kMaxObjectId) return Status::NoSpace("out of object ids");
    legacy_next_ = object + 1;
    POOLFS_ASSIGN_OR_RETURN(DnodeRef d, Get(ObjectId(object)));
    if (d->IsFree() && alloc_.Take(ObjectId(object)).ok()) return object;
    alloc_.CountFailedHold();
  }
}

Status ObjectSet::Free(Tx& tx, ObjectId id) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  d->Free(tx.txg());
  alloc_.Free(id, tx.txg());
  util::MutexLock l(&dirty_mu_);
  ListsFor(tx.txg().value()).live_delta--;
  tx.Dirtied(kDnodeSize);
  return Status::Ok();
}

Status ObjectSet::Write(Tx& tx, ObjectId id, uint64_t off, std::string_view data) {
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  return Write(tx, *d, off, data);
}

Status ObjectSet::Write(Tx& tx, Dnode& d, uint64_t off, std::string_view data) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  uint64_t dirtied = 0;
  POOLFS_RETURN_IF_ERROR(d.Write(tx.txg(), off, data, &dirtied));
  tx.Dirtied(dirtied);
  return Status::Ok();
}

Status ObjectSet::PutBlock(Tx& tx, Dnode& d, uint64_t blkid, SharedBlock& block) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  POOLFS_CHECK(tx.open_context());  // a sync pass may be writing the txg's blocks
  POOLFS_CHECK(block.txg_ == 0 || block.txg_ == tx.txg().value());  // Edit(tx.txg()) came first
  // Already the txg's dirty copy: the owner's changes go straight into it
  // (still a change of this Tx).
  if (block.txg_ != 0) {
    tx.Dirtied(0);
    return Status::Ok();
  }
  uint64_t dirtied = 0;
  POOLFS_RETURN_IF_ERROR(d.PutBlock(tx.txg(), blkid, block.buf_, &dirtied));
  tx.Dirtied(dirtied);
  block.txg_ = tx.txg().value();
  return Status::Ok();
}

Status ObjectSet::ShareBlocks(Tx& tx, Dnode& src, uint64_t first, uint64_t end,
                              std::vector<std::optional<zio::BlockPtr>>* out) {
  POOLFS_CHECK(tx.open_context());
  return src.ShareBlocks(tx.txg(), first, end, out);
}

Status ObjectSet::PutClones(Tx& tx, Dnode& dst, uint64_t first,
                            std::span<const zio::BlockPtr> bps, uint64_t length) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  POOLFS_CHECK(tx.open_context());
  uint64_t dirtied = 0;
  POOLFS_RETURN_IF_ERROR(dst.PutClones(tx.txg(), first, bps, length, &dirtied));
  tx.Dirtied(dirtied);
  return Status::Ok();
}

Result<std::string> ObjectSet::Read(ObjectId id, uint64_t off, uint64_t len, ReadCaching caching) {
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  return d->Read(off, len, caching);
}

Result<size_t> ObjectSet::ReadInto(ObjectId id, uint64_t off, std::span<char> dst,
                                   ReadCaching caching, ReadPieces* shared) {
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  return d->ReadInto(off, dst, caching, shared);
}

Result<std::string> ObjectSet::Read(Dnode& d, uint64_t off, uint64_t len, ReadCaching caching) {
  return d.Read(off, len, caching);
}

Status ObjectSet::Truncate(Tx& tx, ObjectId id, uint64_t length) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  uint64_t dirtied = 0;
  POOLFS_RETURN_IF_ERROR(d->Truncate(tx.txg(), length, &dirtied));
  tx.Dirtied(dirtied + kDnodeSize);
  return Status::Ok();
}

Status ObjectSet::Punch(Tx& tx, ObjectId id, uint64_t off, uint64_t len) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  uint64_t dirtied = 0;
  POOLFS_RETURN_IF_ERROR(d->Punch(tx.txg(), off, len, &dirtied));
  tx.Dirtied(dirtied + kDnodeSize);
  return Status::Ok();
}

Result<uint64_t> ObjectSet::Seek(ObjectId id, uint64_t off, uint64_t end, bool hole) {
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  return d->Seek(off, end, hole);
}

Status ObjectSet::SetBonus(Tx& tx, ObjectId id, uint8_t bonus_type, std::string_view bonus) {
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  return SetBonus(tx, *d, bonus_type, bonus);
}

Status ObjectSet::SetBonus(Tx& tx, Dnode& d, uint8_t bonus_type, std::string_view bonus) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  POOLFS_RETURN_IF_ERROR(d.SetBonus(tx.txg(), bonus_type, bonus));
  tx.Dirtied(kDnodeSize);
  return Status::Ok();
}

Status ObjectSet::SetBlockSize(Tx& tx, ObjectId id, uint32_t block_size) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  if (!IsDataBlockSize(block_size)) return NotDataBlockSize(block_size);
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  uint64_t dirtied = 0;
  POOLFS_ASSIGN_OR_RETURN(bool changed, d->SetBlockSize(tx.txg(), block_size, &dirtied));
  if (changed) tx.Dirtied(dirtied + kDnodeSize);
  return Status::Ok();
}

Status ObjectSet::GrowBlockSize(Tx& tx, ObjectId id, uint64_t end, uint32_t max_block_size) {
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  return GrowBlockSize(tx, *d, end, max_block_size);
}

Status ObjectSet::GrowBlockSize(Tx& tx, Dnode& d, uint64_t end, uint32_t max_block_size) {
  POOLFS_RETURN_IF_ERROR(Admit(tx));
  if (!IsDataBlockSize(max_block_size)) return NotDataBlockSize(max_block_size);
  uint64_t dirtied = 0;
  POOLFS_ASSIGN_OR_RETURN(bool changed,
                          d.GrowBlockSize(tx.txg(), end, max_block_size, &dirtied));
  if (changed) tx.Dirtied(dirtied + kDnodeSize);
  return Status::Ok();
}

uint32_t ObjectSet::StartBlockSize(uint32_t max_block_size) const {
  return std::clamp(zio_->sector_size(), kMinBlockSize, std::max(max_block_size, kMinBlockSize));
}

Result<ObjectInfo> ObjectSet::Stat(ObjectId id) {
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  return d->Info();
}

Status ObjectSet::ChangedDnodes(const ObjectSet& older, Txg older_txg, const ChangedDnodeFn& fn,
                                DnodeDiffStats* stats) const {
  return WalkChangedDnodes(zio_, older.root(), older_txg, root(), name_, fn, stats);
}

Result<zio::BlockPtr> ObjectSet::BlockPointer(ObjectId id, uint64_t blkid) {
  POOLFS_ASSIGN_OR_RETURN(DnodeRef d, GetAllocated(id));
  return d->BlockPointer(blkid);
}

bool ObjectSet::Dirty(Txg t) const {
  util::MutexLock l(&dirty_mu_);
  const TxgLists& lists = lists_[t.value() % Dnode::kTxgSlots];
  return lists.txg == t.value() &&
         (!lists.dirty.empty() || lists.live_delta != 0 || lists.high_water != 0);
}

namespace {

// A dnode with at least this many dirty blocks has its blocks written by
// every strand at once (each strand a contiguous share, through its own
// allocator); smaller ones are written whole by one strand. 64 blocks of
// the default 128 KiB record are 8 MiB: below that, splitting buys little
// and scatters a file over more metaslabs.
constexpr size_t kSplitBlocks = 64;

}  // namespace

std::vector<SyncTask> ObjectSet::SyncTasks(Txg t, size_t strands, size_t first_strand,
                                           bool split_large) {
  POOLFS_CHECK_GT(strands, 0u);
  alloc_.Release(t);  // every Tx of t committed: ids freed in t may be reused
  std::vector<std::vector<Dnode*>> split(strands);
  {
    util::MutexLock l(&dirty_mu_);
    TxgLists& lists = ListsFor(t.value());
    for (Dnode* d : lists.dirty) split[(d->id().value() + first_strand) % strands].push_back(d);
    lists.synced.insert(lists.synced.end(), lists.dirty.begin(), lists.dirty.end());
    lists.dirty.clear();
  }
  std::vector<SyncTask> tasks;
  auto add_result = [this, t](uint64_t id, DnodePhys phys) {
    util::MutexLock l(&dirty_mu_);
    ListsFor(t.value()).results.emplace_back(id, std::move(phys));
  };
  // Large dnodes: SyncBegin here (it applies the frees, which must precede
  // the block writes), then one task per strand writes its share of the
  // blocks; whichever finishes last writes the indirect blocks (SyncEnd).
  // No task waits for another, so any executor runs this.
  for (size_t i = 0; i < strands && strands > 1 && split_large; i++) {
    auto& list = split[i];
    auto keep = list.begin();
    for (Dnode* d : list) {
      if (d->DirtyBlocks(t) < kSplitBlocks) {
        *keep++ = d;
        continue;
      }
      struct Shared {
        Dnode* d = nullptr;
        Dnode::SyncPlan plan;
        std::atomic<size_t> remaining;
        std::atomic<bool> failed{false};
      };
      Result<Dnode::SyncPlan> plan = d->SyncBegin(t);
      if (!plan.ok()) {
        tasks.push_back({i, [st = plan.status().WithContext(name_)] { return st; }});
        continue;
      }
      auto sh = std::make_shared<Shared>();
      sh->d = d;
      sh->plan = std::move(plan).value();
      sh->remaining = strands;
      const size_t n = sh->plan.blocks.size();
      for (size_t k = 0; k < strands; k++) {
        tasks.push_back({k, [this, t, k, n, strands, sh, add_result]() -> Status {
                           BlockBuffers::ReleaseBatch batch(block_buffers_);
                           Status st = sh->d->SyncBlocks(t, sh->plan, n * k / strands,
                                                         n * (k + 1) / strands, k);
                           if (!st.ok()) {
                             sh->failed = true;
                             st = st.WithContext(name_);
                           }
                           // The last share to finish completes the dnode (not after a
                           // failure: the whole sync fails then).
                           if (sh->remaining.fetch_sub(1) != 1 || sh->failed) return st;
                           Result<DnodePhys> phys = sh->d->SyncEnd(t, sh->plan, k);
                           if (!phys.ok()) return phys.status().WithContext(name_);
                           sh->plan.blocks.clear();  // the written copies, into the batch
                           add_result(sh->d->id().value(), std::move(phys).value());
                           return Status::Ok();
                         }});
      }
    }
    list.erase(keep, list.end());
  }
  for (size_t i = 0; i < strands; i++) {
    if (split[i].empty()) continue;
    tasks.push_back({i, [this, t, i, list = std::move(split[i])]() -> Status {
                       // Each dnode's written dirty copies drop as its Sync
                       // returns: given back together at the end.
                       BlockBuffers::ReleaseBatch batch(block_buffers_);
                       std::vector<std::pair<uint64_t, DnodePhys>> out;
                       out.reserve(list.size());
                       for (Dnode* d : list) {
                         Result<DnodePhys> phys = d->Sync(t, i);
                         if (!phys.ok()) return phys.status().WithContext(name_);
                         out.emplace_back(d->id().value(), std::move(phys).value());
                       }
                       util::MutexLock l(&dirty_mu_);
                       auto& results = ListsFor(t.value()).results;
                       results.insert(results.end(), std::make_move_iterator(out.begin()),
                                      std::make_move_iterator(out.end()));
                       return Status::Ok();
                     }});
  }
  return tasks;
}

Result<zio::BlockPtr> ObjectSet::FinishSync(Txg t, size_t allocator) {
  std::vector<std::pair<uint64_t, DnodePhys>> results;
  ObjsetPhys phys;
  zio::BlockPtr old_root;
  {
    util::MutexLock l(&dirty_mu_);
    TxgLists& lists = ListsFor(t.value());
    POOLFS_CHECK(lists.dirty.empty());  // every SyncTask ran
    results.swap(lists.results);
    synced_live_ += lists.live_delta;
    lists.live_delta = 0;
    synced_next_object_ = std::max(synced_next_object_, lists.high_water);
    lists.high_water = 0;
    phys.type = type_;
    phys.next_object = synced_next_object_;
    phys.live_objects = synced_live_;
    old_root = root_;
  }
  // In id order, so that each metadnode block is dirtied by one run of
  // writes; (id, index) pairs are sorted, not the DnodePhys themselves.
  std::vector<std::pair<uint64_t, uint32_t>> order(results.size());
  for (size_t i = 0; i < results.size(); i++) order[i] = {results[i].first, uint32_t(i)};
  std::sort(order.begin(), order.end());
  uint8_t slot[kDnodeSize];
  uint64_t ignored = 0;
  for (const auto& [id, i] : order) {
    EncodeDnode(results[i].second, slot, zio_->format());
    POOLFS_RETURN_IF_ERROR(metadnode_->Write(
        t, id * kDnodeSize, std::string_view(reinterpret_cast<char*>(slot), kDnodeSize), &ignored));
  }
  DnodePhys mphys;
  if (metadnode_->DirtyIn(t)) {
    POOLFS_ASSIGN_OR_RETURN(mphys, metadnode_->Sync(t, allocator));
  } else {
    util::MutexLock l(&dirty_mu_);
    mphys = metadnode_phys_;
  }
  phys.metadnode = mphys;
  // Every tree of the set has synced t: the counter holds t's totals.
  const int64_t allocated = space_.allocated.load(std::memory_order_relaxed);
  const int64_t logical = space_.logical.load(std::memory_order_relaxed);
  const int64_t physical = space_.physical.load(std::memory_order_relaxed);
  if (!space_inexact_) {
    POOLFS_CHECK_GE(allocated, 0);
    POOLFS_CHECK_GE(logical, 0);
    POOLFS_CHECK_GE(physical, 0);
  }
  phys.space = {uint64_t(std::max<int64_t>(allocated, 0)), uint64_t(std::max<int64_t>(logical, 0)),
                uint64_t(std::max<int64_t>(physical, 0))};
  phys.space.physical = std::min(phys.space.physical, phys.space.referenced);
  std::string bytes = EncodeObjset(phys, zio_->format());
  zio::WriteProps props{zio::BlockType::kObjset, 0, util::Compression::kOff,
                        std::max<uint64_t>(phys.live_objects, 1), copies_.metadata()};
  POOLFS_ASSIGN_OR_RETURN(zio::BlockPtr root,
                          BlockTree::WriteBlock(zio_, props, bytes, old_root, t, allocator));
  if (!old_root.IsHole() && !(old_root.dva == root.dva))
    POOLFS_RETURN_IF_ERROR(space_.Drop(zio_, old_root, t));
  util::MutexLock l(&dirty_mu_);
  metadnode_phys_ = mphys;
  root_ = root;
  synced_space_ = phys.space;
  ListsFor(t.value()).synced.push_back(metadnode_.get());
  return root;
}

void ObjectSet::SyncDone(Txg t) {
  std::vector<Dnode*> synced;
  {
    util::MutexLock l(&dirty_mu_);
    TxgLists& lists = lists_[t.value() % Dnode::kTxgSlots];
    if (lists.txg != t.value()) return;
    POOLFS_CHECK(lists.dirty.empty());
    synced.swap(lists.synced);
    lists = TxgLists();
  }
  std::sort(synced.begin(), synced.end());
  synced.erase(std::unique(synced.begin(), synced.end()), synced.end());
  for (Dnode* d : synced) d->SyncDone(t);
  dnodes_.Trim();  // the dnodes t dirtied are idle now
}

zio::BlockPtr ObjectSet::root() const {
  util::MutexLock l(&dirty_mu_);
  return root_;
}

uint64_t ObjectSet::next_object() const { return alloc_.high_water(); }

uint64_t ObjectSet::live_objects() const { return alloc_.Stats().live; }

ObjsetSpace ObjectSet::space() const {
  util::MutexLock l(&dirty_mu_);
  ObjsetSpace s = synced_space_;
  if (!root_.IsHole()) {
    s.referenced += root_.allocated();
    s.logical += root_.lsize;
    s.physical += root_.psize;
  }
  return s;
}

}  // namespace poolfs::core::dmu
