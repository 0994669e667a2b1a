// The send stream's records: header encoding, per-type field rules, BEGIN's
// payload, the order rules, the writer and the reader (stream.h; the format
// is core/doc/send-stream-format.md).
#include "send/stream.h"

#include <cstring>
#include <set>

#include "util/checksum.h"
#include "util/compress.h"
#include "util/endian.h"
#include "util/text.h"

namespace poolfs::core::send {
namespace {

using util::GetLE16;
using util::GetLE32;
using util::GetLE64;
using util::PutLE16;
using util::PutLE32;
using util::PutLE64;

// Header offsets.
constexpr size_t kOffMagic = 0;
constexpr size_t kOffType = 4;
constexpr size_t kOffFlags = 6;
constexpr size_t kOffPayloadLen = 8;
constexpr size_t kOffReserved12 = 12;
constexpr size_t kOffIndex = 16;
constexpr size_t kOffFields = 24;
constexpr size_t kOffPayloadChecksum = 88;
constexpr size_t kOffReserved96 = 96;
constexpr size_t kOffRunning = 104;
constexpr size_t kOffReserved112 = 112;
constexpr size_t kOffHeaderChecksum = 120;

std::string Str(uint64_t v) { return std::to_string(v); }

// `s` for a message: printable ASCII as is, other bytes as \xNN, at most
// 64 bytes of it.
std::string Printable(std::string_view s) {
  std::string out;
  static constexpr char kDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < s.size() && i < 64; i++) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
    }
  }
  if (s.size() > 64) out += "...";
  return out;
}

Status Bad(const Record& r, const std::string& what) {
  return Status::Corruption("send stream " + DescribeRecord(r) + ": " + what);
}

// The types of a plain stream's records (PACKAGE only opens a compound one).
bool IsKnownType(uint16_t t) { return t >= 1 && t <= 6; }

bool PowerOfTwoBlockSize(uint64_t v) {
  return v >= kMinBlockSize && v <= kMaxBlockSize && (v & (v - 1)) == 0;
}

// The largest payload a record of type `t` may have.
uint32_t MaxPayloadOf(RecordType t) {
  switch (t) {
    case RecordType::kBegin:
    case RecordType::kPackage: return kMaxBeginPayload;
    case RecordType::kObject: return kMaxBonus;
    case RecordType::kWrite: return kMaxBlockSize;
    default: return 0;
  }
}

// Requires f[from..7] to be zero.
Status UnusedZero(const Record& r, size_t from) {
  for (size_t i = from; i < 8; i++)
    if (r.f[i] != 0)
      return Bad(r, "unused field f" + Str(i) + " is " + util::Hex(r.f[i]) + ", not 0");
  return Status::Ok();
}

Status NoPayload(const Record& r) {
  if (!r.payload.empty())
    return Bad(r, "has a payload of " + Str(r.payload.size()) + " bytes; this type has none");
  return Status::Ok();
}

Status ObjectIdInRange(const Record& r, uint64_t id) {
  if (id == 0 || id > kMaxObjectId)
    return Bad(r, "object id " + Str(id) + " is outside 1.." + Str(kMaxObjectId));
  return Status::Ok();
}

// "" when `c` is a valid component of a dataset or snapshot name
// (poolfs/dataset.h), else what is wrong with it.
std::string ComponentProblem(std::string_view c) {
  if (c.empty() || c.size() > kMaxNameComponent)
    return "a name component must be 1 to " + Str(kMaxNameComponent) + " bytes, not " +
           Str(c.size());
  if (c == "." || c == "..") return "'" + std::string(c) + "' cannot be a name component";
  for (char bad : {'/', '\0', '@', '%'})
    if (c.find(bad) != std::string_view::npos)
      return "component '" + Printable(c) + "' contains " +
             (bad == '\0' ? std::string("NUL") : "'" + std::string(1, bad) + "'");
  return "";
}

std::string DatasetNameProblem(std::string_view name) {
  if (name.size() > kMaxDatasetName)
    return "dataset name is " + Str(name.size()) + " bytes, more than " + Str(kMaxDatasetName);
  for (size_t start = 0;;) {
    const size_t slash = name.find('/', start);
    std::string problem = ComponentProblem(name.substr(start, slash - start));
    if (!problem.empty()) return "dataset name '" + Printable(name) + "': " + problem;
    if (slash == std::string_view::npos) return "";
    start = slash + 1;
  }
}

// "" when `name` may follow "prop." in a BEGIN key.
std::string PropertyNameProblem(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameComponent)
    return "a property name must be 1 to " + Str(kMaxNameComponent) + " bytes, not " +
           Str(name.size());
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                    c == '.' || c == ':';
    if (!ok) return "property name '" + Printable(name) + "' has a byte outside [a-z0-9_.:-]";
  }
  return "";
}

constexpr std::string_view kPropPrefix = "prop.";

