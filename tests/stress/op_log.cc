#include "stress/op_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "stress/stress_util.h"
#include "util/checksum.h"
#include "util/endian.h"

namespace poolfs::stress {

namespace {

constexpr uint32_t kMagic = 0x474c504f;  // "OPLG"

void Encode(const OpRecord& r, uint8_t* p) {
  std::memset(p, 0, OpLog::kRecordSize);
  util::PutLE32(p, kMagic);
  p[4] = uint8_t(r.kind);
  p[5] = r.aux;
  util::PutLE16(p + 6, r.dataset);
  util::PutLE64(p + 8, r.seq);
  util::PutLE64(p + 16, r.txg);
  util::PutLE64(p + 24, r.object);
  util::PutLE64(p + 32, r.a);
  util::PutLE64(p + 40, r.b);
  util::PutLE64(p + 48, r.c);
  util::PutLE64(p + 56, util::Xxh3_64(p, 56));
}

bool Decode(const uint8_t* p, OpRecord* r) {
  if (util::GetLE32(p) != kMagic || util::GetLE64(p + 56) != util::Xxh3_64(p, 56)) return false;
  if (p[4] < uint8_t(OpKind::kCreate) || p[4] > uint8_t(kLastOpKind)) return false;
  r->kind = OpKind(p[4]);
  r->aux = p[5];
  r->dataset = util::GetLE16(p + 6);
  r->seq = util::GetLE64(p + 8);
  r->txg = util::GetLE64(p + 16);
  r->object = util::GetLE64(p + 24);
  r->a = util::GetLE64(p + 32);
  r->b = util::GetLE64(p + 40);
  r->c = util::GetLE64(p + 48);
  return true;
}

}  // namespace

void PackCloneRange(const CloneRange& c, OpRecord* r) {
  r->a = c.src_object | uint64_t(c.src_dataset) << 48;
  r->b = c.src_off | uint64_t(c.shared) << 48;
  r->c = c.dst_off | uint64_t(c.holes) << 48;
  r->aux = uint8_t(c.blocks);
}

CloneRange UnpackCloneRange(const OpRecord& r) {
  constexpr uint64_t kLow = kMaxCloneOffset - 1;
  CloneRange c;
  c.src_object = r.a & kLow;
  c.src_dataset = uint16_t(r.a >> 48);
  c.src_off = r.b & kLow;
  c.shared = uint32_t(r.b >> 48);
  c.dst_off = r.c & kLow;
  c.holes = uint32_t(r.c >> 48);
  c.blocks = r.aux;
  return c;
}

std::string DatasetName(uint16_t index) { return "ds" + std::to_string(index); }

std::string DatasetComponent(uint16_t index, uint32_t generation) {
  return DatasetName(index) + (generation ? "r" + std::to_string(generation) : std::string());
}

std::string SnapshotName(uint64_t number, uint32_t generation) {
  return "s" + std::to_string(number) + (generation ? "r" + std::to_string(generation) : "");
}

namespace {

// The decimal number `s` spells (no leading zero, at most 19 digits); 0
// for anything else.
uint64_t Decimal(std::string_view s) {
  if (s.empty() || s.size() > 19 || s[0] == '0') return 0;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + uint64_t(c - '0');
  }
  return n;
}

}  // namespace

uint64_t SnapshotNumber(std::string_view name, uint32_t* generation) {
  if (name.size() < 2 || name[0] != 's') return 0;
  name.remove_prefix(1);
  const size_t r = name.find('r');
  uint64_t g = 0;
  if (r != std::string_view::npos) {
    g = Decimal(name.substr(r + 1));
    if (g == 0 || g > UINT32_MAX) return 0;
    name = name.substr(0, r);
  }
  if (generation) *generation = uint32_t(g);
  return Decimal(name);
}

