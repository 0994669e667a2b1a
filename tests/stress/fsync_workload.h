// The fsync workload of poolfs-stress (--mode fsync-kill, fsync-powercut,
// fsync): threads of file operations through poolfs::Filesystem, each
// followed often by an fsync, and the model that says what a crash may
// leave of them.
//
// Theory
// ------
// Each workload thread t owns the directory "t<t>" below the root (made
// once, when the run's pool is created) and everything in it: files
// "f<n>" and directories "d<n>" at its top, and files "d<m>/f<n>" in those.
// Names are never reused within a run (Tree::next_name). As no other
// thread touches them, a thread's changes happen in the order it makes
// them, and its Tree (path -> node) after each change is known exactly:
// S_0 is the state verified at the start of the cycle, S_k the state
// after the thread's k-th change (FsOp) of the cycle.
//
// Every change is appended to the journal before it is made, with all it
// needs to replay it (a write's bytes are Fill(stamp, offset), so they need
// not be stored), and after each fsync that returned OK the thread appends
// kFsynced with the number of its last change. The journal is a file
// written with write(2): a SIGKILLed child keeps every record it appended.
//
// What a crash may leave of thread t, with d its last kFsynced (0: none)
// and n its last journaled change:
//   - fsync returns once every change before it, to any file of the pool,
//     is durable (the intent log commits them all), so changes 1..d are
//     there; changes after d may be, as far as one went: a prefix of the
//     thread's changes, as the log replays its records in order after the
//     txg it finds synced. So the names (and their types) in t's directory
//     are those of one of S_d .. S_n.
//   - A file's bytes: a write's record takes the file's bytes when the
//     commit runs, which may already hold a later write, and a write the
//     crash cut in the middle may have landed in part. So every byte of a
//     file, and its size, must be what the same file (by identity, through
//     renames) had at that offset in one of S_d .. S_n; its xattr one of
//     its values there. A byte that no such state has is lost data (an
//     older byte) or garbage; a name no such state has was never created
//     or was lost.
// The check (CheckThread) is exact in that sense; the state it finds
// becomes the next cycle's S_0.
//
// Thread safety: Journal::Append from any thread; a Workload is driven by
// one thread; the rest are plain functions.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "poolfs/fs.h"
#include "poolfs/status.h"
#include "util/mutex.h"