// Fills `info` from a BEGIN record, checking every rule of its fields and
// payload.
Status ParseBegin(const Record& r, BeginInfo* info) {
  if (r.type != RecordType::kBegin) return Bad(r, "is not a BEGIN record");
  if (r.payload.size() > kMaxBeginPayload)
    return Bad(r,
               "payload of " + Str(r.payload.size()) + " bytes exceeds " + Str(kMaxBeginPayload));
  info->version = r.f[0];
  info->features = r.f[1];
  info->to_guid = r.f[2];
  info->from_guid = r.f[3];
  info->to_txg = r.f[4];
  info->creation_time = static_cast<int64_t>(r.f[5]);
  info->resume_object = r.f[6];
  info->resume_offset = r.f[7];
  if (info->version == 0) return Bad(r, "stream version 0 does not exist");
  if (info->version > kStreamVersion)
    return Bad(r, "stream version " + Str(info->version) + " is newer than this reader's (" +
                      Str(kStreamVersion) + ")");
  if ((info->features & ~kKnownFeatures) != 0)
    return Bad(r, "unknown feature bits " + util::Hex(info->features & ~kKnownFeatures) +
                      " (this reader knows " + util::Hex(kKnownFeatures) + ")");
  if (info->to_guid == 0) return Bad(r, "to_guid is 0");
  if (info->from_guid == info->to_guid) return Bad(r, "from_guid equals to_guid");
  if ((info->features & kFeatureResuming) != 0) {
    if (info->resume_object == 0 || info->resume_object > kMaxObjectId)
      return Bad(
          r, "resume object " + Str(info->resume_object) + " is outside 1.." + Str(kMaxObjectId));
  } else if (info->resume_object != 0 || info->resume_offset != 0) {
    return Bad(r, "resume point " + Str(info->resume_object) + "/" + Str(info->resume_offset) +
                      " without the RESUMING feature");
  }

  // The payload: entries of u16 key length, key, u16 value length, value.
  const std::string_view p = r.payload;
  size_t pos = 0;
  int stage = 0;  // 0: dataset next, 1: snapshot, 2: from (incremental), 3: properties
  const bool incremental = info->from_guid != 0;
  std::string_view last_prop;
  info->dataset.clear();
  info->snapshot.clear();
  info->from.clear();
  info->props.clear();
  for (uint64_t entry = 0; pos < p.size(); entry++) {
    const std::string where = "BEGIN payload entry " + Str(entry);
    auto bytes = [&](size_t n, std::string_view* out) {
      if (p.size() - pos < n) return false;
      *out = p.substr(pos, n);
      pos += n;
      return true;
    };
    std::string_view len, key, value;
    if (!bytes(2, &len)) return Bad(r, where + ": truncated key length");
    const uint16_t key_len = GetLE16(reinterpret_cast<const uint8_t*>(len.data()));
    if (key_len == 0) return Bad(r, where + ": empty key");
    if (!bytes(key_len, &key)) return Bad(r, where + ": truncated key");
    if (!bytes(2, &len)) return Bad(r, where + " (" + Printable(key) + "): truncated value length");
    const uint16_t value_len = GetLE16(reinterpret_cast<const uint8_t*>(len.data()));
    if (!bytes(value_len, &value))
      return Bad(r, where + " (" + Printable(key) + "): truncated value");
    const std::string what = where + " (" + Printable(key) + ")";
    if (stage == 2 && !incremental) stage = 3;
    if (stage == 0) {
      if (key != "dataset") return Bad(r, what + ": expected the key 'dataset'");
      if (std::string problem = DatasetNameProblem(value); !problem.empty())
        return Bad(r, what + ": " + problem);
      info->dataset = value;
      stage = 1;
    } else if (stage == 1) {
      if (key != "snapshot") return Bad(r, what + ": expected the key 'snapshot'");
      if (std::string problem = ComponentProblem(value); !problem.empty())
        return Bad(r, what + ": snapshot name: " + problem);
      info->snapshot = value;
      stage = 2;
    } else if (stage == 2) {
      if (key != "from") return Bad(r, what + ": expected the key 'from' (an incremental stream)");
      if (std::string problem = ComponentProblem(value); !problem.empty())
        return Bad(r, what + ": from snapshot name: " + problem);
      info->from = value;
      stage = 3;
    } else {
      if (key == "from") return Bad(r, what + ": a full stream (from_guid 0) has no 'from'");
      if (!key.starts_with(kPropPrefix)) return Bad(r, what + ": unknown or misplaced key");
      const std::string_view name = key.substr(kPropPrefix.size());
      if (std::string problem = PropertyNameProblem(name); !problem.empty())
        return Bad(r, what + ": " + problem);
      if (!info->props.empty() && name <= last_prop)
        return Bad(r, what + ": properties are not in strictly increasing name order");
      if (value.find('\0') != std::string_view::npos)
        return Bad(r, what + ": property value contains NUL");
      last_prop = name;
      info->props.emplace_back(std::string(name), std::string(value));
    }
  }
  if (stage == 0) return Bad(r, "BEGIN payload has no 'dataset' entry");
  if (stage == 1) return Bad(r, "BEGIN payload has no 'snapshot' entry");
  if (stage == 2 && incremental)
    return Bad(r, "BEGIN payload of an incremental stream has no 'from' entry");
  return Status::Ok();
}

