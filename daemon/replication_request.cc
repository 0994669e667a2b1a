// Send and receive requests: checked, carried, served and printed; see
// replication_request.h.
#include "replication_request.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <cstdio>

#include "dataset_request.h"
#include "json_field.h"

namespace poolfs::daemon {
namespace {

using nlohmann::json;

constexpr std::string_view kSendPrefix = "send ";
constexpr std::string_view kReceivePrefix = "receive ";

// The summary object of a reply; the failure the reply carries, or
// Corruption for a reply that is no JSON object with a valid code.
Result<json> ParseReply(std::string_view text, std::string_view what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::Corruption(std::string(what) +
                              " reply from the daemon: not a JSON object: " + std::string(text));
  int code = -1;
  if (!JsonField(j, "code", &code) || code < 0 || code > int(kLastStatusCode))
    return Status::Corruption(std::string(what) + " reply from the daemon: no valid code");
  if (code != 0) {
    std::string message;
    JsonField(j, "message", &message);
    return Status(static_cast<StatusCode>(code), message);
  }
  auto s = j.find("summary");
  if (s == j.end() || !s->is_object())
    return Status::Corruption(std::string(what) + " reply from the daemon: no summary");
  return *s;
}

std::string FailureReply(const Status& st) {
  return json{{"code", int(st.code())}, {"message", st.message()}}.dump();
}

// "12.3M (12894720 bytes)"
std::string BytesBoth(uint64_t bytes) {
  return HumanBytes(bytes) + " (" + std::to_string(bytes) + " bytes)";
}

// "0.4 s", "12.0 s", then "1:05", "1:02:03".
std::string Elapsed(double seconds) {
  if (seconds >= 60) return HumanDuration(seconds);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", seconds < 0 ? 0.0 : seconds);
  return buf;
}

std::string SentWhat(const SendSummary& s) {
  return s.snapshot + (s.from.empty() ? " (full stream)" : " (incremental from " + s.from + ")");
}

}  // namespace

std::string SentSnapshot(const SendOptions& options) {
  if (options.resume_token.empty()) return options.snapshot;
  Result<std::string> s = ResumeTokenSnapshot(options.resume_token);
  return s.ok() ? *s : std::string();
}

Result<SendOptions> MakeSendOptions(std::string_view snapshot, std::string_view from,
                                    bool compressed, std::string_view resume_token) {
  if (!resume_token.empty()) {
    if (!snapshot.empty() || !from.empty())
      return Status::InvalidArgument(
          "-t: the token names the snapshot and its base; give neither a snapshot nor -i");
    POOLFS_RETURN_IF_ERROR(ResumeTokenSnapshot(resume_token).status().WithContext("-t"));
    SendOptions o;
    o.compressed = compressed;
    o.resume_token = std::string(resume_token);
    return o;
  }
  POOLFS_RETURN_IF_ERROR(ValidateSnapshotName(snapshot));
  SendOptions o;
  o.snapshot = std::string(snapshot);
  o.compressed = compressed;
  if (!from.empty()) {
    const std::string dataset(snapshot.substr(0, snapshot.find('@')));
    if (from.starts_with("@")) {
      if (Status st = ValidateSnapshotName(dataset + std::string(from)); !st.ok())
        return st.WithContext("-i " + std::string(from));
    } else if (from.find('@') == std::string_view::npos) {
      return Status::InvalidArgument("-i " + std::string(from) +
                                     ": the base of an incremental stream is a snapshot: give "
                                     "@NAME (of " +
                                     dataset + ") or POOL/PATH@NAME");
    } else {
      if (Status st = ValidateSnapshotName(from); !st.ok()) return st.WithContext("-i");
      if (PoolOf(from) != PoolOf(snapshot))
        return Status::InvalidArgument("-i " + std::string(from) + ": the base is in pool '" +
                                       PoolOf(from) + "', the snapshot sent in '" +
                                       PoolOf(snapshot) + "': both must be of one dataset");
    }
    if (from == snapshot || dataset + std::string(from) == snapshot)
      return Status::InvalidArgument("-i " + std::string(from) +
                                     ": the base must be an earlier snapshot than " +
                                     std::string(snapshot) + ", not itself");
    o.from = std::string(from);
  }
  return o;
}

Result<ReceiveOptions> MakeReceiveOptions(std::string_view target, bool force, bool resumable,
                                          bool abort) {
  if (abort && (force || resumable))
    return Status::InvalidArgument(
        "-A discards what an interrupted receive kept, and reads no stream: give it alone");
  if (target.find('@') != std::string_view::npos)
    return Status::InvalidArgument("'" + std::string(target) +
                                   "': receive into a dataset, POOL/PATH: the snapshot takes the "
                                   "name it has in the stream");
  POOLFS_RETURN_IF_ERROR(ValidateDatasetPath(target));
  ReceiveOptions o;
  o.target = std::string(target);
  o.force = force;
  o.resumable = resumable;
  o.abort = abort;
  return o;
}

std::string PoolOfRequest(const StreamRequest& r) {
  return PoolOf(r.kind == StreamRequest::Kind::kSend ? SentSnapshot(r.send) : r.receive.target);
}

bool IsStreamRequest(std::string_view request) {
  return request.starts_with(kSendPrefix) || request.starts_with(kReceivePrefix);
}

std::string EncodeStreamRequest(const StreamRequest& r) {
  if (r.kind == StreamRequest::Kind::kSend) {
    return std::string(kSendPrefix) + json{{"snapshot", r.send.snapshot},
                                           {"from", r.send.from},
                                           {"compressed", r.send.compressed},
                                           {"resume_token", r.send.resume_token},
                                           {"estimate", r.estimate}}
                                          .dump();
  }
  return std::string(kReceivePrefix) + json{{"target", r.receive.target},
                                            {"force", r.receive.force},
                                            {"resumable", r.receive.resumable},
                                            {"abort", r.receive.abort}}
                                           .dump();
}

Result<StreamRequest> DecodeStreamRequest(std::string_view request) {
  StreamRequest r;
  std::string_view body;
  if (request.starts_with(kSendPrefix)) {
    r.kind = StreamRequest::Kind::kSend;
    body = request.substr(kSendPrefix.size());
  } else if (request.starts_with(kReceivePrefix)) {
    r.kind = StreamRequest::Kind::kReceive;
    body = request.substr(kReceivePrefix.size());
  } else {
    return Status::InvalidArgument("not a send or receive request");
  }
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument("stream request: not a JSON object");
  if (r.kind == StreamRequest::Kind::kSend) {
    if (!JsonField(j, "snapshot", &r.send.snapshot) || !JsonField(j, "from", &r.send.from) ||
        !JsonField(j, "compressed", &r.send.compressed) || !JsonField(j, "estimate", &r.estimate) ||
        !JsonField(j, "resume_token", &r.send.resume_token))
      return Status::InvalidArgument("send request: a field is missing or malformed");
    POOLFS_ASSIGN_OR_RETURN(
        SendOptions checked,
        MakeSendOptions(r.send.snapshot, r.send.from, r.send.compressed, r.send.resume_token));
    r.send = std::move(checked);
  } else {
    if (!JsonField(j, "target", &r.receive.target) || !JsonField(j, "force", &r.receive.force) ||
        !JsonField(j, "resumable", &r.receive.resumable) ||
        !JsonField(j, "abort", &r.receive.abort))
      return Status::InvalidArgument("receive request: a field is missing or malformed");
    POOLFS_ASSIGN_OR_RETURN(ReceiveOptions checked,
                            MakeReceiveOptions(r.receive.target, r.receive.force,
                                               r.receive.resumable, r.receive.abort));
    r.receive = std::move(checked);
  }
  return r;
}

std::string EncodeSendReply(const Result<SendSummary>& r) {
  if (!r.ok()) return FailureReply(r.status());
  return json{{"code", 0},
              {"summary",
               {{"snapshot", r->snapshot},
                {"from", r->from},
                {"bytes", r->bytes},
                {"records", r->records},
                {"objects", r->objects},
                {"data_bytes", r->data_bytes},
                {"blocks_read", r->blocks_read}}}}
      .dump();
}

Result<SendSummary> DecodeSendReply(std::string_view text) {
  POOLFS_ASSIGN_OR_RETURN(json s, ParseReply(text, "send"));
  SendSummary out;
  if (!JsonField(s, "snapshot", &out.snapshot) || !JsonField(s, "from", &out.from) ||
      !JsonField(s, "bytes", &out.bytes) || !JsonField(s, "records", &out.records) ||
      !JsonField(s, "objects", &out.objects) || !JsonField(s, "data_bytes", &out.data_bytes) ||
      !JsonField(s, "blocks_read", &out.blocks_read))
    return Status::Corruption("send reply from the daemon: a malformed summary");
  return out;
}

std::string EncodeReceiveReply(const Result<ReceiveSummary>& r) {
  if (!r.ok()) return FailureReply(r.status());
  return json{{"code", 0},
              {"summary",
               {{"snapshot", r->snapshot},
                {"incremental", r->incremental},
                {"bytes", r->bytes},
                {"records", r->records},
                {"objects", r->objects},
                {"data_bytes", r->data_bytes}}}}
      .dump();
}

Result<ReceiveSummary> DecodeReceiveReply(std::string_view text) {
  POOLFS_ASSIGN_OR_RETURN(json s, ParseReply(text, "receive"));
  ReceiveSummary out;
  if (!JsonField(s, "snapshot", &out.snapshot) || !JsonField(s, "incremental", &out.incremental) ||
      !JsonField(s, "bytes", &out.bytes) || !JsonField(s, "records", &out.records) ||
      !JsonField(s, "objects", &out.objects) || !JsonField(s, "data_bytes", &out.data_bytes))
    return Status::Corruption("receive reply from the daemon: a malformed summary");
  return out;
}

Status StreamJobs::Begin() {
  util::MutexLock l(&mu_);
  if (closed_) return cancel_.status();
  ++running_;
  return Status::Ok();
}

void StreamJobs::End() {
  util::MutexLock l(&mu_);
  --running_;
  if (running_ == 0) ended_.SignalAll();
}

void StreamJobs::CancelAndWait(std::string reason) {
  {
    util::MutexLock l(&mu_);
    closed_ = true;
  }
  cancel_.Cancel(std::move(reason));
  util::MutexLock l(&mu_);
  while (running_ > 0) ended_.Wait(&mu_);
}

int StreamJobs::running() {
  util::MutexLock l(&mu_);
  return running_;
}

std::string HandleStreamRequest(DatasetAdmin* admin, StreamJobs& jobs, std::string_view request,
                                int fd) {
  Result<StreamRequest> r = DecodeStreamRequest(request);
  if (!r.ok()) return FailureReply(r.status());
  const bool send = r->kind == StreamRequest::Kind::kSend;
  if (admin == nullptr)
    return FailureReply(Status::NotSupported("this mount has no datasets to send or receive"));
  if (Status st = jobs.Begin(); !st.ok()) return FailureReply(st);
  const StreamCancel* cancel = &jobs.cancel();
  std::string reply;
  if (send) {
    spdlog::info("send {}{}{}", r->send.snapshot,
                 r->send.from.empty() ? "" : " incremental from " + r->send.from,
                 r->estimate ? " (estimate)" : "");
    StreamSink sink;
    if (!r->estimate) {
      sink = [fd, cancel](std::string_view bytes) {
        return WriteAll(fd, bytes, "the pipe to poolfs send", cancel);
      };
    }
    Result<SendSummary> s = admin->Send(r->send, sink);
    if (s.ok()) {
      spdlog::info("sent {}: {} bytes, {} records", s->snapshot, s->bytes, s->records);
    } else {
      spdlog::warn("send {}: {}", r->send.snapshot, s.status().ToString());
    }
    reply = EncodeSendReply(s);
  } else {
    spdlog::info("receive into {}{}{}", r->receive.target, r->receive.force ? " (force)" : "",
                 r->receive.resumable ? " (resumable)" : "");
    const StreamSource source = [fd, cancel](std::span<char> buf) {
      return ReadSome(fd, buf, "the pipe from poolfs receive", cancel);
    };
    Result<ReceiveSummary> s = admin->Receive(r->receive, source);
    if (s.ok()) {
      spdlog::info("received {}: {} bytes, {} records", s->snapshot, s->bytes, s->records);
    } else {
      spdlog::warn("receive into {}: {}", r->receive.target, s.status().ToString());
    }
    reply = EncodeReceiveReply(s);
  }
  jobs.End();
  return reply;
}

std::string EstimateLine(const SendSummary& s) {
  return "would send " + SentWhat(s) + ": about " + BytesBoth(s.bytes) + ", " +
         std::to_string(s.records) + " records, " + std::to_string(s.objects) + " objects";
}

std::string SendSummaryLine(const SendSummary& s, double seconds) {
  return "sent " + SentWhat(s) + ": " + BytesBoth(s.bytes) + ", " + std::to_string(s.records) +
         " records in " + Elapsed(seconds) + ", " + HumanRate(s.bytes, seconds);
}

std::string ReceiveSummaryLine(const ReceiveSummary& s, double seconds) {
  if (s.snapshot.empty()) return "discarded what the interrupted receive had kept";
  return "received " + s.snapshot + (s.incremental ? " (incremental stream)" : " (full stream)") +
         ": " + BytesBoth(s.bytes) + ", " + std::to_string(s.records) + " records, " +
         std::to_string(s.objects) + " objects in " + Elapsed(seconds) + ", " +
         HumanRate(s.bytes, seconds);
}

}  // namespace poolfs::daemon
