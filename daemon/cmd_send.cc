// `poolfs send [--pool FILE...] [-i SNAP] [-c] [-n] [-v] POOL/PATH@SNAP`
// writes the stream of a snapshot (poolfs/replication.h: full, or with -i
// the changes since an earlier snapshot) to standard output;
// `poolfs receive [--pool FILE...] [-F] [-u] [-s] [-v] POOL/PATH` reads one
// from standard input and applies it. Together:
//   poolfs send tank/home@mon | poolfs receive --pool backup.pool backup/home
//
// Where they run. With --pool the command opens the exported pool itself
// (OfflinePool) and streams standard output or input directly. Without,
// the pool must be mounted: the command finds its daemon by the pool's name
// (pool_registry.h), makes a pipe, and hands the daemon one end with the
// request over the control socket (control.h's stream requests: the write
// end for a send, the read end for a receive); the daemon runs the send or
// receive on its own thread, so the mount's other commands are served
// meanwhile, while this command copies the pipe to its standard output
// (from its standard input), counting the bytes for -v. The daemon closes
// its end when it is done, then replies with the summary or the error.
// If this command dies, the daemon's pipe I/O fails (EPIPE, or the end of a
// truncated stream, which a receive refuses, leaving its target as it was).
//
// Output. A stream is binary: send refuses a terminal as its standard
// output (and receive as its standard input), exit 2, unless -n. -v shows
// the progress on stderr when stderr is a terminal (a send's with the time
// left, from a first estimate), and ends with a one-line summary on
// stderr. Exit codes as every command's (command.h): 0, 1 the operation
// failed (a damaged stream, an engine error), 2 usage.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "control.h"
#include "dataset_request.h"
#include "pool_registry.h"
#include "poolfs/dataset.h"
#include "replication_request.h"
#include "stream_io.h"

namespace poolfs::daemon {
namespace {

struct SendArgs {
  std::vector<std::string> pool_files;
  std::string snapshot, from, resume_token;
  bool compressed = false, estimate = false, verbose = false;
};

struct ReceiveArgs {
  std::vector<std::string> pool_files;
  std::string target;
  bool force = false, no_mount = false, resumable = false, abort = false, verbose = false;
};

// A pipe whose ends close with it.
class Pipe {
 public:
  Pipe() = default;
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  Status Open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return Status::IOError("pipe: " + ErrnoText(errno));
    read_ = fds[0];
    write_ = fds[1];
    return Status::Ok();
  }
  int read_end() const { return read_; }
  int write_end() const { return write_; }
  void CloseRead() {
    if (read_ >= 0) ::close(read_);
    read_ = -1;
  }
  void CloseWrite() {
    if (write_ >= 0) ::close(write_);
    write_ = -1;
  }

 private:
  int read_ = -1, write_ = -1;
};

// The mount point of the daemon serving `pool`.
Result<std::string> DaemonOf(const std::string& pool, const std::string& name) {
  POOLFS_ASSIGN_OR_RETURN(std::optional<RegisteredPool> reg, FindRegisteredPool(pool));
  if (!reg.has_value())
    return Status::NotFound("no mounted pool named '" + pool + "' (for " + name +
                            "; mount it with poolfs mount, or name its files with --pool)");
  return reg->mountpoint;
}

// The pool in `files`, opened here, which must be `pool`.
Result<std::unique_ptr<OfflinePool>> OpenOffline(const std::vector<std::string>& files,
                                                 const std::string& pool, const std::string& name) {
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<OfflinePool> p, OfflinePool::Open(files));
  if (p->name() != pool) {
    (void)p->Close();
    return Status::InvalidArgument("the pool in " + files[0] + " is '" + p->name() + "', not '" +
                                   pool + "' (" + name + ")");
  }
  return p;
}

// A daemon's reply that is not JSON: a refusal of the control server.
Status PlainError(const std::string& mountpoint, const std::string& reply) {
  std::string text = reply.substr(7);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.starts_with("busy: ")) return Status::Busy(text.substr(6));
  return Status::IOError("the daemon of " + mountpoint + ": " + text);
}