// Checks the rules of a record's type that need nothing but the record.
Status CheckFields(const Record& r) {
  switch (r.type) {
    case RecordType::kPackage: {
      if (r.f[0] != kStreamVersion)
        return Bad(r, "package version " + Str(r.f[0]) + " is not " + Str(kStreamVersion));
      if (r.f[1] == 0 || r.f[1] > kMaxPackageStreams)
        return Bad(r, "stream count " + Str(r.f[1]) + " is outside 1.." + Str(kMaxPackageStreams));
      POOLFS_ASSIGN_OR_RETURN(PackageInfo info,
                              DecodePackagePayload(r.payload, "send stream " + DescribeRecord(r)));
      if (info.streams.size() != r.f[1])
        return Bad(r,
                   "lists " + Str(info.streams.size()) + " streams, its count says " + Str(r.f[1]));
      return UnusedZero(r, 2);
    }
    case RecordType::kBegin: {
      BeginInfo info;
      return ParseBegin(r, &info);
    }
    case RecordType::kObject: {
      POOLFS_RETURN_IF_ERROR(ObjectIdInRange(r, r.f[0]));
      if (r.f[1] != kObjectTypePlain && r.f[1] != kObjectTypeDirectory && r.f[1] != kObjectTypeZap)
        return Bad(r, "object type " + Str(r.f[1]) + " is not one a dataset holds (2, 3, 6)");
      if (!PowerOfTwoBlockSize(r.f[2]))
        return Bad(r, "block size " + Str(r.f[2]) + " is not a power of two in 512..1 MiB");
      if (r.f[4] == 0) return Bad(r, "generation is 0");
      if ((r.f[5] & 0xff) > kCompressZstd)
        return Bad(r, "compression " + Str(r.f[5] & 0xff) + " is unknown");
      if ((r.f[5] >> 16) != 0) return Bad(r, "f5 has bits above the bonus type set");
      if (r.f[6] != r.payload.size())
        return Bad(
            r, "bonus_len " + Str(r.f[6]) + " is not the payload length " + Str(r.payload.size()));
      if (r.payload.size() > kMaxBonus)
        return Bad(r, "bonus of " + Str(r.payload.size()) + " bytes exceeds " + Str(kMaxBonus));
      return UnusedZero(r, 7);
    }
    case RecordType::kFreeObjects: {
      POOLFS_RETURN_IF_ERROR(ObjectIdInRange(r, r.f[0]));
      if (r.f[1] == 0) return Bad(r, "count is 0");
      if (r.f[1] > kMaxObjectId + 1 - r.f[0])
        return Bad(r, "range " + Str(r.f[0]) + " + " + Str(r.f[1]) + " passes 2^48");
      POOLFS_RETURN_IF_ERROR(UnusedZero(r, 2));
      return NoPayload(r);
    }
    case RecordType::kWrite: {
      POOLFS_RETURN_IF_ERROR(ObjectIdInRange(r, r.f[0]));
      if (!PowerOfTwoBlockSize(r.f[2]))
        return Bad(r, "logical length " + Str(r.f[2]) + " is not a block size");
      if (r.f[1] % r.f[2] != 0)
        return Bad(r, "offset is not a multiple of the logical length " + Str(r.f[2]));
      if (r.f[1] > UINT64_MAX - r.f[2]) return Bad(r, "block passes 2^64");
      if (r.f[3] > kCompressZstd) return Bad(r, "compression " + Str(r.f[3]) + " is unknown");
      if (r.f[3] == kCompressOff && r.payload.size() != r.f[2])
        return Bad(r, "uncompressed payload of " + Str(r.payload.size()) +
                          " bytes, not the logical length " + Str(r.f[2]));
      if (r.f[3] != kCompressOff && (r.payload.empty() || r.payload.size() >= r.f[2]))
        return Bad(r, "compressed payload of " + Str(r.payload.size()) +
                          " bytes is not between 1 and the logical length " + Str(r.f[2]) +
                          " (exclusive)");
      return UnusedZero(r, 4);
    }
    case RecordType::kFree: {
      POOLFS_RETURN_IF_ERROR(ObjectIdInRange(r, r.f[0]));
      if (r.f[2] == 0) return Bad(r, "length is 0");
      if (r.f[2] != kToEnd && r.f[2] > UINT64_MAX - r.f[1])
        return Bad(r, "range passes 2^64 (a FREE to the end has length 2^64-1)");
      POOLFS_RETURN_IF_ERROR(UnusedZero(r, 3));
      return NoPayload(r);
    }
    case RecordType::kEnd: {
      if (r.f[0] == 0) return Bad(r, "to_guid is 0");
      POOLFS_RETURN_IF_ERROR(UnusedZero(r, 3));
      return NoPayload(r);
    }
  }
  return Bad(r, "unknown record type");
}

// The writer's status for a record the reader would refuse.
Status Refused(const Status& st) { return Status::InvalidArgument(st.message()); }

}  // namespace

std::string RecordTypeName(uint16_t type) {
  switch (type) {
    case 1: return "BEGIN";
    case 2: return "OBJECT";
    case 3: return "FREEOBJECTS";
    case 4: return "WRITE";
    case 5: return "FREE";
    case 6: return "END";
    case 7: return "PACKAGE";
    default: return "type " + Str(type);
  }
}

