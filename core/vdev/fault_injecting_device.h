// FaultInjectingDevice: a BlockDevice wrapper that models a volatile write
// cache, power cuts, I/O errors and silent corruption, for crash tests and the
// poolfs-stress power-cut mode.
//
// Model. Writes accepted since the last Flush are "pending": they are held in
// an overlay (reads see them, newest last) and reach the inner device only
// when Flush succeeds, in the order they were written. A power cut decides
// what happens to the pending writes:
//   - PowerCut::DropAll(): every pending write is lost.
//   - PowerCut::DropRandom(seed): each pending write independently is lost,
//     lands whole, or is torn — some of its sectors land and others do not
//     (sectors of `sector_size` bytes, aligned on the device). So a later
//     write may survive while an earlier one is lost: writes between flushes
//     are reordered. Where two surviving writes overlap, the later one wins,
//     as in a real cache. With `garble_torn_sectors`, one aligned sector of
//     each torn write is filled with garbage, including any bytes of that
//     sector outside the write: a sector whose read-modify-write was cut.
//   - PowerCut::GarbleAll(seed): the worst case: every pending write is lost
//     and every aligned sector it touches is filled with garbage.
// Either way the surviving bytes go to the inner device and the overlay is
// emptied: the device then behaves as a freshly started one over the inner
// device. Destroying a FaultInjectingDevice also drops its pending writes
// (Flush first to keep them).
//
// Faults:
//   - CutPower(cut): cut now; the device is usable again at once (a reboot).
//   - CutPowerAfter(n, cut): the next n writes/flushes succeed; the one after
//     that does not happen: power is cut just before it (it fails with
//     IOError) and every I/O fails until PowerOn(). This is how a test stops
//     an operation "after its k-th write" for every k.
//   - FailNthIo(n, kind, sticky): the n-th next I/O of that kind (1 = the
//     next) fails with IOError and has no effect; with `sticky`, every one
//     after it fails too, until ClearFaults().
//   - FlipBitOnRead(offset, mask): every read covering the byte sees it XORed
//     with mask; the stored data is untouched (a bad cable, not a bad disk).
//   - DamageNthRead(n): the n-th next read succeeds but one bit of what it
//     returns is flipped (a block that fails its checksum once, wherever
//     the n-th read lands); counted as an injected failure.
//   - FlipBitsOnDisk(offset, count): flips `count` consecutive bits starting
//     at the lowest bit of the byte at `offset`, in the inner device and in
//     any pending write over those bytes: persistent damage.
//
// Thread safety: all methods may be called from any thread. One mutex
// serializes all I/O on this device, inner I/O included, so reads always see
// a consistent overlay; fine for tests, not meant to be fast.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/mutex.h"
#include "vdev/block_device.h"

namespace poolfs::core::vdev {

enum class IoKind : uint8_t { kRead, kWrite, kFlush, kAny };

struct PowerCut {
  enum class Mode : uint8_t { kDropAll, kDropRandom, kGarbleAll };
  Mode mode = Mode::kDropAll;
  uint64_t seed = 0;
  bool garble_torn_sectors = false;

  static PowerCut DropAll() { return PowerCut{}; }
  static PowerCut DropRandom(uint64_t seed, bool garble_torn_sectors = false) {
    return PowerCut{Mode::kDropRandom, seed, garble_torn_sectors};
  }
  static PowerCut GarbleAll(uint64_t seed) { return PowerCut{Mode::kGarbleAll, seed, true}; }
};

class FaultInjectingDevice final : public BlockDevice {
 public:
  // Owns `inner`. `sector_size` is the unit of torn writes (and what
  // sector_size() reports); it must be a power of two.
  explicit FaultInjectingDevice(std::unique_ptr<BlockDevice> inner, uint32_t sector_size = 512);
  // Does not own `inner`, which must outlive this device.
  explicit FaultInjectingDevice(BlockDevice* inner, uint32_t sector_size = 512);
  ~FaultInjectingDevice() override = default;

