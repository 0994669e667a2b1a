#include "dmu/objset_walk.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace poolfs::core::dmu {

namespace {

using zio::BlockPtr;
using Visit = std::function<Status(const BlockPtr&)>;

// The kFanout pointers of indirect block `data`, read at `where`.
Status DecodeIndirect(const std::string& data, zio::BpFormat format, const std::string& where,
                      std::vector<BlockPtr>* out) {
  if (data.size() != IndirectBlockSize(format))
    return Status::Corruption(where + ": indirect block of " + std::to_string(data.size()) +
                              " bytes");
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  out->assign(kFanout, BlockPtr());
  for (uint64_t i = 0; i < kFanout; i++) {
    auto child = zio::DecodeBlockPtr(p + i * zio::BlockPtrSize(format), {}, format);
    if (!child.ok()) return child.status().WithContext(where + " slot " + std::to_string(i));
    (*out)[i] = *child;
  }
  return Status::Ok();
}
using Leaf = std::function<Status(uint64_t blkid, const std::string& data)>;

class Walker {
 public:
  Walker(zio::Zio* zio, std::string name, const Visit& fn, Txg born_after)
      : zio_(zio), name_(std::move(name)), fn_(fn), born_after_(born_after) {}

  // The tree under dnode `d` of object `id`; `leaf` gets each data block read
  // (nullptr: data blocks are visited, not read).
  Status Tree(uint64_t id, const DnodePhys& d, const Leaf* leaf) {
    if (d.bp.IsHole()) return Status::Ok();
    return Block(id, d.bp, uint8_t(d.nlevels - 1), 0, leaf);
  }

 private:
  std::string Where(uint64_t id, uint8_t level, uint64_t index) const {
    return name_ + " object " + std::to_string(id) + " L" + std::to_string(level) + " block " +
           std::to_string(index);
  }

  Status Block(uint64_t id, const BlockPtr& bp, uint8_t level, uint64_t index, const Leaf* leaf) {
    if (bp.birth <= born_after_) return Status::Ok();  // and all below it
    if (bp.level != level)
      return Status::Corruption(Where(id, level, index) + ": pointer says level " +
                                std::to_string(bp.level));
    POOLFS_RETURN_IF_ERROR(fn_(bp));
    if (level == 0) {
      if (leaf == nullptr) return Status::Ok();
      POOLFS_ASSIGN_OR_RETURN(std::string data, zio_->Read(bp));
      return (*leaf)(index, data);
    }
    POOLFS_ASSIGN_OR_RETURN(std::string data, zio_->Read(bp));
    std::vector<BlockPtr> children;
    POOLFS_RETURN_IF_ERROR(
        DecodeIndirect(data, zio_->format(), Where(id, level, index), &children));
    for (uint64_t i = 0; i < kFanout; i++) {
      if (children[i].IsHole()) continue;
      POOLFS_RETURN_IF_ERROR(Block(id, children[i], uint8_t(level - 1), index * kFanout + i, leaf));
    }
    return Status::Ok();
  }

  zio::Zio* zio_;
  std::string name_;
  const Visit& fn_;
  const Txg born_after_;
};

// The two trees of WalkChangedDnodes, side by side. A node is a pointer
// standing at a level of the taller tree; a pointer whose own level is
// lower stands for the top of the shorter tree, which covers the first
// child of every level above it.
class DnodeDiffer {
 public:
  DnodeDiffer(zio::Zio* zio, std::string name, Txg older_txg, const ChangedDnodeFn& fn,
              DnodeDiffStats* stats)
      : zio_(zio), name_(std::move(name)), older_txg_(older_txg), fn_(fn), stats_(stats) {}