std::string DescribeRecord(const Record& r) {
  const auto t = static_cast<uint16_t>(r.type);
  std::string s = "record " + Str(r.index) + " (" + RecordTypeName(t);
  switch (r.type) {
    case RecordType::kObject: s += " object " + Str(r.f[0]); break;
    case RecordType::kFreeObjects: s += " first " + Str(r.f[0]) + " count " + Str(r.f[1]); break;
    case RecordType::kWrite:
    case RecordType::kFree: s += " object " + Str(r.f[0]) + " offset " + Str(r.f[1]); break;
    default: break;
  }
  return s + ")";
}

uint64_t EncodeHeader(const Record& r, uint64_t prev_running, uint8_t* out) {
  std::memset(out, 0, kHeaderSize);
  PutLE32(out + kOffMagic, kRecordMagic);
  PutLE16(out + kOffType, static_cast<uint16_t>(r.type));
  PutLE16(out + kOffFlags, r.flags);
  PutLE32(out + kOffPayloadLen, static_cast<uint32_t>(r.payload.size()));
  PutLE64(out + kOffIndex, r.index);
  for (size_t i = 0; i < 8; i++) PutLE64(out + kOffFields + 8 * i, r.f[i]);
  PutLE64(out + kOffPayloadChecksum, util::Xxh3_64(r.payload.data(), r.payload.size()));
  uint8_t chain[8 + kOffRunning];
  PutLE64(chain, prev_running);
  std::memcpy(chain + 8, out, kOffRunning);
  const uint64_t running = util::Xxh3_64(chain, sizeof(chain));
  PutLE64(out + kOffRunning, running);
  PutLE64(out + kOffHeaderChecksum, util::Xxh3_64(out, kOffHeaderChecksum));
  return running;
}

std::string EncodeBeginPayload(const BeginInfo& info) {
  std::string out;
  auto put = [&out](std::string_view a, std::string_view b, std::string_view value) {
    uint8_t len[2];
    PutLE16(len, static_cast<uint16_t>(a.size() + b.size()));
    out.append(reinterpret_cast<const char*>(len), 2);
    out += a;
    out += b;
    PutLE16(len, static_cast<uint16_t>(value.size()));
    out.append(reinterpret_cast<const char*>(len), 2);
    out += value;
  };
  put("dataset", "", info.dataset);
  put("snapshot", "", info.snapshot);
  if (!info.from.empty()) put("from", "", info.from);
  for (const auto& [name, value] : info.props) put(kPropPrefix, name, value);
  return out;
}

std::string EncodePackagePayload(const PackageInfo& info) {
  std::string out;
  auto put16 = [&out](size_t v) {
    uint8_t b[2];
    PutLE16(b, static_cast<uint16_t>(v));
    out.append(reinterpret_cast<const char*>(b), 2);
  };
  auto put64 = [&out](uint64_t v) {
    uint8_t b[8];
    PutLE64(b, v);
    out.append(reinterpret_cast<const char*>(b), 8);
  };
  put16(info.dataset.size());
  out += info.dataset;
  for (const PackageEntry& e : info.streams) {
    put16(e.path.size());
    out += e.path;
    put64(e.to_guid);
    put64(e.from_guid);
  }
  return out;
}

Result<PackageInfo> DecodePackagePayload(std::string_view payload, const std::string& where) {
  auto bad = [&where](const std::string& what) { return Status::Corruption(where + ": " + what); };
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  size_t at = 0;
  auto name = [&](std::string* out, const char* what, bool may_be_empty) -> Status {
    if (payload.size() - at < 2) return bad(std::string(what) + " is truncated");
    const size_t n = GetLE16(p + at);
    at += 2;
    if (n > kMaxDatasetName || payload.size() - at < n || (n == 0 && !may_be_empty))
      return bad(std::string(what) + " of " + Str(n) + " bytes is empty, truncated or over " +
                 Str(kMaxDatasetName));
    out->assign(payload.substr(at, n));
    at += n;
    if (out->find('\0') != std::string::npos || out->starts_with("/") || out->ends_with("/") ||
        out->find("//") != std::string::npos || out->find('@') != std::string::npos)
      return bad(std::string(what) + " '" + *out + "' is not a dataset path");
    return Status::Ok();
  };
  PackageInfo info;
  POOLFS_RETURN_IF_ERROR(name(&info.dataset, "the dataset name", false));
  std::set<std::pair<std::string, uint64_t>> seen;
  while (at < payload.size()) {
    if (info.streams.size() == kMaxPackageStreams)
      return bad("lists more than " + Str(kMaxPackageStreams) + " streams");
    PackageEntry e;
    const std::string what = "stream " + Str(info.streams.size());
    POOLFS_RETURN_IF_ERROR(name(&e.path, (what + "'s path").c_str(), true));
    if (payload.size() - at < 16) return bad(what + "'s guids are truncated");
    e.to_guid = GetLE64(p + at);
    e.from_guid = GetLE64(p + at + 8);
    at += 16;
    if (e.to_guid == 0) return bad(what + " has to_guid 0");
    if (!seen.emplace(e.path, e.to_guid).second)
      return bad(what + " repeats the snapshot " + util::HexPadded(e.to_guid) + " of '" + e.path +
                 "'");
    info.streams.push_back(std::move(e));
  }
  if (info.streams.empty()) return bad("lists no stream");
  return info;
}

