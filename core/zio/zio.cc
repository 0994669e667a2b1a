#include "zio/zio.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>

#include "util/check.h"
#include "util/checksum.h"
#include "vdev/vdev_layout.h"
#include "zio/gang.h"

namespace poolfs::core::zio {
namespace {

uint64_t RoundUp(uint64_t v, uint64_t granule) { return (v + granule - 1) & ~(granule - 1); }

std::string Hex128(const util::Checksum128& c) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016" PRIx64 "%016" PRIx64, c.hi, c.lo);
  return buf;
}

// A per-thread byte buffer that grows to the largest size asked of it and is
// kept (its contents are not preserved across growth).
// Aligned for direct reads (vdev::FileDevice::kDirectAlign).
class Scratch {
 public:
  uint8_t* Get(size_t n) {
    if (n > cap_) {
      cap_ = (std::max(n, cap_ * 2) + kAlign - 1) / kAlign * kAlign;
      buf_.reset(static_cast<uint8_t*>(std::aligned_alloc(kAlign, cap_)));
      POOLFS_CHECK(buf_ != nullptr);
    }
    return buf_.get();
  }

 private:
  static constexpr size_t kAlign = 4096;
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> buf_;
  size_t cap_ = 0;
};

// Scratch buffer number `slot` of the calling thread: where the write
// pipeline compresses block number `slot` of a WriteMany (or pads its
// last sector), so that every block of a batch keeps its stored bytes until
// the batch is written.
Scratch& WriteScratch(size_t slot) {
  thread_local std::vector<std::unique_ptr<Scratch>> slots;
  while (slots.size() <= slot) slots.push_back(std::make_unique<Scratch>());
  return *slots[slot];
}

// Scratch buffer number `slot` of the calling thread for reads: where block
// number `slot` of a ReadMany run lands when it cannot go straight to its
// destination (compressed, or shorter than its extent).
Scratch& ReadScratch(size_t slot) {
  thread_local std::vector<std::unique_ptr<Scratch>> slots;
  while (slots.size() <= slot) slots.push_back(std::make_unique<Scratch>());
  return *slots[slot];
}

// The zero-padded last sector of a write (apart from WriteScratch, which may
// hold the compressed bytes being written).
Scratch& PadScratch() {
  thread_local Scratch s;
  return s;
}

// `st`, given "PREFIX<bp>" as context when it failed. Nothing is formatted
// when it did not: the read path calls this several times a block.
Status AboutBlock(Status st, const char* prefix, const BlockPtr& bp) {
  if (st.ok()) return st;
  return st.WithContext(prefix + bp.ToString());
}

bool IsAllZero(std::string_view data) {
  return !data.empty() && data[0] == 0 &&
         std::memcmp(data.data(), data.data() + 1, data.size() - 1) == 0;
}

// InvalidArgument unless a block of `lsize` bytes with these props, born in
// txg, would make a valid BlockPtr.
Status CheckWriteArgs(const WriteProps& props, size_t lsize, Txg txg) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("write of " + std::to_string(lsize) + " bytes: " + what);
  };
  if (lsize == 0) return bad("empty block");
  if (props.copies < 1 || props.copies > kMaxCopies)
    return bad(std::to_string(int(props.copies)) + " copies (1 to " + std::to_string(kMaxCopies) +
               ")");
  if (lsize > kMaxBlockSize)
    return bad("above the maximum block size " + std::to_string(kMaxBlockSize));
  if (!util::IsValidCompression(uint8_t(props.compression)))
    return bad("unknown compression " + std::to_string(int(props.compression)));
  BlockPtr proto;
  proto.dva = {0, vdev::kFrontReserved, RoundUp(lsize, kMinSectorSize)};
  proto.lsize = proto.psize = uint32_t(lsize);
  proto.type = props.type;
  proto.level = props.level;
  proto.birth = txg;
  proto.fill = props.fill;
  Status valid = ValidateBlockPtr(proto);
  if (!valid.ok()) return bad(valid.message());
  return Status::Ok();
}

}  // namespace

struct Zio::VdevState {
  vdev::BlockDevice* dev;
  uint32_t ashift;
  uint64_t alloc_end;  // blocks lie in [kFrontReserved, alloc_end)
  std::atomic<uint64_t> checksum_errors{0};
};

// The bytes a write stores: either the caller's data (uncompressed) or the
// compressed bytes in this thread's write scratch, zero-padded there to a
// multiple of the largest sector.
struct Zio::Stored {
  const uint8_t* bytes = nullptr;
  uint32_t psize = 0;
  util::Compression compression = util::Compression::kOff;
  util::Checksum128 checksum;
};

