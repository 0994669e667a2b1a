// Replication streams: the records of `poolfs send | poolfs receive`, their
// encoder (StreamWriter) and their strict decoder (StreamReader).
//
// Theory. A send stream carries one snapshot of one dataset (a full stream)
// or the changes between two snapshots of it (an incremental stream) as a
// sequence of records, specified byte by byte in
// core/doc/send-stream-format.md. Each record is a 128-byte header and
// `payload_len` payload bytes:
//
//   BEGIN        what the stream is: version, features, GUIDs, names
//   OBJECT       an object exists with these attributes and bonus bytes
//   FREEOBJECTS  a range of object ids is free on the sender
//   WRITE        one data block of the open object
//   FREE         a byte range of the open object is a hole
//   END          the stream is complete: counts that must match
//
// A compound stream (`send -R`) is a PACKAGE record listing streams, then
// those streams, one running checksum through all (PackageInfo below).
//
// Invariants, which the reader checks on every record and the writer on
// every call (so that neither can let a bad stream through):
//   - every header carries its own checksum, its payload's checksum, and a
//     running checksum chained through all the headers before it, so a
//     record changed, dropped, duplicated, reordered or spliced in from
//     another stream is refused at that record;
//   - records are numbered 0, 1, 2, ... in their header (BEGIN is 0), and
//     END repeats the record count, the payload byte count and BEGIN's
//     to_guid;
//   - BEGIN comes first, END last, nothing after END;
//   - after BEGIN, the records walk the object ids upwards: OBJECT ids and
//     FREEOBJECTS ranges strictly increase and never overlap; WRITE and FREE
//     belong to the object the last OBJECT record opened, and their byte
//     ranges strictly increase without overlapping (a FREE to the end is the
//     object's last record);
//   - with the RESUMING feature, nothing comes before the resume point.
// The reader checks structure, not meaning: whether a WRITE's compressed
// payload decodes (LogicalBytes does that), whether the from_guid is a
// snapshot the receiver has, and what the records do to a dataset are the
// receiver's business.
//
// Callers: the send traversal (send.h) feeds a StreamWriter whose sink is
// the output pipe; the receive engine (receive.h) pulls records from a
// StreamReader over the input pipe and applies them.
//
// Errors: the reader returns Corruption for any damage, naming the record
// ("send stream record 7 (WRITE object 12 offset 131072): ...") and what is
// wrong; an error of the source passes through unchanged. The writer
// returns InvalidArgument for a call that would make a bad stream (and
// writes nothing for it), and the sink's error when the sink fails (the
// writer is then broken: every later call returns that error).
//
// Thread safety: a StreamWriter or StreamReader is used by one thread at a
// time; the free functions are pure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "poolfs/status.h"