Result<uint64_t> WritePackage(const PackageInfo& info,
                              const std::function<Status(std::string_view)>& sink) {
  Record r;
  r.type = RecordType::kPackage;
  r.f[0] = kStreamVersion;
  r.f[1] = info.streams.size();
  r.payload = EncodePackagePayload(info);
  if (r.payload.size() > kMaxBeginPayload)
    return Status::InvalidArgument("a package of " + Str(info.streams.size()) +
                                   " streams does not fit its record (" + Str(r.payload.size()) +
                                   " bytes, at most " + Str(kMaxBeginPayload) + ")");
  if (Status st = CheckFields(r); !st.ok()) return Refused(st);
  uint8_t header[kHeaderSize];
  const uint64_t running = EncodeHeader(r, kRunningSeed, header);
  POOLFS_RETURN_IF_ERROR(
      sink(std::string_view(reinterpret_cast<const char*>(header), kHeaderSize)));
  POOLFS_RETURN_IF_ERROR(sink(r.payload));
  return running;
}

Result<BeginInfo> DecodeBegin(const Record& r) {
  BeginInfo info;
  POOLFS_RETURN_IF_ERROR(ParseBegin(r, &info));
  return info;
}

Result<ObjectInfo> DecodeObject(const Record& r) {
  if (r.type != RecordType::kObject) return Bad(r, "is not an OBJECT record");
  POOLFS_RETURN_IF_ERROR(CheckFields(r));
  ObjectInfo o;
  o.object = r.f[0];
  o.type = static_cast<uint8_t>(r.f[1]);
  o.block_size = static_cast<uint32_t>(r.f[2]);
  o.length = r.f[3];
  o.generation = r.f[4];
  o.compression = static_cast<uint8_t>(r.f[5]);
  o.bonus_type = static_cast<uint8_t>(r.f[5] >> 8);
  o.bonus = r.payload;
  o.fresh = (r.flags & kObjectNew) != 0;
  return o;
}

Result<FreeObjectsInfo> DecodeFreeObjects(const Record& r) {
  if (r.type != RecordType::kFreeObjects) return Bad(r, "is not a FREEOBJECTS record");
  POOLFS_RETURN_IF_ERROR(CheckFields(r));
  return FreeObjectsInfo{r.f[0], r.f[1]};
}

Result<WriteInfo> DecodeWrite(const Record& r) {
  if (r.type != RecordType::kWrite) return Bad(r, "is not a WRITE record");
  POOLFS_RETURN_IF_ERROR(CheckFields(r));
  WriteInfo w;
  w.object = r.f[0];
  w.offset = r.f[1];
  w.logical_length = static_cast<uint32_t>(r.f[2]);
  w.compression = static_cast<uint8_t>(r.f[3]);
  w.data = r.payload;
  return w;
}

Result<FreeInfo> DecodeFree(const Record& r) {
  if (r.type != RecordType::kFree) return Bad(r, "is not a FREE record");
  POOLFS_RETURN_IF_ERROR(CheckFields(r));
  return FreeInfo{r.f[0], r.f[1], r.f[2]};
}

Result<EndInfo> DecodeEnd(const Record& r) {
  if (r.type != RecordType::kEnd) return Bad(r, "is not an END record");
  POOLFS_RETURN_IF_ERROR(CheckFields(r));
  return EndInfo{r.f[0], r.f[1], r.f[2]};
}

Result<std::string> LogicalBytes(const Record& r) {
  if (r.type != RecordType::kWrite) return Bad(r, "is not a WRITE record");
  POOLFS_RETURN_IF_ERROR(CheckFields(r));
  if (r.f[3] == kCompressOff) return r.payload;
  std::string out(r.f[2], '\0');
  const auto algo = static_cast<util::Compression>(r.f[3]);
  if (Status st =
          util::Decompress(algo, r.payload.data(), r.payload.size(), out.data(), out.size());
      !st.ok())
    return Bad(r, std::string(util::CompressionName(algo)) + " payload does not decode to " +
                      Str(r.f[2]) + " bytes: " + st.message());
  return out;
}

// ---- StreamChecker ----

