#include "pool/check_walker.h"
#include "util/text.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace poolfs::core::pool {

namespace {
// A gathered MOS object longer than this is refused: a damaged length must
// not exhaust memory.
constexpr uint64_t kMaxGatheredBytes = uint64_t{1} << 28;

}  // namespace

void ProblemSink::Add(std::string where, std::string what) {
  if (report_->problems.size() < CheckReport::kMaxListed)
    report_->problems.push_back({std::move(where), std::move(what)});
  else
    report_->problems_omitted++;
}

void ProblemSink::Warn(std::string where, std::string what) {
  if (report_->warnings.size() < CheckReport::kMaxListed)
    report_->warnings.push_back({std::move(where), std::move(what)});
}

CheckWalker::CheckWalker(zio::Zio* zio, std::vector<VdevGeometry> vdevs, Txg txg,
                         CheckReport* report, ProblemSink* sink, const BlockVisitor* visitor)
    : zio_(zio),
      vdevs_(std::move(vdevs)),
      txg_(txg),
      report_(report),
      sink_(sink),
      visitor_(visitor),
      refs_(vdevs_.size()) {}

std::string CheckWalker::Describe(const Origin& o) const {
  std::string s = o.dataset < 0 ? "MOS" : "dataset '" + names_[size_t(o.dataset)] + "'";
  if (o.object == kRootBlockObject) return s + " root block";
  if (o.object == kDeferredFreeObject) return s + " deferred free " + std::to_string(o.blkid);
  if (o.object == 0) {
    s += " metadnode";
  } else {
    s += " object " + std::to_string(o.object);
    if (o.dataset < 0) s += " (" + std::string(dmu::ObjectTypeName(o.type)) + ")";
  }
  return s + " L" + std::to_string(o.level) + " block " + std::to_string(o.blkid);
}

std::string CheckWalker::DescribeAt(const Origin& o, uint32_t vdev, uint64_t offset) const {
  return Describe(o) + " (vdev " + std::to_string(vdev) + " offset " + util::Hex(offset) + ")";
}

void CheckWalker::Problem(const Origin& o, const zio::BlockPtr& bp, std::string what) {
  sink_->Add(bp.IsHole() ? Describe(o) : DescribeAt(o, bp.dva.vdev, bp.dva.offset),
             std::move(what));
}

Result<std::string> CheckWalker::ReadChecked(const zio::BlockPtr& bp, const Origin& o) {
  std::vector<zio::Zio::CopyError> bad;
  Result<std::string> data = zio_->ReadEveryCopy(bp, &bad);
  // The block reads from a good copy: each bad one is a problem of its own
  // (a scrub or the next read of the block rewrites it), once, though a
  // block shared by a snapshot and a later tree is read by both walks.
  // None reads: the caller reports the block.
  if (data.ok())
    for (const zio::Zio::CopyError& e : bad) {
      const space::Dva& d = bp.copy(e.copy);
      if (!bad_copies_.insert({d.vdev, d.offset}).second) {
        repeated_copy_errors_++;
        continue;
      }
      sink_->Add(DescribeAt(o, d.vdev, d.offset),
                 "copy " + std::to_string(e.copy) + " of " + std::to_string(bp.copies()) +
                     " does not read back (the others do): " + e.status.message());
    }
  return data;
}

void CheckWalker::Visit(const zio::BlockPtr& bp, const Origin& o) {
  if (visitor_ == nullptr || !*visitor_) return;
  CheckedBlock b;
  b.mos = o.dataset < 0;
  if (!b.mos) b.dataset = names_[size_t(o.dataset)];
  b.object = o.object;
  b.object_type = o.type;
  b.level = o.level;
  b.blkid = o.blkid;
  b.bp = bp;
  (*visitor_)(b);
}

