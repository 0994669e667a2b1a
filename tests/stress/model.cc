#include "stress/model.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <set>

namespace poolfs::stress {

namespace {

Status Impossible(const OpRecord& r, const std::string& why) {
  return Status::Corruption("impossible history at " + DescribeRecord(r) + ": " + why);
}

void SortByTxgSeq(std::vector<OpRecord>& records) {
  std::stable_sort(records.begin(), records.end(), [](const OpRecord& a, const OpRecord& b) {
    return a.txg != b.txg ? a.txg < b.txg : a.seq < b.seq;
  });
}

// Makes the rollbacks of one dataset's replay as its txgs go by (see the
// top of model.h): keeps the models of the snapshots rolled back to that
// the records take, and rolls back.
class RollbackCursor {
 public:
  explicit RollbackCursor(const Rollbacks* rollbacks) : rollbacks_(rollbacks) {
    if (rollbacks == nullptr) return;
    for (const auto& [n, t] : rollbacks->taken) events_.push_back({t, false, n});
    for (const auto& [t, n] : rollbacks->at) events_.push_back({t, true, n});
    // A snapshot is kept before a rollback of the same txg could need it.
    std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
      return a.txg != b.txg ? a.txg < b.txg : a.roll < b.roll;
    });
  }

  // Makes the events of the txgs before `txg` on *m, whose records it has
  // applied. On failure *bad is the rollback.
  Status Before(uint64_t txg, Model* m, OpRecord* bad) {
    for (; next_ < events_.size() && events_[next_].txg < txg; next_++) {
      const Event& e = events_[next_];
      if (!e.roll) {
        kept_[e.snapshot] = *m;
        continue;
      }
      if (auto k = kept_.find(e.snapshot); k != kept_.end()) {
        *m = k->second;
        continue;
      }
      if (auto k = rollbacks_->known.find(e.snapshot); k != rollbacks_->known.end()) {
        *m = *k->second;
        continue;
      }
      bad->kind = OpKind::kRollback;
      bad->aux = 1;
      bad->txg = e.txg;
      bad->object = e.snapshot;
      return Status::Corruption("impossible history: a rollback in txg " + std::to_string(e.txg) +
                                " to snapshot " + SnapshotName(e.snapshot) +
                                ", which is neither taken in the log nor verified before");
    }
    return Status::Ok();
  }

 private:
  struct Event {
    uint64_t txg;
    bool roll;  // false: keep the model of `snapshot`; true: roll back to it
    uint64_t snapshot;
  };
  const Rollbacks* const rollbacks_;
  std::vector<Event> events_;
  size_t next_ = 0;
  std::map<uint64_t, Model> kept_;
};

}  // namespace

uint64_t Model::bytes_held() const {
  uint64_t n = 0;
  for (const auto& [id, o] : objects_) n += o.pages.size() * kPage;
  return n;
}

Status Model::Replay(std::vector<OpRecord> records, uint64_t through_txg,
                     const CloneSources& sources, const Rollbacks* rollbacks,
                     uint64_t* bad_object) {
  SortByTxgSeq(records);
  RollbackCursor cursor(rollbacks);
  OpRecord rollback;
  for (const OpRecord& r : records) {
    if (r.kind == OpKind::kSynced || r.txg > through_txg) continue;
    if (Status st = cursor.Before(r.txg, this, &rollback); !st.ok()) {
      *bad_object = 0;
      return st;
    }
    const ModelObject* source = nullptr;
    if (r.kind == OpKind::kCloneBlocks) {
      auto it = sources.find(r.seq);
      if (it != sources.end()) source = &it->second;
    }
    Status st = Apply(r, source);
    if (!st.ok()) {
      *bad_object = r.object;
      return st;
    }
  }
  *bad_object = 0;
  return cursor.Before(through_txg + 1, this, &rollback);
}

