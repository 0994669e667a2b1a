// Replication: a snapshot as a stream of bytes (`poolfs send`), and a
// stream applied to a pool (`poolfs receive`). DatasetAdmin::Send and
// DatasetAdmin::Receive (poolfs/dataset.h) take these.
//
// A stream carries one snapshot of one dataset: in full, or as the
// changes since an earlier snapshot of it (incremental). Its format is
// specified byte by byte in core/doc/send-stream-format.md; it does not
// depend on the sending pool's ashift, vdevs or compression.
//
// Receive is all or nothing: the stream is applied to a hidden dataset,
// and only once all of it has arrived and verified does the received
// snapshot (and, for a full stream, its dataset) appear, in one txg. A
// stream that is damaged, truncated, or for another base is refused, with
// a message naming the record and what is wrong, and the target is left
// exactly as it was.
//
// Thread safety: the callbacks are called on the thread that called Send
// or Receive, one call at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "poolfs/status.h"

namespace poolfs {

// Where a send writes its stream: called with consecutive pieces, each to
// be written whole; an error ends the send with that error.
using StreamSink = std::function<Status(std::string_view bytes)>;
// Where a receive reads its stream: fills a prefix of `buf` and returns
// how many bytes it filled; 0 means the end of the stream. An error ends
// the receive with that error.
using StreamSource = std::function<Result<size_t>(std::span<char> buf)>;

struct SendOptions {
  std::string snapshot;  // "tank/home@monday"
  // The base of an incremental stream: an earlier snapshot of the same
  // dataset, as "@sunday" or "tank/home@sunday"; empty: a full stream.
  std::string from;
  // Send data blocks as they are stored (compressed), not decompressed.
  bool compressed = false;
  // -t: the rest of the stream an interrupted `receive -s` keeps (its
  // target's receive_resume_token property); snapshot and from are then
  // empty: the token names them.
  std::string resume_token;
};

// What a send wrote (with no sink: what it would write).
struct SendSummary {
  std::string snapshot;  // the full name sent
  std::string from;      // the base's full name (incremental), else empty
  uint64_t bytes = 0;    // stream bytes
  uint64_t records = 0;
  uint64_t objects = 0;     // objects sent (created or changed)
  uint64_t data_bytes = 0;  // logical bytes of the data blocks sent
  // Blocks read: the data blocks sent, and the metadata blocks walked to
  // find what changed.
  uint64_t blocks_read = 0;
};

struct ReceiveOptions {
  // The dataset to receive into ("tank/backup/home"). A full stream
  // creates it (its parent must exist; AlreadyExists when it does); an
  // incremental stream applies to it, and its newest snapshot must be the
  // stream's base.
  std::string target;
  // -F: with an incremental stream, discard what changed in the target
  // since the base when the received snapshot is made; nothing is
  // discarded if the stream fails. (The base must be the target's newest
  // snapshot all the same: no snapshot is destroyed.)
  bool force = false;
  // -s: an interrupted receive keeps what it got, and the target's
  // receive_resume_token property says where to resume from (`send -t`).
  // While it is kept, only the rest of that stream is received into the
  // target.
  bool resumable = false;
  // -A: discards what an interrupted `receive -s` kept for the target;
  // reads no stream.
  bool abort = false;
};

// The snapshot a resume token (a target's receive_resume_token) continues,
// "POOL/PATH@NAME" as the sender named it. InvalidArgument saying what is
// wrong with a damaged token.
Result<std::string> ResumeTokenSnapshot(std::string_view token);

struct ReceiveSummary {
  std::string snapshot;  // the snapshot made ("tank/backup/home@monday")
  bool incremental = false;
  uint64_t bytes = 0;  // stream bytes read
  uint64_t records = 0;
  uint64_t objects = 0;     // objects created or changed
  uint64_t data_bytes = 0;  // logical bytes written
};

}  // namespace poolfs