CheckWalker::Ref CheckWalker::Reference(const zio::BlockPtr& bp, const Origin& o,
                                        Txg parent_birth) {
  if (bp.birth > txg_)
    Problem(o, bp,
            "born in txg " + std::to_string(bp.birth.value()) + ", after the checked txg " +
                std::to_string(txg_.value()));
  else if (bp.birth > parent_birth)
    Problem(o, bp,
            "born in txg " + std::to_string(bp.birth.value()) +
                ", after the block that points to it (txg " + std::to_string(parent_birth.value()) +
                ")");
  const Ref r = ReferenceExtent(bp, bp.dva, o, 0);
  if (r != Ref::kWalk && r != Ref::kShared && r != Ref::kCloned) return r;
  if (held_ != nullptr) (*held_)[HeldKeyOf(bp)]++;
  // Further copies: the same bytes again, each referenced once (a clone's
  // copies are its block's: met again the same way as copy 0).
  for (int i = 1; i < bp.copies(); i++)
    if (ReferenceExtent(bp, bp.copy(i), o, i) == Ref::kInvalid) return Ref::kInvalid;
  if (!bp.IsGang()) return r;
  // A gang block: its children are its bytes, each referenced once.
  Result<std::vector<space::Dva>> kids = zio_->GangChildren(bp);
  if (!kids.ok()) {
    Problem(o, bp, kids.status().message());
    return Ref::kInvalid;
  }
  for (const space::Dva& k : *kids)
    if (ReferenceExtent(bp, k, o, -1) == Ref::kInvalid) return Ref::kInvalid;
  return r;
}

bool CheckWalker::ShareExplains(const zio::BlockPtr& bp, const Origin& o, const Origin& by) const {
  if (o.dataset < 0 || by.dataset < 0) return false;
  const uint64_t lineage = lineage_[size_t(by.dataset)];
  for (const Share& sh : shares_)
    if (sh.lineage == lineage && bp.birth <= sh.through) return true;
  return false;
}

CheckWalker::Ref CheckWalker::ReferenceExtent(const zio::BlockPtr& bp, const space::Dva& extent,
                                              const Origin& o, int copy) {
  const uint32_t vdev = extent.vdev;
  const uint64_t off = extent.offset, size = extent.size;
  if (vdev >= vdevs_.size()) {
    Problem(
        o, bp,
        "names vdev " + std::to_string(vdev) + "; the pool has " + std::to_string(vdevs_.size()));
    return Ref::kInvalid;
  }
  const VdevGeometry& g = vdevs_[vdev];
  if (off < g.alloc_start || size > g.alloc_size || off - g.alloc_start > g.alloc_size - size) {
    Problem(o, bp,
            "extent [" + util::Hex(off) + ", +" + std::to_string(size) +
                ") lies outside the allocatable area [" + util::Hex(g.alloc_start) + ", " +
                util::Hex(g.alloc_start + g.alloc_size) + ")");
    return Ref::kInvalid;
  }
  if (((off | size) & ((uint64_t{1} << g.ashift) - 1)) != 0) {
    Problem(o, bp,
            "extent [" + util::Hex(off) + ", +" + std::to_string(size) +
                ") is not aligned to the vdev's " + std::to_string(uint64_t{1} << g.ashift) +
                "-byte sectors");
    return Ref::kInvalid;
  }
  auto& m = refs_[vdev];
  auto next = m.lower_bound(off);
  // Block cloning: a data block's copy 0 is its key in the table.
  const bool clonable =
      copy >= 0 && o.dataset >= 0 && has_ref_table_ && zio::BlockRefTable::Clonable(bp);
  const zio::BlockRefTable::Key key{bp.dva.vdev, bp.dva.offset};
  if (next != m.end() && next->first == off && next->second.size == size) {
    auto counted = clonable ? clones_.find(key) : clones_.end();
    // A snapshot walked before, or an origin, holds this very pointer: as
    // it holds the first reference, or one of the block's clones.
    bool shared = ShareExplains(bp, o, next->second.origin);
    if (!shared && counted != clones_.end())
      for (const Origin& c : counted->second.extra)
        if ((shared = ShareExplains(bp, o, c))) break;
    if (shared) {
      objset_bytes_ += size;
      return Ref::kShared;
    }
    // A clone of a block the table counts (any data block's, when the
    // table could not be read) whose first pointer is a dataset's. Copy 0
    // counts the reference; each further copy is met again the same way,
    // and all count for the dataset.
    if (clonable && next->second.origin.dataset >= 0 &&
        (counted != clones_.end() || !ref_table_known_)) {
      if (counted == clones_.end()) counted = clones_.emplace(key, CloneRefs{}).first;
      if (copy == 0) counted->second.extra.push_back(o);
      objset_bytes_ += size;
      return Ref::kCloned;
    }
    Problem(o, bp,
            "is also referenced by " + Describe(next->second.origin) + ": one block, two pointers");
    return Ref::kDuplicate;  // the same bytes: walking them again adds nothing
  }
  auto conflict = m.end();
  if (next != m.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > off) conflict = prev;
  }
  if (conflict == m.end() && next != m.end() && next->first < off + size) conflict = next;
  if (conflict != m.end()) {
    Problem(o, bp,
            "extent [" + util::Hex(off) + ", +" + std::to_string(size) + ") overlaps " +
                DescribeAt(conflict->second.origin, vdev, conflict->first) + " [" +
                util::Hex(conflict->first) + ", +" + std::to_string(conflict->second.size) + ")");
    return Ref::kWalk;  // a different block: still read and walk it
  }
  m.emplace_hint(next, off, RefExtent{size, o});
  report_->bytes_referenced += size;
  objset_bytes_ += size;
  if (copy == 0 && clonable && ref_table_known_ && ref_table_.count(key) != 0) {
    // A block the table counts: its clones are to come.
    CloneRefs& c = clones_[key];
    c.allocated = bp.allocated();
    c.seen = true;
  }
  return Ref::kWalk;
}