Status StreamChecker::Accept(const Record& r) {
  if (ended_) return Bad(r, "comes after the END record");
  if (r.index != next_index_)
    return Bad(r, "index " + Str(r.index) + ", expected " + Str(next_index_));
  if (!begun_ && r.type != RecordType::kBegin)
    return Bad(r, "the stream does not start with BEGIN");
  if (begun_ && r.type == RecordType::kBegin) return Bad(r, "a second BEGIN record");

  // The checks of the WRITE and FREE records of the open object.
  auto in_open_object = [&]() -> Status {
    if (open_object_ == 0)
      return Bad(
          r, "no object is open (an OBJECT record for object " + Str(r.f[0]) + " must come first)");
    if (r.f[0] != open_object_)
      return Bad(
          r, "belongs to object " + Str(r.f[0]) + " but the open object is " + Str(open_object_));
    if (freed_to_end_) return Bad(r, "comes after a FREE to the end of the object");
    if (r.f[1] < min_offset_)
      return Bad(r, "offset " + Str(r.f[1]) + " is below " + Str(min_offset_) +
                        ", the end of the object's previous record or the resume point");
    return Status::Ok();
  };

  switch (r.type) {
    case RecordType::kPackage:
      return Bad(r, "a PACKAGE record opens a compound stream, never one inside it");
    case RecordType::kBegin:
      begun_ = true;
      features_ = r.f[1];
      to_guid_ = r.f[2];
      if ((features_ & kFeatureResuming) != 0) {
        resume_object_ = r.f[6];
        resume_offset_ = r.f[7];
        min_object_ = resume_object_;
      }
      break;
    case RecordType::kObject:
      if (r.f[0] < min_object_)
        return Bad(r, "object " + Str(r.f[0]) + " is below " + Str(min_object_) +
                          ", past the previous object record or before the resume point");
      open_object_ = r.f[0];
      open_block_size_ = static_cast<uint32_t>(r.f[2]);
      min_offset_ = (resume_object_ != 0 && r.f[0] == resume_object_) ? resume_offset_ : 0;
      freed_to_end_ = false;
      resume_object_ = 0;
      min_object_ = r.f[0] + 1;
      break;
    case RecordType::kFreeObjects:
      if (r.f[0] < min_object_)
        return Bad(r, "first object " + Str(r.f[0]) + " is below " + Str(min_object_) +
                          ", past the previous object record or before the resume point");
      open_object_ = 0;
      resume_object_ = 0;
      min_object_ = r.f[0] + r.f[1];
      break;
    case RecordType::kWrite:
      POOLFS_RETURN_IF_ERROR(in_open_object());
      if (r.f[2] != open_block_size_)
        return Bad(r, "logical length " + Str(r.f[2]) + " is not the object's block size " +
                          Str(open_block_size_));
      if (r.f[3] != kCompressOff && (features_ & kFeatureCompressed) == 0)
        return Bad(r, "compressed payload without the COMPRESSED feature");
      min_offset_ = r.f[1] + r.f[2];
      break;
    case RecordType::kFree:
      POOLFS_RETURN_IF_ERROR(in_open_object());
      if (r.f[2] == kToEnd)
        freed_to_end_ = true;
      else
        min_offset_ = r.f[1] + r.f[2];
      break;
    case RecordType::kEnd:
      if (r.f[0] != to_guid_)
        return Bad(r, "to_guid " + util::HexPadded(r.f[0]) + " is not BEGIN's " +
                          util::HexPadded(to_guid_));
      if (r.f[1] != next_index_)
        return Bad(r, "counts " + Str(r.f[1]) + " records before it, not " + Str(next_index_));
      if (r.f[2] != payload_bytes_)
        return Bad(
            r, "counts " + Str(r.f[2]) + " payload bytes before it, not " + Str(payload_bytes_));
      ended_ = true;
      break;
    default: return Bad(r, "unknown record type");
  }
  next_index_++;
  payload_bytes_ += r.payload.size();
  return Status::Ok();
}

// ---- StreamWriter ----

StreamWriter::StreamWriter(std::function<Status(std::string_view)> sink, uint64_t chain_from)
    : sink_(std::move(sink)), running_(chain_from) {}

Status StreamWriter::Emit(Record r) {
  if (!broken_.ok()) return broken_;
  r.index = checker_.next_index();
  if (Status st = CheckFields(r); !st.ok()) return Refused(st);
  // Accept changes nothing when it refuses.
  if (Status st = checker_.Accept(r); !st.ok()) return Refused(st);
  uint8_t header[kHeaderSize];
  const uint64_t running = EncodeHeader(r, running_, header);
  running_ = running;
  Status st = sink_(std::string_view(reinterpret_cast<const char*>(header), kHeaderSize));
  if (st.ok() && !r.payload.empty()) st = sink_(r.payload);
  if (!st.ok()) {
    broken_ = st;
    return st;
  }
  bytes_ += kHeaderSize + r.payload.size();
  return Status::Ok();
}

Status StreamWriter::Begin(const BeginInfo& info) {
  if (info.version != kStreamVersion)
    return Status::InvalidArgument("this writer writes stream version " + Str(kStreamVersion) +
                                   ", not " + Str(info.version));
  if (info.from.empty() != (info.from_guid == 0))
    return Status::InvalidArgument(
        "an incremental stream (from_guid nonzero) needs a from snapshot name, a full one has "
        "none");
  for (const auto& [name, value] : info.props)
    if (name.size() > kMaxNameComponent || value.size() > kMaxPropertyValue)
      return Status::InvalidArgument("property '" + Printable(name) + "': name or value too long");
  if (info.dataset.size() > kMaxDatasetName || info.snapshot.size() > kMaxNameComponent ||
      info.from.size() > kMaxNameComponent)
    return Status::InvalidArgument("a dataset or snapshot name is too long");
  Record r;
  r.type = RecordType::kBegin;
  r.f = {info.version,       info.features,     info.to_guid,
         info.from_guid,     info.to_txg,       static_cast<uint64_t>(info.creation_time),
         info.resume_object, info.resume_offset};
  r.payload = EncodeBeginPayload(info);
  return Emit(std::move(r));
}