// Sends `request` with the write end of a new pipe to the daemon of
// `mountpoint`, copies what it writes there to `out` (-1: discarded)
// counting with `progress`, and returns its reply. `copy_error` gets the
// copy's error (standard output gone), if any.
Result<std::string> SendThroughDaemon(const std::string& mountpoint, const std::string& request,
                                      int out, StreamProgress* progress, Status* copy_error) {
  Pipe pipe;
  POOLFS_RETURN_IF_ERROR(pipe.Open());
  POOLFS_ASSIGN_OR_RETURN(PendingReply pending,
                          ControlCallWithFd(mountpoint, request, pipe.write_end()));
  // The daemon holds the only write end now: the pipe ends when it is done.
  pipe.CloseWrite();
  std::vector<char> buf(256 * 1024);
  for (;;) {
    Result<size_t> n = ReadSome(pipe.read_end(), buf, "the pipe from the daemon");
    if (!n.ok()) {
      *copy_error = n.status();
      break;
    }
    if (*n == 0) break;
    if (out >= 0) {
      Status st = WriteAll(out, std::string_view(buf.data(), *n), "standard output");
      if (!st.ok()) {
        *copy_error = st;
        break;
      }
    }
    if (progress != nullptr) progress->Add(*n);
  }
  // Closing our end makes the daemon's writes fail (EPIPE) if we stopped
  // early: its reply then comes at once.
  pipe.CloseRead();
  return pending.Wait();
}

Result<SendSummary> DecodeSendFrom(const std::string& mountpoint, const std::string& reply) {
  if (reply.starts_with("error: ")) return PlainError(mountpoint, reply);
  return DecodeSendReply(reply);
}

// Standard output as a sink, counting with `progress`.
StreamSink StdoutSink(StreamProgress& progress) {
  return [&progress](std::string_view bytes) {
    Status st = WriteAll(STDOUT_FILENO, bytes, "standard output");
    if (st.ok()) progress.Add(bytes.size());
    return st;
  };
}

Result<SendSummary> SendOffline(const SendArgs& a, const SendOptions& o, bool show_progress,
                                double* seconds) {
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<OfflinePool> pool,
                          OpenOffline(a.pool_files, PoolOf(SentSnapshot(o)), SentSnapshot(o)));
  DatasetAdmin& admin = pool->datasets();
  std::optional<uint64_t> estimate;
  if (show_progress) {
    // Only for the time left: a failed estimate leaves the send to say why.
    Result<SendSummary> e = admin.Send(o, StreamSink{});
    if (e.ok()) estimate = e->bytes;
  }
  StreamProgress progress(show_progress, "sent", estimate);
  Result<SendSummary> s =
      a.estimate ? admin.Send(o, StreamSink{}) : admin.Send(o, StdoutSink(progress));
  progress.Finish();
  *seconds = progress.Seconds();
  Status closed = pool->Close();
  if (s.ok() && !closed.ok()) return closed;
  return s;
}

Result<SendSummary> SendOnDaemon(const SendArgs& a, const SendOptions& o, bool show_progress,
                                 double* seconds) {
  POOLFS_ASSIGN_OR_RETURN(std::string mountpoint,
                          DaemonOf(PoolOf(SentSnapshot(o)), SentSnapshot(o)));
  StreamRequest req;
  req.kind = StreamRequest::Kind::kSend;
  req.send = o;
  std::optional<uint64_t> estimate;
  if (a.estimate || show_progress) {
    req.estimate = true;
    Status ignored;
    POOLFS_ASSIGN_OR_RETURN(
        std::string reply,
        SendThroughDaemon(mountpoint, EncodeStreamRequest(req), -1, nullptr, &ignored));
    Result<SendSummary> e = DecodeSendFrom(mountpoint, reply);
    if (a.estimate) return e;
    if (e.ok()) estimate = e->bytes;
    req.estimate = false;
  }
  StreamProgress progress(show_progress, "sent", estimate);
  Status copy_error;
  Result<std::string> reply = SendThroughDaemon(mountpoint, EncodeStreamRequest(req), STDOUT_FILENO,
                                                &progress, &copy_error);
  progress.Finish();
  *seconds = progress.Seconds();
  // Our own failure (standard output gone) says more than the daemon's
  // broken pipe that follows from it.
  if (!copy_error.ok()) return copy_error;
  if (!reply.ok()) return reply.status();
  return DecodeSendFrom(mountpoint, *reply);
}

