// Receive and the public API's glue (receive.h).
#include "send/receive.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "dmu/objset.h"
#include "dmu/tx.h"
#include "pool/pool_phys.h"
#include "send/resume_token.h"
#include "send/send.h"
#include "send/stream.h"

namespace poolfs::core::send {

namespace {

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// A batch of records read ahead of the Tx that applies them: up to this
// many payload bytes or records (what a stalled sender leaves read but
// not applied).
constexpr uint64_t kBatchBytes = 1u << 20;
constexpr size_t kBatchRecords = 256;

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

Result<SendSummary> SendFrom(pool::Pool& pool, const SendOptions& options, const StreamSink& sink,
                             const ResumeToken* resume) {
  const size_t at = options.snapshot.find('@');
  if (at == std::string::npos)
    return Status::InvalidArgument(Quote(options.snapshot) + " is not a snapshot (POOL/PATH@NAME)");
  const std::string dataset = options.snapshot.substr(0, at);
  Result<std::vector<pool::SnapshotFigures>> listed = pool.ListSnapshots(dataset, false);
  if (!listed.ok()) return listed.status();
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
    return Status::NotFound("snapshot " + Quote(full) + " does not exist");
  };
  SendRequest r;
  r.zio = pool.zio();
  r.compressed = options.compressed;
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
      return Status::InvalidArgument("the base " + Quote(options.from) + " is not a snapshot of " +
                                     Quote(dataset));
    POOLFS_ASSIGN_OR_RETURN(auto base, point(from));
    if (!(base.first.txg < r.to.txg))
      return Status::InvalidArgument("the base " + Quote(from) + " is not older than " +
                                     Quote(options.snapshot));
    r.from = base.first;
    summary.from = from;
  }
  if (resume != nullptr) {
    // The token's guids pin its snapshots: a rename is fine, another
    // snapshot under the name is not.
    if (r.to.guid != resume->to_guid || (r.from ? r.from->guid : 0) != resume->from_guid)
      return Status::InvalidArgument(
          "-t: " + Quote(options.snapshot) +
          (options.from.empty() ? "" : " from " + Quote(options.from)) +
          " is not the stream the token resumes (its guids differ): the snapshot was destroyed "
          "and taken again");
    r.resume_object = resume->object;
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

}  // namespace

Result<ReceiveSummary> Receive(pool::Pool& pool, const ReceiveOptions& options,
                               const StreamSource& source,
                               const pool::PoolDatasetAdmin::Finisher& finish,
                               uint64_t keep_every) {
  std::string target = options.target;
  std::string snap_name;  // the received snapshot's name (after the '@')
  if (const size_t at = target.find('@'); at != std::string::npos) {
    snap_name = target.substr(at + 1);
    target.resize(at);
  }
  POOLFS_RETURN_IF_ERROR(ValidateDatasetPath(target));
  std::optional<pool::Pool::PartialReceive> partial = pool.FindPartialReceive(target);
  if (options.abort) {
    if (!partial)
      return Status::NotFound("-A: no interrupted receive into " + Quote(target) + " is kept");
    POOLFS_ASSIGN_OR_RETURN(Txg t, pool.AbandonReceive(partial->id));
    if (t != Txg(0)) POOLFS_RETURN_IF_ERROR(pool.WaitSynced(t));
    return ReceiveSummary{};
  }
  StreamReader reader(source);
  POOLFS_ASSIGN_OR_RETURN(std::optional<Record> first, reader.Next());
  if (!first) return Status::Corruption("send stream: empty");
  POOLFS_ASSIGN_OR_RETURN(BeginInfo begin, DecodeBegin(*first));
  const bool resuming = (begin.features & kFeatureResuming) != 0;
  if (snap_name.empty()) snap_name = begin.snapshot;
  POOLFS_RETURN_IF_ERROR(pool::ValidateDatasetName(snap_name).WithContext("the snapshot name"));
  const bool incremental = begin.from_guid != 0;
  const std::string stream_name =
      Quote(begin.dataset + "@" + begin.snapshot) + (incremental ? " from @" + begin.from : "");

  // What is kept of an interrupted receive, and this stream, must agree.
  ResumeToken token;
  if (partial && !resuming)
    return Status::InvalidArgument(
        "cannot receive " + stream_name + " into " + Quote(target) +
        ": an interrupted receive into it is kept; resume it (poolfs send -t TOKEN, TOKEN the "
        "target's receive_resume_token) or discard it (poolfs receive -A " +
        target + ")");
  if (resuming) {
    if (!partial)
      return Status::NotFound("cannot resume " + stream_name + ": no interrupted receive into " +
                              Quote(target) + " is kept");
    POOLFS_ASSIGN_OR_RETURN(token, DecodeResumeToken(partial->token));
    if (token.to_guid != begin.to_guid || token.from_guid != begin.from_guid ||
        token.object != begin.resume_object)
      return Status::InvalidArgument(
          "cannot resume " + stream_name + " into " + Quote(target) + ": the stream resumes " +
          Quote(begin.dataset + "@" + begin.snapshot) + " at object " +
          std::to_string(begin.resume_object) + ", the kept receive " +
          Quote(token.dataset + "@" + token.snapshot) + " at object " +
          std::to_string(token.object) + " (send with the target's receive_resume_token)");
  }

  // Where it goes, checked before anything is read past BEGIN.
  std::string base;
  std::string props_of = target;
  if (incremental) {
    POOLFS_ASSIGN_OR_RETURN(base, BaseOf(pool, target, begin));
  } else {
    const std::string what = "cannot receive the full stream of " + stream_name;
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
  uint64_t hidden = 0;
  dmu::ObjectSet* os = nullptr;
  util::Compression compression = util::Compression::kLz4;
  if (partial) {
    hidden = partial->id;
    os = partial->os;
    POOLFS_ASSIGN_OR_RETURN(uint64_t like, pool.DatasetId(props_of));
    POOLFS_ASSIGN_OR_RETURN(pool::DatasetProps props, pool.EffectiveProps(like));
    compression = props.compression;
  } else {
    POOLFS_ASSIGN_OR_RETURN(auto begun, pool.BeginReceive(base, props_of));
    hidden = begun.second.id;
    os = begun.second.os;
    compression = begun.second.props.compression;
  }
  token.to_guid = begin.to_guid;
  token.from_guid = begin.from_guid;
  token.dataset = begin.dataset;
  token.snapshot = begin.snapshot;
  token.from = begin.from;
  if (!resuming) token.object = 1, token.bytes = 0;
  const uint64_t bytes_before = token.bytes;
  // Where a resumed stream would start: the object of the last OBJECT or
  // FREEOBJECTS record applied (its records come again whole).
  uint64_t resume_at = token.object;

  // Keeps the receive's state at resume_at, once all it applied is synced.
  auto keep = [&]() -> Status {
    POOLFS_RETURN_IF_ERROR(pool.WaitSynced());
    token.object = resume_at;
    token.bytes = bytes_before + reader.bytes();
    POOLFS_ASSIGN_OR_RETURN(Txg t, pool.SaveReceiveState(hidden, target, EncodeResumeToken(token)));
    return pool.WaitSynced(t);
  };
  // A failure from here on keeps what was received (-s) or takes it away.
  auto fail = [&](const Status& st) -> Status {
    if (options.resumable) {
      if (Status kept = keep(); kept.ok())
        return st.WithContext("receive into " + Quote(target) +
                              " interrupted; what arrived is kept: resume with poolfs send -t "
                              "TOKEN (TOKEN: the target's receive_resume_token), or discard it "
                              "with poolfs receive -A " +
                              target);
    }
    if (Result<Txg> t = pool.AbandonReceive(hidden); t.ok() && *t != Txg(0))
      (void)pool.WaitSynced(*t);
    return st;
  };

  Applier applier(os, compression);
  std::vector<Record> batch;
  bool ended = false;
  uint64_t records = 1;  // BEGIN
  uint64_t kept_at = 0;  // stream bytes when the state was last kept
  while (!ended) {
    batch.clear();
    uint64_t bytes = 0;
    Status broken;  // the stream's: what ended the batch early
    while (!ended && batch.size() < kBatchRecords && bytes < kBatchBytes) {
      Result<std::optional<Record>> next = reader.Next();
      if (!next.ok()) {
        broken = next.status();
        break;
      }
      if (!next->has_value()) {  // the reader refuses this itself
        broken = Status::Corruption("send stream: ends without END");
        break;
      }
      bytes += (**next).payload.size();
      records++;
      ended = (**next).type == RecordType::kEnd;
      batch.push_back(std::move(**next));
    }
    // The records before a break passed every check: a resumable receive
    // keeps them too.
    if (!broken.ok() && !options.resumable) return fail(broken);
    dmu::Tx tx(pool.assigner());
    if (Status st = tx.Assign(bytes); !st.ok()) return fail(st);
    for (const Record& r : batch) {
      // Each DMU call makes its whole change or none: what the Tx holds
      // is whole, and goes with the hidden dataset.
      if (Status st = applier.Apply(tx, r); !st.ok()) {
        tx.Commit();
        return fail(st);
      }
      if (r.type == RecordType::kObject || r.type == RecordType::kFreeObjects) resume_at = r.f[0];
    }
    tx.Commit();
    if (!broken.ok()) return fail(broken);
    // A resumable receive keeps its state now and then, so that even a
    // killed one resumes from near where it was.
    if (options.resumable && !ended && reader.bytes() - kept_at >= keep_every) {
      if (Status st = keep(); !st.ok()) return fail(st);
      kept_at = reader.bytes();
    }
  }
  // Nothing may follow END.
  if (Result<std::optional<Record>> after = reader.Next(); !after.ok()) return fail(after.status());

  ReceiveSummary summary;
  summary.snapshot = target + "@" + snap_name;
  summary.incremental = incremental;
  summary.bytes = reader.bytes();
  summary.records = records;
  summary.objects = applier.objects();
  summary.data_bytes = applier.data_bytes();
  if (Status st = pool.WaitSynced(); !st.ok()) return fail(st);
  pool::SnapshotRequest snap;
  snap.name = snap_name;
  snap.guid = begin.to_guid;
  snap.creation_time = begin.creation_time;
  Status st =
      finish(target, [&] { return pool.FinishReceive(hidden, target, snap, options.force); });
  if (!st.ok()) return fail(st);
  return summary;
}

Result<SendSummary> SendSnapshot(pool::Pool& pool, const SendOptions& options,
                                 const StreamSink& sink) {
  if (!options.resume_token.empty()) {
    if (!options.snapshot.empty() || !options.from.empty())
      return Status::InvalidArgument("-t: the token names the snapshot and its base; give neither");
    POOLFS_ASSIGN_OR_RETURN(ResumeToken token, DecodeResumeToken(options.resume_token));
    SendOptions resumed = options;
    resumed.resume_token.clear();
    resumed.snapshot = token.dataset + "@" + token.snapshot;
    if (!token.from.empty()) resumed.from = "@" + token.from;
    return SendFrom(pool, resumed, sink, &token);
  }
  return SendFrom(pool, options, sink, nullptr);
}

pool::PoolDatasetAdmin::Replicator Replicator() {
  pool::PoolDatasetAdmin::Replicator r;
  r.send = SendSnapshot;
  r.receive = [](pool::Pool& pool, const ReceiveOptions& options, const StreamSource& source,
                 const pool::PoolDatasetAdmin::Finisher& finish) {
    return Receive(pool, options, source, finish);
  };
  return r;
}

}  // namespace poolfs::core::send
