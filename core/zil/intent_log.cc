#include "zil/intent_log.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "util/endian.h"
#include "vdev/vdev_layout.h"

namespace poolfs::core::zil {
namespace {

constexpr uint64_t kArea = vdev::kLogAreaSize;

uint64_t NowNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

uint64_t NewChainId() {
  static std::random_device rd;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t(rd()) << 32) ^ rd();
  return id;
}

uint64_t RoundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

}  // namespace

// Until a sync asks (StateFor), the state to keep is the imported one: a
// log dropped before it replayed (a mount that failed after opening it)
// leaves the pool's log as it found it.
IntentLog::IntentLog(pool::Pool* pool)
    : pool_(pool), imported_(pool->imported_log()), last_state_(imported_) {}

IntentLog::~IntentLog() {
  // Any sync after this one keeps the last state given (none once
  // stopped): never the imported one, which this log has replayed.
  pool::LogState last;
  {
    util::MutexLock l(&mu_);
    if (!stopped_) last = last_state_;
  }
  pool_->SetLogStateSource([last](Txg) { return last; });
}

Result<std::unique_ptr<IntentLog>> IntentLog::Open(pool::Pool* pool) {
  std::unique_ptr<IntentLog> log(new IntentLog(pool));
  const pool::LogState& state = log->imported_;
  POOLFS_ASSIGN_OR_RETURN(
      LogChain chain, ReadLogChain(state, pool->guid(), [&](uint64_t off, std::span<uint8_t> b) {
        return pool->ReadLogArea(state.vdev, off, b);
      }));
  if (!chain.damage.empty())
    log->notes_.push_back("intent log ends at a damaged block: " + chain.damage);
  // Indirect writes become plain ones: their blocks are read now, since
  // the space maps the pool imported do not hold them, before anything can
  // allocate over them: the replay's changes would, and an idle pool's
  // first sync waits a txg timeout after the import (this runs first
  // thing after it; nothing but that timing keeps the two apart).
  ReadIndirectWrites(&chain, [pool](std::string_view encoded, std::string_view where) {
    return pool->ReadLogBlock(encoded, where);
  });
  if (!chain.unwritten.empty())
    log->notes_.push_back("intent log ends at a write whose data block does not verify: " +
                          chain.unwritten);
  {
    util::MutexLock l(&log->mu_);
    log->stats_.replayed_indirect = chain.indirect;
  }
  log->replay_ = std::move(chain.records);
  IntentLog* self = log.get();
  pool->SetLogStateSource([self](Txg t) { return self->StateFor(t); },
                          [self](Txg t) { self->Durable(t); });
  return log;
}

Result<LogChain> ReadLogChain(const pool::LogState& s, uint64_t pool_guid,
                              const LogAreaReader& read) {
  LogChain chain;
  if (s.empty()) return chain;
  uint64_t offset = s.tail_offset;
  uint64_t seq = s.tail_seq;
  std::vector<uint8_t> bytes;
  // A ring holds at most kArea / 4 KiB blocks: a chain longer than that
  // would be going round.
  for (uint64_t n = 0; n < kArea / kMinLogBlockSize; n++) {
    bytes.resize(kMinLogBlockSize);
    POOLFS_RETURN_IF_ERROR(read(offset, bytes));
    // The header names the block's size and dataset; the keyed checksum
    // over the whole block decides whether it is the one expected.
    const uint32_t size = util::GetLE32(bytes.data() + 12);
    if (!ValidLogBlockSize(size) || size > kArea - offset) break;
    bytes.resize(size);
    if (size > kMinLogBlockSize) POOLFS_RETURN_IF_ERROR(read(offset, bytes));
    const LogBlockId id{pool_guid, util::GetLE64(bytes.data() + 24), s.chain, seq};
    Result<DecodedLogBlock> block = DecodeLogBlock(bytes, id);
    if (!block.ok()) {
      if (!block.status().IsNotFound())
        chain.damage = block.status().message() + " (at offset " + std::to_string(offset) +
                       " of vdev " + std::to_string(s.vdev) + "'s log area)";
      break;
    }
    chain.blocks++;
    for (LogRecord& r : block->records) {
      if (r.txg <= s.synced_txg || r.seq <= s.replayed_seq) continue;
      chain.records.push_back(PendingRecord{id.dataset, std::move(r), 0});
    }
    if (block->next.IsEnd() || block->next.vdev != s.vdev) break;
    offset = block->next.offset;
    seq++;
  }
  return chain;
}

