// Log record encoding and its checks (the layout is in log_record.h and
// section 16 of core/doc/on-disk-format.md).
//
// Decoding is two steps: Reader takes the fields off the bytes with bounds
// checks only, then Violation checks the rules on the decoded value. The
// encoder runs the same Violation first, so that it never writes a record
// the decoder refuses.
#include "zil/log_record.h"

#include <sys/stat.h>

#include <limits>

#include "util/endian.h"

namespace poolfs::core::zil {
namespace {

constexpr size_t kAlign = 8;

size_t RoundUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Appends little-endian fields to a record being encoded.
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>* out) : out_(out) {}
  void U16(uint16_t v) { Put(v, 2); }
  void U32(uint32_t v) { Put(v, 4); }
  void U64(uint64_t v) { Put(v, 8); }
  void Time(const Timespec& t) {
    U64(uint64_t(t.sec));
    U32(t.nsec);
  }
  void Bytes(std::string_view b) { out_->insert(out_->end(), b.begin(), b.end()); }

 private:
  void Put(uint64_t v, int n) {
    for (int i = 0; i < n; i++) out_->push_back(uint8_t(v >> (8 * i)));
  }
  std::vector<uint8_t>* out_;
};

// Takes little-endian fields off a record being decoded. A read past the end
// returns zeros and sets overrun(); the caller checks it once per body.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  uint16_t U16() { return Take(2) ? util::GetLE16(b_.data() + pos_ - 2) : 0; }
  uint32_t U32() { return Take(4) ? util::GetLE32(b_.data() + pos_ - 4) : 0; }
  uint64_t U64() { return Take(8) ? util::GetLE64(b_.data() + pos_ - 8) : 0; }
  Timespec Time() {
    Timespec t;
    t.sec = int64_t(U64());
    t.nsec = U32();
    return t;
  }
  std::string Bytes(size_t n) {
    if (!Take(n)) return {};
    return std::string(reinterpret_cast<const char*>(b_.data()) + pos_ - n, n);
  }
  size_t pos() const { return pos_; }
  bool overrun() const { return overrun_; }

 private:
  bool Take(size_t n) {
    if (overrun_ || b_.size() - pos_ < n) {
      overrun_ = true;
      return false;
    }
    pos_ += n;
    return true;
  }
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
  bool overrun_ = false;
};

bool IsCreateType(RecordType t) {
  return t == RecordType::kCreate || t == RecordType::kMkdir || t == RecordType::kMknod ||
         t == RecordType::kSymlink;
}

// The RecordBody alternative of each type.
size_t BodyIndex(RecordType t) {
  switch (t) {
    case RecordType::kCreate:
    case RecordType::kMkdir:
    case RecordType::kMknod:
    case RecordType::kSymlink: return 0;
    case RecordType::kLink:
    case RecordType::kUnlink:
    case RecordType::kRmdir: return 1;
    case RecordType::kRename: return 2;
    case RecordType::kSetattr: return 3;
    case RecordType::kWrite: return 4;
    case RecordType::kWriteIndirect: return 5;
    case RecordType::kTruncate: return 6;
    case RecordType::kPunch: return 7;
    case RecordType::kSetxattr: return 8;
    case RecordType::kRemovexattr: return 9;
  }
  return std::variant_npos;
}

std::string Bytes(size_t n) { return std::to_string(n) + " bytes"; }

// "" when `name` is a valid directory entry name, else what is wrong.
std::string BadName(std::string_view field, std::string_view name) {
  if (name.empty()) return std::string(field) + " empty";
  if (name.size() > kMaxName) return std::string(field) + " of " + Bytes(name.size());
  if (name.find('/') != name.npos) return std::string(field) + " contains '/'";
  if (name.find('\0') != name.npos) return std::string(field) + " contains NUL";
  return "";
}

std::string BadXattrName(std::string_view name) {
  if (name.empty()) return "xattr name empty";
  if (name.size() > kMaxXattrName) return "xattr name of " + Bytes(name.size());
  if (name.find('\0') != name.npos) return "xattr name contains NUL";
  return "";
}

std::string BadTime(std::string_view field, const Timespec& t) {
  if (t.nsec >= 1000000000u) return std::string(field) + " nanoseconds " + std::to_string(t.nsec);
  return "";
}

// "" when offset + length does not pass 2^64, else what is wrong.
std::string BadRange(uint64_t offset, uint64_t length) {
  if (length > std::numeric_limits<uint64_t>::max() - offset)
    return "range of " + std::to_string(length) + " bytes at " + std::to_string(offset) +
           " passes 2^64";
  return "";
}