int RunSend(const SendArgs& a) {
  // A reader that goes (`poolfs send ... | head`) is an error to report,
  // not a signal to die of.
  signal(SIGPIPE, SIG_IGN);
  if (a.snapshot.empty() == a.resume_token.empty())
    return ReportError("send", Status::InvalidArgument(
                                   "name the snapshot to send (POOL/PATH@SNAP), or give -t TOKEN "
                                   "to resume an interrupted stream; not both"));
  Result<SendOptions> o = MakeSendOptions(a.snapshot, a.from, a.compressed, a.resume_token);
  if (!o.ok()) return ReportError("send", o.status());
  if (!a.estimate && isatty(STDOUT_FILENO)) {
    return ReportError("send", Status::InvalidArgument(
                                   "standard output is a terminal: a stream is binary; redirect "
                                   "it to a file or a pipe (poolfs send " +
                                   SentSnapshot(*o) + " > FILE, or | poolfs receive ...)"));
  }
  const bool show_progress = a.verbose && !a.estimate && isatty(STDERR_FILENO);
  double seconds = 0;
  Result<SendSummary> s = a.pool_files.empty() ? SendOnDaemon(a, *o, show_progress, &seconds)
                                               : SendOffline(a, *o, show_progress, &seconds);
  if (!s.ok()) return ReportError("send", s.status());
  if (a.verbose) {
    std::cerr << (a.estimate ? EstimateLine(*s) : SendSummaryLine(*s, seconds)) << "\n";
  }
  return kExitOk;
}

Result<ReceiveSummary> ReceiveOffline(const ReceiveArgs& a, const ReceiveOptions& o,
                                      StreamProgress& progress) {
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<OfflinePool> pool,
                          OpenOffline(a.pool_files, PoolOf(o.target), o.target));
  const StreamSource source = [&progress](std::span<char> buf) -> Result<size_t> {
    Result<size_t> n = ReadSome(STDIN_FILENO, buf, "standard input");
    if (n.ok()) progress.Add(*n);
    return n;
  };
  Result<ReceiveSummary> s = pool->datasets().Receive(o, source);
  Status closed = pool->Close();
  if (s.ok() && !closed.ok()) return closed;
  return s;
}

Result<ReceiveSummary> ReceiveOnDaemon(const ReceiveOptions& o, StreamProgress& progress) {
  POOLFS_ASSIGN_OR_RETURN(std::string mountpoint, DaemonOf(PoolOf(o.target), o.target));
  StreamRequest req;
  req.kind = StreamRequest::Kind::kReceive;
  req.receive = o;
  Pipe pipe;
  POOLFS_RETURN_IF_ERROR(pipe.Open());
  POOLFS_ASSIGN_OR_RETURN(PendingReply pending,
                          ControlCallWithFd(mountpoint, EncodeStreamRequest(req), pipe.read_end()));
  // The daemon holds the only read end now: if it stops reading (a refused
  // stream), our writes fail with EPIPE and its reply says why. -A reads
  // no stream: the pipe just ends.
  pipe.CloseRead();
  Result<uint64_t> copied = uint64_t{0};
  if (!o.abort)
    copied = CopyFd(STDIN_FILENO, pipe.write_end(), "standard input", "the pipe to the daemon",
                    [&progress](size_t n) { progress.Add(n); });
  // The end of the stream for the daemon (a truncated one if the copy
  // failed, which it refuses).
  pipe.CloseWrite();
  POOLFS_ASSIGN_OR_RETURN(std::string reply, pending.Wait());
  Result<ReceiveSummary> s = reply.starts_with("error: ")
                                 ? Result<ReceiveSummary>(PlainError(mountpoint, reply))
                                 : DecodeReceiveReply(reply);
  // The daemon's error says what was wrong with the stream; a failure to
  // read standard input is ours alone.
  if (s.ok() || copied.ok()) return s;
  return copied.status().message().starts_with("reading standard input") ? copied.status() : s;
}