void CheckWalker::SetRefTable(zio::BlockRefTable::Entries entries) {
  has_ref_table_ = true;
  ref_table_known_ = true;
  ref_table_ = std::move(entries);
}

void CheckWalker::SetRefTableUnknown() {
  has_ref_table_ = true;
  ref_table_known_ = false;
  ref_table_.clear();
}

void CheckWalker::CheckRefTable(const std::string& where) {
  if (!ref_table_known_) return;
  // Damage the walk could not pass may hide pointers to these blocks.
  const std::string hidden = skipped_ == 0 ? ""
                                           : " (the walk skipped " + std::to_string(skipped_) +
                                                 " damaged subtrees, which may hold some)";
  auto beyond = [](uint64_t n) {
    return std::to_string(n) + (n == 1 ? " reference" : " references") + " beyond the first";
  };
  for (const auto& [key, e] : ref_table_) {
    const auto& [vdev, offset] = key;
    const std::string entry =
        where + " entry for vdev " + std::to_string(vdev) + " offset " + util::Hex(offset);
    auto c = clones_.find(key);
    if (c == clones_.end() || !c->second.seen) {
      const std::string counts = "counts " + beyond(e.refs) + " to ";
      auto at = refs_[vdev].find(offset);
      if (at == refs_[vdev].end())
        sink_->Add(entry, counts + "a block no pointer names" + hidden);
      else  // an extent of another kind of block, which no clone may share
        sink_->Add(entry, counts + "the extent of " + Describe(at->second.origin) +
                              ", not a dataset's data block");
      continue;
    }
    const CloneRefs& found = c->second;
    // The block, by its first pointer (recorded with its extent).
    const RefExtent& first = refs_[vdev].at(offset);
    const std::string block = DescribeAt(first.origin, vdev, offset);
    if (found.allocated != e.allocated)
      sink_->Add(block, "takes " + std::to_string(found.allocated) +
                            " bytes; the block reference table says " +
                            std::to_string(e.allocated));
    const uint64_t n = found.extra.size();
    if (n == e.refs) continue;
    std::string what = "the block reference table counts " + beyond(e.refs) + "; the walk found " +
                       std::to_string(n);
    for (size_t i = 0; i < n && i < 3; i++)
      what += (i == 0 ? ": " : ", ") + Describe(found.extra[i]);
    if (n > 3) what += ", ...";
    what += n < e.refs ? ": its space would never be freed" + hidden
                       : ": a free would release it while a pointer still names it";
    sink_->Add(block, what);
  }
}

