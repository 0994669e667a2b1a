// Metadata damage: poolfs-stress's check that a bad copy of a metadata
// block is read around and healed.
//
// Theory
// ------
// On-disk format 2 stores every metadata block twice and the MOS's blocks
// three times; a read takes the next copy when one does not verify and
// rewrites the bad one from it (zio.h, "Copies"). One cycle in
// StressOptions::damage_every, in every mode, starts by damaging the pool
// at rest, as the last cycle verified and exported it:
//   - CheckDevices walks it with a BlockVisitor that lists every block whose
//     pointer has two copies or more: the MOS's blocks, the datasets' root
//     blocks, dnode blocks, indirect blocks (the classes of PickClass);
//   - 1 to 4 of them are picked (a class, then a block in it), and exactly
//     one copy of each: copy 0, which reads try first, half the time;
//   - FlipBitsOnDisk of a FaultInjectingDevice over the vdev flips 1 to 16
//     consecutive bits inside that copy's stored bytes.
// The cycle then runs as any other, and its import that verifies reads
// through WatchedDevices, which note each damaged copy whose bytes a read
// touched (so do the workload's imports, in the modes that run it in this
// process). It passes only when:
//   - every read returned the good bytes: the workload's read-backs and the
//     verification of the models pass as in any cycle;
//   - the verifying import counted no more checksum errors than the damaged
//     copies it read, and rewrote as many copies as it counted;
//   - after its export, the check (CheckDevices, with the visitor again to
//     see which damaged copies the pool still references unchanged: same
//     extent, birth and checksum) reports exactly the damaged copies still
//     referenced that no read healed — each once, as "copy c of n does not
//     read back (the others do)", and its checksum errors are those — and
//     nothing else;
//   - no damaged copy that the verifying import read is among them (a read
//     heals what it finds), and (when every import ran here) none vanished
//     unread.
// A clean export flushes the vdevs only with a txg it syncs, so in a power
// cut cycle the rewrites that the verifying import's reads made may still
// sit in the fault-injecting devices' caches after it: those are flushed
// and counted (RunStats::repairs_unflushed) rather than failed.
// A copy whose block the workload rewrote or freed (copy on write) is just
// gone. Copies other than 0 are read only when copy 0 fails, so those
// mostly stay until the check reports them: the half of the check that says
// a damaged copy is seen; copy 0 is the half that says it is healed.
//
// Thread safety: DamageWatch and WatchedDevice from any thread; the rest is
// the runner's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pool/check.h"
#include "util/mutex.h"
#include "vdev/block_device.h"

namespace poolfs::stress {

// One copy of a metadata block that a cycle damaged.
struct DamagedCopy {
  core::pool::CheckedBlock block;  // the block as the walk found it
  int copy = 0;                    // which of its copies
  uint64_t offset = 0;             // the byte of the vdev where the flipped bits start
  uint32_t bits = 0;               // how many consecutive bits were flipped

  const core::space::Dva& extent() const { return block.bp.copy(copy); }
  // "dataset 'stress/ds3' metadnode L0 block 2 copy 0 of 2 (vdev 1 offset 0x40a000)"
  std::string Describe() const;
  // How the check names the copy's extent: " (vdev 1 offset 0x40a000)".
  std::string Where() const;
};

// The block classes damage picks from: "MOS", "root", "dnode", "indirect"
// (another block with copies: "other").
const char* PickClass(const core::pool::CheckedBlock& b);

// Which damaged copies the reads of one import touched.
class DamageWatch {
 public:
  explicit DamageWatch(std::vector<DamagedCopy> copies);
  // A read of [off, off + len) on vdev `vdev`.
  void NoteRead(uint32_t vdev, uint64_t off, uint64_t len) EXCLUDES(mu_);
  // Whether a read touched damaged copy i; how many copies reads touched.
  bool read(size_t i) const EXCLUDES(mu_);
  size_t copies_read() const EXCLUDES(mu_);

 private:
  const std::vector<DamagedCopy> copies_;
  mutable util::Mutex mu_;
  std::vector<bool> read_ GUARDED_BY(mu_);
};

// A BlockDevice that passes every I/O to `inner` and tells `watch` about
// its reads as reads of vdev `vdev`.
class WatchedDevice final : public core::vdev::BlockDevice {
 public:
  WatchedDevice(core::vdev::BlockDevice* inner, uint32_t vdev, DamageWatch* watch)
      : inner_(inner), vdev_(vdev), watch_(watch) {}
  uint64_t size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  uint32_t sector_size() const override { return inner_->sector_size(); }
  Status Read(uint64_t off, void* buf, size_t len) override;
  Status Write(uint64_t off, const void* buf, size_t len) override;
  Status WriteParts(uint64_t off, std::span<const core::vdev::WritePart> parts) override;
  Status ReadParts(uint64_t off, std::span<const core::vdev::ReadPart> parts) override;
  Status Flush() override { return inner_->Flush(); }

 private:
  core::vdev::BlockDevice* const inner_;
  const uint32_t vdev_;
  DamageWatch* const watch_;
};

}  // namespace poolfs::stress