void ReadIndirectWrites(LogChain* chain, const LogBlockReader& read) {
  for (size_t i = 0; i < chain->records.size(); i++) {
    LogRecord& r = chain->records[i].record;
    if (r.type != RecordType::kWriteIndirect) continue;
    const auto& b = std::get<WriteIndirectBody>(r.body);
    const std::string where = "intent log record " + std::to_string(r.seq) +
                              " (a write of object " + std::to_string(r.object) + ")";
    Result<std::string> block = read(b.block_ptr, where);
    Status st = block.status();
    uint64_t start = 0;
    if (st.ok() && block->empty()) {
      st = Status::Corruption(where + ": its block pointer names no bytes");
    } else if (st.ok()) {
      start = b.offset - b.offset % block->size();
      if (b.length > block->size() - (b.offset - start))
        st = Status::Corruption(where + ": " + std::to_string(b.length) + " bytes at offset " +
                                std::to_string(b.offset) + " pass the end of its block of " +
                                std::to_string(block->size()));
    }
    if (!st.ok()) {
      chain->unwritten = st.message();
      chain->records.resize(i);
      return;
    }
    r.type = RecordType::kWrite;
    r.body = WriteBody{b.offset, block->substr(b.offset - start, b.length)};
    chain->indirect++;
  }
}

void IntentLog::NoteReplayed(uint64_t seq, Txg t) {
  util::MutexLock l(&mu_);
  uint64_t& last = replayed_by_txg_[t.value()];
  last = std::max(last, seq);
  stats_.replayed++;
}

Status IntentLog::Start() {
  // Commits overwrite the area from now on; holes of a sparse pool file
  // there would make each commit's flush allocate.
  Status prepared = pool_->PrepareLogArea(vdev_);
  util::MutexLock l(&mu_);
  replay_.clear();
  replay_.shrink_to_fit();
  chain_ = NewChainId();
  next_block_ = 1;
  head_ = 0;
  durable_tail_ = 0;
  durable_tail_seq_ = 1;
  blocks_.clear();
  tails_.clear();
  started_ = true;
  return prepared;
}

void IntentLog::StopForExport() {
  util::MutexLock l(&mu_);
  stopped_ = true;
}

pool::LogState IntentLog::StateFor(Txg t) {
  util::MutexLock l(&mu_);
  if (stopped_) return {};
  if (!started_) {
    // Replaying: the imported log, with what is replayed by t.
    pool::LogState s = imported_;
    for (const auto& [txg, seq] : replayed_by_txg_)
      if (txg <= t.value()) s.replayed_seq = std::max(s.replayed_seq, seq);
    last_state_ = s;
    return s;
  }
  // The first block holding a record of a txg after t; the head when none.
  uint64_t offset = head_, seq = next_block_;
  for (const Block& b : blocks_) {
    if (b.max_txg > t.value()) {
      offset = b.offset;
      seq = b.seq;
      break;
    }
  }
  tails_[t.value()] = {offset, seq};
  last_state_ = pool::LogState{vdev_, chain_, t.value(), offset, seq, 0};
  return last_state_;
}

void IntentLog::Durable(Txg t) {
  util::MutexLock l(&mu_);
  if (!started_) return;
  auto it = tails_.find(t.value());
  if (it != tails_.end()) {
    durable_tail_ = it->second.first;
    durable_tail_seq_ = it->second.second;
    while (!blocks_.empty() && blocks_.front().seq < durable_tail_seq_) blocks_.pop_front();
  }
  tails_.erase(tails_.begin(), tails_.upper_bound(t.value()));
  // What waits for a commit but is in a synced txg now needs none.
  std::erase_if(pending_, [&](const PendingRecord& p) { return p.record.txg <= t.value(); });
  cv_.SignalAll();
}

uint64_t IntentLog::FreeFrom(uint64_t at) const {
  // Empty (the durable tail is the head and no block is kept): the whole
  // ring. Otherwise from `at` forward to the durable tail.
  if (durable_tail_seq_ == next_block_) return kArea;
  return (durable_tail_ + kArea - at) % kArea;
}

void IntentLog::SetReader(uint64_t dataset, DataReader reader, EarlyWriter early) {
  util::MutexLock l(&mu_);
  readers_[dataset] = Source{std::move(reader), std::move(early)};
}