  Status Visit(uint8_t level, uint64_t index, const BlockPtr& older, const BlockPtr& newer) {
    if (older.IsHole() && newer.IsHole()) return Status::Ok();
    // Shared by both trees, with all below it.
    if (!newer.IsHole() && (newer.birth <= older_txg_ || newer == older)) return Status::Ok();
    if (level == 0) return Leaves(index, older, newer);
    std::vector<BlockPtr> older_children, newer_children;
    POOLFS_RETURN_IF_ERROR(Children(older, level, index, &older_children));
    POOLFS_RETURN_IF_ERROR(Children(newer, level, index, &newer_children));
    static const BlockPtr kHole;
    for (uint64_t i = 0; i < kFanout; i++) {
      const BlockPtr& o = older_children.empty() ? kHole : older_children[i];
      const BlockPtr& n = newer_children.empty() ? kHole : newer_children[i];
      POOLFS_RETURN_IF_ERROR(Visit(uint8_t(level - 1), index * kFanout + i, o, n));
    }
    return Status::Ok();
  }

 private:
  std::string Where(uint8_t level, uint64_t index) const {
    return name_ + " metadnode L" + std::to_string(level) + " block " + std::to_string(index);
  }

  Result<std::string> Read(const BlockPtr& bp) {
    if (stats_ != nullptr) stats_->blocks_read++;
    return zio_->Read(bp);
  }

  // The children of `bp` standing at `level`: none (empty) under a hole.
  Status Children(const BlockPtr& bp, uint8_t level, uint64_t index, std::vector<BlockPtr>* out) {
    if (bp.IsHole()) return Status::Ok();
    if (bp.level > level)
      return Status::Corruption(Where(level, index) + ": pointer says level " +
                                std::to_string(bp.level));
    out->assign(kFanout, BlockPtr());
    if (bp.level < level) {  // the top of the shorter tree, always first
      if (index != 0)
        return Status::Corruption(Where(level, index) + ": pointer says level " +
                                  std::to_string(bp.level));
      (*out)[0] = bp;
      return Status::Ok();
    }
    POOLFS_ASSIGN_OR_RETURN(std::string data, Read(bp));
    return DecodeIndirect(data, zio_->format(), Where(level, index), out);
  }

  // The dnode block `index` of each tree (empty under a hole).
  Result<std::string> Leaf(const BlockPtr& bp, uint64_t index) {
    if (bp.IsHole()) return std::string();
    if (bp.level != 0)
      return Status::Corruption(Where(0, index) + ": pointer says level " +
                                std::to_string(bp.level));
    POOLFS_ASSIGN_OR_RETURN(std::string data, Read(bp));
    if (data.size() > kDnodeBlockSize || data.size() % kDnodeSize != 0)
      return Status::Corruption(Where(0, index) + ": dnode block of " +
                                std::to_string(data.size()) + " bytes");
    return data;
  }

  Status Leaves(uint64_t index, const BlockPtr& older, const BlockPtr& newer) {
    if (stats_ != nullptr) stats_->dnode_blocks++;
    POOLFS_ASSIGN_OR_RETURN(std::string o, Leaf(older, index));
    POOLFS_ASSIGN_OR_RETURN(std::string n, Leaf(newer, index));
    static const uint8_t kFree[kDnodeSize] = {};
    const zio::BpFormat format = zio_->format();
    for (uint64_t slot = 0; slot < kDnodesPerBlock; slot++) {
      const size_t at = slot * kDnodeSize;
      const uint8_t* ob = at < o.size() ? reinterpret_cast<const uint8_t*>(o.data()) + at : kFree;
      const uint8_t* nb = at < n.size() ? reinterpret_cast<const uint8_t*>(n.data()) + at : kFree;
      if (std::memcmp(ob, nb, kDnodeSize) == 0) continue;
      const uint64_t id = index * kDnodesPerBlock + slot;
      if (id == 0) continue;  // the metadnode's own slot
      const std::string object = name_ + " object " + std::to_string(id);
      POOLFS_ASSIGN_OR_RETURN(DnodePhys od, DecodeDnode(ob, object, format));
      POOLFS_ASSIGN_OR_RETURN(DnodePhys nd, DecodeDnode(nb, object, format));
      POOLFS_RETURN_IF_ERROR(fn_(ObjectId(id), od, nd));
    }
    return Status::Ok();
  }