namespace poolfs::stress::fsync {

enum class FsOpKind : uint8_t {
  kCreate = 1,    // an empty file at `path`
  kWrite = 2,     // Fill(stamp, ...) at [a, a + b) of `path`
  kTruncate = 3,  // `path` to size a
  kRename = 4,    // `path` (a file or a directory) to `path2`, replacing a file there
  kUnlink = 5,    // the file `path`
  kMkdir = 6,     // the directory `path`
  kRmdir = 7,     // the empty directory `path`
  kSetXattr = 8,  // kXattrName of `path` to XattrValue(stamp)
  kFsynced = 9,   // an fsync returned after change `opno` (not a change); a = 1:
                  // it returned once the crash had begun
};

// A path in a thread's directory: (parent << 32) | name, where parent is 0
// (the thread's directory) or the name of a directory at its top, and a
// name with kDirBit is a directory "d<n>", without it a file "f<n>".
inline constexpr uint32_t kDirBit = 1u << 31;
inline uint64_t MakePath(uint32_t parent, uint32_t name) { return uint64_t(parent) << 32 | name; }
inline uint32_t ParentOf(uint64_t path) { return uint32_t(path >> 32); }
inline uint32_t NameOf(uint64_t path) { return uint32_t(path); }
std::string NameString(uint32_t name);  // "f12", "d3"
std::string PathString(uint64_t path);  // "f12", "d3", "d3/f12"

inline constexpr const char* kXattrName = "user.stamp";
std::string XattrValue(uint64_t stamp);
// The byte a write stamped `stamp` puts at file offset `offset`: printable,
// never 0, different for (nearly) every stamp and 8-byte unit of the file,
// so that a byte names the write it came from.
char Fill(uint64_t stamp, uint64_t offset);
std::string Content(uint64_t stamp, uint64_t offset, uint64_t length);

struct FsOp {
  FsOpKind kind = FsOpKind::kCreate;
  uint8_t thread = 0;
  uint64_t opno = 0;  // the thread's changes in this cycle, from 1
  uint64_t path = 0;
  uint64_t path2 = 0;
  uint64_t a = 0;
  uint64_t b = 0;
  uint64_t stamp = 0;  // unique in the run (MakeStamp); a file's identity is its create's
};
inline uint64_t MakeStamp(uint64_t cycle, uint8_t thread, uint64_t opno) {
  return cycle << 32 | uint64_t(thread) << 24 | opno;
}
std::string DescribeOp(const FsOp& op);

// What is in a thread's directory.
struct Node {
  bool dir = false;
  uint64_t id = 0;  // a file's identity: the stamp of its create
  std::string data;
  std::string xattr;  // empty: none
  bool operator==(const Node&) const = default;
};
struct Tree {
  std::map<std::string, Node> nodes;  // by PathString
  uint32_t next_name = 1;             // past every name used in the run
};

// The thread's next change, valid on `tree` (every change it picks must
// succeed).
FsOp Choose(std::mt19937_64& rng, const Tree& tree, uint8_t thread, uint64_t opno, uint64_t stamp);
// Makes `op` on the model.
void Apply(Tree* tree, const FsOp& op);
// Makes `op` on `fs`, in thread directory `top` (its inode).
Status Execute(Filesystem* fs, uint64_t top, const FsOp& op);
// What `fs` has in thread directory "t<thread>": Corruption for a name that
// is none of the workload's or a type it cannot have.
Result<Tree> ReadTree(Filesystem* fs, uint8_t thread);
std::string ThreadDir(uint8_t thread);  // "t3"

// The thread's changes of a cycle as the journal has them, and what fsyncs
// made durable.
struct ThreadLog {
  std::vector<FsOp> ops;  // opno 1, 2, ...
  uint64_t fsynced = 0;   // the last change an fsync returned after (0: none)
  uint64_t fsyncs = 0;
  uint64_t fsynced_after_crash = 0;  // fsyncs that returned OK once the crash had begun
};
// Checks `actual` against the states S_d .. S_n that `start` and `log`
// give (see the theory). On success *found is `actual` with the files'
// identities and next_name filled in; on failure the Status says what
// differed and *detail the thread's recent changes.
Status CheckThread(uint8_t thread, const Tree& start, const ThreadLog& log, const Tree& actual,
                   Tree* found, std::string* detail);

// The journal: 64-byte records, one write(2) each, O_APPEND.
class Journal {
 public:
  static Result<std::unique_ptr<Journal>> Open(const std::string& path, bool truncate);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  Status Append(const FsOp& op);
  // Every thread's records (a torn last record is dropped). Corruption for
  // any other damage, or a thread's changes out of order.
  static Result<std::vector<ThreadLog>> Read(const std::string& path, int threads);

 private:
  explicit Journal(int fd) : fd_(fd) {}
  const int fd_;
};

struct WorkloadOptions {
  int threads = 4;
  uint64_t seed = 0;
  uint64_t cycle = 0;  // for the stamps
  // True once the crash under test has begun (a power cut): a failure
  // after it is expected and ends the thread quietly.
  std::function<bool()> crashed;
};

// The threads: each repeats Choose, journal, Execute, Apply, and one time
// in three an fsync of the file it changed (or, now and then, of its
// directory), then kFsynced.
class Workload {
 public:
  // `models` is the state of each thread's directory now.
  Workload(Filesystem* fs, Journal* journal, std::vector<Tree> models, WorkloadOptions options);
  ~Workload();  // Stop()s
  void Start();
  void Stop();
  // The first failure of a thread not explained by a crash.
  Status status() EXCLUDES(mu_);
  uint64_t ops() const { return ops_.load(); }
  uint64_t fsyncs() const { return fsyncs_.load(); }

 private:
  void Run(uint8_t thread) EXCLUDES(mu_);
  // Thread `thread`'s changes in its directory (inode `top`) until Stop or
  // a failure.
  Status Loop(uint8_t thread, uint64_t top);
  Filesystem* const fs_;
  Journal* const journal_;
  std::vector<Tree> models_;
  const WorkloadOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> ops_{0}, fsyncs_{0};
  util::Mutex mu_;
  Status status_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace poolfs::stress::fsync