  uint64_t size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  uint32_t sector_size() const override { return sector_size_; }

  // IOError "power is off" while the power is off; the injected failure when
  // one is due; otherwise as BlockDevice.
  Status Read(uint64_t off, void* buf, size_t len) override;
  // Adds the write to the overlay (nothing reaches the inner device).
  Status Write(uint64_t off, const void* buf, size_t len) override;
  // Applies the overlay to the inner device in order, then flushes it. On an
  // inner failure the writes not yet applied stay pending.
  Status Flush() override;

  // Cuts the power now (see above) and leaves the device usable. Fails only if
  // the inner device fails to take the surviving writes.
  Status CutPower(const PowerCut& cut = PowerCut::DropAll());
  // Arms a power cut after `n` more successful writes/flushes (see above).
  void CutPowerAfter(uint64_t n, const PowerCut& cut = PowerCut::DropAll());
  // True once an armed cut has fired, until PowerOn().
  bool power_is_off() const;
  void PowerOn();

  void FailNthIo(uint64_t n, IoKind kind, bool sticky = false);
  void FlipBitOnRead(uint64_t offset, uint8_t mask = 1);
  void DamageNthRead(uint64_t n);
  // InvalidArgument when the bits are outside the device; else inner errors.
  Status FlipBitsOnDisk(uint64_t offset, uint64_t count);
  // Clears injected failures, read flips and damage, and any armed power cut.
  void ClearFaults();

  struct Counters {
    uint64_t reads = 0;    // Read calls within bounds, failed ones included
    uint64_t writes = 0;   // Write calls within bounds, failed ones included
    uint64_t flushes = 0;  // Flush calls, failed ones included
    uint64_t injected_failures = 0;
    uint64_t power_cuts = 0;
    uint64_t pending_writes = 0;  // in the overlay now
    uint64_t pending_bytes = 0;
  };
  Counters counters() const;

  BlockDevice& inner() { return *inner_; }

 private:
  struct Pending {
    uint64_t off;
    std::vector<uint8_t> data;
  };

  // Returns true (and counts it) when the current I/O of `kind` must fail.
  bool ShouldFail(IoKind kind) REQUIRES(mu_);
  // Checks power and an armed cut before a write or flush; non-OK stops it.
  Status BeforeMutation(std::string_view op) REQUIRES(mu_);
  Status CutPowerLocked(const PowerCut& cut) REQUIRES(mu_);
  // Writes the part of `w` kept by a DropRandom cut into the inner device.
  Status ApplyTorn(const Pending& w, uint64_t* rng_state, bool garble) REQUIRES(mu_);
  // Fills every aligned sector that `w` touches with garbage.
  Status Garble(const Pending& w, uint64_t* rng_state) REQUIRES(mu_);

  std::unique_ptr<BlockDevice> owned_;
  BlockDevice* const inner_;
  const uint32_t sector_size_;

  mutable util::Mutex mu_;
  std::vector<Pending> pending_ GUARDED_BY(mu_);
  uint64_t pending_bytes_ GUARDED_BY(mu_) = 0;
  bool power_off_ GUARDED_BY(mu_) = false;
  bool cut_armed_ GUARDED_BY(mu_) = false;
  uint64_t cut_countdown_ GUARDED_BY(mu_) = 0;
  PowerCut armed_cut_ GUARDED_BY(mu_);
  IoKind fail_kind_ GUARDED_BY(mu_) = IoKind::kAny;
  uint64_t fail_countdown_ GUARDED_BY(mu_) = 0;  // 0: no failure armed
  bool fail_sticky_ GUARDED_BY(mu_) = false;
  bool failing_ GUARDED_BY(mu_) = false;  // sticky failure has started
  std::map<uint64_t, uint8_t> read_flips_ GUARDED_BY(mu_);
  uint64_t damage_countdown_ GUARDED_BY(mu_) = 0;  // 0: no damaged read armed
  Counters counters_ GUARDED_BY(mu_);
};

}  // namespace poolfs::core::vdev
