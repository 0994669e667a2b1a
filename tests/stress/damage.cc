// Metadata damage (damage.h): the damage before a cycle, the imports that
// watch it, and the check after.
#include "stress/damage.h"

#include <algorithm>
#include <map>
#include <set>

#include "stress/runner.h"
#include "util/text.h"
#include "vdev/fault_injecting_device.h"
#include "vdev/file_device.h"
#include "vdev/label.h"

namespace poolfs::stress {

namespace {

using core::pool::CheckedBlock;
using core::pool::Pool;
using core::vdev::BlockDevice;
using core::vdev::FaultInjectingDevice;
using core::vdev::FileDevice;

bool Overlaps(const core::space::Dva& d, uint32_t vdev, uint64_t off, uint64_t len) {
  return d.vdev == vdev && off < d.offset + d.size && d.offset < off + len;
}

// Whether `b` is the block a damaged copy belongs to, unchanged.
bool SameBlock(const CheckedBlock& b, const DamagedCopy& d) {
  const core::zio::BlockPtr& bp = d.block.bp;
  return b.bp.copies() > d.copy && b.bp.copy(d.copy) == d.extent() && b.bp.birth == bp.birth &&
         b.bp.checksum == bp.checksum;
}

}  // namespace

std::string DamagedCopy::Where() const {
  return " (vdev " + std::to_string(extent().vdev) + " offset " + util::Hex(extent().offset) + ")";
}

std::string DamagedCopy::Describe() const {
  const CheckedBlock& b = block;
  std::string s = b.mos ? "MOS" : "dataset '" + b.dataset + "'";
  if (b.object == core::pool::kRootBlockObject)
    s += " root block";
  else
    s += (b.object == 0 ? " metadnode" : " object " + std::to_string(b.object)) + " L" +
         std::to_string(b.level) + " block " + std::to_string(b.blkid);
  return s + " copy " + std::to_string(copy) + " of " + std::to_string(b.bp.copies()) + Where();
}

const char* PickClass(const CheckedBlock& b) {
  if (b.mos) return "MOS";
  if (b.object == core::pool::kRootBlockObject) return "root";
  if (b.level > 0) return "indirect";
  if (b.object == 0) return "dnode";
  return "other";
}

DamageWatch::DamageWatch(std::vector<DamagedCopy> copies)
    : copies_(std::move(copies)), read_(copies_.size(), false) {}

void DamageWatch::NoteRead(uint32_t vdev, uint64_t off, uint64_t len) {
  for (size_t i = 0; i < copies_.size(); i++)
    if (Overlaps(copies_[i].extent(), vdev, off, len)) {
      util::MutexLock l(&mu_);
      read_[i] = true;
    }
}

bool DamageWatch::read(size_t i) const {
  util::MutexLock l(&mu_);
  return read_[i];
}

size_t DamageWatch::copies_read() const {
  util::MutexLock l(&mu_);
  return size_t(std::count(read_.begin(), read_.end(), true));
}

Status WatchedDevice::Read(uint64_t off, void* buf, size_t len) {
  watch_->NoteRead(vdev_, off, len);
  return inner_->Read(off, buf, len);
}

Status WatchedDevice::Write(uint64_t off, const void* buf, size_t len) {
  return inner_->Write(off, buf, len);
}

Status WatchedDevice::WriteParts(uint64_t off, std::span<const core::vdev::WritePart> parts) {
  return inner_->WriteParts(off, parts);
}

Status WatchedDevice::ReadParts(uint64_t off, std::span<const core::vdev::ReadPart> parts) {
  uint64_t len = 0;
  for (const core::vdev::ReadPart& p : parts) len += p.len;
  watch_->NoteRead(vdev_, off, len);
  return inner_->ReadParts(off, parts);
}

Status Runner::MaybeDamage(uint64_t cycle_seed, const std::vector<FaultInjectingDevice*>& over) {
  damage_ = Damage{};
  if (options_.damage_every <= 0) return Status::Ok();
  std::mt19937_64 rng(cycle_seed ^ 0x6a09e667f3bcc908ull);  // its own stream: the cycle's stays
  if (rng() % uint64_t(options_.damage_every) != 0) return Status::Ok();
  std::vector<std::unique_ptr<FaultInjectingDevice>> owned;
  std::vector<FaultInjectingDevice*> faults = over;
  if (faults.empty()) {
    for (const std::string& path : paths_) {
      POOLFS_ASSIGN_OR_RETURN(auto f, FileDevice::Open(path, {.read_only = false}));
      owned.push_back(std::make_unique<FaultInjectingDevice>(std::move(f), 512));
      faults.push_back(owned.back().get());
    }
  }
  std::vector<BlockDevice*> devs(faults.begin(), faults.end());
  std::map<uint32_t, FaultInjectingDevice*> by_vdev;
  for (FaultInjectingDevice* f : faults) {
    POOLFS_ASSIGN_OR_RETURN(core::vdev::VdevLabelInfo info, core::vdev::ReadLabels(*f));
    damage_.vdev_of_path.push_back(info.header.vdev_index);
    by_vdev[info.header.vdev_index] = f;
  }
  // Every block with copies, each once, by class.
  std::map<std::string, std::vector<CheckedBlock>> classes;
  std::set<std::pair<uint32_t, uint64_t>> seen;
  auto report = core::pool::CheckDevices(devs, [&](const CheckedBlock& b) {
    if (b.bp.copies() < 2 || b.bp.IsGang() || b.bp.psize == 0) return;
    if (seen.insert({b.bp.dva.vdev, b.bp.dva.offset}).second) classes[PickClass(b)].push_back(b);
  });
  if (!report.ok()) return report.status().WithContext("finding metadata blocks to damage");
  if (!report->ok() || report->txg != verified_txg_)
    return Status::Corruption("the pool verified at txg " + std::to_string(verified_txg_) +
                              " does not check clean before the damage:\n" + report->Summary());
  if (classes.empty()) return Status::Ok();
  const int n = 1 + int(rng() % 4);
  std::set<std::pair<uint32_t, uint64_t>> picked;
  for (int i = 0; i < n; i++) {
    auto cls = classes.begin();
    std::advance(cls, ptrdiff_t(rng() % classes.size()));
    const CheckedBlock& b = cls->second[rng() % cls->second.size()];
    if (!picked.insert({b.bp.dva.vdev, b.bp.dva.offset}).second) continue;  // one copy per block
    DamagedCopy d;
    d.block = b;
    d.copy = rng() % 2 ? 0 : 1 + int(rng() % uint64_t(b.bp.copies() - 1));
    const uint64_t byte = rng() % b.bp.psize;
    d.offset = d.extent().offset + byte;
    d.bits = uint32_t(std::min<uint64_t>(1 + rng() % 16, (b.bp.psize - byte) * 8));
    auto dev = by_vdev.find(d.extent().vdev);
    if (dev == by_vdev.end())
      return Status::Corruption(d.Describe() + ": no device holds vdev " +
                                std::to_string(d.extent().vdev));
    POOLFS_RETURN_IF_ERROR(dev->second->FlipBitsOnDisk(d.offset, d.bits));
    damage_.copies.push_back(std::move(d));
  }
  for (FaultInjectingDevice* f : faults) POOLFS_RETURN_IF_ERROR(f->Flush());
  damage_.workload = std::make_unique<DamageWatch>(damage_.copies);
  damage_.verify = std::make_unique<DamageWatch>(damage_.copies);
  stats_.damage_cycles++;
  stats_.copies_damaged += damage_.copies.size();
  return Status::Ok();
}

Result<std::unique_ptr<Pool>> Runner::OpenPool(const core::pool::PoolOptions& opts,
                                               const std::vector<BlockDevice*>& over,
                                               DamageWatch* watch,
                                               std::vector<std::unique_ptr<BlockDevice>>* held) {
  if (watch == nullptr)
    return over.empty() ? Pool::Import(paths_, opts) : Pool::ImportDevices(over, opts);
  std::vector<BlockDevice*> devs = over;
  if (devs.empty()) {  // the files, as Pool::Import opens them
    for (const std::string& path : paths_) {
      POOLFS_ASSIGN_OR_RETURN(
          auto f, FileDevice::Open(path, {
                                             .read_only = false,
                                             .exclusive = true,
                                             .writeback_bytes = opts.vdev.writeback_bytes,
                                             .direct_reads = opts.vdev.direct_reads,
                                             .direct_writes = opts.vdev.direct_writes,
                                         }));
      devs.push_back(f.get());
      held->push_back(std::move(f));
    }
  }
  std::vector<BlockDevice*> watched;
  for (size_t i = 0; i < devs.size(); i++) {
    held->push_back(std::make_unique<WatchedDevice>(devs[i], damage_.vdev_of_path[i], watch));
    watched.push_back(held->back().get());
  }
  return Pool::ImportDevices(watched, opts);
}

Result<CheckReport> Runner::CheckDamaged(std::vector<bool>* present) {
  std::vector<std::unique_ptr<FileDevice>> files;
  std::vector<BlockDevice*> devs;
  for (const std::string& path : paths_) {
    POOLFS_ASSIGN_OR_RETURN(auto f,
                            FileDevice::Open(path, {.read_only = true, .exclusive = false}));
    devs.push_back(f.get());
    files.push_back(std::move(f));
  }
  present->assign(damage_.copies.size(), false);
  return core::pool::CheckDevices(devs, [&](const CheckedBlock& b) {
    for (size_t i = 0; i < damage_.copies.size(); i++)
      if (SameBlock(b, damage_.copies[i])) (*present)[i] = true;
  });
}

Status Runner::JudgeDamage(const CheckReport& report, const std::vector<bool>& present) {
  const std::vector<DamagedCopy>& copies = damage_.copies;
  std::vector<int> reported(copies.size(), 0);
  std::string unexplained;
  for (const CheckProblem& p : report.problems) {
    bool matched = false;
    for (size_t i = 0; i < copies.size() && !matched; i++) {
      const std::string where = copies[i].Where();
      const std::string what = "copy " + std::to_string(copies[i].copy) + " of ";
      if (present[i] && p.where.size() >= where.size() &&
          p.where.compare(p.where.size() - where.size(), where.size(), where) == 0 &&
          p.what.compare(0, what.size(), what) == 0) {
        reported[i]++;
        matched = true;
      }
    }
    if (!matched) unexplained += "\n    " + p.where + ": " + p.what;
  }
  std::string damaged;
  uint64_t healed = 0, still = 0, gone = 0;
  for (size_t i = 0; i < copies.size(); i++) {
    const bool verify_read = damage_.verify->read(i);
    const bool workload_read = damage_.workload->read(i);
    damaged += "\n    " + copies[i].Describe() + ", " + std::to_string(copies[i].bits) +
               " bits at " + util::Hex(copies[i].offset) + ": " +
               (!present[i]   ? "gone with its block"
                : reported[i] ? "reported by the check"
                              : "healed") +
               (verify_read ? ", read by the verifying import" : "") +
               (workload_read ? ", read by the workload" : "");
    if (!present[i]) {
      gone++;
    } else if (reported[i]) {
      still++;
    } else {
      healed++;
    }
  }
  damage_note_ = ", damaged " + std::to_string(copies.size()) + " copies (" +
                 std::to_string(healed) + " healed, " + std::to_string(still) + " reported, " +
                 std::to_string(gone) + " gone)";
  auto fail = [&](const std::string& why) {
    failure_detail_ = "  the damaged copies:" + damaged + "\n" + "  poolfs check:\n" +
                      report.Summary() + unexplained + "\n";
    return Status::Corruption(why);
  };
  if (!unexplained.empty())
    return fail("poolfs check found problems that the damaged copies do not explain:" +
                unexplained);
  for (size_t i = 0; i < copies.size(); i++) {
    if (reported[i] > 1)
      return fail("poolfs check reported damaged " + copies[i].Describe() + " " +
                  std::to_string(reported[i]) + " times");
    if (reported[i] && damage_.verify->read(i))
      return fail("the verifying import read damaged " + copies[i].Describe() +
                  " (and found the good bytes elsewhere) but did not rewrite it: poolfs check "
                  "still finds it bad");
    if (present[i] && !reported[i] && damage_.workload_watched && !damage_.workload->read(i) &&
        !damage_.verify->read(i))
      return fail("damaged " + copies[i].Describe() +
                  " reads back though no read of this cycle touched it");
  }
  if (report.checksum_errors != still)
    return fail("poolfs check counted " + std::to_string(report.checksum_errors) +
                " checksum errors for " + std::to_string(still) + " damaged copies it reported");
  // The copies still bad get their bits flipped back, so that the next
  // cycle starts from a pool that checks clean.
  for (size_t i = 0; i < copies.size(); i++) {
    if (!reported[i]) continue;
    const size_t path = size_t(std::find(damage_.vdev_of_path.begin(), damage_.vdev_of_path.end(),
                                         copies[i].extent().vdev) -
                               damage_.vdev_of_path.begin());
    POOLFS_ASSIGN_OR_RETURN(auto f, FileDevice::Open(paths_.at(path), {.read_only = false}));
    FaultInjectingDevice dev(std::move(f), 512);
    POOLFS_RETURN_IF_ERROR(dev.FlipBitsOnDisk(copies[i].offset, copies[i].bits));
    POOLFS_RETURN_IF_ERROR(dev.Flush());
  }
  if (options_.verbose) damage_note_ += damaged;
  stats_.copies_healed += healed;
  stats_.copies_reported += still;
  stats_.copies_gone += gone;
  return Status::Ok();
}

}  // namespace poolfs::stress
