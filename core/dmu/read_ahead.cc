#include "dmu/read_ahead.h"

#include <algorithm>
#include <utility>

#include "util/check.h"

namespace poolfs::core::dmu {

ReadAhead::ReadAhead(arc::Arc* cache, const ReadAheadOptions& options)
    : cache_(cache),
      options_(options),
      max_bytes_(options.distance_bytes * kStreams),
      enabled_(options.distance_bytes != 0) {
  POOLFS_CHECK(cache_ != nullptr);
  if (!enabled_) return;
  for (uint32_t i = 0; i < std::max<uint32_t>(options_.threads, 1); i++)
    threads_.emplace_back([this] { Worker(); });
}

ReadAhead::~ReadAhead() { Stop(); }

void ReadAhead::Stop() {
  {
    util::MutexLock l(&mu_);
    stopping_ = true;
    jobs_.clear();
    entries_.clear();  // a job in flight finds its blocks gone
    order_.clear();
    stats_.bytes = 0;
  }
  work_cv_.SignalAll();
  ready_cv_.SignalAll();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void ReadAhead::Request(zio::Zio* zio, std::span<const zio::BlockPtr> bps) {
  if (!enabled_ || bps.empty()) return;
  std::vector<Job> jobs;
  {
    util::MutexLock l(&mu_);
    if (stopping_) return;
    Job job{zio, {}};
    uint64_t job_bytes = 0;
    for (const zio::BlockPtr& bp : bps) {
      POOLFS_DCHECK(!bp.IsHole() && !bp.IsGang());
      const arc::BlockKey key = BlockKeyOf(bp);
      if (entries_.count(key) != 0) continue;
      stats_.requested++;
      if (!MakeRoom(bp.lsize)) {
        stats_.refused++;
        continue;
      }
      Entry& e = entries_[key];
      e.checksum = bp.checksum;
      e.size = bp.lsize;
      e.seq = next_seq_++;
      order_.emplace_back(key, e.seq);
      stats_.bytes += e.size;
      // A job is what one device read can take (zio::kAggregateBytes), so
      // that the threads read the next ones meanwhile.
      if (job_bytes + bp.lsize > zio::kAggregateBytes && !job.bps.empty()) {
        jobs.push_back(std::move(job));
        job = Job{zio, {}};
        job_bytes = 0;
      }
      job.bps.push_back(bp);
      job_bytes += bp.lsize;
    }
    if (!job.bps.empty()) jobs.push_back(std::move(job));
    for (Job& j : jobs) jobs_.push_back(std::move(j));
  }
  for (size_t i = 0; i < jobs.size(); i++) work_cv_.Signal();
}

ReadAhead::EntryMap::iterator ReadAhead::Current(const arc::BlockKey& key, uint64_t seq) {
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.seq == seq ? it : entries_.end();
}

bool ReadAhead::MakeRoom(uint64_t bytes) {
  while (stats_.bytes + bytes > max_bytes_) {
    // The oldest waiting block goes; queued and in-flight ones stay (a read
    // is about to want them).
    auto victim = order_.end();
    for (auto o = order_.begin(); o != order_.end(); ++o) {
      auto it = Current(o->first, o->second);
      if (it != entries_.end() && it->second.state == State::kReady) {
        victim = o;
        break;
      }
    }
    if (victim == order_.end()) return false;
    stats_.dropped++;
    Erase(entries_.find(victim->first));
    order_.erase(victim);
  }
  // Keys of blocks taken or dropped go too: from the front, and all of
  // them once they are half of order_ (a block nobody takes can stay at
  // the front while a stream goes on behind it).
  auto stale = [this](const std::pair<arc::BlockKey, uint64_t>& o) REQUIRES(mu_) {
    return Current(o.first, o.second) == entries_.end();
  };
  while (!order_.empty() && stale(order_.front())) order_.pop_front();
  if (order_.size() > 2 * entries_.size() + 64) std::erase_if(order_, stale);
  return true;
}

void ReadAhead::Erase(EntryMap::iterator it) {
  stats_.bytes -= it->second.size;
  entries_.erase(it);
}

arc::ArcData ReadAhead::Take(const zio::BlockPtr& bp) {
  if (!enabled_) return {};
  const arc::BlockKey key = BlockKeyOf(bp);
  util::MutexLock l(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return {};
  if (it->second.checksum != bp.checksum) {  // another block under the same name: not it
    Erase(it);
    return {};
  }
  if (it->second.state == State::kQueued) {
    stats_.reclaimed++;
    Erase(it);  // its job skips it
    return {};
  }
  if (it->second.state == State::kReading) {
    stats_.waits++;
    const uint64_t seq = it->second.seq;
    do {
      ready_cv_.Wait(&mu_);
      it = Current(key, seq);
    } while (it != entries_.end() && it->second.state == State::kReading);
    if (it == entries_.end()) return {};  // failed, or dropped
  } else {
    stats_.hits++;
  }
  arc::ArcData data = std::move(it->second.data);
  Erase(it);
  return data;
}

void ReadAhead::Worker() {
  for (;;) {
    Job job;
    {
      util::MutexLock l(&mu_);
      while (!stopping_ && jobs_.empty()) work_cv_.Wait(&mu_);
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    RunJob(std::move(job));
  }
}

void ReadAhead::RunJob(Job job) {
  // The blocks still queued become in flight; a read took the others back.
  std::vector<uint64_t> seqs;
  {
    util::MutexLock l(&mu_);
    size_t kept = 0;
    for (const zio::BlockPtr& bp : job.bps) {
      auto it = entries_.find(BlockKeyOf(bp));
      if (it == entries_.end() || it->second.state != State::kQueued ||
          it->second.checksum != bp.checksum)
        continue;
      it->second.state = State::kReading;
      seqs.push_back(it->second.seq);
      job.bps[kept++] = bp;
    }
    job.bps.resize(kept);
  }
  if (job.bps.empty()) return;
  std::vector<arc::ArcData> bufs;
  std::vector<zio::BlockRead> reads;
  bufs.reserve(job.bps.size());
  reads.reserve(job.bps.size());
  for (const zio::BlockPtr& bp : job.bps) {
    bufs.push_back(cache_->AllocData(bp.lsize));
    reads.push_back({bp, reinterpret_cast<uint8_t*>(bufs.back().data())});
  }
  const Status st = job.zio->ReadMany(reads, zio::Zio::ReadUse::kSpeculative);
  {
    util::MutexLock l(&mu_);
    for (size_t i = 0; i < job.bps.size(); i++) {
      auto it = Current(BlockKeyOf(job.bps[i]), seqs[i]);
      if (it == entries_.end()) continue;
      if (!st.ok()) {
        stats_.failed++;
        Erase(it);
        continue;
      }
      it->second.data = std::move(bufs[i]);
      it->second.state = State::kReady;
      stats_.read++;
    }
  }
  ready_cv_.SignalAll();
}

ReadAheadStats ReadAhead::Stats() const {
  util::MutexLock l(&mu_);
  return stats_;
}

}  // namespace poolfs::core::dmu