// The file type the mode of a create-type record must have, or 0 for
// kMknod, which takes any of four.
uint32_t CreatedType(RecordType t) {
  switch (t) {
    case RecordType::kCreate: return S_IFREG;
    case RecordType::kMkdir: return S_IFDIR;
    case RecordType::kSymlink: return S_IFLNK;
    default: return 0;
  }
}

std::string BadCreate(RecordType type, const CreateBody& b) {
  if (auto e = BadName("name", b.name); !e.empty()) return e;
  const uint32_t ftype = b.mode & S_IFMT;
  const bool special =
      ftype == S_IFIFO || ftype == S_IFSOCK || ftype == S_IFCHR || ftype == S_IFBLK;
  if ((b.mode & ~uint32_t(S_IFMT | 07777)) != 0 ||
      (type == RecordType::kMknod ? !special : ftype != CreatedType(type)))
    return "mode " + std::to_string(b.mode) + " does not fit the type";
  if (b.rdev != 0 && ftype != S_IFCHR && ftype != S_IFBLK) return "device number on a non-device";
  if (type == RecordType::kSymlink ? b.target.empty() || b.target.size() > kMaxSymlinkTarget
                                   : !b.target.empty())
    return "symlink target of " + Bytes(b.target.size());
  return BadTime("time", b.time);
}

std::string BadSetattr(const SetattrBody& b) {
  if (b.mask == 0 || (b.mask & ~kSetAll) != 0) return "mask " + std::to_string(b.mask);
  if ((b.mode & ~07777u) != 0) return "mode " + std::to_string(b.mode) + " has more than 07777";
  const Timespec zero;
  if ((!(b.mask & kSetMode) && b.mode != 0) || (!(b.mask & kSetUid) && b.uid != 0) ||
      (!(b.mask & kSetGid) && b.gid != 0) || (!(b.mask & kSetSize) && b.size != 0) ||
      (!(b.mask & kSetAtime) && b.atime != zero) || (!(b.mask & kSetMtime) && b.mtime != zero) ||
      (!(b.mask & kSetCtime) && b.ctime != zero))
    return "a field outside the mask is set";
  if (auto e = BadTime("atime", b.atime); !e.empty()) return e;
  if (auto e = BadTime("mtime", b.mtime); !e.empty()) return e;
  return BadTime("ctime", b.ctime);
}

std::string BadBody(RecordType type, const RecordBody& body) {
  if (IsCreateType(type)) return BadCreate(type, std::get<CreateBody>(body));
  switch (type) {
    case RecordType::kLink:
    case RecordType::kUnlink:
    case RecordType::kRmdir: return BadName("name", std::get<EntryBody>(body).name);
    case RecordType::kRename: {
      const auto& b = std::get<RenameBody>(body);
      if (auto e = BadName("source name", b.src_name); !e.empty()) return e;
      if (auto e = BadName("destination name", b.dst_name); !e.empty()) return e;
      if (b.flags != 0 && b.flags != kRenameNoReplace && b.flags != kRenameExchange)
        return "flags " + std::to_string(b.flags);
      return "";
    }
    case RecordType::kSetattr: return BadSetattr(std::get<SetattrBody>(body));
    case RecordType::kWrite: {
      const auto& b = std::get<WriteBody>(body);
      if (b.data.empty() || b.data.size() > kMaxInlineWrite)
        return "data of " + Bytes(b.data.size());
      return BadRange(b.offset, b.data.size());
    }
    case RecordType::kWriteIndirect: {
      const auto& b = std::get<WriteIndirectBody>(body);
      if (b.length == 0) return "length 0";
      if (b.block_ptr.empty() || b.block_ptr.size() > kMaxBlockPtrBytes)
        return "block pointer of " + Bytes(b.block_ptr.size());
      return BadRange(b.offset, b.length);
    }
    case RecordType::kTruncate: return "";
    case RecordType::kPunch: {
      const auto& b = std::get<PunchBody>(body);
      if (b.length == 0) return "length 0";
      return BadRange(b.offset, b.length);
    }
    case RecordType::kSetxattr: {
      const auto& b = std::get<SetxattrBody>(body);
      if (auto e = BadXattrName(b.name); !e.empty()) return e;
      if (b.value.size() > kMaxXattrValue) return "xattr value of " + Bytes(b.value.size());
      if (b.flags != 0 && b.flags != kXattrCreate && b.flags != kXattrReplace)
        return "flags " + std::to_string(b.flags);
      return "";
    }
    case RecordType::kRemovexattr: return BadXattrName(std::get<RemovexattrBody>(body).name);
    default: return "";  // the create types, above
  }
}