void CheckWalker::WalkMos(const zio::BlockPtr& root) { WalkObjset(-1, root); }

void CheckWalker::ReferenceDeferredFrees(const std::vector<zio::BlockPtr>& frees) {
  for (size_t i = 0; i < frees.size(); i++) {
    Origin o;
    o.object = kDeferredFreeObject;
    o.blkid = i;
    Reference(frees[i], o, txg_);
  }
}

void CheckWalker::WalkDataset(const std::string& name, const zio::BlockPtr& root,
                              std::vector<Share> shares, uint64_t lineage) {
  names_.push_back(name);
  lineage_.push_back(lineage);
  shares_ = std::move(shares);
  WalkObjset(int32_t(names_.size() - 1), root);
  shares_.clear();
}

bool CheckWalker::Referenced(const zio::BlockPtr& bp) const {
  if (bp.IsHole() || bp.dva.vdev >= refs_.size()) return false;
  auto it = refs_[bp.dva.vdev].find(bp.dva.offset);
  return it != refs_[bp.dva.vdev].end() && it->second.size == bp.dva.size;
}

void CheckWalker::WalkObjset(int32_t ds, const zio::BlockPtr& root) {
  Origin ro;
  ro.dataset = ds;
  ro.object = kRootBlockObject;
  if (root.IsHole()) {
    sink_->Add(Describe(ro), "is a hole: the object set was never written");
    skipped_++;
    return;
  }
  Visit(root, ro);
  report_->blocks++;
  // What the walk below adds up, for the object set's own total.
  const uint64_t bytes_before = objset_bytes_;
  const uint64_t skipped_before = skipped_;
  const uint64_t problems_before = report_->problems.size() + report_->problems_omitted;
  if (root.type != zio::BlockType::kObjset) {
    Problem(
        ro, root,
        "points to a " + std::string(zio::BlockTypeName(root.type)) + " block, not an object set");
    skipped_++;
    return;
  }
  if (Ref r = Reference(root, ro, txg_); r != Ref::kWalk && r != Ref::kShared) {
    if (r == Ref::kInvalid) skipped_++;
    return;
  }
  auto bytes = ReadChecked(root, ro);
  if (!bytes.ok()) {
    Problem(ro, root, bytes.status().message());
    skipped_++;
    return;
  }
  auto phys = dmu::DecodeObjset(*bytes, Describe(ro), zio_->format());
  if (!phys.ok()) {
    Problem(ro, root, phys.status().message());
    skipped_++;
    return;
  }
  const dmu::ObjsetType want = ds < 0 ? dmu::ObjsetType::kMos : dmu::ObjsetType::kDataset;
  if (phys->type != want)
    Problem(ro, root,
            ds < 0 ? "is a dataset's object set, not the MOS"
                   : "is the MOS's object set, not a dataset's");
  if (root.fill != std::max<uint64_t>(phys->live_objects, 1))
    Problem(ro, root,
            "pointer has fill " + std::to_string(root.fill) + "; the object set has " +
                std::to_string(phys->live_objects) + " objects");

  uint64_t live = 0, max_id = 0;
  TreeWalk w;
  w.base.dataset = ds;
  w.base.type = dmu::ObjectType::kMetadnode;
  w.base.object = 0;
  w.on_leaf = [&](uint64_t blkid, const std::string& data, const zio::BlockPtr& bp) {
    Origin leaf = w.base;
    leaf.blkid = blkid;
    auto* p = reinterpret_cast<const uint8_t*>(data.data());
    uint64_t in_block = 0;  // allocated dnodes, for the pointer's fill
    bool all_decoded = true;
    for (uint64_t slot = 0; slot < dmu::kDnodesPerBlock; slot++) {
      const uint64_t id = blkid * dmu::kDnodesPerBlock + slot;
      auto d = dmu::DecodeDnode(p + slot * dmu::kDnodeSize, "object " + std::to_string(id),
                                zio_->format());
      if (!d.ok()) {
        Problem(leaf, bp, d.status().message());
        skipped_++;
        all_decoded = false;
        continue;
      }
      if (d->free()) continue;
      in_block++;
      if (id == 0 || d->type == dmu::ObjectType::kMetadnode) {
        Problem(leaf, bp,
                "object " + std::to_string(id) + " is a " +
                    std::string(dmu::ObjectTypeName(d->type)) + " dnode where none may be");
        continue;
      }
      live++;
      max_id = std::max(max_id, id);
      WalkObject(ds, id, *d, bp.birth);
    }
    // Import rebuilds the free object ids from these fills (objset.h).
    if (bp.type != zio::BlockType::kDnodes)
      Problem(leaf, bp,
              "a metadnode block of type " + std::string(zio::BlockTypeName(bp.type)) +
                  "; expected dnodes");
    else if (all_decoded && bp.fill != in_block)
      Problem(leaf, bp,
              "pointer has fill " + std::to_string(bp.fill) + "; the block holds " +
                  std::to_string(in_block) + " dnodes");
  };
  WalkTree(w, phys->metadnode, root.birth);
  report_->objects += live;
  if (w.damaged) return;  // the counts below cannot be judged
  if (live != phys->live_objects)
    Problem(ro, root,
            "says " + std::to_string(phys->live_objects) +
                " objects are live; its metadnode holds " + std::to_string(live));
  if (live > 0 && max_id >= phys->next_object)
    Problem(ro, root,
            "says every object id from " + std::to_string(phys->next_object) +
                " is free, but object " + std::to_string(max_id) + " exists");
  // The referenced bytes the object set keeps (objset.h) against what its
  // tree really holds, the root block excluded; only for a whole walk that
  // found nothing else wrong (a block two pointers share counts once, and
  // is reported as such).
  const uint64_t walked = objset_bytes_ - bytes_before;
  const bool clean = skipped_ == skipped_before &&
                     report_->problems.size() + report_->problems_omitted == problems_before;
  if (phys->space_known && clean && walked >= root.allocated() &&
      walked - root.allocated() != phys->space.referenced)
    Problem(ro, root,
            "says its blocks take " + std::to_string(phys->space.referenced) +
                " bytes; its tree holds " + std::to_string(walked - root.allocated()));
}