std::string DescribeRecord(const OpRecord& r) {
  std::string s = "seq " + std::to_string(r.seq) + " txg " + std::to_string(r.txg) + " ";
  const std::string obj = (r.dataset ? " ds " + std::to_string(r.dataset) : std::string()) +
                          " obj " + std::to_string(r.object);
  switch (r.kind) {
    case OpKind::kCreate:
      return s + "create" + obj + " bs " + std::to_string(r.a) + " comp " + std::to_string(r.aux);
    case OpKind::kWrite:
      return s + "write" + obj + " [" + std::to_string(r.a) + ", +" + std::to_string(r.b) +
             ") fill " + std::to_string(r.aux);
    case OpKind::kTruncate: return s + "truncate" + obj + " to " + std::to_string(r.a);
    case OpKind::kPunch:
      return s + "punch" + obj + " [" + std::to_string(r.a) + ", +" + std::to_string(r.b) + ")";
    case OpKind::kFree: return s + "free" + obj;
    case OpKind::kBonus:
      return s + "bonus" + obj + " type " + std::to_string(r.aux) + " len " + std::to_string(r.a);
    case OpKind::kSynced: return s + "synced";
    case OpKind::kBlockSize: return s + "block size" + obj + " to " + std::to_string(r.a);
    case OpKind::kCloneBlocks: {
      const CloneRange c = UnpackCloneRange(r);
      return s + "clone" + obj + " at " + std::to_string(c.dst_off) + ": " +
             std::to_string(c.blocks) + " blocks of ds " + std::to_string(c.src_dataset) + " obj " +
             std::to_string(c.src_object) + " at " + std::to_string(c.src_off) + " (" +
             std::to_string(c.shared) + " shared, " + std::to_string(c.holes) + " holes, " +
             std::to_string(c.blocks - std::min(c.blocks, c.shared + c.holes)) + " copied)";
    }
    case OpKind::kSnapshot:
    case OpKind::kDestroySnapshot: {
      const bool take = r.kind == OpKind::kSnapshot;
      s += std::string(r.aux == 2   ? "read back"
                       : r.aux == 1 ? (take ? "took" : "destroyed")
                                    : (take ? "taking" : "destroying")) +
           " snapshot " + SnapshotName(r.object) + " of dataset " + std::to_string(r.dataset);
      if (r.aux == 0)
        s += " (open txg " + std::to_string(r.a) + ", last synced " + std::to_string(r.b - 1) + ")";
      if (r.aux == 2) s += ": " + std::to_string(r.b) + " objects, digest " + std::to_string(r.a);
      return s;
    }
    case OpKind::kRenameSnapshot:
      s += std::string(r.aux ? "renamed" : "renaming") + " snapshot " +
           SnapshotName(r.object, uint32_t(r.c ? r.c - 1 : 0)) + " of dataset " +
           std::to_string(r.dataset) + " to " + SnapshotName(r.object, uint32_t(r.c));
      if (r.aux == 0)
        s += " (open txg " + std::to_string(r.a) + ", last synced " + std::to_string(r.b - 1) + ")";
      return s;
    case OpKind::kListSnapshots: return s + "listed the " + std::to_string(r.object) + " snapshots";
    case OpKind::kRollback:
      s += std::string(r.aux ? "rolled back" : "rolling back") + " dataset " +
           std::to_string(r.dataset) + " to snapshot " + SnapshotName(r.object);
      if (r.aux == 0)
        s += " (open txg " + std::to_string(r.a) + ", last synced " + std::to_string(r.b - 1) + ")";
      return s;
    case OpKind::kCreateDataset:
    case OpKind::kCloneDataset:
    case OpKind::kRenameDataset:
    case OpKind::kDestroyDataset: {
      const bool create = IsDatasetCreation(r.kind);
      const bool rename = r.kind == OpKind::kRenameDataset;
      s += std::string(r.aux ? (create   ? "created"
                                : rename ? "renamed"
                                         : "destroyed")
                             : (create   ? "creating"
                                : rename ? "renaming"
                                         : "destroying")) +
           " dataset " + std::to_string(r.dataset);
      if (rename)
        s += " to " + DatasetComponent(r.dataset, RenameGeneration(r.object)) + " below dataset " +
             std::to_string(RenameParent(r.object));
      else if (create)
        s += " (" + DatasetName(r.dataset) + ")" +
             (r.kind == OpKind::kCloneDataset ? " as a clone of snapshot " + SnapshotName(r.object)
                                              : std::string());
      else
        s += " and its descendants";
      if (r.aux == 0)
        s += " (open txg " + std::to_string(r.a) + ", last synced " + std::to_string(r.b - 1) + ")";
      return s;
    }
  }
  return s + "?";
}

int DumpLog(const std::string& path, uint64_t object) {
  bool torn = false;
  auto records = OpLog::Read(path, &torn);
  if (!records.ok()) {
    std::fprintf(stderr, "%s\n", records.status().ToString().c_str());
    return 1;
  }
  std::stable_sort(records->begin(), records->end(), [](const OpRecord& a, const OpRecord& b) {
    return a.txg != b.txg ? a.txg < b.txg : a.seq < b.seq;
  });
  for (const OpRecord& r : *records)
    if (object == 0 || r.object == object || !IsObjectOp(r.kind) ||
        (r.kind == OpKind::kCloneBlocks && UnpackCloneRange(r).src_object == object))
      std::printf("%s\n", DescribeRecord(r).c_str());
  if (torn) std::printf("(torn last record dropped)\n");
  return 0;
}

Result<std::unique_ptr<OpLog>> OpLog::Open(const std::string& path, bool truncate) {
  POOLFS_ASSIGN_OR_RETURN(int fd, OpenRecordLog(path, truncate));
  return std::unique_ptr<OpLog>(new OpLog(fd));
}

OpLog::~OpLog() { ::close(fd_); }

Status OpLog::Append(const OpRecord& r) {
  uint8_t buf[kRecordSize];
  Encode(r, buf);
  return AppendRecord(fd_, buf, sizeof buf, "op log");
}

Result<std::vector<OpRecord>> OpLog::Read(const std::string& path, bool* torn) {
  *torn = false;
  POOLFS_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  std::vector<OpRecord> out;
  const size_t whole = bytes.size() / kRecordSize;
  for (size_t i = 0; i < whole; i++) {
    OpRecord r;
    if (!Decode(reinterpret_cast<const uint8_t*>(bytes.data()) + i * kRecordSize, &r)) {
      if (i + 1 == whole && bytes.size() % kRecordSize == 0) {
        *torn = true;
        break;
      }
      return Status::Corruption(path + ": record " + std::to_string(i) + " is damaged");
    }
    out.push_back(r);
  }
  if (bytes.size() % kRecordSize) *torn = true;
  return out;
}

}  // namespace poolfs::stress
