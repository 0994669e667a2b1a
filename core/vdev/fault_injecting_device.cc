#include "vdev/fault_injecting_device.h"

#include <algorithm>
#include <cstring>

#include "util/check.h"

namespace poolfs::core::vdev {
namespace {

// splitmix64: a deterministic generator, the same on every platform, so a
// failing seed replays exactly.
uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool Matches(IoKind armed, IoKind actual) { return armed == IoKind::kAny || armed == actual; }

}  // namespace

FaultInjectingDevice::FaultInjectingDevice(std::unique_ptr<BlockDevice> inner, uint32_t sector_size)
    : owned_(std::move(inner)), inner_(owned_.get()), sector_size_(sector_size) {
  POOLFS_CHECK(inner_ != nullptr);
  POOLFS_CHECK(sector_size_ > 0 && (sector_size_ & (sector_size_ - 1)) == 0);
}

FaultInjectingDevice::FaultInjectingDevice(BlockDevice* inner, uint32_t sector_size)
    : inner_(inner), sector_size_(sector_size) {
  POOLFS_CHECK(inner_ != nullptr);
  POOLFS_CHECK(sector_size_ > 0 && (sector_size_ & (sector_size_ - 1)) == 0);
}

bool FaultInjectingDevice::ShouldFail(IoKind kind) {
  bool fail = false;
  if (failing_ && Matches(fail_kind_, kind)) {
    fail = true;
  } else if (fail_countdown_ > 0 && Matches(fail_kind_, kind) && --fail_countdown_ == 0) {
    fail = true;
    failing_ = fail_sticky_;
  }
  if (fail) counters_.injected_failures++;
  return fail;
}

Status FaultInjectingDevice::BeforeMutation(std::string_view op) {
  if (power_off_) return Status::IOError(std::string(op) + " on " + name() + ": power is off");
  if (cut_armed_) {
    if (cut_countdown_ == 0) {
      cut_armed_ = false;
      POOLFS_RETURN_IF_ERROR(CutPowerLocked(armed_cut_));
      power_off_ = true;
      return Status::IOError(std::string(op) + " on " + name() + ": power cut");
    }
    cut_countdown_--;
  }
  return Status::Ok();
}

Status FaultInjectingDevice::Read(uint64_t off, void* buf, size_t len) {
  POOLFS_RETURN_IF_ERROR(CheckRange(name(), "read", size(), off, len));
  util::MutexLock lock(&mu_);
  counters_.reads++;
  if (power_off_) return Status::IOError("read on " + name() + ": power is off");
  if (ShouldFail(IoKind::kRead)) return DeviceIoError(name(), "read", off, len, EIO);
  POOLFS_RETURN_IF_ERROR(inner_->Read(off, buf, len));
  auto* out = static_cast<uint8_t*>(buf);
  const uint64_t end = off + len;
  for (const Pending& w : pending_) {  // in write order: the newest wins
    uint64_t lo = std::max(off, w.off), hi = std::min(end, w.off + w.data.size());
    if (lo < hi) std::memcpy(out + (lo - off), w.data.data() + (lo - w.off), hi - lo);
  }
  for (auto it = read_flips_.lower_bound(off); it != read_flips_.end() && it->first < end; ++it) {
    out[it->first - off] ^= it->second;
  }
  if (damage_countdown_ > 0 && --damage_countdown_ == 0 && len > 0) {
    out[len / 2] ^= 0x10;
    counters_.injected_failures++;
  }
  return Status::Ok();
}

Status FaultInjectingDevice::Write(uint64_t off, const void* buf, size_t len) {
  POOLFS_RETURN_IF_ERROR(CheckRange(name(), "write", size(), off, len));
  util::MutexLock lock(&mu_);
  counters_.writes++;
  POOLFS_RETURN_IF_ERROR(BeforeMutation("write"));
  if (ShouldFail(IoKind::kWrite)) return DeviceIoError(name(), "write", off, len, EIO);
  if (len == 0) return Status::Ok();
  const auto* p = static_cast<const uint8_t*>(buf);
  pending_.push_back(Pending{off, std::vector<uint8_t>(p, p + len)});
  pending_bytes_ += len;
  return Status::Ok();
}

Status FaultInjectingDevice::Flush() {
  util::MutexLock lock(&mu_);
  counters_.flushes++;
  POOLFS_RETURN_IF_ERROR(BeforeMutation("flush"));
  if (ShouldFail(IoKind::kFlush))
    return Status::IOError("flush of " + name() + " failed: " + ErrnoText(EIO));
  size_t applied = 0;
  Status st;
  for (; applied < pending_.size(); applied++) {
    const Pending& w = pending_[applied];
    st = inner_->Write(w.off, w.data.data(), w.data.size());
    if (!st.ok()) break;
    pending_bytes_ -= w.data.size();
  }
  pending_.erase(pending_.begin(), pending_.begin() + applied);
  POOLFS_RETURN_IF_ERROR(st);
  return inner_->Flush();
}

Status FaultInjectingDevice::ApplyTorn(const Pending& w, uint64_t* rng, bool garble) {
  // Split the write at device sector boundaries; keep each piece or not.
  const uint64_t end = w.off + w.data.size();
  bool garbled = false;
  for (uint64_t lo = w.off; lo < end;) {
    uint64_t sector_start = lo & ~uint64_t(sector_size_ - 1);
    uint64_t hi = std::min(end, sector_start + sector_size_);
    if (NextRandom(rng) & 1) {
      POOLFS_RETURN_IF_ERROR(inner_->Write(lo, w.data.data() + (lo - w.off), hi - lo));
    } else if (garble && !garbled) {
      garbled = true;
      uint64_t g_end = std::min(sector_start + sector_size_, size());
      std::vector<uint8_t> junk(g_end - sector_start);
      for (auto& b : junk) b = uint8_t(NextRandom(rng));
      POOLFS_RETURN_IF_ERROR(inner_->Write(sector_start, junk.data(), junk.size()));
    }
    lo = hi;
  }
  return Status::Ok();
}

Status FaultInjectingDevice::Garble(const Pending& w, uint64_t* rng) {
  uint64_t lo = w.off & ~uint64_t(sector_size_ - 1);
  uint64_t hi =
      std::min(size(), (w.off + w.data.size() + sector_size_ - 1) & ~uint64_t(sector_size_ - 1));
  std::vector<uint8_t> junk(hi - lo);
  for (auto& b : junk) b = uint8_t(NextRandom(rng));
  return inner_->Write(lo, junk.data(), junk.size());
}

Status FaultInjectingDevice::CutPowerLocked(const PowerCut& cut) {
  counters_.power_cuts++;
  std::vector<Pending> pending;
  pending.swap(pending_);
  pending_bytes_ = 0;
  if (cut.mode == PowerCut::Mode::kDropAll) return Status::Ok();
  uint64_t rng = cut.seed;
  if (cut.mode == PowerCut::Mode::kGarbleAll) {
    for (const Pending& w : pending) POOLFS_RETURN_IF_ERROR(Garble(w, &rng));
    return inner_->Flush();
  }
  for (const Pending& w : pending) {
    switch (NextRandom(&rng) % 4) {
      case 0:
      case 1:  // lost
        break;
      case 2:  // landed whole
        POOLFS_RETURN_IF_ERROR(inner_->Write(w.off, w.data.data(), w.data.size()));
        break;
      default:  // torn
        POOLFS_RETURN_IF_ERROR(ApplyTorn(w, &rng, cut.garble_torn_sectors));
        break;
    }
  }
  return inner_->Flush();
}

Status FaultInjectingDevice::CutPower(const PowerCut& cut) {
  util::MutexLock lock(&mu_);
  return CutPowerLocked(cut);
}

void FaultInjectingDevice::CutPowerAfter(uint64_t n, const PowerCut& cut) {
  util::MutexLock lock(&mu_);
  cut_armed_ = true;
  cut_countdown_ = n;
  armed_cut_ = cut;
}

bool FaultInjectingDevice::power_is_off() const {
  util::MutexLock lock(&mu_);
  return power_off_;
}

void FaultInjectingDevice::PowerOn() {
  util::MutexLock lock(&mu_);
  power_off_ = false;
}

void FaultInjectingDevice::FailNthIo(uint64_t n, IoKind kind, bool sticky) {
  util::MutexLock lock(&mu_);
  fail_kind_ = kind;
  fail_countdown_ = n;
  fail_sticky_ = sticky;
  failing_ = sticky && n == 0;
}

void FaultInjectingDevice::DamageNthRead(uint64_t n) {
  util::MutexLock lock(&mu_);
  damage_countdown_ = n;
}

void FaultInjectingDevice::FlipBitOnRead(uint64_t offset, uint8_t mask) {
  util::MutexLock lock(&mu_);
  read_flips_[offset] ^= mask;
}

Status FaultInjectingDevice::FlipBitsOnDisk(uint64_t offset, uint64_t count) {
  uint64_t nbytes = (count + 7) / 8;
  POOLFS_RETURN_IF_ERROR(CheckRange(name(), "bit flip", size(), offset, nbytes));
  std::vector<uint8_t> mask(nbytes, 0xFF);
  if (count % 8 != 0) mask.back() = uint8_t((1u << (count % 8)) - 1);
  util::MutexLock lock(&mu_);
  std::vector<uint8_t> bytes(nbytes);
  POOLFS_RETURN_IF_ERROR(inner_->Read(offset, bytes.data(), nbytes));
  for (uint64_t i = 0; i < nbytes; i++) bytes[i] ^= mask[i];
  POOLFS_RETURN_IF_ERROR(inner_->Write(offset, bytes.data(), nbytes));
  for (Pending& w : pending_) {
    for (uint64_t i = 0; i < nbytes; i++) {
      uint64_t at = offset + i;
      if (at >= w.off && at < w.off + w.data.size()) w.data[at - w.off] ^= mask[i];
    }
  }
  return Status::Ok();
}

void FaultInjectingDevice::ClearFaults() {
  util::MutexLock lock(&mu_);
  fail_countdown_ = 0;
  fail_sticky_ = false;
  failing_ = false;
  cut_armed_ = false;
  read_flips_.clear();
  damage_countdown_ = 0;
}

FaultInjectingDevice::Counters FaultInjectingDevice::counters() const {
  util::MutexLock lock(&mu_);
  Counters c = counters_;
  c.pending_writes = pending_.size();
  c.pending_bytes = pending_bytes_;
  return c;
}

}  // namespace poolfs::core::vdev