namespace poolfs::core::send {

// Header layout (section 2 of the spec).
inline constexpr uint32_t kRecordMagic = 0x52534650;  // bytes 'P' 'F' 'S' 'R'
inline constexpr size_t kHeaderSize = 128;
// The running checksum BEGIN chains from: the bytes "PFSSTRM1" as a u64 LE.
inline constexpr uint64_t kRunningSeed = 0x314d525453534650ull;
// The stream version this build writes and the highest it reads.
inline constexpr uint64_t kStreamVersion = 1;

// Payload limits, per type (a header over them is refused before its
// payload is read).
inline constexpr uint32_t kMaxPayload = 16u << 20;
inline constexpr uint32_t kMaxBeginPayload = 1u << 20;
inline constexpr uint32_t kMaxBonus = 384;
inline constexpr uint32_t kMinBlockSize = 512;
inline constexpr uint32_t kMaxBlockSize = 1u << 20;
inline constexpr uint64_t kMaxObjectId = (uint64_t{1} << 48) - 1;
// A FREE record's length meaning "to the end of the object".
inline constexpr uint64_t kToEnd = UINT64_MAX;
// BEGIN's names and property values.
inline constexpr size_t kMaxDatasetName = 1024;
inline constexpr size_t kMaxNameComponent = 255;
inline constexpr size_t kMaxPropertyValue = 65535;

// Record types: stream values, never renumber. PACKAGE opens a compound
// (`send -R`) stream only: a reader takes it only when told to
// (ReaderOptions::packages).
enum class RecordType : uint16_t {
  kBegin = 1,
  kObject = 2,
  kFreeObjects = 3,
  kWrite = 4,
  kFree = 5,
  kEnd = 6,
  kPackage = 7,
};
// "BEGIN", "OBJECT", ...; "type N" for a value that is not a RecordType.
std::string RecordTypeName(uint16_t type);

// BEGIN's feature bits (f1).
inline constexpr uint64_t kFeatureCompressed = 1u << 0;  // WRITE payloads may be compressed
inline constexpr uint64_t kFeatureResuming = 1u << 1;    // continues an interrupted receive
inline constexpr uint64_t kKnownFeatures = kFeatureCompressed | kFeatureResuming;

// OBJECT's flag: the receiver does not have the object and starts it
// afresh (the spec, 4.2).
inline constexpr uint16_t kObjectNew = 1u << 0;

// Object types a dataset holds (the DMU's ObjectType values).
inline constexpr uint8_t kObjectTypePlain = 2;
inline constexpr uint8_t kObjectTypeDirectory = 3;
inline constexpr uint8_t kObjectTypeZap = 6;

// Compression values (the DMU's and util::Compression's).
inline constexpr uint8_t kCompressOff = 0;
inline constexpr uint8_t kCompressLz4 = 1;
inline constexpr uint8_t kCompressZstd = 2;

// One record as it travels, its header fields decoded (the checksums and
// the running value are the reader's and writer's business and are not
// kept). f[0..7] mean what the type says; the typed Decode functions below
// turn a record into its meaning.
struct Record {
  RecordType type = RecordType::kBegin;
  uint16_t flags = 0;  // per type: kObjectNew on OBJECT; else 0
  uint64_t index = 0;  // position in the stream; BEGIN is 0
  std::array<uint64_t, 8> f{};
  std::string payload;
  bool operator==(const Record&) const = default;
};

struct BeginInfo {
  uint64_t version = kStreamVersion;
  uint64_t features = 0;       // kFeature* bits
  uint64_t to_guid = 0;        // the sent snapshot's GUID: nonzero
  uint64_t from_guid = 0;      // incremental: the base snapshot's GUID; full: 0
  uint64_t to_txg = 0;         // the sent snapshot's txg on the sender (informative)
  int64_t creation_time = 0;   // the sent snapshot's, seconds since the epoch
  uint64_t resume_object = 0;  // RESUMING only: where the stream picks up
  uint64_t resume_offset = 0;
  std::string dataset;   // "tank/home": the sender's dataset
  std::string snapshot;  // "monday": the sent snapshot (after the '@')
  std::string from;      // incremental: the base snapshot's name; full: empty
  // Properties (for `send -R` and `-p`), sorted by name, each once.
  std::vector<std::pair<std::string, std::string>> props;
  bool operator==(const BeginInfo&) const = default;
};

struct ObjectInfo {
  uint64_t object = 0;  // 1 .. kMaxObjectId
  uint8_t type = kObjectTypePlain;
  uint32_t block_size = 0;             // a power of two, kMinBlockSize .. kMaxBlockSize
  uint64_t length = 0;                 // bytes
  uint64_t generation = 0;             // the txg that created it on the sender: nonzero
  uint8_t compression = kCompressOff;  // the dnode's
  uint8_t bonus_type = 0;
  std::string bonus;  // at most kMaxBonus bytes
  // New to the receiver (kObjectNew): it starts the object afresh.
  bool fresh = false;
  bool operator==(const ObjectInfo&) const = default;
};

struct FreeObjectsInfo {
  uint64_t first = 0;  // 1 ..
  uint64_t count = 0;  // nonzero; first + count <= 2^48
  bool operator==(const FreeObjectsInfo&) const = default;
};

struct WriteInfo {
  uint64_t object = 0;
  uint64_t offset = 0;                 // a multiple of the object's block size
  uint32_t logical_length = 0;         // == the object's block size
  uint8_t compression = kCompressOff;  // of `data`; lz4/zstd need COMPRESSED
  // Uncompressed: logical_length bytes. Compressed: fewer, as stored.
  std::string data;
  bool operator==(const WriteInfo&) const = default;
};

struct FreeInfo {
  uint64_t object = 0;
  uint64_t offset = 0;
  uint64_t length = 0;  // nonzero; kToEnd: to the end of the object
  bool operator==(const FreeInfo&) const = default;
};

// A compound stream (`send -R`, the spec's section 4.7): its PACKAGE
// record lists the streams that follow, each a whole BEGIN..END stream of
// one snapshot of the sent dataset or of a descendant (`path` below it;
// empty: the dataset itself), in order, chained into one running checksum.
struct PackageEntry {
  std::string path;        // "child/grandchild"; "": the sent dataset
  uint64_t to_guid = 0;    // its BEGIN's: nonzero
  uint64_t from_guid = 0;  // its BEGIN's: 0 for a full stream
  bool operator==(const PackageEntry&) const = default;
};
struct PackageInfo {
  std::string dataset;  // "tank/home": the sent dataset on the sender
  std::vector<PackageEntry> streams;
  bool operator==(const PackageInfo&) const = default;
};
inline constexpr size_t kMaxPackageStreams = 1u << 16;

struct EndInfo {
  uint64_t to_guid = 0;        // BEGIN's
  uint64_t records = 0;        // records before END (END's own index)
  uint64_t payload_bytes = 0;  // payload bytes of those records
  bool operator==(const EndInfo&) const = default;
};

// The typed meaning of a record. Each checks that the record has that type
// and that its fields and payload follow the rules of their type alone (not
// the order rules, which need the stream: StreamChecker); Corruption naming
// the record otherwise. A record a StreamReader returned always decodes.
Result<BeginInfo> DecodeBegin(const Record& r);
Result<ObjectInfo> DecodeObject(const Record& r);
Result<FreeObjectsInfo> DecodeFreeObjects(const Record& r);
Result<WriteInfo> DecodeWrite(const Record& r);
Result<FreeInfo> DecodeFree(const Record& r);
Result<EndInfo> DecodeEnd(const Record& r);

// PACKAGE's payload (the spec, 4.7), and its decoder: Corruption saying
// what is wrong (`where` names the record).
std::string EncodePackagePayload(const PackageInfo& info);
Result<PackageInfo> DecodePackagePayload(std::string_view payload, const std::string& where);
// Writes the PACKAGE record of `info` to `sink`; returns the running value
// the first stream's writer chains from (StreamWriter's `chain_from`).
// InvalidArgument for a package a reader would refuse.
Result<uint64_t> WritePackage(const PackageInfo& info,
                              const std::function<Status(std::string_view)>& sink);

// The logical bytes of a WRITE record: its payload, decompressed when it is
// stored compressed. Corruption naming the record when it is not a WRITE,
// or its payload does not decode to exactly the logical length.
Result<std::string> LogicalBytes(const Record& r);

// "record 7 (WRITE object 12 offset 131072)": how messages name a record.
std::string DescribeRecord(const Record& r);

// The order rules of a stream (see the top of this file), record by
// record. The reader and the writer each keep one; exposed for tests and
// tools that build records by hand.
class StreamChecker {
 public:
  // Checks `r` (already known to be well-formed for its type) against the
  // records accepted so far and, if it follows them, accepts it. Corruption
  // naming the record otherwise; nothing changes then.
  Status Accept(const Record& r);
  // The index the next record must have (the number of records accepted).
  uint64_t next_index() const { return next_index_; }
  bool begun() const { return begun_; }
  bool ended() const { return ended_; }
  // BEGIN's features and to_guid (0 before BEGIN).
  uint64_t features() const { return features_; }
  uint64_t to_guid() const { return to_guid_; }
  // Payload bytes of the records accepted so far.
  uint64_t payload_bytes() const { return payload_bytes_; }