// "" when `r` obeys every rule of the format, else what is wrong, starting
// with the record type's name when the type is known.
std::string Violation(const LogRecord& r) {
  if (BodyIndex(r.type) == std::variant_npos) return "bad type " + std::to_string(uint16_t(r.type));
  const std::string name(RecordTypeName(r.type));
  if (BodyIndex(r.type) != r.body.index()) return name + ": body of another type";
  if (r.txg == 0) return name + ": txg 0";
  if (r.seq == 0) return name + ": seq 0";
  if (r.object == 0) return name + ": object 0";
  if (auto e = BadBody(r.type, r.body); !e.empty()) return name + ": " + e;
  return "";
}

void EncodeBody(RecordType type, const RecordBody& body, Writer& w) {
  if (IsCreateType(type)) {
    const auto& b = std::get<CreateBody>(body);
    w.U64(b.parent);
    w.U32(b.mode);
    w.U32(b.uid);
    w.U32(b.gid);
    w.U16(uint16_t(b.name.size()));
    w.U16(uint16_t(b.target.size()));
    w.U64(b.rdev);
    w.Time(b.time);
    w.Bytes(b.name);
    w.Bytes(b.target);
    return;
  }
  switch (type) {
    case RecordType::kLink:
    case RecordType::kUnlink:
    case RecordType::kRmdir: {
      const auto& b = std::get<EntryBody>(body);
      w.U64(b.parent);
      w.U16(uint16_t(b.name.size()));
      w.Bytes(b.name);
      return;
    }
    case RecordType::kRename: {
      const auto& b = std::get<RenameBody>(body);
      w.U64(b.src_parent);
      w.U64(b.dst_parent);
      w.U32(b.flags);
      w.U16(uint16_t(b.src_name.size()));
      w.U16(uint16_t(b.dst_name.size()));
      w.Bytes(b.src_name);
      w.Bytes(b.dst_name);
      return;
    }
    case RecordType::kSetattr: {
      const auto& b = std::get<SetattrBody>(body);
      w.U32(b.mask);
      w.U32(b.mode);
      w.U32(b.uid);
      w.U32(b.gid);
      w.U64(b.size);
      w.Time(b.atime);
      w.Time(b.mtime);
      w.Time(b.ctime);
      return;
    }
    case RecordType::kWrite: {
      const auto& b = std::get<WriteBody>(body);
      w.U64(b.offset);
      w.U32(uint32_t(b.data.size()));
      w.Bytes(b.data);
      return;
    }
    case RecordType::kWriteIndirect: {
      const auto& b = std::get<WriteIndirectBody>(body);
      w.U64(b.offset);
      w.U32(b.length);
      w.U16(uint16_t(b.block_ptr.size()));
      w.Bytes(b.block_ptr);
      return;
    }
    case RecordType::kTruncate: w.U64(std::get<TruncateBody>(body).size); return;
    case RecordType::kPunch: {
      const auto& b = std::get<PunchBody>(body);
      w.U64(b.offset);
      w.U64(b.length);
      return;
    }
    case RecordType::kSetxattr: {
      const auto& b = std::get<SetxattrBody>(body);
      w.U32(b.flags);
      w.U32(uint32_t(b.value.size()));
      w.U16(uint16_t(b.name.size()));
      w.Bytes(b.name);
      w.Bytes(b.value);
      return;
    }
    case RecordType::kRemovexattr: {
      const auto& name = std::get<RemovexattrBody>(body).name;
      w.U16(uint16_t(name.size()));
      w.Bytes(name);
      return;
    }
    default: return;  // the create types, above
  }
}