Zio::Zio(std::vector<Vdev> vdevs, space::SpaceManager* space, BpFormat format)
    : space_(space), format_(format), repairs_on_(space != nullptr) {
  POOLFS_CHECK(!vdevs.empty());
  if (space != nullptr) POOLFS_CHECK_EQ(space->vdev_count(), vdevs.size());
  for (size_t i = 0; i < vdevs.size(); i++) {
    const Vdev& v = vdevs[i];
    POOLFS_CHECK(v.dev != nullptr);
    POOLFS_CHECK_GE(v.ashift, vdev::kMinAshift);
    POOLFS_CHECK_LE(v.ashift, vdev::kMaxAshift);
    if (space != nullptr) POOLFS_CHECK_EQ(space->group(uint32_t(i)).config().ashift, v.ashift);
    Result<vdev::VdevLayout> layout = vdev::ComputeVdevLayout(v.dev->size());
    if (!layout.ok()) util::CheckFailed(__FILE__, __LINE__, layout.status().ToString());
    auto state = std::make_unique<VdevState>();
    state->dev = v.dev;
    state->ashift = v.ashift;
    state->alloc_end = layout->alloc_start + layout->alloc_size;
    vdevs_.push_back(std::move(state));
    max_ashift_ = std::max(max_ashift_, v.ashift);
  }
}

Zio::~Zio() = default;

Zio::Stored Zio::Prepare(const WriteProps& props, std::string_view data, size_t slot) {
  Stored s;
  s.bytes = reinterpret_cast<const uint8_t*>(data.data());
  s.psize = uint32_t(data.size());
  if (props.compression != util::Compression::kOff) {
    const size_t granule = size_t{1} << max_ashift_;
    const size_t limit = util::CompressLimit(data.size());
    uint8_t* buf = WriteScratch(slot).Get(RoundUp(limit, granule));
    bool worth_trying = true;
    if (data.size() >= kProbeMinSize) {  // early abort: probe the first kProbeSize bytes
      worth_trying = util::Compress(props.compression, data.data(), kProbeSize, buf,
                                    util::CompressLimit(kProbeSize))
                         .ok();
    }
    // Any failure (NotSupported: it does not compress well enough) means:
    // store the block as it is.
    Result<size_t> n = worth_trying
                           ? util::Compress(props.compression, data.data(), data.size(), buf, limit)
                           : Result<size_t>(Status::NotSupported(""));
    if (n.ok()) {
      s.bytes = buf;
      s.psize = uint32_t(*n);
      s.compression = props.compression;
      std::memset(buf + *n, 0, RoundUp(*n, granule) - *n);
    }
  }
  s.checksum = util::Xxh3_128(s.bytes, s.psize);
  return s;
}

