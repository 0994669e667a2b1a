// `poolfs send` and `poolfs receive` apart from their command lines: the
// options checked (-i's forms), requests and replies carried intact (and
// refused when malformed), the daemon's side on a fake admin through real
// pipes (the stream, the estimate without a sink, an engine's error passed
// through, a cancel ending a blocked send), the pipe I/O (EPIPE without
// SIGPIPE, EOF), and the lines printed.
#include "daemon/replication_request.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "daemon/stream_io.h"
#include "send/resume_token.h"
#include "test_pipe.h"

namespace poolfs::daemon {
namespace {

// An admin whose Send writes `stream` in pieces (or, without a sink, only
// says how long it is), and whose Receive reads to the end into `received`.
class StreamAdmin : public DatasetAdmin {
 public:
  std::string stream = std::string(100000, 's');
  std::string received;
  Status fail;  // returned by Send and Receive when set
  bool sink_given = false;
  SendOptions sent_options;
  ReceiveOptions receive_options;

  Result<SendSummary> Send(const SendOptions& o, const StreamSink& sink) override {
    sent_options = o;
    sink_given = static_cast<bool>(sink);
    if (!fail.ok()) return fail;
    if (sink) {
      for (size_t at = 0; at < stream.size(); at += 7000)
        POOLFS_RETURN_IF_ERROR(sink(std::string_view(stream).substr(at, 7000)));
    }
    SendSummary s;
    s.snapshot = "tank/home@b";
    s.from = o.from.empty() ? "" : "tank/home@a";
    s.bytes = stream.size();
    s.records = 12;
    s.objects = 3;
    return s;
  }
  Result<ReceiveSummary> Receive(const ReceiveOptions& o, const StreamSource& source) override {
    receive_options = o;
    if (!fail.ok()) return fail;
    char buf[3000];
    for (;;) {
      POOLFS_ASSIGN_OR_RETURN(size_t n, source(buf));
      if (n == 0) break;
      received.append(buf, n);
    }
    ReceiveSummary s;
    s.snapshot = o.target + "@b";
    s.bytes = received.size();
    s.records = 12;
    return s;
  }

  Status Create(std::string_view, bool, const std::vector<PropertyAssignment>&) override {
    return Unused();
  }
  Status Destroy(std::string_view, bool) override { return Unused(); }
  Status Snapshot(const std::vector<std::string>&, bool) override { return Unused(); }
  Status Rollback(std::string_view, bool) override { return Unused(); }
  Result<std::vector<SnapshotInfo>> ListSnapshots(std::string_view, bool) override {
    return Unused();
  }
  Status Rename(std::string_view, std::string_view) override { return Unused(); }
  Result<std::vector<DatasetInfo>> List(std::string_view, bool) override { return Unused(); }
  Result<std::vector<DatasetProperty>> Get(std::string_view,
                                           const std::vector<std::string>&) override {
    return Unused();
  }
  Status Set(std::string_view, const PropertyAssignment&) override { return Unused(); }
  Status Inherit(std::string_view, std::string_view) override { return Unused(); }
  Status Clone(std::string_view, std::string_view,
               const std::vector<PropertyAssignment>&) override {
    return Unused();
  }
  Status Promote(std::string_view) override { return Unused(); }
  Result<std::vector<DiffEntry>> Diff(std::string_view, std::string_view) override {
    return Unused();
  }