Status StreamWriter::Object(const ObjectInfo& info) {
  Record r;
  r.type = RecordType::kObject;
  r.f = {info.object,       info.type,
         info.block_size,   info.length,
         info.generation,   uint64_t{info.compression} | uint64_t{info.bonus_type} << 8,
         info.bonus.size(), 0};
  r.payload = info.bonus;
  r.flags = info.fresh ? kObjectNew : 0;
  return Emit(std::move(r));
}

Status StreamWriter::FreeObjects(const FreeObjectsInfo& info) {
  Record r;
  r.type = RecordType::kFreeObjects;
  r.f[0] = info.first;
  r.f[1] = info.count;
  return Emit(std::move(r));
}

Status StreamWriter::Write(const WriteInfo& info) {
  Record r;
  r.type = RecordType::kWrite;
  r.f[0] = info.object;
  r.f[1] = info.offset;
  r.f[2] = info.logical_length;
  r.f[3] = info.compression;
  r.payload = info.data;
  return Emit(std::move(r));
}

Status StreamWriter::Free(const FreeInfo& info) {
  Record r;
  r.type = RecordType::kFree;
  r.f[0] = info.object;
  r.f[1] = info.offset;
  r.f[2] = info.length;
  return Emit(std::move(r));
}

Status StreamWriter::End() {
  if (!checker_.begun())
    return Status::InvalidArgument(
        "send stream: END before BEGIN: the stream does not start with BEGIN");
  Record r;
  r.type = RecordType::kEnd;
  r.f[0] = checker_.to_guid();
  r.f[1] = checker_.next_index();
  r.f[2] = checker_.payload_bytes();
  return Emit(std::move(r));
}

// ---- StreamReader ----

StreamReader::StreamReader(std::function<Result<size_t>(std::span<char>)> source,
                           ReaderOptions options)
    : source_(std::move(source)), options_(options) {}

Result<size_t> StreamReader::Fill(char* out, size_t want) {
  size_t got = 0;
  while (got < want) {
    POOLFS_ASSIGN_OR_RETURN(size_t n, source_(std::span<char>(out + got, want - got)));
    if (n == 0) break;
    if (n > want - got)
      return Status::IOError("send stream source returned " + Str(n) + " bytes for " +
                             Str(want - got));
    got += n;
  }
  bytes_ += got;
  return got;
}

Result<std::optional<Record>> StreamReader::Next() {
  if (!broken_.ok()) return broken_;
  if (done_) return std::optional<Record>();
  Result<std::optional<Record>> r = ReadRecord();
  if (!r.ok()) broken_ = r.status();
  return r;
}