Status Zio::WriteStored(VdevState& v, uint64_t off, uint64_t len, const Stored& s) {
  POOLFS_CHECK_GE(len, s.psize);
  if (s.compression == util::Compression::kOff) return WritePadded(v, off, s.bytes, s.psize, len);
  // Already padded in the scratch.
  POOLFS_RETURN_IF_ERROR(v.dev->Write(off, s.bytes, len));
  bytes_written_.fetch_add(len, std::memory_order_relaxed);
  blocks_written_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status Zio::WritePadded(VdevState& v, uint64_t off, const uint8_t* bytes, uint64_t n,
                        uint64_t len) {
  POOLFS_CHECK_LE(n, len);
  const uint64_t granule = uint64_t{1} << max_ashift_;
  const uint64_t head = std::min<uint64_t>(n & ~(granule - 1), len);
  if (head > 0) POOLFS_RETURN_IF_ERROR(v.dev->Write(off, bytes, head));
  if (len > head) {
    const uint64_t tail = len - head;
    uint8_t* buf = PadScratch().Get(tail);
    std::memcpy(buf, bytes + head, n - head);
    std::memset(buf + (n - head), 0, tail - (n - head));
    POOLFS_RETURN_IF_ERROR(v.dev->Write(off + head, buf, tail));
  }
  bytes_written_.fetch_add(len, std::memory_order_relaxed);
  blocks_written_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status Zio::CheckExtent(const space::Dva& extent) const {
  if (extent.vdev >= vdevs_.size())
    return Status::Corruption("vdev " + std::to_string(extent.vdev) +
                              " does not exist (the pool has " + std::to_string(vdevs_.size()) +
                              ")");
  const VdevState& v = *vdevs_[extent.vdev];
  if (extent.offset < vdev::kFrontReserved || extent.offset > v.alloc_end ||
      extent.size > v.alloc_end - extent.offset)
    return Status::Corruption(
        "lies outside the allocatable area [" + std::to_string(vdev::kFrontReserved) + ", " +
        std::to_string(v.alloc_end) + ") of vdev " + std::to_string(extent.vdev));
  return Status::Ok();
}

BlockPtr Zio::StoredPointer(const space::Dva& dva, uint64_t gang_asize, const WriteProps& props,
                            uint32_t lsize, const Stored& s, Txg txg, const char* what) {
  BlockPtr bp;
  bp.dva = dva;
  bp.lsize = lsize;
  bp.psize = s.psize;
  bp.compression = s.compression;
  bp.type = props.type;
  bp.level = props.level;
  bp.birth = txg;
  bp.fill = props.fill;
  bp.checksum = s.checksum;
  bp.gang_asize = gang_asize;
  Status valid = ValidateBlockPtr(bp);
  if (!valid.ok())
    util::CheckFailed(__FILE__, __LINE__, std::string(what) + " made " + valid.message());
  return bp;
}

Result<BlockPtr> Zio::Write(const WriteProps& props, std::string_view data, Txg txg,
                            size_t allocator) {
  const BlockWrite block{props, data};
  POOLFS_ASSIGN_OR_RETURN(std::vector<BlockPtr> bps,
                          WriteMany(std::span<const BlockWrite>(&block, 1), txg, allocator));
  return bps[0];
}

Result<std::vector<BlockPtr>> Zio::WriteMany(std::span<const BlockWrite> blocks, Txg txg,
                                             size_t allocator) {
  POOLFS_CHECK(space_ != nullptr);
  for (const BlockWrite& b : blocks)
    POOLFS_RETURN_IF_ERROR(CheckWriteArgs(b.props, b.data.size(), txg));
  const uint64_t granule = uint64_t{1} << max_ashift_;
  std::vector<BlockPtr> bps(blocks.size());
  // Frees what the batch allocated so far (holes free nothing; a gang
  // block's pieces are found from its header, as Free does).
  auto undo = [&](Status st) {
    for (const BlockPtr& bp : bps) {
      Status freed = Free(bp, txg);
      if (!freed.ok()) util::CheckFailed(__FILE__, __LINE__, freed.ToString());
    }
    return st;
  };

  // Compress, checksum and allocate every block; gang blocks are written at
  // once, the others wait for their neighbours. A block's stored bytes are
  // a head straight from where they are and, when they end within a
  // sector, that sector zero-padded in the block's scratch.
  struct Pending {
    size_t block;
    int copy;
    vdev::WritePart head, tail;
  };
  std::vector<Pending> pending;
  for (size_t i = 0; i < blocks.size(); i++) {
    const WriteProps& props = blocks[i].props;
    const std::string_view data = blocks[i].data;
    if ((props.type == BlockType::kData || props.type == BlockType::kDnodes) && props.level == 0 &&
        IsAllZero(data)) {
      bps[i] = MakeHole(props.type, props.level, uint32_t(data.size()), txg);
      continue;
    }
    const Stored s = Prepare(props, data, i);
    const uint64_t asize = RoundUp(s.psize, granule);
    Result<space::Dva> allocated =
        force_gang_above_ != 0 && asize > force_gang_above_ && asize > granule
            ? Result<space::Dva>(Status::NoSpace("forced gang block (a testing aid)"))
            : space_->Allocate(allocator, asize, txg);
    if (!allocated.ok()) {
      if (!allocated.status().IsNoSpace() || asize <= granule) return undo(allocated.status());
      Result<BlockPtr> gang =
          WriteGang(props, uint32_t(data.size()), s, txg, allocator, allocated.status());
      if (!gang.ok()) return undo(gang.status());
      bps[i] = *gang;
      continue;
    }
    const space::Dva dva = *allocated;
    POOLFS_CHECK_LT(dva.vdev, vdevs_.size());
    POOLFS_CHECK_EQ(dva.size, asize);
    POOLFS_CHECK_LE(dva.offset + dva.size, vdevs_[dva.vdev]->alloc_end);
    // The further copies: each away from those before it, or left out when
    // there is no room for it.
    std::array<space::Dva, kMaxCopies> copies{dva};
    int ncopies = 1;
    const int want = std::min<int>(props.copies, MaxCopies(format_));
    for (int c = 1; c < want; c++) {
      Result<space::Dva> more = space_->AllocateCopy(
          allocator, c, asize, txg, std::span<const space::Dva>(copies.data(), ncopies));
      if (!more.ok()) {
        if (!more.status().IsNoSpace()) {
          for (int k = 0; k < ncopies; k++) {
            Status freed = space_->Free(copies[k], txg);
            if (!freed.ok()) util::CheckFailed(__FILE__, __LINE__, freed.ToString());
          }
          return undo(more.status());
        }
        copy_shortfalls_.fetch_add(uint64_t(want - c), std::memory_order_relaxed);
        break;
      }
      POOLFS_CHECK_LT(more->vdev, vdevs_.size());
      POOLFS_CHECK_LE(more->offset + more->size, vdevs_[more->vdev]->alloc_end);
      copies[ncopies++] = *more;
    }
    bps[i] = StoredPointer(dva, 0, props, uint32_t(data.size()), s, txg, "write");
    for (int c = 1; c < ncopies; c++) bps[i].ditto[c - 1] = copies[c];
    POOLFS_CHECK(ValidateBlockPtr(bps[i]).ok());

    Pending p{i, 0, {s.bytes, s.psize & ~(granule - 1)}, {nullptr, 0}};
    if (p.head.len < asize) {
      // Compressed bytes were padded where they are; the caller's are not.
      if (s.compression != util::Compression::kOff) {
        p.head.len = asize;
      } else {
        uint8_t* tail = WriteScratch(i).Get(granule);
        const size_t n = s.psize - p.head.len;
        std::memcpy(tail, s.bytes + p.head.len, n);
        std::memset(tail + n, 0, granule - n);
        p.tail = {tail, granule};
      }
    }
    for (int c = 0; c < ncopies; c++) {
      p.copy = c;
      pending.push_back(p);
    }
  }

  // Write them (every copy) in runs of adjacent extents.
  auto extent = [&](const Pending& p) -> const space::Dva& { return bps[p.block].copy(p.copy); };
  std::sort(pending.begin(), pending.end(), [&](const Pending& a, const Pending& b) {
    return std::pair(extent(a).vdev, extent(a).offset) <
           std::pair(extent(b).vdev, extent(b).offset);
  });
  std::vector<vdev::WritePart> parts;
  for (size_t first = 0, end; first < pending.size(); first = end) {
    const space::Dva& start = extent(pending[first]);
    uint64_t len = start.size;
    for (end = first + 1; end < pending.size(); end++) {
      const space::Dva& next = extent(pending[end]);
      if (next.vdev != start.vdev || next.offset != start.offset + len ||
          len + next.size > kAggregateBytes)
        break;
      len += next.size;
    }
    parts.clear();
    for (size_t k = first; k < end; k++) {
      if (pending[k].head.len > 0) parts.push_back(pending[k].head);
      if (pending[k].tail.len > 0) parts.push_back(pending[k].tail);
    }
    Status st = vdevs_[start.vdev]->dev->WriteParts(start.offset, parts);
    if (!st.ok()) {
      std::string what = "write of block " + bps[pending[first].block].ToString();
      if (end - first > 1)
        what += " and the " + std::to_string(end - first - 1) + " blocks after it";
      return undo(st.WithContext(what));
    }
    bytes_written_.fetch_add(len, std::memory_order_relaxed);
    blocks_written_.fetch_add(end - first, std::memory_order_relaxed);
  }
  return bps;
}

Result<BlockPtr> Zio::WriteGang(const WriteProps& props, uint32_t lsize, const Stored& s, Txg txg,
                                size_t allocator, const Status& why) {
  const uint64_t granule = uint64_t{1} << max_ashift_;
  std::vector<space::Dva> kids;
  auto undo = [&](const std::vector<space::Dva>& extents) {
    for (const space::Dva& d : extents) {
      Status freed = space_->Free(d, txg);
      if (!freed.ok()) util::CheckFailed(__FILE__, __LINE__, freed.ToString());
    }
  };
  auto no_space = [&](const std::string& what) {
    undo(kids);
    return Status::NoSpace(why.message() + "; nor as a gang block: " + what);
  };
  // Children: half the block first, halving whenever one does not fit.
  uint64_t at = 0, piece = RoundUp(RoundUp(s.psize, granule) / 2, granule);
  while (at < s.psize) {
    const uint64_t want = std::min(piece, RoundUp(s.psize - at, granule));
    if (kids.size() == kMaxGangChildren)
      return no_space("it would need more than " + std::to_string(kMaxGangChildren) + " pieces");
    Result<space::Dva> d = space_->Allocate(allocator, want, txg);
    if (!d.ok()) {
      if (!d.status().IsNoSpace()) {
        undo(kids);
        return d.status();
      }
      if (want <= granule)
        return no_space("no free sector left for its last " + std::to_string(s.psize - at) +
                        " bytes");
      piece = RoundUp(want / 2, granule);
      continue;
    }
    kids.push_back(*d);
    at += d->size;
  }
  const uint64_t header_size = RoundUp(GangHeaderBytes(kids.size()), granule);
  Result<space::Dva> header = space_->Allocate(allocator, header_size, txg);
  if (!header.ok()) {
    if (!header.status().IsNoSpace()) {
      undo(kids);
      return header.status();
    }
    return no_space("no room for its header of " + std::to_string(header_size) + " bytes");
  }

  uint64_t gang_asize = 0;
  for (const space::Dva& k : kids) gang_asize += k.size;
  const BlockPtr bp = StoredPointer(*header, gang_asize, props, lsize, s, txg, "gang write");

  Status st;
  at = 0;
  for (const space::Dva& k : kids) {
    const uint64_t n = std::min<uint64_t>(k.size, s.psize - at);
    st = WritePadded(*vdevs_[k.vdev], k.offset, s.bytes + at, n, k.size);
    if (!st.ok()) break;
    at += n;
  }
  if (st.ok()) {
    const std::string bytes = EncodeGangHeader(kids, header_size);
    st = WritePadded(*vdevs_[bp.dva.vdev], bp.dva.offset,
                     reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), bytes.size());
  }
  if (!st.ok()) {
    kids.push_back(bp.dva);
    undo(kids);
    return st.WithContext("write of gang block " + bp.ToString());
  }
  gang_writes_.fetch_add(1, std::memory_order_relaxed);
  return bp;
}

Result<BlockPtr> Zio::RewriteGang(const BlockPtr& old, const WriteProps& props, uint32_t lsize,
                                  const Stored& s, Txg txg) {
  const uint64_t granule = uint64_t{1} << max_ashift_;
  if (RoundUp(s.psize, granule) != old.gang_asize)
    return Status::NoSpace("rewrite of gang block " + old.ToString() + ": " +
                           std::to_string(s.psize) + " stored bytes do not fill the same pieces");
  POOLFS_ASSIGN_OR_RETURN(std::vector<space::Dva> kids, GangChildren(old));
  const BlockPtr bp = StoredPointer(old.dva, old.gang_asize, props, lsize, s, txg, "gang rewrite");
  // The pieces are the same, so the header (which lists only them) is too.
  uint64_t at = 0;
  for (const space::Dva& k : kids) {
    const uint64_t n = std::min<uint64_t>(k.size, s.psize - at);
    POOLFS_RETURN_IF_ERROR(
        AboutBlock(WritePadded(*vdevs_[k.vdev], k.offset, s.bytes + at, n, k.size),
                   "rewrite of gang block ", bp));
    at += n;
  }
  return bp;
}

Result<std::vector<space::Dva>> Zio::GangChildren(const BlockPtr& bp) {
  POOLFS_RETURN_IF_ERROR(AboutBlock(ValidateBlockPtr(bp), "block ", bp));
  if (!bp.IsGang()) return Status::InvalidArgument("block " + bp.ToString() + " is not a gang");
  POOLFS_RETURN_IF_ERROR(AboutBlock(CheckExtent(bp.dva), "gang header of block ", bp));
  std::string header(bp.dva.size, '\0');
  POOLFS_RETURN_IF_ERROR(
      AboutBlock(vdevs_[bp.dva.vdev]->dev->Read(bp.dva.offset, header.data(), header.size()),
                 "read of the gang header of block ", bp));
  bytes_read_.fetch_add(header.size(), std::memory_order_relaxed);
  blocks_read_.fetch_add(1, std::memory_order_relaxed);
  Result<std::vector<space::Dva>> kids = DecodeGangHeader(header, "");
  if (!kids.ok()) return VerifyFailed(bp, 0, kids.status().message());
  uint64_t sum = 0;
  for (size_t i = 0; i < kids->size(); i++) {
    Status in = CheckExtent((*kids)[i]);
    if (!in.ok())
      return VerifyFailed(bp, 0, "gang header's child " + std::to_string(i) + ": " + in.message());
    sum += (*kids)[i].size;
  }
  if (sum != bp.gang_asize)
    return VerifyFailed(bp, 0,
                        "gang header's children hold " + std::to_string(sum) +
                            " bytes; the pointer says " + std::to_string(bp.gang_asize));
  if (sum - kids->back().size >= bp.psize)
    return VerifyFailed(
        bp, 0,
        "gang header's last child holds none of the " + std::to_string(bp.psize) + " stored bytes");
  return kids;
}

Result<BlockPtr> Zio::Rewrite(const BlockPtr& old, const WriteProps& props, std::string_view data,
                              Txg txg) {
  POOLFS_CHECK(space_ != nullptr);
  POOLFS_CHECK(!old.IsHole());
  POOLFS_CHECK_EQ(old.birth, txg);
  POOLFS_CHECK_LT(old.dva.vdev, vdevs_.size());
  POOLFS_RETURN_IF_ERROR(CheckWriteArgs(props, data.size(), txg));
  const Stored s = Prepare(props, data, 0);
  if (old.IsGang()) return RewriteGang(old, props, uint32_t(data.size()), s, txg);
  if (s.psize > old.dva.size) {
    return Status::NoSpace("rewrite of block " + old.ToString() + ": " + std::to_string(s.psize) +
                           " stored bytes do not fit");
  }
  const uint64_t len = std::min(RoundUp(s.psize, uint64_t{1} << max_ashift_), old.dva.size);

  BlockPtr bp = StoredPointer(old.dva, 0, props, uint32_t(data.size()), s, txg, "rewrite");
  bp.ditto = old.ditto;
  for (int c = 0; c < bp.copies(); c++) {
    const space::Dva& d = bp.copy(c);
    POOLFS_RETURN_IF_ERROR(
        AboutBlock(WriteStored(*vdevs_[d.vdev], d.offset, len, s), "rewrite of block ", bp));
  }
  return bp;
}

Status Zio::VerifyFailed(const BlockPtr& bp, int copy, const std::string& what) {
  vdevs_[bp.copy(copy).vdev]->checksum_errors.fetch_add(1, std::memory_order_relaxed);
  return Status::Corruption("block " + bp.ToString() + (copy > 0 ? ", copy " : "") +
                            (copy > 0 ? std::to_string(copy) : "") + ": " + what);
}

Result<std::string> Zio::Read(const BlockPtr& bp) {
  POOLFS_RETURN_IF_ERROR(AboutBlock(ValidateBlockPtr(bp), "block ", bp));
  std::string out(bp.lsize, '\0');
  if (bp.IsHole()) return out;
  POOLFS_RETURN_IF_ERROR(ReadValid(bp, reinterpret_cast<uint8_t*>(out.data())));
  return out;
}

Result<std::string> Zio::ReadStored(const BlockPtr& bp) {
  POOLFS_RETURN_IF_ERROR(AboutBlock(ValidateBlockPtr(bp), "block ", bp));
  if (bp.IsHole()) return Status::InvalidArgument("block " + bp.ToString() + " is a hole");
  std::string logical(bp.lsize, '\0');
  POOLFS_RETURN_IF_ERROR(ReadValid(bp, reinterpret_cast<uint8_t*>(logical.data())));
  if (bp.compression == util::Compression::kOff) return logical;
  // ReadValid verified the stored bytes where it read them, this thread's
  // read scratch 0, before it decoded them.
  return std::string(reinterpret_cast<const char*>(ReadScratch(0).Get(bp.psize)), bp.psize);
}

Result<std::string> Zio::ReadEncoded(std::string_view encoded, std::string_view where) {
  if (encoded.size() != BlockPtrSize(format_))
    return Status::Corruption(std::string(where) + ": a block pointer of " +
                              std::to_string(encoded.size()) + " bytes, this pool's are " +
                              std::to_string(BlockPtrSize(format_)));
  POOLFS_ASSIGN_OR_RETURN(
      BlockPtr bp,
      DecodeBlockPtr(reinterpret_cast<const uint8_t*>(encoded.data()), where, format_));
  Result<std::string> block = Read(bp);
  if (!block.ok()) return block.status().WithContext(where);
  return block;
}

Status Zio::ReadInto(const BlockPtr& bp, uint8_t* dst) {
  POOLFS_RETURN_IF_ERROR(AboutBlock(ValidateBlockPtr(bp), "block ", bp));
  if (bp.IsHole()) {
    std::memset(dst, 0, bp.lsize);
    return Status::Ok();
  }
  return ReadValid(bp, dst);
}

Status Zio::ReadMany(std::span<const BlockRead> blocks, ReadUse use) {
  // Holes and gang blocks one by one; the others in order of place.
  std::vector<size_t> order;
  order.reserve(blocks.size());
  for (size_t i = 0; i < blocks.size(); i++) {
    const BlockPtr& bp = blocks[i].bp;
    POOLFS_RETURN_IF_ERROR(AboutBlock(ValidateBlockPtr(bp), "block ", bp));
    if (bp.IsHole()) {
      std::memset(blocks[i].dst, 0, bp.lsize);
    } else if (bp.IsGang()) {
      if (use == ReadUse::kSpeculative)
        return Status::InvalidArgument("block " + bp.ToString() + " is a gang: not read ahead");
      POOLFS_RETURN_IF_ERROR(ReadValid(bp, blocks[i].dst));
    } else if (!CheckExtent(bp.dva).ok()) {
      POOLFS_RETURN_IF_ERROR(ReadValid(bp, blocks[i].dst, use));  // its other copies
    } else {
      order.push_back(i);
    }
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const space::Dva &x = blocks[a].bp.dva, &y = blocks[b].bp.dva;
    return std::tie(x.vdev, x.offset) < std::tie(y.vdev, y.offset);
  });
  std::vector<vdev::ReadPart> parts;
  for (size_t run = 0, end = 0; run < order.size(); run = end) {
    // A run: blocks each of which starts where the one before ends, up to
    // kAggregateBytes in all (copy 0 of each; a block whose copy 0 fails
    // is read again from its other copies).
    const space::Dva& head = blocks[order[run]].bp.dva;
    uint64_t bytes = head.size;
    for (end = run + 1; end < order.size(); end++) {
      const space::Dva &prev = blocks[order[end - 1]].bp.dva, &next = blocks[order[end]].bp.dva;
      if (next.vdev != head.vdev || next.offset != prev.offset + prev.size ||
          bytes + next.size > kAggregateBytes)
        break;
      bytes += next.size;
    }
    if (end - run == 1) {
      POOLFS_RETURN_IF_ERROR(ReadValid(blocks[order[run]].bp, blocks[order[run]].dst, use));
      continue;
    }
    // Each block's whole extent, so that the parts tile the run: into the
    // block's destination when its stored bytes are the block and fill the
    // extent, else into a scratch buffer.
    parts.clear();
    for (size_t k = run; k < end; k++) {
      const BlockRead& b = blocks[order[k]];
      const bool in_place =
          b.bp.compression == util::Compression::kOff && b.bp.psize == b.bp.dva.size;
      parts.push_back({in_place ? b.dst : ReadScratch(k - run).Get(b.bp.dva.size), b.bp.dva.size});
    }
    Status read = vdevs_[head.vdev]->dev->ReadParts(head.offset, parts);
    if (!read.ok()) {
      // One by one, each from whichever copy reads.
      Status first;
      for (size_t k = run; k < end; k++) {
        const BlockRead& b = blocks[order[k]];
        Status st = b.bp.copies() > 1 ? ReadValid(b.bp, b.dst, use) : read;
        if (!st.ok() && first.ok()) first = st;
      }
      if (first.ok()) continue;
      return first.WithContext("read of " + std::to_string(end - run) + " adjacent blocks from " +
                               blocks[order[run]].bp.ToString());
    }
    for (size_t k = run; k < end; k++) {
      const BlockRead& b = blocks[order[k]];
      Status st = Verify(b.bp, static_cast<const uint8_t*>(parts[k - run].data), b.dst, use);
      // Copy 0 failed: the others, in turn (copy 0 is repaired from the
      // first that verifies).
      if (!st.ok() && b.bp.copies() > 1) st = ReadValid(b.bp, b.dst, use, 1);
      POOLFS_RETURN_IF_ERROR(st);
    }
  }
  return Status::Ok();
}

