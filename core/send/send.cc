#include "send/send.h"

#include <algorithm>

namespace poolfs::core::send {

namespace {

// One send: the records as the walks find them, written or counted.
class Sender {
 public:
  Sender(const SendRequest& r, StreamWriter* w, SendStats* stats) : r_(r), w_(w), stats_(stats) {}

  Status Run() {
    BeginInfo b;
    b.to_guid = r_.to.guid;
    b.from_guid = r_.from ? r_.from->guid : 0;
    b.to_txg = r_.to.txg.value();
    b.creation_time = r_.creation_time;
    b.dataset = r_.dataset;
    b.snapshot = r_.to.snapshot;
    if (r_.from) b.from = r_.from->snapshot;
    b.props = r_.props;
    if (r_.compressed) b.features |= kFeatureCompressed;
    if (r_.resume_object != 0) {
      b.features |= kFeatureResuming;
      b.resume_object = r_.resume_object;
    }
    POOLFS_RETURN_IF_ERROR(Count(w_ ? w_->Begin(b) : Status::Ok(), EncodeBeginPayload(b).size()));
    const zio::BlockPtr empty;
    POOLFS_RETURN_IF_ERROR(dmu::WalkChangedDnodes(
        r_.zio, r_.from ? r_.from->root : empty, r_.from ? r_.from->txg : Txg(0), r_.to.root,
        r_.dataset + "@" + r_.to.snapshot,
        [this](ObjectId id, const dmu::DnodePhys& older, const dmu::DnodePhys& newer) {
          return Changed(id.value(), older, newer);
        },
        &stats_->dnodes));
    POOLFS_RETURN_IF_ERROR(FlushFreeObjects());
    return Count(w_ ? w_->End() : Status::Ok(), 0);
  }

 private:
  // Counts one record of `payload` bytes once `written` (the writer's
  // verdict, or OK when only counting) is OK.
  Status Count(const Status& written, uint64_t payload) {
    POOLFS_RETURN_IF_ERROR(written);
    stats_->records++;
    stats_->stream_bytes += kHeaderSize + payload;
    return Status::Ok();
  }

  Status Changed(uint64_t id, const dmu::DnodePhys& older, const dmu::DnodePhys& newer) {
    if (id < r_.resume_object) return Status::Ok();  // the receiver has it
    if (newer.free()) {
      if (older.free()) return Status::Ok();
      if (free_count_ != 0 && free_first_ + free_count_ == id) {
        free_count_++;
      } else {
        POOLFS_RETURN_IF_ERROR(FlushFreeObjects());
        free_first_ = id;
        free_count_ = 1;
      }
      return Status::Ok();
    }
    POOLFS_RETURN_IF_ERROR(FlushFreeObjects());
    ObjectInfo o;
    o.object = id;
    o.type = uint8_t(newer.type);
    o.block_size = newer.block_size;
    o.length = newer.length;
    o.generation = newer.generation;
    o.compression = newer.compression;
    o.bonus_type = newer.bonus_type;
    o.bonus = newer.bonus;
    // The receiver has this very object (same generation): only what
    // changed since the base goes, holes included.
    // Not one whose block size changed: that rewrote every block, and the
    // receiver's copy may be past the one block a size change allows.
    const bool kept = r_.from && !older.free() && older.generation == newer.generation &&
                      older.block_size == newer.block_size;
    o.fresh = !kept;
    POOLFS_RETURN_IF_ERROR(Count(w_ ? w_->Object(o) : Status::Ok(), o.bonus.size()));
    stats_->objects++;
    return Data(id, newer, kept ? r_.from->txg : Txg(0), kept && older.length > newer.length);
  }

  Status FlushFreeObjects() {
    if (free_count_ == 0) return Status::Ok();
    FreeObjectsInfo f{free_first_, free_count_};
    free_count_ = 0;
    stats_->freed_objects += f.count;
    return Count(w_ ? w_->FreeObjects(f) : Status::Ok(), 0);
  }

