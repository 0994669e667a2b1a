// PosixFs: copy_file_range, with block cloning.
//
// A copy of whole blocks shares them (zio/block_ref_table.h): the
// destination's block pointers become copies of the source's, and the pool's
// block reference table counts the extra references, so a copy of a 1 GiB
// file writes a few MiB of indirect blocks instead of 1 GiB of data. What
// cannot be shared is copied through the write path, each piece a write of
// its own: the partial blocks at the edges of the range, blocks the source
// changed since the last sync (their bytes are not on disk yet; ZFS waits
// for the sync instead, a copy is as quick for a few blocks), blocks of a
// gang, and every byte when the two offsets lie differently in their
// blocks or the block sizes cannot agree.
//
// Each run of shared blocks is one Tx: it takes the source's pointers
// (ShareBlocks, which registers their references as pending in the Tx's
// txg), reads the bytes of the source's changed blocks, and only then
// changes the destination (its block size when its data fits one block,
// PutClones, the writes of the changed blocks, the znode), steps that cannot
// fail once the reads are done. A failure before them gives the pending
// references back (CancelShared) and leaves the pool as it was.
//
// Reads see a clone at once (the dnode's slot holds the shared pointers
// until the txg syncs). The intent log records the range as written: a
// commit before the sync copies the bytes into the log (or, past a quarter
// of the log, waits for the sync, which makes the clone itself durable).
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "posix/posix_fs.h"
#include "util/check.h"