void CheckWalker::WalkObject(int32_t ds, uint64_t id, const dmu::DnodePhys& d, Txg parent_birth) {
  TreeWalk w;
  w.base.dataset = ds;
  w.base.type = d.type;
  w.base.object = id;
  GatheredObject* g = nullptr;
  if (ds < 0) {
    GatheredObject& obj = mos_objects_[id];
    obj.type = d.type;
    if (d.type == dmu::ObjectType::kPoolDirectory || d.type == dmu::ObjectType::kSpaceMap ||
        d.type == dmu::ObjectType::kDeadlist || d.type == dmu::ObjectType::kRefTable) {
      if (d.length > kMaxGatheredBytes) {
        sink_->Add(Describe(w.base),
                   "is " + std::to_string(d.length) + " bytes long, implausibly long");
      } else {
        obj.bytes.assign(d.length, '\0');
        obj.complete = true;
        g = &obj;
      }
    }
  }
  if (g != nullptr) {
    w.on_leaf = [g, &d](uint64_t blkid, const std::string& data, const zio::BlockPtr&) {
      if (blkid >= g->bytes.size() / d.block_size + 1) return;  // past the length (reported)
      const uint64_t off = blkid * d.block_size;
      if (off >= g->bytes.size()) return;
      std::memcpy(g->bytes.data() + off, data.data(),
                  std::min<uint64_t>(data.size(), g->bytes.size() - off));
    };
  }
  WalkTree(w, d, parent_birth);
  if (g != nullptr && w.damaged) g->complete = false;
}