int RunReceive(const ReceiveArgs& a) {
  signal(SIGPIPE, SIG_IGN);
  Result<ReceiveOptions> o = MakeReceiveOptions(a.target, a.force, a.resumable, a.abort);
  if (!o.ok()) return ReportError("receive", o.status());
  if (!a.abort && isatty(STDIN_FILENO)) {
    return ReportError(
        "receive",
        Status::InvalidArgument("standard input is a terminal: give the stream on standard input "
                                "(poolfs receive " +
                                a.target + " < FILE, or poolfs send ... | poolfs receive ...)"));
  }
  // A stream in a file: its size is the whole to come.
  std::optional<uint64_t> size;
  struct stat st;
  if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode)) size = uint64_t(st.st_size);
  StreamProgress progress(a.verbose && isatty(STDERR_FILENO), "received", size);
  Result<ReceiveSummary> s =
      a.pool_files.empty() ? ReceiveOnDaemon(*o, progress) : ReceiveOffline(a, *o, progress);
  progress.Finish();
  if (!s.ok()) return ReportError("receive", s.status());
  if (a.verbose) std::cerr << ReceiveSummaryLine(*s, progress.Seconds()) << "\n";
  return kExitOk;
}

}  // namespace

Command AddSendCommand(CLI::App& parent) {
  auto a = std::make_shared<SendArgs>();
  CLI::App* app = parent.add_subcommand(
      "send",
      "Write the stream of a snapshot to standard output (a file or a pipe, never a terminal): "
      "in full, or with -i the changes since an earlier snapshot; poolfs receive applies it");
  AddDatasetPoolOption(app, a->pool_files);
  app->add_option("-i", a->from,
                  "an incremental stream from this earlier snapshot of the same dataset: @NAME or "
                  "POOL/PATH@NAME (the receiving dataset must have it as its newest snapshot)")
      ->expected(1);
  app->add_flag("-c,--compressed", a->compressed,
                "send data blocks as they are stored (compressed), not decompressed: a smaller "
                "stream, less work on both ends");
  app->add_flag("-n,--dry-run", a->estimate,
                "write nothing: with -v, print the estimated size of the stream (no data block "
                "is read)");
  app->add_flag("-v,--verbose", a->verbose,
                "progress on stderr when it is a terminal (bytes, rate, time left), and a "
                "summary line at the end (bytes, records, time, rate)");
  app->add_option("-t", a->resume_token,
                  "resume the stream an interrupted `poolfs receive -s` kept: TOKEN is its "
                  "target's receive_resume_token (poolfs dataset get receive_resume_token "
                  "POOL/PATH); give no snapshot then")
      ->expected(1);
  app->add_option("POOL/PATH@SNAP", a->snapshot, "the snapshot to send");
  return {app, [a] { return RunSend(*a); }};
}

Command AddReceiveCommand(CLI::App& parent) {
  auto a = std::make_shared<ReceiveArgs>();
  CLI::App* app = parent.add_subcommand(
      "receive",
      "Read a stream made by poolfs send from standard input and apply it: a full stream creates "
      "the dataset, an incremental one adds its snapshot to it; all or nothing (a damaged or "
      "truncated stream leaves the target as it was)");
  AddDatasetPoolOption(app, a->pool_files);
  app->add_flag("-F,--force", a->force,
                "incremental stream: discard what changed in the target since its base (its "
                "newest snapshot) when the received snapshot is made");
  app->add_flag("-u", a->no_mount,
                "accepted for zfs's sake, and changes nothing: poolfs never mounts a received "
                "dataset on its own; it appears in its pool's mount as a folder of its parent, "
                "like every dataset (poolfs mount POOL/PATH MNT mounts one on its own)");
  app->add_flag("-s", a->resumable,
                "an interrupted receive keeps what it got; the target's receive_resume_token "
                "property says where to resume from (poolfs send -t TOKEN | poolfs receive -s)");
  app->add_flag("-A", a->abort,
                "discard what an interrupted receive -s kept for the target; reads no stream");
  app->add_flag("-v,--verbose", a->verbose,
                "progress on stderr when it is a terminal (bytes, rate), and a summary line at "
                "the end (the snapshot received, bytes, time)");
  app->add_option("POOL/PATH", a->target,
                  "the dataset to receive into (a full stream creates it; its parent must exist)")
      ->required();
  return {app, [a] { return RunReceive(*a); }};
}

}  // namespace poolfs::daemon