namespace poolfs::core::posix {
namespace {

// Blocks shared per Tx: a few thousand pointers, and at most this many
// changed source blocks copied in memory at once.
constexpr uint64_t kCloneChunkBlocks = 256;
// Bytes copied per write when blocks cannot be shared.
constexpr uint64_t kCopyPiece = uint64_t{1} << 20;

}  // namespace

Result<uint64_t> PosixFs::CopyFileRange(const Creds& c, uint64_t ino_in, uint64_t off_in,
                                        uint64_t ino_out, uint64_t off_out, uint64_t len,
                                        uint32_t flags) {
  return CopyFrom(c, *this, ino_in, off_in, ino_out, off_out, len, flags);
}

Result<uint64_t> PosixFs::CopyFrom(const Creds& c, PosixFs& src, uint64_t ino_in, uint64_t off_in,
                                   uint64_t ino_out, uint64_t off_out, uint64_t len,
                                   uint32_t flags) {
  if (flags != 0)
    return Status::InvalidArgument("copy_file_range flags " + std::to_string(flags) +
                                   ": none are defined");
  if (src.pool_ != pool_)
    return Status::NotSupported("copy_file_range between two pools");
  CallGuard g_out, g_in;
  POOLFS_RETURN_IF_ERROR(Enter(&g_out, true));
  if (&src != this) POOLFS_RETURN_IF_ERROR(src.Enter(&g_in, false));
  POOLFS_ASSIGN_OR_RETURN(InodeRef in, src.Get(ino_in));
  POOLFS_ASSIGN_OR_RETURN(InodeRef out, Get(ino_out));
  if (off_out > kMaxFileSize || len > kMaxFileSize - off_out)
    return Status(StatusCode::kFileTooLarge,
                  "copy to " + std::to_string(off_out) + " of " + std::to_string(len) +
                      " bytes passes the maximum file size 2^50");
  // Both files' op_mu, in the order every multi-inode change takes them
  // (ino, then address: two datasets may use the same ino).
  Inode* first = in.get();
  Inode* second = out.get();
  if (second->ino < first->ino || (second->ino == first->ino && second < first))
    std::swap(first, second);
  util::MutexLock lock_first(&first->op_mu);
  std::optional<util::MutexLock> lock_second;
  if (second != first) lock_second.emplace(&second->op_mu);
  for (Inode* f : {in.get(), out.get()})
    if (Freed(*f)) return Stale(f->ino);
  const ZnodePhys zin = in->Snapshot();
  if (!S_ISREG(zin.mode)) return NotRegular(ino_in, zin.mode);
  const ZnodePhys zout = out->Snapshot();
  if (!S_ISREG(zout.mode)) return NotRegular(ino_out, zout.mode);
  if (off_in >= zin.size || len == 0) return uint64_t{0};
  len = std::min(len, zin.size - off_in);
  if (in.get() == out.get() && off_in < off_out + len && off_out < off_in + len)
    return Status::InvalidArgument("copy_file_range within inode " + std::to_string(ino_in) +
                                   ": the ranges overlap");

  uint64_t done = 0;
  auto copy_bytes = [&](uint64_t n) {
    return CopyBytes(c, src, ino_in, off_in, *out, off_out, n, &done);
  };
  auto finish = [&](const Status& st) -> Result<uint64_t> {
    if (!st.ok() && done == 0) return st;
    return done;  // a short copy: the caller asks again for the rest
  };

  POOLFS_ASSIGN_OR_RETURN(dmu::ObjectSet::DnodeRef din, src.os_->Hold(ObjectId(ino_in)));
  POOLFS_ASSIGN_OR_RETURN(dmu::ObjectSet::DnodeRef dout, os_->Hold(ObjectId(ino_out)));
  const uint64_t bs = din->Info().block_size;
  const uint64_t end_in = off_in + len;
  // Whole blocks of the source inside the range. The source's last block
  // counts whole when the range reaches the source's end and the copy
  // reaches the destination's: past both ends a block holds only zeros.
  const uint64_t first_block = (off_in + bs - 1) / bs;
  uint64_t end_block = end_in / bs;
  if (end_in == zin.size && off_out + len >= zout.size && end_in % bs != 0) end_block++;
  const bool alike = bs != 0 && off_in % bs == off_out % bs && first_block < end_block;
  const uint64_t out_bs = dout->Info().block_size;
  const uint64_t out_length = dout->Info().length;
  // The destination takes the source's block size while its data fits one
  // block of both sizes (dmu::Dnode::SetBlockSize).
  const bool sizes_agree = out_bs == bs || out_length <= std::min(out_bs, bs);
  if (!alike || !sizes_agree) return finish(copy_bytes(len));

  // The head: the source's partial first block.
  const uint64_t head = std::min(len, first_block * bs - off_in);
  if (head > 0) POOLFS_RETURN_IF_ERROR(copy_bytes(head));
  for (uint64_t b = first_block; b < end_block;) {
    const uint64_t n = std::min(kCloneChunkBlocks, end_block - b);
    Status st = CloneBlocks(c, src, *in, *din, *out, *dout, b, n, off_in, off_out, len, &done);
    if (!st.ok()) return finish(st);
    b += n;
  }
  // The tail: what follows the last whole block.
  if (done < len) return finish(copy_bytes(len - done));
  return done;
}

Status PosixFs::CopyBytes(const Creds& c, PosixFs& src, uint64_t ino_in, uint64_t off_in,
                          Inode& out, uint64_t off_out, uint64_t n, uint64_t* done) {
  std::string buf;
  while (n > 0) {
    const uint64_t piece = std::min(n, kCopyPiece);
    buf.resize(piece);
    POOLFS_ASSIGN_OR_RETURN(size_t got,
                            src.os_->ReadInto(ObjectId(ino_in), off_in + *done, buf));
    std::memset(buf.data() + got, 0, piece - got);  // the object ends before the file's size
    POOLFS_RETURN_IF_ERROR(WriteLocked(c, out, off_out + *done, buf).status());
    *done += piece;
    n -= piece;
  }
  return Status::Ok();
}

Status PosixFs::CloneBlocks(const Creds& c, PosixFs& src, Inode& in, dmu::Dnode& din, Inode& out,
                            dmu::Dnode& dout, uint64_t first, uint64_t n, uint64_t off_in,
                            uint64_t off_out, uint64_t len, uint64_t* done) {
  const uint64_t bs = din.Info().block_size;
  // The destination's block size may have moved since the caller looked (a
  // head write grows a small file's block): copy when it no longer agrees.
  POOLFS_CHECK_EQ(*done, first * bs - off_in);  // where block `first` starts in the range
  const dmu::ObjectInfo o = dout.Info();
  if (o.block_size != bs && o.length > std::min<uint64_t>(o.block_size, bs)) {
    const uint64_t bytes = std::min((first + n) * bs, off_in + len) - first * bs;
    return CopyBytes(c, src, in.ino, off_in, out, off_out, bytes, done);
  }
  // Space for the blocks to copy is reserved before the Tx (as a write
  // does); which they are is known only under it, so a first try that
  // finds more than was reserved gives everything back, reserves, and
  // tries again (then goes on whatever it finds: a few racing writes).
  uint64_t reserved = 0;
  for (int attempt = 0;; attempt++) {
    Result<bool> r = CloneBlocksOnce(c, src, in, din, out, dout, first, n, off_in, off_out, len,
                                     attempt == 0 ? &reserved : nullptr, done);
    if (!r.ok() || *r) return r.status();
    POOLFS_RETURN_IF_ERROR(ReserveSpace(reserved));
  }
}

Result<bool> PosixFs::CloneBlocksOnce(const Creds& c, PosixFs& src, Inode& in, dmu::Dnode& din,
                                      Inode& out, dmu::Dnode& dout, uint64_t first, uint64_t n,
                                      uint64_t off_in, uint64_t off_out, uint64_t len,
                                      uint64_t* reserve, uint64_t* done) {
  const uint64_t bs = din.Info().block_size;
  const uint64_t at = off_out + (first * bs - off_in);
  const uint64_t bytes = std::min((first + n) * bs, off_in + len) - first * bs;
  const ZnodePhys before = out.Snapshot();
  const uint32_t killed = KilledByWrite(c, before);
  dmu::Tx tx(pool_->assigner());
  POOLFS_RETURN_IF_ERROR(tx.Assign(n * zio::kBlockPtrSizeV2 + 1024));
  std::vector<std::optional<zio::BlockPtr>> shared;
  POOLFS_RETURN_IF_ERROR(src.os_->ShareBlocks(tx, din, first, first + n, &shared));
  // A stored block of another size (the source's block size changed after
  // its last sync, when it held one block) is copied too.
  for (auto& bp : shared) {
    if (bp.has_value() && !bp->IsHole() && bp->lsize != bs) {
      din.CancelShared(tx.txg(), {&bp, 1});
      bp.reset();
    }
  }
  const auto to_copy = uint64_t(std::count(shared.begin(), shared.end(), std::nullopt));
  if (reserve != nullptr && to_copy > 0) {
    din.CancelShared(tx.txg(), shared);  // nothing changed yet: the Tx just ends
    *reserve = to_copy * bs;
    return false;
  }
  // Everything that can fail comes before the first change: the bytes of
  // the blocks to copy.
  std::vector<std::string> copies;
  Status st;
  for (size_t i = 0; i < shared.size() && st.ok(); i++) {
    if (shared[i].has_value()) continue;
    std::string block(bs, '\0');
    Result<size_t> got = src.os_->ReadInto(ObjectId(in.ino), (first + i) * bs, block);
    st = got.status();
    copies.push_back(std::move(block));
  }
  if (st.ok() && dout.Info().block_size != bs)
    st = os_->SetBlockSize(tx, ObjectId(out.ino), uint32_t(bs));
  if (!st.ok()) {
    din.CancelShared(tx.txg(), shared);
    return st;  // nothing changed (a failed SetBlockSize changes nothing)
  }
  // From here on nothing fails but on a bug: the pointers and bytes are in
  // hand, the block sizes agree.
  const uint64_t new_size = std::max(before.size, at + bytes);
  const uint64_t length_before = dout.Info().length;
  std::vector<zio::BlockPtr> run;
  auto put_run = [&](uint64_t run_first) -> Status {
    if (run.empty()) return Status::Ok();
    const uint64_t dst_block = (at / bs) + (run_first - first);
    Status s = os_->PutClones(tx, dout, dst_block, run,
                              std::min(new_size, (dst_block + run.size()) * bs));
    if (!s.ok()) {  // it changed nothing: the run's references go back
      const std::vector<std::optional<zio::BlockPtr>> back(run.begin(), run.end());
      din.CancelShared(tx.txg(), back);
    }
    run.clear();
    return s;
  };
  uint64_t run_first = first;
  size_t next_copy = 0;
  for (size_t i = 0; i < shared.size() && st.ok(); i++) {
    if (shared[i].has_value()) {
      if (run.empty()) run_first = first + i;
      run.push_back(*shared[i]);
      shared[i].reset();  // PutClones takes its reference
      continue;
    }
    st = put_run(run_first);
    if (!st.ok()) break;
    // A whole block, so that the write reads nothing: the last one may
    // pass the range's end, but only where both files hold zeros past
    // their ends (the caller's rule), and the length is cut back below.
    st = os_->Write(tx, dout, at + i * bs, copies[next_copy++]);
  }
  if (st.ok()) st = put_run(run_first);
  if (const uint64_t keep = std::max(new_size, length_before);
      st.ok() && dout.Info().length > keep)
    st = os_->Truncate(tx, ObjectId(out.ino), keep);  // into the block just written: no read
  if (!st.ok()) din.CancelShared(tx.txg(), shared);
  if (st.ok()) {
    ZnodePhys z = before;
    z.size = new_size;
    z.mtime = z.ctime = Now();
    z.mode &= ~killed;
    st = SaveZnode(tx, out, dout, z);
  }
  POOLFS_RETURN_IF_ERROR(tx.Finish(st));
  Note(tx, {&out});
  out.NoteUnsynced(tx.txg().value(), bytes, space_synced_txg_.load());
  for (uint64_t d = 0; d < bytes; d += zil::kMaxInlineWrite)
    Log(tx, out.ino, zil::RecordType::kWrite, zil::WriteBody{at + d, {}},
        uint32_t(std::min<uint64_t>(zil::kMaxInlineWrite, bytes - d)));
  if (killed != 0) LogAttrs(tx, out.ino, out.Snapshot(), false);
  *done += bytes;
  return true;
}

}  // namespace poolfs::core::posix