 private:
  static Status Unused() { return Status::NotSupported("not in this test"); }
};

StreamRequest SendRequest(std::string snapshot, std::string from = "", bool estimate = false) {
  StreamRequest r;
  r.kind = StreamRequest::Kind::kSend;
  r.send.snapshot = std::move(snapshot);
  r.send.from = std::move(from);
  r.estimate = estimate;
  return r;
}

StreamRequest ReceiveRequest(std::string target) {
  StreamRequest r;
  r.kind = StreamRequest::Kind::kReceive;
  r.receive.target = std::move(target);
  return r;
}

TEST_CASE("send -i takes @NAME or POOL/PATH@NAME and refuses other bases") {
  auto full = MakeSendOptions("tank/home@b", "", true);
  REQUIRE(full.ok());
  CHECK(full->snapshot == "tank/home@b");
  CHECK(full->from.empty());
  CHECK(full->compressed);
  auto short_base = MakeSendOptions("tank/home@b", "@a", false);
  REQUIRE(short_base.ok());
  CHECK(short_base->from == "@a");
  auto long_base = MakeSendOptions("tank/home@b", "tank/home@a", false);
  REQUIRE(long_base.ok());
  CHECK(long_base->from == "tank/home@a");

  auto no_at = MakeSendOptions("tank/home", "", false);
  CHECK(no_at.status().code() == StatusCode::kInvalidArgument);
  auto bare = MakeSendOptions("tank/home@b", "a", false);
  CHECK(bare.status().code() == StatusCode::kInvalidArgument);
  CHECK(bare.status().message().find("give @NAME") != std::string::npos);
  auto other_pool = MakeSendOptions("tank/home@b", "backup/home@a", false);
  CHECK(other_pool.status().code() == StatusCode::kInvalidArgument);
  CHECK(other_pool.status().message().find("pool 'backup'") != std::string::npos);
  CHECK(MakeSendOptions("tank/home@b", "@b", false).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(MakeSendOptions("tank/home@b", "@", false).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("receive takes a dataset, not a snapshot") {
  auto ok = MakeReceiveOptions("backup/home", true, true);
  REQUIRE(ok.ok());
  CHECK(ok->target == "backup/home");
  CHECK(ok->force);
  CHECK(ok->resumable);
  auto snap = MakeReceiveOptions("backup/home@x", false, false);
  CHECK(snap.status().code() == StatusCode::kInvalidArgument);
  CHECK(snap.status().message().find("receive into a dataset") != std::string::npos);
  CHECK(MakeReceiveOptions("backup//home", false, false).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(MakeReceiveOptions("", false, false).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("send -t takes a token alone, receive -A is given alone, and both cross the wire") {
  core::send::ResumeToken t;
  t.to_guid = 5;
  t.object = 9;
  t.dataset = "tank/home";
  t.snapshot = "b";
  const std::string token = core::send::EncodeResumeToken(t);
  auto resumed = MakeSendOptions("", "", true, token);
  INFO(resumed.status().ToString());
  REQUIRE(resumed.ok());
  CHECK(resumed->resume_token == token);
  CHECK(SentSnapshot(*resumed) == "tank/home@b");
  CHECK(MakeSendOptions("tank/home@b", "", false, token).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(MakeSendOptions("", "@a", false, token).status().code() == StatusCode::kInvalidArgument);
  auto damaged = MakeSendOptions("", "", false, token.substr(0, token.size() - 1));
  CHECK(damaged.status().code() == StatusCode::kInvalidArgument);
  CHECK(damaged.status().message().find("-t: resume token:") != std::string::npos);
  StreamRequest s;
  s.kind = StreamRequest::Kind::kSend;
  s.send = *resumed;
  auto back = DecodeStreamRequest(EncodeStreamRequest(s));
  REQUIRE(back.ok());
  CHECK(back->send.resume_token == token);
  CHECK(PoolOfRequest(*back) == "tank");

  auto abort = MakeReceiveOptions("backup/home", false, false, true);
  REQUIRE(abort.ok());
  CHECK(abort->abort);
  CHECK(MakeReceiveOptions("backup/home", false, true, true).status().code() ==
        StatusCode::kInvalidArgument);
  StreamRequest r;
  r.kind = StreamRequest::Kind::kReceive;
  r.receive = *abort;
  auto rback = DecodeStreamRequest(EncodeStreamRequest(r));
  REQUIRE(rback.ok());
  CHECK(rback->receive.abort);
  CHECK(ReceiveSummaryLine(ReceiveSummary{}, 0.1).find("discarded") != std::string::npos);
}

TEST_CASE("Stream requests and replies survive their wire forms") {
  StreamRequest s = SendRequest("tank/home@b", "@a", true);
  s.send.compressed = true;
  const std::string wire = EncodeStreamRequest(s);
  CHECK(wire.starts_with("send {"));
  CHECK(IsStreamRequest(wire));
  auto back = DecodeStreamRequest(wire);
  REQUIRE(back.ok());
  CHECK(back->kind == StreamRequest::Kind::kSend);
  CHECK(back->send.snapshot == "tank/home@b");
  CHECK(back->send.from == "@a");
  CHECK(back->send.compressed);
  CHECK(back->estimate);
  CHECK(PoolOfRequest(*back) == "tank");

  StreamRequest r = ReceiveRequest("backup/home");
  r.receive.force = true;
  auto rback = DecodeStreamRequest(EncodeStreamRequest(r));
  REQUIRE(rback.ok());
  CHECK(rback->kind == StreamRequest::Kind::kReceive);
  CHECK(rback->receive.target == "backup/home");
  CHECK(rback->receive.force);
  CHECK_FALSE(rback->receive.resumable);

  CHECK_FALSE(IsStreamRequest("status"));
  CHECK(DecodeStreamRequest("send nonsense").status().code() == StatusCode::kInvalidArgument);
  CHECK(DecodeStreamRequest("send {\"snapshot\": 3}").status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(DecodeStreamRequest("receive {\"target\": \"a@b\", \"force\": false, \"resumable\": false}")
            .status()
            .code() == StatusCode::kInvalidArgument);

  SendSummary sum;
  sum.snapshot = "tank/home@b";
  sum.from = "tank/home@a";
  sum.bytes = 1ull << 40;
  sum.records = 7;
  sum.objects = 2;
  sum.data_bytes = 4096;
  sum.blocks_read = 9;
  auto sback = DecodeSendReply(EncodeSendReply(sum));
  REQUIRE(sback.ok());
  CHECK(sback->snapshot == sum.snapshot);
  CHECK(sback->from == sum.from);
  CHECK(sback->bytes == sum.bytes);
  CHECK(sback->blocks_read == 9);
  auto failed = DecodeSendReply(EncodeSendReply(Status::NotSupported("send needs the send layer")));
  CHECK(failed.status().code() == StatusCode::kNotSupported);
  CHECK(failed.status().message() == "send needs the send layer");
  CHECK(DecodeSendReply("garbage").status().code() == StatusCode::kCorruption);
  CHECK(DecodeSendReply("{\"code\": 0}").status().code() == StatusCode::kCorruption);

  ReceiveSummary rs;
  rs.snapshot = "backup/home@b";
  rs.incremental = true;
  rs.bytes = 5;
  auto rsback = DecodeReceiveReply(EncodeReceiveReply(rs));
  REQUIRE(rsback.ok());
  CHECK(rsback->snapshot == "backup/home@b");
  CHECK(rsback->incremental);
  CHECK(rsback->bytes == 5);
  CHECK(DecodeReceiveReply(EncodeReceiveReply(Status::Corruption("record 3: bad checksum")))
            .status()
            .code() == StatusCode::kCorruption);
}

TEST_CASE("The daemon's send writes the stream to the pipe and replies with the summary") {
  StreamAdmin admin;
  StreamJobs jobs;
  TestPipe p;
  std::string got;
  std::thread reader([&] { got = ReadToEnd(p.r); });
  const std::string reply =
      HandleStreamRequest(&admin, jobs, EncodeStreamRequest(SendRequest("tank/home@b")), p.w);
  p.CloseWrite();
  reader.join();
  CHECK(got == admin.stream);
  CHECK(admin.sink_given);
  auto s = DecodeSendReply(reply);
  REQUIRE(s.ok());
  CHECK(s->bytes == admin.stream.size());
  CHECK(jobs.running() == 0);
}

TEST_CASE("The daemon's estimate gives the send no sink and writes nothing") {
  StreamAdmin admin;
  StreamJobs jobs;
  TestPipe p;
  const std::string reply = HandleStreamRequest(
      &admin, jobs, EncodeStreamRequest(SendRequest("tank/home@b", "@a", true)), p.w);
  p.CloseWrite();
  CHECK(ReadToEnd(p.r).empty());
  CHECK_FALSE(admin.sink_given);
  CHECK(admin.sent_options.from == "@a");
  auto s = DecodeSendReply(reply);
  REQUIRE(s.ok());
  CHECK(s->from == "tank/home@a");
}

TEST_CASE("The daemon's receive reads the pipe to its end") {
  StreamAdmin admin;
  StreamJobs jobs;
  TestPipe p;
  std::thread writer([&] {
    CHECK(WriteAll(p.w, std::string(123456, 'r'), "test pipe").ok());
    p.CloseWrite();
  });
  StreamRequest req = ReceiveRequest("backup/home");
  req.receive.force = true;
  const std::string reply = HandleStreamRequest(&admin, jobs, EncodeStreamRequest(req), p.r);
  writer.join();
  CHECK(admin.received == std::string(123456, 'r'));
  CHECK(admin.receive_options.force);
  auto s = DecodeReceiveReply(reply);
  REQUIRE(s.ok());
  CHECK(s->snapshot == "backup/home@b");
  CHECK(s->bytes == 123456);
}

TEST_CASE("An engine's error comes back as the reply's error, NotSupported included") {
  StreamAdmin admin;
  admin.fail = Status::NotSupported("send needs the send layer");
  StreamJobs jobs;
  TestPipe p;
  auto s = DecodeSendReply(
      HandleStreamRequest(&admin, jobs, EncodeStreamRequest(SendRequest("tank/home@b")), p.w));
  CHECK(s.status().code() == StatusCode::kNotSupported);
  CHECK(s.status().message() == "send needs the send layer");
  admin.fail = Status::Corruption("record 4: checksum mismatch");
  auto r = DecodeReceiveReply(
      HandleStreamRequest(&admin, jobs, EncodeStreamRequest(ReceiveRequest("backup/x")), p.r));
  CHECK(r.status().code() == StatusCode::kCorruption);
  // No admin, and a malformed request.
  CHECK(DecodeSendReply(HandleStreamRequest(nullptr, jobs,
                                            EncodeStreamRequest(SendRequest("tank/home@b")), p.w))
            .status()
            .code() == StatusCode::kNotSupported);
  CHECK(DecodeSendReply(HandleStreamRequest(&admin, jobs, "send {}", p.w)).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(jobs.running() == 0);
}

TEST_CASE("A send blocked on a pipe nobody reads ends when the streams are cancelled") {
  StreamAdmin admin;
  admin.stream = std::string(4 << 20, 'q');  // far more than a pipe holds
  StreamJobs jobs;
  TestPipe p;
  std::string reply;
  std::thread daemon([&] {
    reply = HandleStreamRequest(&admin, jobs, EncodeStreamRequest(SendRequest("tank/home@b")), p.w);
  });
  while (jobs.running() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  jobs.CancelAndWait("the pool's mount on /mnt was unmounted while the stream ran");
  daemon.join();
  auto s = DecodeSendReply(reply);
  CHECK(s.status().code() == StatusCode::kAborted);
  CHECK(s.status().message().find("was unmounted while the stream ran") != std::string::npos);
  // After the cancel, no new stream starts.
  auto again = DecodeSendReply(
      HandleStreamRequest(&admin, jobs, EncodeStreamRequest(SendRequest("tank/home@b")), p.w));
  CHECK(again.status().code() == StatusCode::kAborted);
}

TEST_CASE("A write to a pipe whose reader left fails with EPIPE, not SIGPIPE") {
  // The default action of SIGPIPE would end this test program.
  REQUIRE(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
  TestPipe p;
  p.CloseRead();
  Status st = WriteAll(p.w, "bytes", "the pipe to poolfs send");
  CHECK(st.code() == StatusCode::kIOError);
  CHECK(st.message() == "writing to the pipe to poolfs send: Broken pipe");
  StreamCancel cancel;
  Status with_cancel = WriteAll(p.w, "bytes", "the pipe", &cancel);
  CHECK(with_cancel.code() == StatusCode::kIOError);
  // And nothing is left pending for this thread.
  sigset_t pending;
  sigpending(&pending);
  CHECK(sigismember(&pending, SIGPIPE) == 0);
}

TEST_CASE("ReadSome returns 0 at the end, and CopyFd copies to it and counts") {
  TestPipe in, out;
  std::thread writer([&] {
    CHECK(WriteAll(in.w, std::string(70000, 'c'), "in").ok());  // more than a pipe holds
    in.CloseWrite();
  });
  size_t counted = 0;
  std::string copied;
  std::thread reader([&] { copied = ReadToEnd(out.r); });
  auto n = CopyFd(in.r, out.w, "standard input", "the pipe", [&](size_t k) { counted += k; });
  out.CloseWrite();
  reader.join();
  writer.join();
  REQUIRE(n.ok());
  CHECK(*n == 70000);
  CHECK(counted == 70000);
  CHECK(copied == std::string(70000, 'c'));
  char buf[10];
  auto end = ReadSome(in.r, buf, "in");
  REQUIRE(end.ok());
  CHECK(*end == 0);
}

TEST_CASE("Progress and summary lines say bytes, rate and time") {
  CHECK(HumanDuration(3) == "0:03");
  CHECK(HumanDuration(725) == "12:05");
  CHECK(HumanDuration(3723) == "1:02:03");
  CHECK(HumanRate(1 << 20, 0) == "-");
  CHECK(HumanRate(4 << 20, 2) == "2.00M/s");
  CHECK(ProgressLine("sent", 1 << 20, 1, std::nullopt) == "1.00M sent, 1.00M/s");
  CHECK(ProgressLine("sent", 1 << 20, 1, 4u << 20) ==
        "1.00M sent, 1.00M/s, 0:03 left (25% of 4.00M)");
  SendSummary s;
  s.snapshot = "tank/home@b";
  s.from = "tank/home@a";
  s.bytes = 2 << 20;
  s.records = 12;
  s.objects = 3;
  CHECK(SendSummaryLine(s, 2) ==
        "sent tank/home@b (incremental from tank/home@a): 2.00M (2097152 bytes), 12 records in "
        "2.0 s, 1.00M/s");
  CHECK(EstimateLine(s) ==
        "would send tank/home@b (incremental from tank/home@a): about 2.00M (2097152 bytes), 12 "
        "records, 3 objects");
  ReceiveSummary r;
  r.snapshot = "backup/home@b";
  r.bytes = 1024;
  r.records = 4;
  r.objects = 1;
  CHECK(ReceiveSummaryLine(r, 0.5) ==
        "received backup/home@b (full stream): 1.00K (1024 bytes), 4 records, 1 objects in 0.5 s, "
        "2.00K/s");
}

}  // namespace
}  // namespace poolfs::daemon
