// Receive and the public API's glue (receive.h).
#include "send/receive.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "dmu/objset.h"
#include "dmu/tx.h"
#include "pool/pool_phys.h"
#include "send/send.h"
#include "send/stream.h"

namespace poolfs::core::send {

namespace {

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// A batch of records read ahead of the Tx that applies them: up to this
// many payload bytes or records.
constexpr uint64_t kBatchBytes = 4u << 20;
constexpr size_t kBatchRecords = 512;

// What the DMU refused of a record that decoded: a full pool or a failing
// disk is this pool's trouble; anything else means the stream asks for
// what no sender could have had.
Status RecordError(const Record& r, const Status& st) {
  switch (st.code()) {
    case StatusCode::kNoSpace:
    case StatusCode::kIOError:
    case StatusCode::kReadOnly:
    case StatusCode::kBusy: return st.WithContext("receiving send stream " + DescribeRecord(r));
    default: return Status::Corruption("send stream " + DescribeRecord(r) + ": " + st.message());
  }
}

// Applies records to the hidden dataset's object set, one Tx at a time.
class Applier {
 public:
  Applier(dmu::ObjectSet* os, util::Compression compression) : os_(os), compression_(compression) {}

  Status Apply(dmu::Tx& tx, const Record& r) {
    switch (r.type) {
      case RecordType::kObject: return Object(tx, r);
      case RecordType::kFreeObjects: return FreeObjects(tx, r);
      case RecordType::kWrite: return Write(tx, r);
      case RecordType::kFree: return Free(tx, r);
      case RecordType::kEnd: return Close(tx, r);
      case RecordType::kBegin: break;
    }
    return Status::Corruption("send stream " + DescribeRecord(r) + ": a second BEGIN");
  }

  uint64_t objects() const { return objects_; }
  uint64_t data_bytes() const { return data_bytes_; }

 private:
  Status Object(dmu::Tx& tx, const Record& r) {
    POOLFS_RETURN_IF_ERROR(Close(tx, r));
    POOLFS_ASSIGN_OR_RETURN(ObjectInfo o, DecodeObject(r));
    const ObjectId id(o.object);
    Result<dmu::ObjectInfo> have = os_->Stat(id);
    if (!have.ok() && have.status().code() != StatusCode::kNotFound)
      return RecordError(r, have.status());
    if (o.fresh) {
      // Whatever the base had under this id is another object.
      if (have.ok()) POOLFS_RETURN_IF_ERROR(Check(r, os_->Free(tx, id)));
      POOLFS_RETURN_IF_ERROR(Check(r, os_->Claim(tx, id, dmu::ObjectType(o.type), o.block_size,
                                                 compression_, tx.txg(), o.bonus, o.bonus_type)));
    } else {
      if (!have.ok())
        return Status::Corruption("send stream " + DescribeRecord(r) + ": it changes object " +
                                  std::to_string(o.object) +
                                  ", which the base snapshot does not have");
      if (uint8_t(have->type) != o.type)
        return Status::Corruption(
            "send stream " + DescribeRecord(r) + ": object " + std::to_string(o.object) + " is a " +
            std::string(dmu::ObjectTypeName(have->type)) + " in the base snapshot, a " +
            std::string(dmu::ObjectTypeName(dmu::ObjectType(o.type))) +
            " in the stream, which does not mark it new");
      if (have->block_size != o.block_size)
        POOLFS_RETURN_IF_ERROR(Check(r, os_->SetBlockSize(tx, id, o.block_size)));
      if (have->bonus != o.bonus || have->bonus_type != o.bonus_type)
        POOLFS_RETURN_IF_ERROR(Check(r, os_->SetBonus(tx, id, o.bonus_type, o.bonus)));
    }
    objects_++;
    open_ = o.object;
    open_length_ = o.length;
    return Status::Ok();
  }