Status Zio::ReadCopy(const BlockPtr& bp, int copy, uint8_t* stored, uint8_t* dst, ReadUse use) {
  const space::Dva& d = bp.copy(copy);
  // A pointer outside the pool is damage above the block, not a bad read.
  POOLFS_RETURN_IF_ERROR(AboutBlock(CheckExtent(d), "block ", bp));
  POOLFS_RETURN_IF_ERROR(AboutBlock(vdevs_[d.vdev]->dev->Read(d.offset, stored, bp.psize),
                                    copy == 0 ? "read of block " : "read of a copy of block ", bp));
  return Verify(bp, stored, dst, use, copy);
}

Status Zio::ReadValid(const BlockPtr& bp, uint8_t* dst, ReadUse use, int first_copy) {
  // An uncompressed block's stored bytes are the block (psize == lsize, the
  // pointer was validated); compressed ones go to the scratch buffer
  // (aligned for direct reads too).
  const bool in_place = bp.compression == util::Compression::kOff;
  uint8_t* stored = in_place ? dst : ReadScratch(0).Get(bp.psize);
  if (bp.IsGang()) {
    POOLFS_ASSIGN_OR_RETURN(std::vector<space::Dva> kids, GangChildren(bp));
    uint64_t at = 0;
    for (size_t i = 0; i < kids.size(); i++) {
      const uint64_t n = std::min<uint64_t>(kids[i].size, bp.psize - at);
      Status read = vdevs_[kids[i].vdev]->dev->Read(kids[i].offset, stored + at, n);
      if (!read.ok())
        return read.WithContext("read of child " + std::to_string(i) + " of block " +
                                bp.ToString());
      at += n;
    }
    return Verify(bp, stored, dst, use);
  }
  Status first;
  for (int c = first_copy; c < bp.copies(); c++) {
    Status st = ReadCopy(bp, c, stored, dst, use);
    if (!st.ok()) {
      if (first.ok()) first = st;
      continue;
    }
    // Copies 0..c-1 failed (or were found bad before): put the good bytes
    // back there. A repair that fails leaves the copy as it was.
    if (c > 0 && repairs_on_ && use == ReadUse::kDemand)
      for (int bad = 0; bad < c; bad++) (void)WriteCopy(bp, bad, stored);
    return Status::Ok();
  }
  return first;
}