// Reads the body of a record of a known type; bounds are the caller's check
// (r.overrun()).
RecordBody DecodeBody(RecordType type, Reader& r) {
  if (IsCreateType(type)) {
    CreateBody b;
    b.parent = r.U64();
    b.mode = r.U32();
    b.uid = r.U32();
    b.gid = r.U32();
    const uint16_t name_len = r.U16();
    const uint16_t target_len = r.U16();
    b.rdev = r.U64();
    b.time = r.Time();
    b.name = r.Bytes(name_len);
    b.target = r.Bytes(target_len);
    return b;
  }
  switch (type) {
    case RecordType::kLink:
    case RecordType::kUnlink:
    case RecordType::kRmdir: {
      EntryBody b;
      b.parent = r.U64();
      b.name = r.Bytes(r.U16());
      return b;
    }
    case RecordType::kRename: {
      RenameBody b;
      b.src_parent = r.U64();
      b.dst_parent = r.U64();
      b.flags = r.U32();
      const uint16_t src_len = r.U16();
      const uint16_t dst_len = r.U16();
      b.src_name = r.Bytes(src_len);
      b.dst_name = r.Bytes(dst_len);
      return b;
    }
    case RecordType::kSetattr: {
      SetattrBody b;
      b.mask = r.U32();
      b.mode = r.U32();
      b.uid = r.U32();
      b.gid = r.U32();
      b.size = r.U64();
      b.atime = r.Time();
      b.mtime = r.Time();
      b.ctime = r.Time();
      return b;
    }
    case RecordType::kWrite: {
      WriteBody b;
      b.offset = r.U64();
      b.data = r.Bytes(r.U32());
      return b;
    }
    case RecordType::kWriteIndirect: {
      WriteIndirectBody b;
      b.offset = r.U64();
      b.length = r.U32();
      b.block_ptr = r.Bytes(r.U16());
      return b;
    }
    case RecordType::kTruncate: return TruncateBody{r.U64()};
    case RecordType::kPunch: {
      PunchBody b;
      b.offset = r.U64();
      b.length = r.U64();
      return b;
    }
    case RecordType::kSetxattr: {
      SetxattrBody b;
      b.flags = r.U32();
      const uint32_t value_len = r.U32();
      b.name = r.Bytes(r.U16());
      b.value = r.Bytes(value_len);
      return b;
    }
    case RecordType::kRemovexattr: return RemovexattrBody{r.Bytes(r.U16())};
    default: return {};  // the create types, above
  }
}

}  // namespace

std::string_view RecordTypeName(RecordType type) {
  switch (type) {
    case RecordType::kCreate: return "create";
    case RecordType::kMkdir: return "mkdir";
    case RecordType::kMknod: return "mknod";
    case RecordType::kSymlink: return "symlink";
    case RecordType::kLink: return "link";
    case RecordType::kUnlink: return "unlink";
    case RecordType::kRmdir: return "rmdir";
    case RecordType::kRename: return "rename";
    case RecordType::kSetattr: return "setattr";
    case RecordType::kWrite: return "write";
    case RecordType::kWriteIndirect: return "write-indirect";
    case RecordType::kTruncate: return "truncate";
    case RecordType::kPunch: return "punch";
    case RecordType::kSetxattr: return "setxattr";
    case RecordType::kRemovexattr: return "removexattr";
  }
  return "unknown";
}

Result<size_t> EncodeLogRecord(const LogRecord& record, std::vector<uint8_t>* out) {
  if (auto e = Violation(record); !e.empty())
    return Status::InvalidArgument("log record seq " + std::to_string(record.seq) + ": " + e);
  const size_t start = out->size();
  Writer w(out);
  w.U16(uint16_t(record.type));
  w.U16(0);  // flags
  w.U32(0);  // the length, below
  w.U64(record.txg);
  w.U64(record.seq);
  w.U64(record.object);
  EncodeBody(record.type, record.body, w);
  const size_t length = RoundUp(out->size() - start);
  out->resize(start + length, 0);
  util::PutLE32(out->data() + start + 4, uint32_t(length));
  return length;
}

Result<LogRecord> DecodeLogRecord(std::span<const uint8_t> bytes, std::string_view where) {
  auto bad = [&](const std::string& what) {
    return Status::Corruption(std::string(where) + ": " + what);
  };
  if (bytes.size() < kRecordHeaderSize) return bad("record of " + Bytes(bytes.size()));
  Reader r(bytes);
  LogRecord rec;
  rec.type = RecordType(r.U16());
  const uint16_t flags = r.U16();
  const uint32_t length = r.U32();
  rec.txg = r.U64();
  rec.seq = r.U64();
  rec.object = r.U64();
  if (BodyIndex(rec.type) == std::variant_npos)
    return bad("bad type " + std::to_string(uint16_t(rec.type)));
  const std::string name(RecordTypeName(rec.type));
  if (flags != 0) return bad(name + ": flags " + std::to_string(flags) + " (none is defined)");
  if (length != bytes.size())
    return bad(name + ": length " + std::to_string(length) + " in a record of " +
               Bytes(bytes.size()));
  rec.body = DecodeBody(rec.type, r);
  if (r.overrun()) return bad(name + ": body runs past the record's " + Bytes(bytes.size()));
  if (RoundUp(r.pos()) != bytes.size())
    return bad(name + ": " + Bytes(bytes.size() - RoundUp(r.pos())) + " after the body");
  for (size_t i = r.pos(); i < bytes.size(); i++)
    if (bytes[i] != 0) return bad(name + ": nonzero padding at record byte " + std::to_string(i));
  if (auto e = Violation(rec); !e.empty()) return bad(e);
  return rec;
}

}  // namespace poolfs::core::zil
