#include "dmu/block_buffers.h"

#include <algorithm>

namespace poolfs::core::dmu {

BlockBuffers::BlockBuffers(uint64_t retain_bytes) : lists_(std::make_shared<Lists>(retain_bytes)) {}

BlockBuffers::Lists::~Lists() {
  util::MutexLock l(&mu);
  for (auto& [capacity, list] : by_capacity)
    for (std::string* s : list) delete s;
}

namespace {

// The calling thread's innermost ReleaseBatch.
thread_local BlockBuffers::ReleaseBatch* t_batch = nullptr;

}  // namespace

BlockBuffers::ReleaseBatch::ReleaseBatch(BlockBuffers* buffers)
    : lists_(buffers ? buffers->lists_.get() : nullptr), outer_(t_batch) {
  t_batch = this;
}

BlockBuffers::ReleaseBatch::~ReleaseBatch() {
  t_batch = outer_;
  if (lists_ != nullptr && !gathered_.empty()) lists_->GiveBatch(&gathered_);
}

void BlockBuffers::Lists::GiveBatch(std::vector<std::string*>* batch) {
  size_t kept = 0;
  {
    util::MutexLock l(&mu);
    stats.batches++;
    stats.given_batched += batch->size();
    for (std::string*& s : *batch) {
      if (stats.kept_bytes + s->capacity() > retain_bytes) continue;
      stats.kept_bytes += s->capacity();
      by_capacity[s->capacity()].push_back(s);
      s = nullptr;
      kept++;
    }
  }
  if (kept < batch->size())
    for (std::string* s : *batch) delete s;  // outside the lock; kept ones are null
  batch->clear();
}

void BlockBuffers::Lists::Give(std::string* s) {
  if (t_batch != nullptr && t_batch->lists_ == this) {
    t_batch->gathered_.push_back(s);
    return;
  }
  {
    util::MutexLock l(&mu);
    stats.given_alone++;
    if (stats.kept_bytes + s->capacity() <= retain_bytes) {
      stats.kept_bytes += s->capacity();
      by_capacity[s->capacity()].push_back(s);
      return;
    }
  }
  delete s;
}

std::shared_ptr<std::string> BlockBuffers::New(uint32_t size) {
  if (size < kMinKept) return std::make_shared<std::string>();
  std::string* s = nullptr;
  {
    util::MutexLock l(&lists_->mu);
    lists_->demand_bytes += size;
    auto it = lists_->by_capacity.find(size);
    if (it != lists_->by_capacity.end() && !it->second.empty()) {
      s = it->second.back();
      it->second.pop_back();
      lists_->stats.kept_bytes -= s->capacity();
      lists_->stats.reused++;
    } else {
      lists_->stats.allocated++;
    }
  }
  if (s == nullptr) {
    s = new std::string();
    s->reserve(size);
  }
  s->clear();
  return std::shared_ptr<std::string>(s, [lists = lists_](std::string* p) { lists->Give(p); });
}

uint64_t BlockBuffers::Trim() {
  std::vector<std::string*> drop;  // freed outside the lock
  uint64_t freed = 0;
  {
    Lists& l = *lists_;
    util::MutexLock lock(&l.mu);
    const uint64_t keep = std::min(l.retain_bytes, l.demand_bytes);
    l.demand_bytes = 0;
    for (auto it = l.by_capacity.begin(); it != l.by_capacity.end() && l.stats.kept_bytes > keep;
         ++it) {
      while (!it->second.empty() && l.stats.kept_bytes > keep) {
        std::string* s = it->second.back();
        it->second.pop_back();
        l.stats.kept_bytes -= s->capacity();
        freed += s->capacity();
        drop.push_back(s);
      }
    }
    l.stats.trimmed_bytes += freed;
  }
  for (std::string* s : drop) delete s;
  return freed;
}

BlockBuffers::Stats BlockBuffers::stats() const {
  util::MutexLock l(&lists_->mu);
  return lists_->stats;
}

}  // namespace poolfs::core::dmu