void CheckWalker::WalkTree(TreeWalk& w, const dmu::DnodePhys& d, Txg parent_birth) {
  w.block_size = d.block_size;
  if (!d.bp.IsHole()) WalkBlock(w, d.bp, uint8_t(d.nlevels - 1), 0, parent_birth);
  Origin top = w.base;
  top.level = uint8_t(d.nlevels - 1);
  std::string object = Describe(top);
  object = object.substr(0, object.rfind(" L"));  // the object, without a block
  const uint64_t blocks_in_length = d.length / d.block_size + (d.length % d.block_size != 0);
  if (w.leaves > 0 && w.last_leaf >= blocks_in_length)
    sink_->Add(object, "has block " + std::to_string(w.last_leaf) + " of " +
                           std::to_string(d.block_size) + " bytes past its length of " +
                           std::to_string(d.length) + " bytes");
  if (!w.damaged && w.used != d.used)
    sink_->Add(object, "dnode says " + std::to_string(d.used) +
                           " bytes are allocated; its blocks take " + std::to_string(w.used));
}

void CheckWalker::WalkBlock(TreeWalk& w, const zio::BlockPtr& bp, uint8_t level, uint64_t index,
                            Txg parent_birth) {
  if (bp.IsHole()) return;
  Origin o = w.base;
  o.level = level;
  o.blkid = index;
  Visit(bp, o);
  report_->blocks++;
  // A block that hides others (an indirect block, a dnode block) and is not
  // walked leaves the space check blind below it.
  const bool hides = level > 0 || w.base.object == 0;
  auto give_up = [&](std::string what) {
    Problem(o, bp, std::move(what));
    w.damaged = true;
    if (hides) skipped_++;
  };
  if (bp.level != level)
    return give_up("pointer says level " + std::to_string(bp.level) +
                   "; the tree puts the block at level " + std::to_string(level));
  const zio::BpFormat format = zio_->format();
  const uint32_t lsize = level > 0 ? uint32_t(dmu::IndirectBlockSize(format)) : w.block_size;
  if (bp.lsize != lsize)
    return give_up("pointer says " + std::to_string(bp.lsize) + " bytes; blocks here are " +
                   std::to_string(lsize));
  if (bp.type == zio::BlockType::kObjset) return give_up("an object set block inside a block tree");
  const Ref r = Reference(bp, o, parent_birth);
  if (r == Ref::kInvalid) {
    w.damaged = true;
    if (hides) skipped_++;
    return;
  }
  w.used += bp.allocated();  // the dnode counts it, whoever else does
  if (r == Ref::kDuplicate) return;
  auto data = ReadChecked(bp, o);
  if (!data.ok()) return give_up(data.status().message());
  if (level == 0) {
    w.leaves++;
    w.last_leaf = index;
    if (w.on_leaf) w.on_leaf(index, *data, bp);
    return;
  }
  auto* p = reinterpret_cast<const uint8_t*>(data->data());
  uint64_t fill = 0;
  bool all_decoded = true;
  for (uint64_t i = 0; i < dmu::kFanout; i++) {
    auto child =
        zio::DecodeBlockPtr(p + i * zio::BlockPtrSize(format), "slot " + std::to_string(i), format);
    if (!child.ok()) {
      Problem(o, bp, child.status().message());
      w.damaged = true;
      all_decoded = false;
      skipped_++;
      continue;
    }
    fill += child->fill;
    if (!child->IsHole())
      WalkBlock(w, *child, uint8_t(level - 1), index * dmu::kFanout + i, bp.birth);
  }
  if (all_decoded && fill != bp.fill)
    Problem(o, bp,
            "pointer has fill " + std::to_string(bp.fill) + "; the block's children add up to " +
                std::to_string(fill));
}

}  // namespace poolfs::core::pool