void IntentLog::RemoveReader(uint64_t dataset) {
  util::MutexLock l(&mu_);
  readers_.erase(dataset);
}

void IntentLog::Add(uint64_t dataset, LogRecord record, uint32_t write_length) {
  util::MutexLock l(&mu_);
  if (!started_ || stopped_) return;
  record.seq = next_seq_++;
  pending_.push_back(PendingRecord{dataset, std::move(record), write_length});
}

bool IntentLog::idle() {
  util::MutexLock l(&mu_);
  return pending_.empty() && !committing_;
}

Status IntentLog::Commit() {
  mu_.Lock();
  const uint64_t target = next_seq_ - 1;
  for (;;) {
    // A commit that failed lost its records (the pool could take them
    // neither in the log nor in a txg): no later one can promise them.
    if (!failed_.ok()) {
      Status st = failed_;
      mu_.Unlock();
      return st;
    }
    const bool waiting = !pending_.empty() && pending_.front().record.seq <= target;
    const bool in_flight = committing_ && inflight_first_ <= target;
    if (!started_ || (!waiting && !in_flight)) {
      mu_.Unlock();
      return Status::Ok();
    }
    if (committing_) {
      // Joins the next commit: wait for this one to end.
      cv_.Wait(&mu_);
      continue;
    }
    std::vector<PendingRecord> batch(std::make_move_iterator(pending_.begin()),
                                     std::make_move_iterator(pending_.end()));
    pending_.clear();
    committing_ = true;
    inflight_first_ = batch.front().record.seq;
    mu_.Unlock();
    Status st = Write(std::move(batch));
    mu_.Lock();
    committing_ = false;
    if (!st.ok()) failed_ = st;
    cv_.SignalAll();
  }
}