  Status FreeObjects(dmu::Tx& tx, const Record& r) {
    POOLFS_RETURN_IF_ERROR(Close(tx, r));
    POOLFS_ASSIGN_OR_RETURN(FreeObjectsInfo f, DecodeFreeObjects(r));
    const uint64_t end = std::min(f.first + f.count, os_->next_object());
    for (uint64_t id = f.first; id < end; id++) {
      Result<dmu::ObjectInfo> have = os_->Stat(ObjectId(id));
      if (have.ok())
        POOLFS_RETURN_IF_ERROR(Check(r, os_->Free(tx, ObjectId(id))));
      else if (have.status().code() != StatusCode::kNotFound)
        return RecordError(r, have.status());
    }
    return Status::Ok();
  }

  // A whole block, even the last: the sender's bytes past the length are
  // zeros, and a partial write would keep the base's there. Close sets
  // the length.
  Status Write(dmu::Tx& tx, const Record& r) {
    POOLFS_ASSIGN_OR_RETURN(WriteInfo w, DecodeWrite(r));
    POOLFS_ASSIGN_OR_RETURN(std::string data, LogicalBytes(r));
    POOLFS_RETURN_IF_ERROR(Check(r, os_->Write(tx, ObjectId(w.object), w.offset, data)));
    data_bytes_ += data.size();
    return Status::Ok();
  }

  Status Free(dmu::Tx& tx, const Record& r) {
    POOLFS_ASSIGN_OR_RETURN(FreeInfo f, DecodeFree(r));
    POOLFS_ASSIGN_OR_RETURN(dmu::ObjectInfo have, Checked(r, os_->Stat(ObjectId(f.object))));
    if (f.offset >= have.length) return Status::Ok();
    const uint64_t n =
        f.length == kToEnd ? have.length - f.offset : std::min(f.length, have.length - f.offset);
    return Check(r, os_->Punch(tx, ObjectId(f.object), f.offset, n));
  }

  // The open object's records are over: it takes its length.
  Status Close(dmu::Tx& tx, const Record& r) {
    if (open_ == 0) return Status::Ok();
    const ObjectId id(open_);
    open_ = 0;
    POOLFS_ASSIGN_OR_RETURN(dmu::ObjectInfo have, Checked(r, os_->Stat(id)));
    if (have.length == open_length_) return Status::Ok();
    return Check(r, os_->Truncate(tx, id, open_length_));
  }

  static Status Check(const Record& r, const Status& st) {
    return st.ok() ? st : RecordError(r, st);
  }
  template <typename T>
  static Result<T> Checked(const Record& r, Result<T> v) {
    if (!v.ok()) return RecordError(r, v.status());
    return v;
  }

