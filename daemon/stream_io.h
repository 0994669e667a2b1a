// The bytes of a replication stream on file descriptors: what `poolfs send`
// and `poolfs receive` read and write (standard input and output, and the
// pipe between the command and a daemon), and the progress they show.
//
// Two places move a stream through a descriptor. With --pool the command
// runs the send or receive itself and its sink writes to standard output
// (its source reads standard input) directly. With a daemon, the daemon's
// sink writes to one end of a pipe that the command handed it over the
// control socket (control.h), and the command copies the other end to its
// standard output (CopyFd; receive: standard input to the pipe). The copy
// counts the bytes: that is where the command's progress comes from.
//
// Cancel. A daemon ends the streams it serves before it exports the pool
// (an unmount while a send runs): StreamCancel::Cancel wakes every
// WriteAll and ReadSome waiting on its descriptor, which then fail with
// Aborted and the cancel's reason, and the send or receive ends with that
// error. With a StreamCancel the descriptor is made non-blocking, so that
// a write into a full pipe never outlasts the cancel: it must be the
// caller's own (a pipe end received from a client), never a shared
// standard input or output; without one, I/O blocks as usual.
//
// SIGPIPE. A write to a pipe whose reader has gone raises SIGPIPE, which
// would end the daemon: WriteAll blocks it on the writing thread for the
// write and takes back the signal it raised, and returns the EPIPE as an
// IOError instead.
//
// Thread safety: the functions may be called from any thread; a
// StreamCancel may be cancelled from any thread while others wait on it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "poolfs/mutex.h"
#include "poolfs/status.h"

namespace poolfs::daemon {

class StreamCancel {
 public:
  StreamCancel();
  ~StreamCancel();
  StreamCancel(const StreamCancel&) = delete;
  StreamCancel& operator=(const StreamCancel&) = delete;

  // Cancels, once (later calls change nothing): every wait on fd() ends.
  void Cancel(std::string reason) EXCLUDES(mu_);
  bool cancelled() const { return cancelled_.load(); }
  // Aborted with the reason given to Cancel.
  Status status() const EXCLUDES(mu_);
  // Readable once cancelled (for poll).
  int fd() const { return read_fd_; }

 private:
  int read_fd_ = -1, write_fd_ = -1;  // a pipe, written once by Cancel
  std::atomic<bool> cancelled_{false};
  mutable util::Mutex mu_;
  std::string reason_ GUARDED_BY(mu_);
};

// Writes all of `bytes` to `fd`, retrying after EINTR and short writes.
// IOError "writing to <what>: <errno text>" (EPIPE: the reader has gone),
// or the cancel's status.
Status WriteAll(int fd, std::string_view bytes, std::string_view what,
                const StreamCancel* cancel = nullptr);

// Reads what is there (at least one byte, waiting for it) into `buf`; 0 at
// the end of the stream. IOError "reading <what>: ...", or the cancel's
// status.
Result<size_t> ReadSome(int fd, std::span<char> buf, std::string_view what,
                        const StreamCancel* cancel = nullptr);

// Progress of a stream on stderr: "12.3M sent, 4.10M/s, 0:03 left (30%)"
// redrawn in place at most twice a second, when enabled (a terminal: the
// caller decides). Add is called with each piece moved, on one thread.
class StreamProgress {
 public:
  // `verb`: "sent" or "received". `estimate`: the stream's expected size
  // (from a send's estimate), for the time left; nullopt when unknown.
  StreamProgress(bool enabled, std::string verb, std::optional<uint64_t> estimate);
  // Clears the progress line.
  ~StreamProgress();
  void Add(size_t bytes);
  // Ends the progress line (nothing more is drawn); idempotent.
  void Finish();
  uint64_t bytes() const { return bytes_; }
  // Seconds since construction.
  double Seconds() const;

 private:
  const bool enabled_;
  const std::string verb_;
  const std::optional<uint64_t> estimate_;
  const std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  uint64_t bytes_ = 0;
  bool drawn_ = false;
};

// The text of a progress line (no newline, no '\r'): bytes so far, the
// rate, and with an estimate the time left and the share done.
std::string ProgressLine(std::string_view verb, uint64_t bytes, double seconds,
                         std::optional<uint64_t> estimate);
// "4.10M/s" (HumanBytes per second; "-" before any time has passed).
std::string HumanRate(uint64_t bytes, double seconds);
// "0:03", "12:05", "1:02:03": a duration of whole seconds.
std::string HumanDuration(double seconds);

// Copies `in` to `out` until the end of `in`, calling `on_bytes` with each
// piece written. The bytes copied; the first error, named by `in_name` or
// `out_name` ("reading standard input: ...").
Result<uint64_t> CopyFd(int in, int out, std::string_view in_name, std::string_view out_name,
                        const std::function<void(size_t)>& on_bytes);

}  // namespace poolfs::daemon