Status IntentLog::Write(std::vector<PendingRecord> records) {
  const uint64_t start = NowNs();
  // A write's bytes, as the file holds them now.
  uint64_t max_txg = 0;
  uint64_t indirect = 0, indirect_bytes = 0;
  {
    std::map<uint64_t, Source> readers;
    uint64_t indirect_min = 0;
    {
      util::MutexLock l(&mu_);
      readers = readers_;
      indirect_min = indirect_write_bytes_;
    }
    std::vector<PendingRecord> kept;
    kept.reserve(records.size());
    for (PendingRecord& p : records) {
      max_txg = std::max(max_txg, p.record.txg);
      if (p.record.type == RecordType::kWrite) {
        auto reader = readers.find(p.dataset);
        if (reader == readers.end()) continue;  // its dataset is gone
        auto body = std::get_if<WriteBody>(&p.record.body);
        if (indirect_min != 0 && p.write_length >= indirect_min && reader->second.early) {
          Result<EarlyBlock> early = reader->second.early(p.record.object, body->offset,
                                                          p.write_length, p.record.txg);
          if (!early.ok() && early.status().IsNotFound()) continue;  // removed since
          if (early.ok() && early->length == 0) continue;            // truncated since
          if (early.ok() && !early->block_ptr.empty()) {
            indirect++;
            indirect_bytes += early->length;
            p.record.type = RecordType::kWriteIndirect;
            p.record.body = WriteIndirectBody{body->offset, uint32_t(early->length),
                                              std::move(early->block_ptr)};
            kept.push_back(std::move(p));
            continue;
          }
          // Not written early (its txg closed, a write error): copied.
        }
        Result<std::string> data =
            reader->second.read(p.record.object, body->offset, p.write_length, p.record.txg);
        if (!data.ok()) {
          if (data.status().IsNotFound()) continue;  // removed since: a later record says so
          return data.status().WithContext("intent log commit");
        }
        if (data->empty()) continue;  // truncated since: a later record says so
        body->data = std::move(*data);
      }
      kept.push_back(std::move(p));
    }
    records.swap(kept);
  }
  auto wait_for_sync = [&]() -> Status {
    POOLFS_RETURN_IF_ERROR(pool_->WaitSynced(Txg(max_txg)));
    util::MutexLock l(&mu_);
    stats_.commits_synced++;
    return Status::Ok();
  };
  if (records.empty()) return Status::Ok();

  // Each record's encoded size, to size the blocks.
  std::vector<size_t> sizes(records.size());
  uint64_t total = 0;
  {
    std::vector<uint8_t> scratch;
    for (size_t i = 0; i < records.size(); i++) {
      scratch.clear();
      Result<size_t> n = EncodeLogRecord(records[i].record, &scratch);
      if (!n.ok()) return n.status().WithContext("intent log commit");
      sizes[i] = *n;
      total += *n + kLogBlockHeaderSize;
    }
  }
  uint64_t head, room, block_seq, chain;
  {
    util::MutexLock l(&mu_);
    head = head_;
    room = FreeFrom(head_);
    block_seq = next_block_;
    chain = chain_;
  }
  // Too much for the ring (or a quarter of it): the txg writes it once.
  if (total > kArea / 4 || total + kMaxLogBlockSize > room) return wait_for_sync();

  const uint64_t open_txg = pool_->txgs().open_txg().value();
  struct Planned {
    uint64_t offset;
    uint32_t size;
    uint64_t max_txg;
    std::vector<uint8_t> bytes;
  };
  std::vector<Planned> planned;
  uint64_t pos = head;
  size_t i = 0;
  uint64_t used = 0;
  while (i < records.size()) {
    const uint64_t dataset = records[i].dataset;
    // Sized for the dataset's records from here, up to the largest block,
    // and no more than fits before the ring's end. A record that does not
    // fit there leaves the block empty, and the next starts at offset 0.
    uint64_t want = kLogBlockHeaderSize;
    for (size_t k = i; k < records.size() && records[k].dataset == dataset; k++) {
      if (want + sizes[k] > kMaxLogBlockSize) break;
      want += sizes[k];
    }
    const uint32_t size = uint32_t(std::min<uint64_t>(
        std::clamp<uint64_t>(RoundUp(want, kMinLogBlockSize), kMinLogBlockSize, kMaxLogBlockSize),
        kArea - pos));
    if (used + size > room) return wait_for_sync();
    LogBlockWriter w({pool_->guid(), dataset, chain, block_seq + planned.size()},
                     std::max<uint64_t>(open_txg, 1), size);
    uint64_t block_max_txg = 0;
    while (i < records.size() && records[i].dataset == dataset) {
      if (sizes[i] + kLogBlockHeaderSize > size) break;
      Result<bool> added = w.Add(records[i].record);
      if (!added.ok()) return added.status().WithContext("intent log commit");
      if (!*added) break;
      block_max_txg = std::max(block_max_txg, records[i].record.txg);
      i++;
    }
    const uint64_t at = pos;
    used += size;
    pos += size;
    if (pos == kArea) pos = 0;
    // The next block starts where this one ends; its own header gives its
    // size (at least the smallest, which is what `next` names).
    planned.push_back({at, size, block_max_txg, w.Finish({vdev_, pos, kMinLogBlockSize})});
  }
  // A log write that fails costs only time: the txg makes the records
  // durable instead (and the blocks written are never named by a state).
  // Blocks that follow each other go out in one write.
  Status io = Status::Ok();
  for (size_t b = 0; b < planned.size() && io.ok();) {
    std::vector<uint8_t> run = std::move(planned[b].bytes);
    const uint64_t offset = planned[b].offset;
    for (b++; b < planned.size() && planned[b].offset == offset + run.size(); b++)
      run.insert(run.end(), planned[b].bytes.begin(), planned[b].bytes.end());
    io = pool_->WriteLogArea(vdev_, offset, run);
  }
  // Blocks written early may lie on any vdev.
  if (io.ok()) io = indirect > 0 ? pool_->FlushLogBlocks() : pool_->FlushLogArea(vdev_);
  if (!io.ok()) return wait_for_sync();
  const uint64_t ns = NowNs() - start;
  util::MutexLock l(&mu_);
  for (const Planned& b : planned) blocks_.push_back({b.offset, b.size, next_block_++, b.max_txg});
  head_ = pos;
  // Past half the ring: a sync soon moves the tail, before the ring is
  // full and commits wait for txgs.
  if (kArea - room + used > kArea / 2) pool_->txgs().Kick();
  stats_.commits++;
  stats_.blocks += planned.size();
  stats_.records += records.size();
  stats_.indirect += indirect;
  stats_.indirect_bytes += indirect_bytes;
  stats_.bytes += used;
  stats_.commit_ns_total += ns;
  stats_.commit_ns_max = std::max(stats_.commit_ns_max, ns);
  return Status::Ok();
}

IntentLogStats IntentLog::stats() {
  util::MutexLock l(&mu_);
  return stats_;
}

}  // namespace poolfs::core::zil