 private:
  uint64_t next_index_ = 0;
  uint64_t payload_bytes_ = 0;
  bool begun_ = false;
  bool ended_ = false;
  uint64_t features_ = 0;
  uint64_t to_guid_ = 0;
  // The lowest id the next OBJECT or FREEOBJECTS may name.
  uint64_t min_object_ = 1;
  // The object WRITE and FREE records belong to (0: none open).
  uint64_t open_object_ = 0;
  uint32_t open_block_size_ = 0;
  // The lowest offset the next WRITE or FREE of the open object may name.
  uint64_t min_offset_ = 0;
  bool freed_to_end_ = false;
  // RESUMING: the resume point, until the first object record (0: none).
  uint64_t resume_object_ = 0;
  uint64_t resume_offset_ = 0;
};

// Writes a stream to a byte sink, one record per call. Each call checks
// the record's fields and the order rules and returns InvalidArgument
// (writing nothing) for a record that would make a bad stream; the sink's
// error otherwise, after which every call returns it.
class StreamWriter {
 public:
  // `sink` is called with the bytes of each record, in order (a header and
  // a payload may come in separate calls). `chain_from`: the running value
  // its BEGIN chains from (a compound stream's: the record before it).
  explicit StreamWriter(std::function<Status(std::string_view)> sink,
                        uint64_t chain_from = kRunningSeed);