Result<std::optional<Record>> StreamReader::ReadRecord() {
  // A compound stream's next stream starts where the one before ended.
  if (package_ && checker_.ended() && streams_done_ < package_->streams.size()) {
    checker_ = StreamChecker();
    begin_.reset();
  }
  const uint64_t index = checker_.next_index();
  const uint64_t at = bytes_;
  if (checker_.ended()) {
    char c;
    POOLFS_ASSIGN_OR_RETURN(size_t n, Fill(&c, 1));
    if (n == 0) {
      done_ = true;
      return std::optional<Record>();
    }
    return Status::Corruption("send stream: bytes after the END record (" + last_ + ") at byte " +
                              Str(at));
  }
  uint8_t h[kHeaderSize];
  POOLFS_ASSIGN_OR_RETURN(size_t got, Fill(reinterpret_cast<char*>(h), kHeaderSize));
  if (got == 0) {
    if (package_ && index == 0)
      return Status::Corruption("send stream truncated after " + last_ + ": the package lists " +
                                Str(package_->streams.size()) + " streams, " + Str(streams_done_) +
                                " came");
    if (index == 0) return Status::Corruption("send stream is empty: no BEGIN record");
    return Status::Corruption("send stream truncated after " + last_ +
                              ": it ends without an END record");
  }
  const std::string where = "send stream record " + Str(index) + " at byte " + Str(at);
  if (got < kHeaderSize)
    return Status::Corruption("send stream truncated in the header of record " + Str(index) +
                              " at byte " + Str(at) + " (" + Str(got) + " of " + Str(kHeaderSize) +
                              " bytes)");
  const uint32_t magic = GetLE32(h + kOffMagic);
  if (magic != kRecordMagic)
    return Status::Corruption(where + ": magic " + util::Hex(magic) + " is not a record header's " +
                              util::Hex(kRecordMagic));
  const uint64_t stored_sum = GetLE64(h + kOffHeaderChecksum);
  const uint64_t sum = util::Xxh3_64(h, kOffHeaderChecksum);
  if (stored_sum != sum)
    return Status::Corruption(where + ": header checksum mismatch (stored " +
                              util::HexPadded(stored_sum) + ", computed " + util::HexPadded(sum) +
                              ")");

  Record r;
  const uint16_t type = GetLE16(h + kOffType);
  r.type = static_cast<RecordType>(type);
  r.flags = GetLE16(h + kOffFlags);
  r.index = index;  // messages name the record by its place
  for (size_t i = 0; i < 8; i++) r.f[i] = GetLE64(h + kOffFields + 8 * i);
  const uint32_t payload_len = GetLE32(h + kOffPayloadLen);
  const uint64_t stored_index = GetLE64(h + kOffIndex);
  // PACKAGE: the first record of a compound stream, when those are read.
  const bool package =
      type == static_cast<uint16_t>(RecordType::kPackage) && options_.packages && records_ == 0;
  if (!IsKnownType(type) && !package) {
    if (type == static_cast<uint16_t>(RecordType::kPackage))
      return Bad(r, records_ == 0
                        ? "a compound stream (send -R): this reader reads one stream"
                        : "a PACKAGE record opens a compound stream, never one inside it");
    return Bad(r, "unknown record type " + Str(type));
  }
  if (const uint16_t known = r.type == RecordType::kObject ? kObjectNew : 0; r.flags & ~known)
    return Bad(r, "flags " + util::Hex(r.flags) + " set; " +
                      (known ? "only " + util::Hex(known) + " is defined" : "none is defined") +
                      " for " + RecordTypeName(type));
  if (GetLE32(h + kOffReserved12) != 0) return Bad(r, "reserved bytes 12..15 are not zero");
  if (GetLE64(h + kOffReserved96) != 0) return Bad(r, "reserved bytes 96..103 are not zero");
  if (GetLE64(h + kOffReserved112) != 0) return Bad(r, "reserved bytes 112..119 are not zero");
  if (stored_index != index)
    return Bad(r, "index field is " + Str(stored_index) + ", expected " + Str(index) +
                      " (a record is missing, repeated or out of place)");
  if (payload_len > MaxPayloadOf(r.type))
    return Bad(r, "payload_len " + Str(payload_len) + " exceeds " + Str(MaxPayloadOf(r.type)) +
                      ", the limit of its type");
  uint8_t chain[8 + kOffRunning];
  PutLE64(chain, running_);
  std::memcpy(chain + 8, h, kOffRunning);
  const uint64_t running = util::Xxh3_64(chain, sizeof(chain));
  if (GetLE64(h + kOffRunning) != running)
    return Bad(r, "running checksum mismatch (stored " + util::HexPadded(GetLE64(h + kOffRunning)) +
                      ", computed " + util::HexPadded(running) +
                      "): it does not follow the records before it");

  r.payload.resize(payload_len);
  POOLFS_ASSIGN_OR_RETURN(got, Fill(r.payload.data(), payload_len));
  if (got < payload_len)
    return Status::Corruption("send stream truncated in the payload of " + DescribeRecord(r) +
                              " (" + Str(got) + " of " + Str(payload_len) + " bytes)");
  const uint64_t payload_sum = util::Xxh3_64(r.payload.data(), r.payload.size());
  if (GetLE64(h + kOffPayloadChecksum) != payload_sum)
    return Bad(r, "payload checksum mismatch (stored " +
                      util::HexPadded(GetLE64(h + kOffPayloadChecksum)) + ", computed " +
                      util::HexPadded(payload_sum) + ")");
  POOLFS_RETURN_IF_ERROR(CheckFields(r));
  if (package) {
    POOLFS_ASSIGN_OR_RETURN(PackageInfo info,
                            DecodePackagePayload(r.payload, "send stream " + DescribeRecord(r)));
    package_ = std::move(info);
    running_ = running;
    last_ = "the PACKAGE record";
    records_++;
    return std::optional<Record>(std::move(r));
  }
  if (package_ && r.type == RecordType::kBegin) {
    // The stream must be the one the package lists next.
    POOLFS_ASSIGN_OR_RETURN(BeginInfo info, DecodeBegin(r));
    const PackageEntry& e = package_->streams[streams_done_];
    const std::string want = e.path.empty() ? package_->dataset : package_->dataset + "/" + e.path;
    if (info.to_guid != e.to_guid || info.from_guid != e.from_guid || info.dataset != want)
      return Bad(r, "is the stream of " + info.dataset + "@" + info.snapshot + " (guid " +
                        util::HexPadded(info.to_guid) + "), where the package lists stream " +
                        Str(streams_done_) + " of " + want + " (guid " +
                        util::HexPadded(e.to_guid) + ")");
  }
  POOLFS_RETURN_IF_ERROR(checker_.Accept(r));
  running_ = running;
  if (r.type == RecordType::kBegin) {
    POOLFS_ASSIGN_OR_RETURN(BeginInfo info, DecodeBegin(r));
    begin_ = std::move(info);
  }
  last_ = DescribeRecord(r) + (package_ ? " of stream " + Str(streams_done_) : "");
  if (package_ && r.type == RecordType::kEnd) streams_done_++;
  records_++;
  return std::optional<Record>(std::move(r));
}

}  // namespace poolfs::core::send