  zio::Zio* zio_;
  std::string name_;
  const Txg older_txg_;
  const ChangedDnodeFn& fn_;
  DnodeDiffStats* stats_;
};

}  // namespace

Status WalkObjsetBlocks(zio::Zio* zio, const BlockPtr& root, std::string_view name, const Visit& fn,
                        Txg born_after) {
  if (root.IsHole() || root.type != zio::BlockType::kObjset)
    return Status::Corruption(std::string(name) + ": root pointer is not an object set block (" +
                              root.ToString() + ")");
  if (root.birth <= born_after) return Status::Ok();
  POOLFS_RETURN_IF_ERROR(fn(root));
  POOLFS_ASSIGN_OR_RETURN(std::string bytes, zio->Read(root));
  POOLFS_ASSIGN_OR_RETURN(ObjsetPhys phys, DecodeObjset(bytes, name, zio->format()));
  Walker w(zio, std::string(name), fn, born_after);
  const Leaf dnodes = [&](uint64_t blkid, const std::string& data) -> Status {
    const auto* p = reinterpret_cast<const uint8_t*>(data.data());
    for (uint64_t slot = 0; slot < kDnodesPerBlock && (slot + 1) * kDnodeSize <= data.size();
         slot++) {
      const uint64_t id = blkid * kDnodesPerBlock + slot;
      if (p[slot * kDnodeSize] == 0) continue;  // a free slot
      POOLFS_ASSIGN_OR_RETURN(
          DnodePhys d,
          DecodeDnode(p + slot * kDnodeSize, std::string(name) + " object " + std::to_string(id),
                      zio->format()));
      POOLFS_RETURN_IF_ERROR(w.Tree(id, d, nullptr));
    }
    return Status::Ok();
  };
  return w.Tree(0, phys.metadnode, &dnodes);
}

namespace {

// WalkObjectData's descent: a pointer standing at `level` for blocks
// [first, first + span) of the object.
class DataWalker {
 public:
  DataWalker(zio::Zio* zio, std::string name, uint64_t id, Txg born_after, const DataRunFn& fn)
      : zio_(zio), name_(std::move(name)), id_(id), born_after_(born_after), fn_(fn) {}

  Status Visit(const BlockPtr& bp, uint8_t level, uint64_t index, bool parent_new) {
    const uint64_t span = Span(level);
    if (bp.IsHole()) return parent_new ? Hole(index * span, span) : Status::Ok();
    if (bp.birth <= born_after_) return Status::Ok();  // unchanged, with all below it
    if (bp.level != level)
      return Status::Corruption(Where(level, index) + ": pointer says level " +
                                std::to_string(bp.level));
    if (level == 0) {
      POOLFS_RETURN_IF_ERROR(Flush());
      return fn_(index, 1, &bp);
    }
    POOLFS_ASSIGN_OR_RETURN(std::string data, zio_->Read(bp));
    std::vector<BlockPtr> children;
    POOLFS_RETURN_IF_ERROR(DecodeIndirect(data, zio_->format(), Where(level, index), &children));
    for (uint64_t i = 0; i < kFanout; i++)
      POOLFS_RETURN_IF_ERROR(Visit(children[i], uint8_t(level - 1), index * kFanout + i, true));
    return Status::Ok();
  }

  // Reports the run of holes still gathered.
  Status Flush() {
    if (hole_count_ == 0) return Status::Ok();
    const uint64_t first = hole_first_, count = hole_count_;
    hole_count_ = 0;
    return fn_(first, count, nullptr);
  }

  static uint64_t Span(uint8_t level) {
    uint64_t span = 1;
    for (uint8_t l = 0; l < level; l++) span *= kFanout;
    return span;
  }