Status Zio::WriteCopy(const BlockPtr& bp, int copy, const uint8_t* stored) {
  const space::Dva& d = bp.copy(copy);
  POOLFS_RETURN_IF_ERROR(CheckExtent(d));
  POOLFS_RETURN_IF_ERROR(WritePadded(*vdevs_[d.vdev], d.offset, stored, bp.psize, d.size));
  repairs_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status Zio::VerifyCopy(const BlockPtr& bp, int copy) {
  POOLFS_CHECK(!bp.IsHole());
  POOLFS_CHECK(copy >= 0 && copy < bp.copies());
  POOLFS_RETURN_IF_ERROR(AboutBlock(ValidateBlockPtr(bp), "block ", bp));
  std::string out(bp.lsize, '\0');
  auto* dst = reinterpret_cast<uint8_t*>(out.data());
  if (bp.IsGang()) return ReadValid(bp, dst);
  const bool in_place = bp.compression == util::Compression::kOff;
  return ReadCopy(bp, copy, in_place ? dst : ReadScratch(0).Get(bp.psize), dst, ReadUse::kDemand);
}

Result<std::string> Zio::ReadEveryCopy(const BlockPtr& bp, std::vector<CopyError>* bad) {
  POOLFS_RETURN_IF_ERROR(AboutBlock(ValidateBlockPtr(bp), "block ", bp));
  std::string out(bp.lsize, '\0');
  if (bp.IsHole()) return out;
  if (bp.IsGang()) {
    Status st = ReadValid(bp, reinterpret_cast<uint8_t*>(out.data()));
    if (!st.ok()) {
      bad->push_back({0, st});
      return st;
    }
    return out;
  }
  std::string other(bp.lsize, '\0');
  Status first;
  bool have = false;
  for (int c = 0; c < bp.copies(); c++) {
    auto* dst = reinterpret_cast<uint8_t*>(have ? other.data() : out.data());
    const bool in_place = bp.compression == util::Compression::kOff;
    Status st =
        ReadCopy(bp, c, in_place ? dst : ReadScratch(0).Get(bp.psize), dst, ReadUse::kDemand);
    if (st.ok()) {
      have = true;
      continue;
    }
    bad->push_back({c, st});
    if (first.ok()) first = st;
  }
  if (!have) return first;
  return out;
}

Status Zio::RepairCopy(const BlockPtr& bp, int copy) {
  POOLFS_CHECK(repairs_on_);
  POOLFS_CHECK(copy >= 0 && copy < bp.copies());
  POOLFS_RETURN_IF_ERROR(AboutBlock(ValidateBlockPtr(bp), "block ", bp));
  std::string out(bp.lsize, '\0');
  auto* dst = reinterpret_cast<uint8_t*>(out.data());
  const bool in_place = bp.compression == util::Compression::kOff;
  uint8_t* stored = in_place ? dst : ReadScratch(0).Get(bp.psize);
  Status first = Status::Corruption("block " + bp.ToString() + " has no other copy");
  for (int c = 0; c < bp.copies(); c++) {
    if (c == copy) continue;
    Status st = ReadCopy(bp, c, stored, dst, ReadUse::kDemand);
    if (st.ok()) return AboutBlock(WriteCopy(bp, copy, stored), "repair of block ", bp);
    first = st;
  }
  return first;
}

Status Zio::Verify(const BlockPtr& bp, const uint8_t* stored, uint8_t* dst, ReadUse use, int copy) {
  bytes_read_.fetch_add(bp.psize, std::memory_order_relaxed);
  blocks_read_.fetch_add(1, std::memory_order_relaxed);
  auto failed = [&](const std::string& what) {
    if (use == ReadUse::kDemand) return VerifyFailed(bp, copy, what);
    return Status::Corruption("block " + bp.ToString() + " read ahead: " + what);
  };
  const util::Checksum128 got = util::Xxh3_128(stored, bp.psize);
  if (got != bp.checksum) {
    return failed("checksum mismatch (expected " + Hex128(bp.checksum) + ", computed " +
                  Hex128(got) + ")");
  }
  if (bp.compression == util::Compression::kOff) {
    if (stored != dst) std::memcpy(dst, stored, bp.psize);
    return Status::Ok();
  }
  Status st = util::Decompress(bp.compression, stored, bp.psize, dst, bp.lsize);
  if (!st.ok()) return failed("checksum matches but " + st.message());
  return Status::Ok();
}

Status Zio::Free(const BlockPtr& bp, Txg txg) {
  POOLFS_CHECK(space_ != nullptr);
  if (bp.IsHole()) return Status::Ok();
  POOLFS_RETURN_IF_ERROR(AboutBlock(ValidateBlockPtr(bp), "free of block ", bp));
  if (deferring_.load(std::memory_order_acquire)) {
    util::MutexLock l(&defer_mu_);
    if (defer_sink_ != nullptr && txg == defer_txg_) {
      defer_sink_->push_back(bp);
      return Status::Ok();
    }
  }
  if (ref_table_ != nullptr) {
    switch (ref_table_->Drop(bp, txg)) {
      case BlockRefTable::Release::kFree: break;
      case BlockRefTable::Release::kKept: return Status::Ok();
      case BlockRefTable::Release::kDefer: {
        util::MutexLock l(&defer_mu_);
        held_frees_.push_back(bp);
        return Status::Ok();
      }
    }
  }
  if (bp.IsGang()) {
    // A header that no longer verifies: its children leak (poolfs check
    // reports them) rather than this sync failing.
    Result<std::vector<space::Dva>> kids = GangChildren(bp);
    if (kids.ok()) {
      for (const space::Dva& k : *kids)
        POOLFS_RETURN_IF_ERROR(
            AboutBlock(space_->Free(k, txg), "free of a child of gang block ", bp));
    } else {
      gang_leaks_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  for (int c = 1; c < bp.copies(); c++)
    POOLFS_RETURN_IF_ERROR(
        space_->Free(bp.copy(c), txg).WithContext("free of a copy of block " + bp.ToString()));
  return space_->Free(bp.dva, txg).WithContext("free of block " + bp.ToString());
}

void Zio::DeferFrees(Txg txg, std::vector<BlockPtr>* sink) {
  util::MutexLock l(&defer_mu_);
  defer_txg_ = txg;
  defer_sink_ = sink;
  deferring_.store(sink != nullptr, std::memory_order_release);
}

std::vector<BlockPtr> Zio::TakeHeldFrees() {
  util::MutexLock l(&defer_mu_);
  return std::exchange(held_frees_, {});
}

Status Zio::FlushAll() {
  Status first;
  for (const auto& v : vdevs_) {
    Status st = v->dev->Flush();
    if (!st.ok() && first.ok()) first = st.WithContext("flush of " + v->dev->name());
  }
  return first;
}

uint64_t Zio::checksum_errors(uint32_t vdev) const {
  POOLFS_CHECK_LT(vdev, vdevs_.size());
  return vdevs_[vdev]->checksum_errors.load(std::memory_order_relaxed);
}

vdev::BlockDevice& Zio::device(uint32_t vdev) {
  POOLFS_CHECK_LT(vdev, vdevs_.size());
  return *vdevs_[vdev]->dev;
}

uint32_t Zio::ashift(uint32_t vdev) const {
  POOLFS_CHECK_LT(vdev, vdevs_.size());
  return vdevs_[vdev]->ashift;
}

}  // namespace poolfs::core::zio