Status Model::CaptureCloneSources(const std::vector<const Model*>& start,
                                  const std::vector<OpRecord>& records, uint64_t through_txg,
                                  const DatasetRollbacks& rollbacks, CloneSources* out,
                                  OpRecord* bad) {
  std::set<uint16_t> involved;
  for (const OpRecord& r : records)
    if (r.kind == OpKind::kCloneBlocks && r.txg <= through_txg) {
      involved.insert(r.dataset);
      involved.insert(UnpackCloneRange(r).src_dataset);
    }
  if (involved.empty()) return Status::Ok();
  std::map<uint16_t, Model> work;
  std::map<uint16_t, RollbackCursor> cursors;
  for (uint16_t d : involved) {
    work[d] = d < start.size() && start[d] != nullptr ? *start[d] : Model();
    const auto rb = rollbacks.find(d);
    cursors.emplace(d, RollbackCursor(rb == rollbacks.end() ? nullptr : &rb->second));
  }
  std::vector<OpRecord> mine;
  for (const OpRecord& r : records)
    if (IsObjectOp(r.kind) && r.txg <= through_txg && involved.count(r.dataset)) mine.push_back(r);
  SortByTxgSeq(mine);
  for (const OpRecord& r : mine) {
    for (auto& [d, cursor] : cursors)
      if (Status st = cursor.Before(r.txg, &work[d], bad); !st.ok()) {
        bad->dataset = d;
        return st;
      }
    std::optional<ModelObject> source;
    if (r.kind == OpKind::kCloneBlocks) {
      const CloneRange c = UnpackCloneRange(r);
      const auto& objects = work[c.src_dataset].objects_;
      if (auto it = objects.find(c.src_object); it != objects.end())
        source = CloneSource(r, it->second);
    }
    Status st = work[r.dataset].Apply(r, source ? &*source : nullptr);
    if (!st.ok()) {
      *bad = r;
      return st;
    }
    if (source) out->emplace(r.seq, std::move(*source));
  }
  return Status::Ok();
}

Status Model::Apply(const OpRecord& r, const ModelObject* clone_source) {
  if (r.kind == OpKind::kCreate) {
    if (objects_.count(r.object))
      return Impossible(r, "the DMU handed out an object id that is still allocated");
    ModelObject o;
    o.block_size = uint32_t(r.a);
    o.compression = r.aux;
    objects_.emplace(r.object, std::move(o));
    return Status::Ok();
  }
  auto it = objects_.find(r.object);
  if (it == objects_.end()) return Impossible(r, "the object does not exist");
  ModelObject& o = it->second;
  switch (r.kind) {
    case OpKind::kWrite: {
      WriteSpec w{r.object, r.a, r.b, r.txg, r.seq, Fill(r.aux)};
      if (w.fill == Fill::kZeros)
        ZeroBytes(o, w.off, w.len);
      else
        WriteBytes(o, w);
      o.length = std::max(o.length, r.a + r.b);
      break;
    }
    case OpKind::kTruncate:
      if (r.a < o.length) {
        o.pages.erase(o.pages.lower_bound((r.a + kPage - 1) / kPage), o.pages.end());
        ZeroBytes(o, r.a, o.length - r.a);
      }
      o.length = r.a;
      break;
    case OpKind::kPunch:
      if (r.a < o.length) ZeroBytes(o, r.a, std::min(r.b, o.length - r.a));
      break;
    case OpKind::kFree: objects_.erase(it); break;
    case OpKind::kBlockSize:
      // The DMU allows it only while the data fits in block 0 at both sizes.
      if (o.length > std::min<uint64_t>(o.block_size, r.a))
        return Impossible(r, "the block size changed while the object held more than one block");
      o.block_size = uint32_t(r.a);
      break;
    case OpKind::kBonus:
      o.bonus_type = r.aux;
      o.bonus = BonusBytes(r.object, r.seq, r.a);
      break;
    case OpKind::kCloneBlocks: return Clone(r, o, clone_source);
    default: return Impossible(r, "unknown record kind");
  }
  return Status::Ok();
}

ModelObject Model::CloneSource(const OpRecord& r, const ModelObject& src) {
  const CloneRange c = UnpackCloneRange(r);
  ModelObject out;
  out.block_size = src.block_size;
  out.compression = src.compression;
  out.length = src.length;
  const uint64_t end = c.src_off + uint64_t(c.blocks) * src.block_size;
  for (auto it = src.pages.lower_bound(c.src_off / kPage);
       it != src.pages.end() && it->first * kPage < end; ++it)
    out.pages.insert(*it);
  return out;
}

