// `poolfs send` and `poolfs receive` apart from their command lines: what
// they ask (StreamRequest), carried over the control socket to the daemon
// of a mounted pool with the stream's pipe end, the daemon's side (run on
// its DatasetAdmin, poolfs/replication.h), the replies, and the lines the
// commands print.
//
// Over the control socket a request is "send " or "receive " + a JSON
// object, sent with one file descriptor (control.h's stream requests): for
// a send the write end of a pipe that the command copies to its standard
// output, for a receive the read end of one the command fills from its
// standard input. The reply is a JSON object: {"code": N, "message":
// "..."} for a failure (N a poolfs::StatusCode, as the dataset requests
// reply), or {"code": 0, "summary": {...}} with the SendSummary or
// ReceiveSummary. An estimate (`send -n`) is a send request with
// "estimate": true: the daemon writes nothing to the pipe.
//
// StreamJobs is the daemon's account of the streams it runs: before the
// daemon exports its pool (an unmount) it cancels them and waits for them
// to end, so that no send or receive outlives the pool; each then fails
// with a message saying the pool was unmounted, and the client exits 1.
//
// Thread safety: values and free functions; a StreamJobs may be used from
// any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "poolfs/dataset.h"
#include "poolfs/mutex.h"
#include "poolfs/replication.h"
#include "poolfs/status.h"
#include "stream_io.h"

namespace poolfs::daemon {

struct StreamRequest {
  enum class Kind : uint8_t { kSend, kReceive };
  Kind kind = Kind::kSend;
  SendOptions send;        // kSend
  bool estimate = false;   // kSend: no stream, the summary is an estimate (-n)
  ReceiveOptions receive;  // kReceive
};

// The options of `poolfs send [-i FROM] [-c] SNAPSHOT` or `poolfs send [-c]
// -t TOKEN`, checked: InvalidArgument when SNAPSHOT is not POOL/PATH@NAME,
// or FROM is neither @NAME nor POOL/PATH@NAME of the same pool (the pool
// decides whether it is an earlier snapshot of the same dataset), or a
// token comes with a snapshot or base, or does not decode.
Result<SendOptions> MakeSendOptions(std::string_view snapshot, std::string_view from,
                                    bool compressed, std::string_view resume_token = {});
// The snapshot a send sends: options.snapshot, or the one its resume
// token names (empty for a token that does not decode).
std::string SentSnapshot(const SendOptions& options);
// The options of `poolfs receive [-F] [-s] TARGET` or `poolfs receive -A
// TARGET`: InvalidArgument when TARGET is not a dataset name (POOL/PATH,
// no snapshot), or -A comes with another option.
Result<ReceiveOptions> MakeReceiveOptions(std::string_view target, bool force, bool resumable,
                                          bool abort = false);

// The pool a request is for (its snapshot's or its target's).
std::string PoolOfRequest(const StreamRequest& r);

// The wire forms (see above). The decoders refuse anything malformed with
// InvalidArgument (a request) or Corruption (a reply), saying what.
bool IsStreamRequest(std::string_view request);
std::string EncodeStreamRequest(const StreamRequest& r);
Result<StreamRequest> DecodeStreamRequest(std::string_view request);
std::string EncodeSendReply(const Result<SendSummary>& r);
Result<SendSummary> DecodeSendReply(std::string_view json);
std::string EncodeReceiveReply(const Result<ReceiveSummary>& r);
Result<ReceiveSummary> DecodeReceiveReply(std::string_view json);

class StreamJobs {
 public:
  StreamJobs() = default;
  StreamJobs(const StreamJobs&) = delete;
  StreamJobs& operator=(const StreamJobs&) = delete;

  // Counts a stream as running; the cancel's status (Aborted) once
  // CancelAndWait has been called, and then it must not start.
  Status Begin() EXCLUDES(mu_);
  void End() EXCLUDES(mu_);
  // Cancels every running stream (their pipe I/O fails with `reason`) and
  // refuses new ones, then waits until every one has ended.
  void CancelAndWait(std::string reason) EXCLUDES(mu_);
  const StreamCancel& cancel() const { return cancel_; }
  int running() EXCLUDES(mu_);

 private:
  StreamCancel cancel_;
  util::Mutex mu_;
  util::CondVar ended_;
  int running_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
};

// The daemon's side of a stream request: decodes `request`, runs the send
// (its sink writes to `fd`) or the receive (its source reads `fd`) on
// `admin` (nullptr: the mount has no datasets) under `jobs`, and returns
// the reply. `fd` stays the caller's to close.
std::string HandleStreamRequest(DatasetAdmin* admin, StreamJobs& jobs, std::string_view request,
                                int fd);

// The lines the commands print with -v:
// "would send tank/home@mon (incremental from tank/home@sun): about 12.3M (12894720 bytes), 345
// records, 12 objects"
std::string EstimateLine(const SendSummary& s);
// "sent tank/home@mon (incremental from tank/home@sun): 12.3M (12894720 bytes), 345 records in
// 3.0 s, 4.10M/s"
std::string SendSummaryLine(const SendSummary& s, double seconds);
// "received tank/backup/home@mon (full stream): 12.3M (12894720 bytes), 345 records, 12 objects
// in 3.0 s, 4.10M/s"
std::string ReceiveSummaryLine(const ReceiveSummary& s, double seconds);

}  // namespace poolfs::daemon