  // The data records of object `id`: after txg `born_after` (Txg(0): every
  // block of a new object, whose holes need no record); with `shrunk`, a
  // FREE to the end after them.
  Status Data(uint64_t id, const dmu::DnodePhys& d, Txg born_after, bool shrunk) {
    const bool holes = born_after.value() != 0;
    const uint64_t bs = d.block_size;
    const uint64_t end_block = (d.length + bs - 1) / bs;  // blocks holding data
    // A gathered FREE: [free_off, free_end) in bytes.
    uint64_t free_off = 0, free_end = 0;
    auto flush_free = [&]() -> Status {
      if (free_end == free_off) return Status::Ok();
      FreeInfo f{id, free_off, free_end - free_off};
      free_off = free_end = 0;
      stats_->frees++;
      return Count(w_ ? w_->Free(f) : Status::Ok(), 0);
    };
    const std::string where = r_.dataset + "@" + r_.to.snapshot;
    const dmu::DataRunFn run = [&](uint64_t first, uint64_t count,
                                   const zio::BlockPtr* bp) -> Status {
      if (bp == nullptr) {
        // Holes past the object's data are its length's business.
        if (!holes || first >= end_block) return Status::Ok();
        const uint64_t last = std::min(end_block, first + count);
        if (free_end != free_off && free_end == first * bs) {
          free_end = last * bs;
        } else {
          POOLFS_RETURN_IF_ERROR(flush_free());
          free_off = first * bs;
          free_end = last * bs;
        }
        return Status::Ok();
      }
      POOLFS_RETURN_IF_ERROR(flush_free());
      if (bp->lsize != bs)
        return Status::Corruption(where + " object " + std::to_string(id) + " block " +
                                  std::to_string(first) + ": stored at " +
                                  std::to_string(bp->lsize) + " bytes, the object's blocks " +
                                  std::to_string(bs));
      WriteInfo wr;
      wr.object = id;
      wr.offset = first * bs;
      wr.logical_length = uint32_t(bs);
      stats_->writes++;
      stats_->write_bytes += bs;
      const bool stored =
          r_.compressed && bp->compression != util::Compression::kOff && bp->psize < bs;
      if (w_ == nullptr) return Count(Status::Ok(), stored ? bp->psize : bs);
      if (stored) {
        POOLFS_ASSIGN_OR_RETURN(wr.data, r_.zio->ReadStored(*bp));
        stats_->data_blocks_read++;
        wr.compression = uint8_t(bp->compression);
        return Count(w_->Write(wr), wr.data.size());
      }
      POOLFS_ASSIGN_OR_RETURN(wr.data, r_.zio->Read(*bp));
      stats_->data_blocks_read++;
      if (wr.data.size() != bs)
        return Status::Corruption(
            where + " object " + std::to_string(id) + " block " + std::to_string(first) +
            ": read " + std::to_string(wr.data.size()) + " bytes of " + std::to_string(bs));
      return Count(w_->Write(wr), bs);
    };
    POOLFS_RETURN_IF_ERROR(dmu::WalkObjectData(r_.zio, where, id, d, born_after, run));
    if (shrunk) {
      // A shrunk object's blocks past its data go too: the hole gathered
      // last runs on to the end when it reaches the end of the data.
      uint64_t from = end_block * bs;
      if (free_end != free_off && free_end == from) {
        from = free_off;
        free_off = free_end = 0;
      }
      POOLFS_RETURN_IF_ERROR(flush_free());
      stats_->frees++;
      return Count(w_ ? w_->Free(FreeInfo{id, from, kToEnd}) : Status::Ok(), 0);
    }
    return flush_free();
  }

  const SendRequest& r_;
  StreamWriter* const w_;
  SendStats* const stats_;
  uint64_t free_first_ = 0;  // a gathered FREEOBJECTS run
  uint64_t free_count_ = 0;
};

}  // namespace

Status Send(const SendRequest& r, StreamWriter* w, SendStats* stats) {
  if (r.zio == nullptr) return Status::InvalidArgument("send: no pool to read from");
  if (r.to.guid == 0)
    return Status::InvalidArgument("send: snapshot " + r.dataset + "@" + r.to.snapshot +
                                   " has no guid");
  if (r.from && (r.from->guid == 0 || r.from->txg >= r.to.txg))
    return Status::InvalidArgument("send: the base " + r.dataset + "@" + r.from->snapshot +
                                   " is not an earlier snapshot than " + r.dataset + "@" +
                                   r.to.snapshot);
  SendStats local;
  Sender s(r, w, stats != nullptr ? stats : &local);
  return s.Run();
}

}  // namespace poolfs::core::send
