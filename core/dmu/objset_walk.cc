#include "dmu/objset_walk.h"

#include <string>

namespace poolfs::core::dmu {

namespace {

using zio::BlockPtr;
using Visit = std::function<Status(const BlockPtr&)>;
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
    const zio::BpFormat format = zio_->format();
    if (data.size() != IndirectBlockSize(format))
      return Status::Corruption(Where(id, level, index) + ": indirect block of " +
                                std::to_string(data.size()) + " bytes");
    const auto* p = reinterpret_cast<const uint8_t*>(data.data());
    for (uint64_t i = 0; i < kFanout; i++) {
      auto child = zio::DecodeBlockPtr(p + i * zio::BlockPtrSize(format), {}, format);
      if (!child.ok())
        return child.status().WithContext(Where(id, level, index) + " slot " + std::to_string(i));
      if (child->IsHole()) continue;
      POOLFS_RETURN_IF_ERROR(Block(id, *child, uint8_t(level - 1), index * kFanout + i, leaf));
    }
    return Status::Ok();
  }

  zio::Zio* zio_;
  std::string name_;
  const Visit& fn_;
  const Txg born_after_;
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

}  // namespace poolfs::core::dmu
