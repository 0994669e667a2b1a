#include "pool/uberblock_choice.h"

#include <algorithm>
#include <cstdlib>

namespace poolfs::core::pool {

UberblockCandidates CollectUberblocks(const std::vector<vdev::VdevLabelInfo>& infos,
                                      uint64_t pool_guid, uint64_t guid_sum, uint32_t version) {
  UberblockCandidates c;
  for (const auto& info : infos) {
    for (const auto& f : info.uberblocks) {
      c.max_txg = std::max(c.max_txg, f.ub.txg.value());
      if (f.ub.pool_guid != pool_guid || f.ub.guid_sum != guid_sum || f.ub.version != version)
        continue;
      if (std::find(c.list.begin(), c.list.end(), f.ub) == c.list.end()) c.list.push_back(f.ub);
    }
  }
  std::stable_sort(c.list.begin(), c.list.end(),
                   [](const auto& a, const auto& b) { return a.txg > b.txg; });
  return c;
}

Status NoUberblock(const std::string& pool, const std::vector<vdev::VdevLabelInfo>& infos) {
  size_t damaged = 0, foreign = 0;
  std::string first;
  for (const auto& info : infos) {
    foreign += info.uberblocks.size();
    for (const std::string& e : info.ring_errors) {
      if (e.starts_with("... and ")) {
        damaged += std::strtoull(e.c_str() + 8, nullptr, 10);
        continue;
      }
      damaged++;
      if (first.empty()) first = e;
    }
  }
  if (damaged == 0 && foreign == 0)
    return Status::Corruption("pool '" + pool +
                              "' has no uberblock: every slot of every label is empty, so its "
                              "creation never completed");
  if (foreign > 0)
    return Status::Corruption(
        "pool '" + pool + "': no valid uberblock of this pool: " + std::to_string(foreign) +
        " decode but name another set of vdevs or format version, and " + std::to_string(damaged) +
        " slots are damaged" + (first.empty() ? "" : " (" + first + ")"));
  return Status::Corruption("pool '" + pool +
                            "': no valid uberblock: every slot of every label fails its "
                            "checksum (" +
                            std::to_string(damaged) + " written slots, none valid; " + first + ")");
}

std::string UberblockChoice::Note() const {
  if (!rewind || chosen == nullptr) return "";
  if (!rewound())
    return "rewind: txg " + std::to_string(newest.value()) + ", the newest, verifies: nothing to " +
           "rewind";
  std::string s = "rewound to txg " + std::to_string(chosen->txg.value()) + " (the newest, txg " +
                  std::to_string(newest.value()) + ", does not verify: " +
                  (failed.empty() ? std::string("?") : failed.front().second.message());
  for (size_t i = 1; i < failed.size(); i++)
    s += "; nor does txg " + std::to_string(failed[i].first.value()) + ": " +
         failed[i].second.message();
  return s + ")";
}

Status UberblockChoice::Failure(const std::string& pool) const {
  std::string why;
  for (const auto& [txg, st] : failed)
    why += (why.empty() ? "" : "; ") + std::string("txg ") + std::to_string(txg.value()) + ": " +
           st.message();
  if (!rewind)
    return Status::Corruption("pool '" + pool + "': the newest uberblock, txg " +
                              std::to_string(newest.value()) + ", does not verify (" + why +
                              "); a read-only rewind import (poolfs mount -o ro,rewind; poolfs "
                              "check --rewind checks it first) opens the newest older txg whose "
                              "tree verifies");
  std::string s = "pool '" + pool + "': rewind: no uberblock within " +
                  std::to_string(kTxgDeferSize) + " txgs of the newest verifies (" + why + ")";
  if (outside_window.value() != 0)
    s += "; txg " + std::to_string(outside_window.value()) +
         " and older are outside the rewind window: blocks they reference may have been reused";
  return Status::Corruption(s);
}

UberblockChoice ChooseUberblock(const UberblockCandidates& candidates, bool rewind,
                                const std::function<Status(const vdev::Uberblock&)>& verify) {
  UberblockChoice c;
  c.rewind = rewind;
  if (candidates.list.empty()) return c;
  c.newest = candidates.list.front().txg;
  for (const vdev::Uberblock& ub : candidates.list) {
    if (!rewind && ub.txg < c.newest) break;
    if (rewind && ub.txg.value() + kTxgDeferSize < candidates.max_txg) {
      c.outside_window = ub.txg;
      break;
    }
    Status st = verify(ub);
    if (st.ok()) {
      c.chosen = &ub;
      break;
    }
    c.failed.emplace_back(ub.txg, std::move(st));
  }
  return c;
}

}  // namespace poolfs::core::pool