  // `info.version` must be kStreamVersion.
  Status Begin(const BeginInfo& info);
  Status Object(const ObjectInfo& info);
  Status FreeObjects(const FreeObjectsInfo& info);
  Status Write(const WriteInfo& info);
  Status Free(const FreeInfo& info);
  // Writes END with the counts so far.
  Status End();

  // Bytes handed to the sink so far.
  uint64_t bytes() const { return bytes_; }
  // Records written so far.
  uint64_t records() const { return checker_.next_index(); }
  // The running value of the last record written (what a compound
  // stream's next stream chains from).
  uint64_t running() const { return running_; }

 private:
  // Fills in the record's index, checks it, and writes it.
  Status Emit(Record r);

  std::function<Status(std::string_view)> sink_;
  StreamChecker checker_;
  uint64_t running_ = kRunningSeed;
  uint64_t bytes_ = 0;
  Status broken_;
};

struct ReaderOptions {
  // Take a compound stream too: its PACKAGE record first, then each
  // stream it lists (BEGIN..END, each checked against its entry), then the
  // end of input.
  bool packages = false;
};

// Reads a stream from a byte source, one record per Next.
class StreamReader {
 public:
  // `source` fills a prefix of the span it is given and returns how many
  // bytes it wrote; 0 means the end of the input. Its errors pass through.
  explicit StreamReader(std::function<Result<size_t>(std::span<char>)> source,
                        ReaderOptions options = {});

  // The next record, checked (header, payload, type rules, order rules);
  // nullopt once END has been returned and the source is at its end (the
  // call after END reads on until the source says so: a pipe's writer must
  // close it).
  // Corruption naming the record for damage, a stream that ends early
  // ("truncated after record N") or bytes after END; after an error every
  // call returns it.
  Result<std::optional<Record>> Next();

  // Bytes consumed from the source so far.
  uint64_t bytes() const { return bytes_; }
  // BEGIN's meaning, once Next has returned it (of the stream being read,
  // in a compound one).
  const std::optional<BeginInfo>& begin() const { return begin_; }
  // A compound stream's PACKAGE, once Next has returned it.
  const std::optional<PackageInfo>& package() const { return package_; }

 private:
  // Reads up to `want` bytes into `out`; fewer only at the end of input.
  Result<size_t> Fill(char* out, size_t want);
  Result<std::optional<Record>> ReadRecord();

  std::function<Result<size_t>(std::span<char>)> source_;
  StreamChecker checker_;
  uint64_t running_ = kRunningSeed;
  uint64_t bytes_ = 0;
  bool done_ = false;
  Status broken_;
  std::optional<BeginInfo> begin_;
  std::string last_;  // DescribeRecord of the last record returned
  const ReaderOptions options_;
  std::optional<PackageInfo> package_;
  size_t streams_done_ = 0;  // of a compound stream: those read to END
  uint64_t records_ = 0;     // records returned, all streams
};

// Encodes the header of `r` whose running checksum chains from
// `prev_running` into `out` (kHeaderSize bytes) and returns the header's
// running value. Does not check `r`. For tools and tests.
uint64_t EncodeHeader(const Record& r, uint64_t prev_running, uint8_t* out);

// Encodes BEGIN's payload (the names and properties) exactly as the
// writer does. Does not check them.
std::string EncodeBeginPayload(const BeginInfo& info);

}  // namespace poolfs::core::send
