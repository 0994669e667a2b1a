#include "dmu/block_buffers.h"

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

BlockBuffers::Stats BlockBuffers::stats() const {
  util::MutexLock l(&lists_->mu);
  return lists_->stats;
}

}  // namespace poolfs::core::dmu
