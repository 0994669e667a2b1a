// libFuzzer target for the send stream reader (core/send/stream.h,
// core/doc/send-stream-format.md).
//
// Input: [u8 mode][stream bytes...]. Mode bit 0: before reading, walk the
// records by their payload_len and rewrite each one's index to its
// position and recompute its payload checksum, running checksum and header
// checksum, so that mutations (records dropped, repeated, moved, fields
// changed) reach the field and order rules instead of stopping at an index
// or a checksum; bits 1..7: the source hands out at most that many bytes
// per call (0: all it is asked).
//
// Properties checked (a violation aborts):
//   - reading never crashes and fails only with Corruption, whose message
//     names a record ("record N") or says the stream is empty;
//   - reading is deterministic, whatever the chunking of the source;
//   - every record the reader returns decodes with its typed decoder, and a
//     WRITE's LogicalBytes either gives exactly the logical length or is
//     Corruption;
//   - read as a compound stream may be, the bytes are refused only with
//     Corruption, and a PACKAGE record comes first if at all;
//   - the writer agrees: the records read, written again through a
//     StreamWriter's typed calls, are all accepted and give back exactly
//     the bytes the reader consumed for them (the encoding is canonical).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "send/stream.h"
#include "util/checksum.h"
#include "util/endian.h"

namespace {

using namespace poolfs::core::send;  // NOLINT: a test program
using poolfs::Result;
using poolfs::Status;
using poolfs::StatusCode;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "send_stream_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void Reseal(std::string* bytes) {
  uint64_t running = kRunningSeed;
  for (size_t pos = 0, k = 0; pos + kHeaderSize <= bytes->size(); k++) {
    auto* h = reinterpret_cast<uint8_t*>(bytes->data()) + pos;
    poolfs::util::PutLE64(h + 16, k);
    const size_t len =
        std::min<size_t>(poolfs::util::GetLE32(h + 8), bytes->size() - pos - kHeaderSize);
    poolfs::util::PutLE64(h + 88, poolfs::util::Xxh3_64(h + kHeaderSize, len));
    uint8_t chain[112];
    poolfs::util::PutLE64(chain, running);
    std::memcpy(chain + 8, h, 104);
    running = poolfs::util::Xxh3_64(chain, sizeof(chain));
    poolfs::util::PutLE64(h + 104, running);
    poolfs::util::PutLE64(h + 120, poolfs::util::Xxh3_64(h, 120));
    pos += kHeaderSize + len;
  }
}

struct Outcome {
  std::vector<Record> records;
  std::vector<uint64_t> ends;  // bytes consumed after each record
  Status status;               // OK: read through END and the end of input
  bool operator==(const Outcome& o) const {
    return records == o.records && ends == o.ends && status.code() == o.status.code() &&
           status.message() == o.status.message();
  }
};

Outcome Read(const std::string& in, size_t chunk) {
  size_t pos = 0;
  StreamReader reader([&](std::span<char> out) -> Result<size_t> {
    const size_t n = std::min({out.size(), in.size() - pos, chunk});
    std::memcpy(out.data(), in.data() + pos, n);
    pos += n;
    return n;
  });
  Outcome o;
  for (;;) {
    Result<std::optional<Record>> r = reader.Next();
    if (!r.ok()) {
      o.status = r.status();
      return o;
    }
    if (!r->has_value()) {
      if (reader.bytes() != in.size()) Fail("the reader stopped before the end", "");
      return o;
    }
    o.records.push_back(std::move(**r));
    o.ends.push_back(reader.bytes());
  }
}

// Writes `r` again through the writer's typed call for its type.
Status Rewrite(StreamWriter& w, const Record& r) {
  switch (r.type) {
    case RecordType::kBegin: {
      Result<BeginInfo> b = DecodeBegin(r);
      if (!b.ok()) Fail("a BEGIN read does not decode", b.status().ToString());
      return w.Begin(*b);
    }
    case RecordType::kObject: {
      Result<ObjectInfo> o = DecodeObject(r);
      if (!o.ok()) Fail("an OBJECT read does not decode", o.status().ToString());
      return w.Object(*o);
    }
    case RecordType::kFreeObjects: {
      Result<FreeObjectsInfo> f = DecodeFreeObjects(r);
      if (!f.ok()) Fail("a FREEOBJECTS read does not decode", f.status().ToString());
      return w.FreeObjects(*f);
    }
    case RecordType::kWrite: {
      Result<WriteInfo> wr = DecodeWrite(r);
      if (!wr.ok()) Fail("a WRITE read does not decode", wr.status().ToString());
      Result<std::string> logical = LogicalBytes(r);
      if (logical.ok() && logical->size() != wr->logical_length)
        Fail("LogicalBytes", "gave " + std::to_string(logical->size()) + " bytes");
      if (!logical.ok() && !logical.status().IsCorruption())
        Fail("LogicalBytes", logical.status().ToString());
      return w.Write(*wr);
    }
    case RecordType::kFree: {
      Result<FreeInfo> f = DecodeFree(r);
      if (!f.ok()) Fail("a FREE read does not decode", f.status().ToString());
      return w.Free(*f);
    }
    case RecordType::kEnd: {
      Result<EndInfo> e = DecodeEnd(r);
      if (!e.ok()) Fail("an END read does not decode", e.status().ToString());
      return w.End();
    }
    case RecordType::kPackage: break;  // never from a reader of one stream
  }
  Fail("the reader returned an unknown type", DescribeRecord(r));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::string in(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((mode & 1) != 0) Reseal(&in);
  const size_t chunk = (mode >> 1) == 0 ? SIZE_MAX : static_cast<size_t>(mode >> 1);

  const Outcome got = Read(in, chunk);
  if (!(Read(in, SIZE_MAX) == got)) Fail("reading depends on the chunking", "");
  if (!got.status.ok()) {
    if (got.status.code() != StatusCode::kCorruption)
      Fail("unexpected status", got.status.ToString());
    const std::string& m = got.status.message();
    if (m.find("record ") == std::string::npos && m.find("empty") == std::string::npos)
      Fail("a refusal names no record", m);
  }

  // The same bytes as a compound stream may be: read, never crash, refuse
  // only with Corruption; a PACKAGE comes first or not at all.
  {
    size_t pos = 0;
    StreamReader reader(
        [&](std::span<char> out) -> Result<size_t> {
          const size_t n = std::min({out.size(), in.size() - pos, chunk});
          std::memcpy(out.data(), in.data() + pos, n);
          pos += n;
          return n;
        },
        ReaderOptions{.packages = true});
    for (uint64_t n = 0;; n++) {
      Result<std::optional<Record>> r = reader.Next();
      if (!r.ok()) {
        if (r.status().code() != StatusCode::kCorruption)
          Fail("unexpected status reading packages", r.status().ToString());
        break;
      }
      if (!r->has_value()) break;
      if ((**r).type == RecordType::kPackage && n != 0)
        Fail("a PACKAGE after the first record", "");
    }
  }

  std::string out;
  StreamWriter w([&out](std::string_view b) {
    out += b;
    return Status::Ok();
  });
  for (size_t i = 0; i < got.records.size(); i++) {
    const Status st = Rewrite(w, got.records[i]);
    if (!st.ok()) Fail("the writer refuses a record the reader accepted", st.ToString());
    if (out.size() != got.ends[i] || out != std::string_view(in).substr(0, out.size()))
      Fail("a record read is not written back to the same bytes", DescribeRecord(got.records[i]));
  }
  return 0;
}