Status Model::Clone(const OpRecord& r, ModelObject& o, const ModelObject* src) {
  const CloneRange c = UnpackCloneRange(r);
  if (src == nullptr) return Impossible(r, "its source object does not exist then");
  const uint64_t bs = o.block_size;
  if (src->block_size != bs)
    return Impossible(r, "the source's block size is " + std::to_string(src->block_size) +
                             ", the destination's " + std::to_string(bs));
  if (c.blocks == 0 || c.src_off % bs != 0 || c.dst_off % bs != 0)
    return Impossible(r, "not a range of whole blocks");
  if (c.src_off + (c.blocks - 1) * bs >= src->length)
    return Impossible(
        r, "its last block starts at or past the source's length " + std::to_string(src->length));
  const uint64_t len = c.blocks * bs;
  // Page by page of the destination: a source piece of zeros allocates no
  // page.
  for (uint64_t pos = c.dst_off; pos < c.dst_off + len;) {
    const uint64_t page = pos / kPage;
    const uint64_t hi = std::min(c.dst_off + len, (page + 1) * kPage);
    const std::string bytes = Expected(*src, c.src_off + (pos - c.dst_off), hi - pos);
    if (bytes.find_first_not_of('\0') == std::string::npos) {
      ZeroBytes(o, pos, hi - pos);
    } else {
      std::string& p = o.pages[page];
      if (p.empty()) p.assign(kPage, '\0');
      std::memcpy(p.data() + (pos - page * kPage), bytes.data(), bytes.size());
    }
    pos = hi;
  }
  o.length = std::max(o.length, std::min(c.dst_off + len, c.dst_off + (src->length - c.src_off)));
  return Status::Ok();
}

void Model::WriteBytes(ModelObject& o, const WriteSpec& w) {
  for (uint64_t pos = w.off; pos < w.off + w.len;) {
    const uint64_t page = pos / kPage;
    const uint64_t hi = std::min(w.off + w.len, (page + 1) * kPage);
    std::string& p = o.pages[page];
    if (p.empty()) p.assign(kPage, '\0');
    FillStamped(w, pos, hi - pos, p.data() + (pos - page * kPage));
    pos = hi;
  }
}

void Model::ZeroBytes(ModelObject& o, uint64_t off, uint64_t len) {
  const uint64_t end = off + len;
  for (auto it = o.pages.lower_bound(off / kPage); it != o.pages.end() && it->first * kPage < end;
       ++it) {
    const uint64_t base = it->first * kPage;
    const uint64_t lo = std::max(off, base), hi = std::min(end, base + kPage);
    std::memset(it->second.data() + (lo - base), 0, hi - lo);
  }
}

std::string Model::Expected(const ModelObject& o, uint64_t off, uint64_t n) {
  std::string out(n, '\0');
  const uint64_t end = off + n;
  for (auto it = o.pages.lower_bound(off / kPage); it != o.pages.end() && it->first * kPage < end;
       ++it) {
    const uint64_t base = it->first * kPage;
    const uint64_t lo = std::max(off, base), hi = std::min(end, base + kPage);
    std::memcpy(out.data() + (lo - off), it->second.data() + (lo - base), hi - lo);
  }
  return out;
}

Status Model::CompareRange(dmu::ObjectSet* os, uint64_t id, const ModelObject& o, uint64_t off,
                           uint64_t n, VerifyStats* stats) const {
  constexpr uint64_t kPiece = 1 << 20;
  for (uint64_t pos = off; pos < off + n; pos += kPiece) {
    const uint64_t len = std::min(kPiece, off + n - pos);
    auto got = os->Read(ObjectId(id), pos, len);
    const std::string where = "object " + std::to_string(id) + " [" + std::to_string(pos) + ", +" +
                              std::to_string(len) + ")";
    if (!got.ok())
      return Status::Corruption("read of " + where + " failed: " + got.status().ToString());
    if (got->size() != len)
      return Status::Corruption("read of " + where + " returned " + std::to_string(got->size()) +
                                " bytes");
    const std::string want = Expected(o, pos, len);
    stats->bytes += len;
    if (*got == want) continue;
    uint64_t first = 0, last = 0, differ = 0;
    for (uint64_t i = 0; i < len; i++) {
      if ((*got)[i] == want[i]) continue;
      if (differ++ == 0) first = i;
      last = i;
    }
    const uint64_t at = pos + first;
    const uint64_t chunk = at / kChunk * kChunk;
    const uint64_t ci = chunk - pos;
    const uint64_t cn = std::min<uint64_t>(kChunk, len - ci);
    return Status::Corruption(
        "object " + std::to_string(id) + " differs at offset " + std::to_string(at) + " (" +
        std::to_string(differ) + " bytes differ in [" + std::to_string(pos + first) + ", " +
        std::to_string(pos + last + 1) + "), block size " + std::to_string(o.block_size) +
        ", length " + std::to_string(o.length) + "): expected " +
        DescribeChunk(std::string_view(want).substr(ci, cn), chunk) + ", found " +
        DescribeChunk(std::string_view(*got).substr(ci, cn), chunk));
  }
  return Status::Ok();
}

