#include "dmu/block_buffers.h"

#include <algorithm>

namespace poolfs::core::dmu {

BlockBuffers::BlockBuffers(uint64_t retain_bytes) : lists_(std::make_shared<Lists>(retain_bytes)) {}

BlockBuffers::Lists::~Lists() {
  util::MutexLock l(&mu);
  for (auto& [capacity, list] : by_capacity)
    for (std::string* s : list) delete s;
}

void BlockBuffers::Lists::Give(std::string* s) {
  {
    util::MutexLock l(&mu);
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