  dmu::ObjectSet* const os_;
  const util::Compression compression_;
  uint64_t open_ = 0;  // the object WRITE and FREE records change (0: none)
  uint64_t open_length_ = 0;
  uint64_t objects_ = 0;
  uint64_t data_bytes_ = 0;
};

// The snapshot a stream's BEGIN names as its base, checked against the
// target: it must be the target's newest snapshot. Returns its full name.
Result<std::string> BaseOf(pool::Pool& pool, const std::string& target, const BeginInfo& b) {
  const std::string what = "cannot receive the incremental stream of " +
                           Quote(b.dataset + "@" + b.snapshot) + " from @" + b.from + " into " +
                           Quote(target);
  Result<std::vector<pool::SnapshotFigures>> listed = pool.ListSnapshots(target, false);
  if (!listed.ok()) return listed.status().WithContext(what);
  const std::vector<pool::SnapshotFigures>& snaps = *listed;
  for (size_t i = 0; i < snaps.size(); i++) {
    if (snaps[i].guid != b.from_guid) continue;
    if (i + 1 != snaps.size())
      return Status::InvalidArgument(
          what + ": its base is " + Quote(snaps[i].name) + ", which is not the newest snapshot (" +
          Quote(snaps.back().name) +
          "); send from the newest, or destroy the snapshots after the base");
    return snaps[i].name;
  }
  return Status::InvalidArgument(
      what + ": " + Quote(target) + " has no snapshot with the base's guid " +
      std::to_string(b.from_guid) +
      (snaps.empty() ? " (it has no snapshot)"
                     : " (its newest is " + Quote(snaps.back().name) + ")"));
}

}  // namespace

Result<ReceiveSummary> Receive(pool::Pool& pool, const ReceiveOptions& options,
                               const StreamSource& source,
                               const pool::PoolDatasetAdmin::Finisher& finish) {
  std::string target = options.target;
  std::string snap_name;  // "POOL/PATH@NAME": the received snapshot's name
  if (const size_t at = target.find('@'); at != std::string::npos) {
    snap_name = target.substr(at + 1);
    target.resize(at);
  }
  POOLFS_RETURN_IF_ERROR(ValidateDatasetPath(target).WithContext("receive"));
  if (options.resumable)
    return Status::NotSupported("receive -s (resumable receives) is not supported yet");
  StreamReader reader(source);
  POOLFS_ASSIGN_OR_RETURN(std::optional<Record> first, reader.Next());
  if (!first) return Status::Corruption("send stream: empty");
  POOLFS_ASSIGN_OR_RETURN(BeginInfo begin, DecodeBegin(*first));
  if (begin.features & kFeatureResuming)
    return Status::NotSupported("a resuming stream (send -t) needs a resumable receive (-s)");
  if (snap_name.empty()) snap_name = begin.snapshot;
  POOLFS_RETURN_IF_ERROR(
      pool::ValidateDatasetName(snap_name).WithContext("receive: snapshot name"));
  const bool incremental = begin.from_guid != 0;

  // Where it goes, checked before anything is read past BEGIN.
  std::string base;
  std::string props_of = target;
  if (incremental) {
    POOLFS_ASSIGN_OR_RETURN(base, BaseOf(pool, target, begin));
  } else {
    const std::string what =
        "cannot receive the full stream of " + Quote(begin.dataset + "@" + begin.snapshot);
    if (pool.DatasetId(target).ok())
      return Status::AlreadyExists(what + ": " + Quote(target) +
                                   " exists; receive into a new dataset, or destroy it first");
    const size_t slash = target.rfind('/');
    if (slash == std::string::npos)
      return Status::AlreadyExists(what + ": " + Quote(target) + " is the pool's root dataset");
    props_of = target.substr(0, slash);
    if (Status st = pool.DatasetId(props_of).status(); !st.ok())
      return st.WithContext(what + " into " + Quote(target));
  }
  POOLFS_ASSIGN_OR_RETURN(auto begun, pool.BeginReceive(base, props_of));
  const uint64_t hidden = begun.second.id;
  // Any failure from here on takes the hidden dataset away again.
  auto abandon = [&](const Status& st) -> Status {
    if (Result<Txg> t = pool.AbandonReceive(hidden); t.ok() && *t != Txg(0))
      (void)pool.WaitSynced(*t);
    return st;
  };

  Applier applier(begun.second.os, begun.second.props.compression);
  std::vector<Record> batch;
  bool ended = false;
  uint64_t records = 1;  // BEGIN
  while (!ended) {
    batch.clear();
    uint64_t bytes = 0;
    while (!ended && batch.size() < kBatchRecords && bytes < kBatchBytes) {
      Result<std::optional<Record>> next = reader.Next();
      if (!next.ok()) return abandon(next.status());
      if (!next->has_value())
        return abandon(Status::Corruption("send stream: ends without END"));  // the reader's job
      bytes += (**next).payload.size();
      records++;
      ended = (**next).type == RecordType::kEnd;
      batch.push_back(std::move(**next));
    }
    dmu::Tx tx(pool.assigner());
    if (Status st = tx.Assign(bytes); !st.ok()) return abandon(st);
    for (const Record& r : batch) {
      // Each DMU call makes its whole change or none: what the Tx holds
      // is whole, and goes with the hidden dataset.
      if (Status st = applier.Apply(tx, r); !st.ok()) {
        tx.Commit();
        return abandon(st);
      }
    }
    tx.Commit();
  }
  // Nothing may follow END.
  if (Result<std::optional<Record>> after = reader.Next(); !after.ok())
    return abandon(after.status());

  ReceiveSummary summary;
  summary.snapshot = target + "@" + snap_name;
  summary.incremental = incremental;
  summary.bytes = reader.bytes();
  summary.records = records;
  summary.objects = applier.objects();
  summary.data_bytes = applier.data_bytes();
  if (Status st = pool.WaitSynced(); !st.ok()) return abandon(st);
  pool::SnapshotRequest snap;
  snap.name = snap_name;
  snap.guid = begin.to_guid;
  snap.creation_time = begin.creation_time;
  Status st =
      finish(target, [&] { return pool.FinishReceive(hidden, target, snap, options.force); });
  if (!st.ok()) return abandon(st);
  return summary;
}

Result<SendSummary> SendSnapshot(pool::Pool& pool, const SendOptions& options,
                                 const StreamSink& sink) {
  const size_t at = options.snapshot.find('@');
  if (at == std::string::npos)
    return Status::InvalidArgument("send: " + Quote(options.snapshot) +
                                   " is not a snapshot (POOL/PATH@NAME)");
  const std::string dataset = options.snapshot.substr(0, at);
  if (options.compressed)
    return Status::NotSupported(
        "send -c (blocks as stored, compressed) is not supported yet; send without -c");
  Result<std::vector<pool::SnapshotFigures>> listed = pool.ListSnapshots(dataset, false);
  if (!listed.ok()) return listed.status().WithContext("send");
  const std::vector<pool::SnapshotFigures>& snaps = *listed;
  auto point = [&](const std::string& full) -> Result<std::pair<SendPoint, int64_t>> {
    for (const pool::SnapshotFigures& f : snaps) {
      if (f.name != full) continue;
      POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<dmu::ObjectSet> os, pool.OpenSnapshot(full));
      SendPoint p;
      p.root = os->root();
      p.txg = f.txg;
      p.guid = f.guid;
      p.snapshot = full.substr(full.find('@') + 1);
      return std::make_pair(p, f.creation_time);
    }
    return Status::NotFound("send: snapshot " + Quote(full) + " does not exist");
  };
  SendRequest r;
  r.zio = pool.zio();
  r.dataset = snaps.empty() ? dataset : snaps[0].name.substr(0, snaps[0].name.find('@'));
  POOLFS_ASSIGN_OR_RETURN(auto to, point(options.snapshot));
  r.to = to.first;
  r.creation_time = to.second;
  SendSummary summary;
  summary.snapshot = options.snapshot;
  if (!options.from.empty()) {
    std::string from = options.from;
    if (from[0] == '@') from = dataset + from;
    if (from.substr(0, from.find('@')) != dataset)
      return Status::InvalidArgument("send: the base " + Quote(options.from) +
                                     " is not a snapshot of " + Quote(dataset));
    POOLFS_ASSIGN_OR_RETURN(auto base, point(from));
    if (!(base.first.txg < r.to.txg))
      return Status::InvalidArgument("send: the base " + Quote(from) + " is not older than " +
                                     Quote(options.snapshot));
    r.from = base.first;
    summary.from = from;
  }
  SendStats stats;
  std::optional<StreamWriter> writer;
  if (sink) writer.emplace(sink);
  POOLFS_RETURN_IF_ERROR(Send(r, writer ? &*writer : nullptr, &stats));
  summary.bytes = stats.stream_bytes;
  summary.records = stats.records;
  summary.objects = stats.objects;
  summary.data_bytes = stats.write_bytes;
  summary.blocks_read = stats.data_blocks_read + stats.dnodes.blocks_read;
  return summary;
}

pool::PoolDatasetAdmin::Replicator Replicator() {
  pool::PoolDatasetAdmin::Replicator r;
  r.send = SendSnapshot;
  r.receive = Receive;
  return r;
}

}  // namespace poolfs::core::send