Status Model::CheckAttributes(dmu::ObjectSet* os, uint64_t id, const ModelObject& o) {
  const std::string name = "object " + std::to_string(id);
  auto info = os->Stat(ObjectId(id));
  if (!info.ok()) return Status::Corruption(name + " is missing: " + info.status().ToString());
  if (info->type != dmu::ObjectType::kPlain || info->block_size != o.block_size ||
      info->length != o.length)
    return Status::Corruption(
        name + ": expected a plain object of block size " + std::to_string(o.block_size) +
        " and length " + std::to_string(o.length) + ", found type " +
        std::string(dmu::ObjectTypeName(info->type)) + ", block size " +
        std::to_string(info->block_size) + ", length " + std::to_string(info->length));
  if (info->bonus_type != o.bonus_type || info->bonus != o.bonus)
    return Status::Corruption(
        name + ": bonus differs: expected type " + std::to_string(o.bonus_type) + " and " +
        std::to_string(o.bonus.size()) + " bytes, found type " + std::to_string(info->bonus_type) +
        " and " + std::to_string(info->bonus.size()) + " bytes" +
        (info->bonus.size() == o.bonus.size() ? " (other bytes)" : ""));
  return Status::Ok();
}

Status Model::CheckObject(dmu::ObjectSet* os, uint64_t id, uint64_t off, uint64_t n,
                          VerifyStats* stats) const {
  auto it = objects_.find(id);
  if (it == objects_.end())
    return Status::Corruption("object " + std::to_string(id) + " is not in the model");
  const ModelObject& o = it->second;
  POOLFS_RETURN_IF_ERROR(CheckAttributes(os, id, o));
  if (off >= o.length) return Status::Ok();
  return CompareRange(os, id, o, off, std::min(n, o.length - off), stats);
}

Status Model::Verify(dmu::ObjectSet* os, uint64_t seed, VerifyStats* stats,
                     uint64_t* bad_object) const {
  std::mt19937_64 rng(seed);
  for (const auto& [id, o] : objects_) {
    *bad_object = id;
    POOLFS_RETURN_IF_ERROR(CheckAttributes(os, id, o));
    if (o.length <= kFullReadLimit) {
      POOLFS_RETURN_IF_ERROR(CompareRange(os, id, o, 0, o.length, stats));
    } else {
      for (const auto& [page, bytes] : o.pages) {
        if (page * kPage >= o.length) break;
        POOLFS_RETURN_IF_ERROR(
            CompareRange(os, id, o, page * kPage, std::min(kPage, o.length - page * kPage), stats));
      }
      for (int i = 0; i < 16; i++) {
        const uint64_t off = rng() % o.length;
        POOLFS_RETURN_IF_ERROR(
            CompareRange(os, id, o, off, std::min<uint64_t>(4096, o.length - off), stats));
      }
      const uint64_t tail = std::min<uint64_t>(4096, o.length);
      POOLFS_RETURN_IF_ERROR(CompareRange(os, id, o, o.length - tail, tail, stats));
    }
    stats->objects++;
  }
  // No other object exists.
  uint64_t limit = os->next_object();
  if (!objects_.empty()) limit = std::max(limit, objects_.rbegin()->first + 1);
  for (uint64_t id = 1; id < limit; id++) {
    if (objects_.count(id)) continue;
    auto info = os->Stat(ObjectId(id));
    if (info.ok()) {
      *bad_object = id;
      return Status::Corruption("object " + std::to_string(id) +
                                " exists but the model has no such object (length " +
                                std::to_string(info->length) + ")");
    }
    if (info.status().code() != StatusCode::kNotFound) {
      *bad_object = id;
      return Status::Corruption("stat of free object " + std::to_string(id) +
                                " failed: " + info.status().ToString());
    }
  }
  *bad_object = 0;
  if (os->live_objects() != objects_.size())
    return Status::Corruption("the object set counts " + std::to_string(os->live_objects()) +
                              " live objects, the model " + std::to_string(objects_.size()));
  return Status::Ok();
}

}  // namespace poolfs::stress