 private:
  Status Hole(uint64_t first, uint64_t count) {
    if (hole_count_ != 0 && hole_first_ + hole_count_ == first) {
      hole_count_ += count;
      return Status::Ok();
    }
    POOLFS_RETURN_IF_ERROR(Flush());
    hole_first_ = first;
    hole_count_ = count;
    return Status::Ok();
  }

  std::string Where(uint8_t level, uint64_t index) const {
    return name_ + " object " + std::to_string(id_) + " L" + std::to_string(level) + " block " +
           std::to_string(index);
  }

  zio::Zio* zio_;
  std::string name_;
  uint64_t id_;
  Txg born_after_;
  const DataRunFn& fn_;
  uint64_t hole_first_ = 0;
  uint64_t hole_count_ = 0;
};

}  // namespace

Status WalkObjectData(zio::Zio* zio, std::string_view name, uint64_t id, const DnodePhys& d,
                      Txg born_after, const DataRunFn& fn) {
  if (d.nlevels < 1 || d.nlevels > kMaxLevels)
    return Status::Corruption(std::string(name) + " object " + std::to_string(id) + ": " +
                              std::to_string(d.nlevels) + " levels");
  DataWalker w(zio, std::string(name), id, born_after, fn);
  POOLFS_RETURN_IF_ERROR(w.Visit(d.bp, uint8_t(d.nlevels - 1), 0, /*parent_new=*/true));
  return w.Flush();
}

Result<ObjsetSpace> CountObjsetSpace(zio::Zio* zio, const BlockPtr& root, std::string_view name) {
  ObjsetSpace s;
  POOLFS_RETURN_IF_ERROR(WalkObjsetBlocks(zio, root, name, [&](const BlockPtr& bp) {
    if (bp == root) return Status::Ok();
    s.referenced += bp.allocated();
    s.logical += bp.lsize;
    s.physical += bp.psize;
    return Status::Ok();
  }));
  return s;
}

Status WalkChangedDnodes(zio::Zio* zio, const BlockPtr& older_root, Txg older_txg,
                         const BlockPtr& newer_root, std::string_view name,
                         const ChangedDnodeFn& fn, DnodeDiffStats* stats) {
  const bool empty = older_root.IsHole();  // a full send: every object is new
  for (const BlockPtr* root : {&older_root, &newer_root})
    if ((root != &older_root || !empty) &&
        (root->IsHole() || root->type != zio::BlockType::kObjset))
      return Status::Corruption(std::string(name) + ": root pointer is not an object set block (" +
                                root->ToString() + ")");
  if (newer_root == older_root || newer_root.birth <= older_txg) return Status::Ok();
  ObjsetPhys phys[2];
  const BlockPtr* roots[2] = {&older_root, &newer_root};
  for (int i = empty ? 1 : 0; i < 2; i++) {
    if (stats != nullptr) stats->blocks_read++;
    POOLFS_ASSIGN_OR_RETURN(std::string bytes, zio->Read(*roots[i]));
    POOLFS_ASSIGN_OR_RETURN(phys[i], DecodeObjset(bytes, name, zio->format()));
  }
  const DnodePhys& o = phys[0].metadnode;
  const DnodePhys& n = phys[1].metadnode;
  if (o.nlevels < 1 || n.nlevels < 1 || o.nlevels > kMaxLevels || n.nlevels > kMaxLevels)
    return Status::Corruption(std::string(name) + ": metadnode of " +
                              std::to_string(std::max(o.nlevels, n.nlevels)) + " levels");
  for (const DnodePhys* m : {&o, &n})
    if (!m->bp.IsHole() && m->bp.level != m->nlevels - 1)
      return Status::Corruption(std::string(name) + ": metadnode of " + std::to_string(m->nlevels) +
                                " levels points at level " + std::to_string(m->bp.level));
  DnodeDiffer d(zio, std::string(name), older_txg, fn, stats);
  return d.Visit(uint8_t(std::max(o.nlevels, n.nlevels) - 1), 0, o.bp, n.bp);
}

}  // namespace poolfs::core::dmu
