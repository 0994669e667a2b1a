// The FUSE adapter through a real kernel mount of a FakeFilesystem: the
// syscalls a program makes reach the Filesystem, and its Status comes back
// as the errno fs.h lists. Needs /dev/fuse (the tests run as root).
#include <dirent.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "fuse/fuse_server.h"
#include "fuse/kernel_channel.h"
#include "fuse/status_errno.h"
#include "mount/fake_filesystem.h"

namespace poolfs {
namespace {

using testing::FakeFilesystem;

// A FakeFilesystem mounted on a fresh temporary directory and served on a
// thread until the destructor unmounts it.
class FakeMount {
 public:
  explicit FakeMount(fuse::FuseOptions options = {}) {
    char tmpl[] = "/tmp/poolfs-fuse-test.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    options.mountpoint = dir_;
    options.fsname = "fake";
    auto server = fuse::FuseServer::Mount(&fs_, options);
    INFO(server.status().ToString());
    REQUIRE(server.ok());
    server_ = std::move(server).value();
    thread_ = std::thread([this] { run_status_ = server_->Run(); });
  }
  ~FakeMount() {
    Status st = server_->RequestUnmount();
    thread_.join();
    server_.reset();
    CHECK(rmdir(dir_.c_str()) == 0);  // only once unmounted
    CHECK(st.ok());
    CHECK(run_status_.ok());
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  FakeFilesystem& fs() { return fs_; }
  const fuse::FuseServer& server() const { return *server_; }

 private:
  FakeFilesystem fs_;
  std::string dir_;
  std::unique_ptr<fuse::FuseServer> server_;
  std::thread thread_;
  Status run_status_;
};

TEST_CASE("StatusToErrno maps each code to the errno fs.h lists") {
  const std::pair<StatusCode, int> table[] = {
      {StatusCode::kOk, 0},
      {StatusCode::kNotFound, ENOENT},
      {StatusCode::kAlreadyExists, EEXIST},
      {StatusCode::kNotEmpty, ENOTEMPTY},
      {StatusCode::kNotADirectory, ENOTDIR},
      {StatusCode::kIsADirectory, EISDIR},
      {StatusCode::kPermissionDenied, EACCES},
      {StatusCode::kNotPermitted, EPERM},
      {StatusCode::kNameTooLong, ENAMETOOLONG},
      {StatusCode::kNoSpace, ENOSPC},
      {StatusCode::kNoData, ENODATA},
      {StatusCode::kFileTooLarge, EFBIG},
      {StatusCode::kTooManyLinks, EMLINK},
      {StatusCode::kReadOnly, EROFS},
      {StatusCode::kRange, ERANGE},
      {StatusCode::kInvalidArgument, EINVAL},
      {StatusCode::kNotSupported, EOPNOTSUPP},
      {StatusCode::kLoop, ELOOP},
      {StatusCode::kStale, ESTALE},
      {StatusCode::kCrossDevice, EXDEV},
      {StatusCode::kQuotaExceeded, EDQUOT},
      {StatusCode::kNoSuchOffset, ENXIO},
      {StatusCode::kBusy, EBUSY},
      {StatusCode::kCorruption, EIO},
      {StatusCode::kIOError, EIO},
      {StatusCode::kAborted, ENOTCONN},
  };
  for (const auto& [code, err] : table) {
    INFO(StatusCodeName(code));
    CHECK(fuse::StatusToErrno(Status(code, "x")) == err);
  }
  CHECK(fuse::IsServerError(Status::Corruption("x")));
  CHECK_FALSE(fuse::IsServerError(Status::NotFound("x")));
}

TEST_CASE("A file written through the mount reads back and fsync reaches the filesystem") {
  FakeMount m;
  const std::string p = m.Path("data");
  int fd = open(p.c_str(), O_CREAT | O_EXCL | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  std::string data(300 * 1024, '\0');
  for (size_t i = 0; i < data.size(); i++) data[i] = char('a' + i % 23);
  REQUIRE(pwrite(fd, data.data(), data.size(), 0) == ssize_t(data.size()));
  CHECK(fsync(fd) == 0);
  CHECK(m.fs().fsyncs() == 1);
  std::string back(data.size(), '\0');
  CHECK(pread(fd, back.data(), back.size(), 0) == ssize_t(back.size()));
  CHECK(back == data);
  close(fd);
  struct stat st;
  REQUIRE(stat(p.c_str(), &st) == 0);
  CHECK(st.st_size == off_t(data.size()));
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 07777) == 0644);
  // O_EXCL on an existing name, then truncation through open(O_TRUNC).
  CHECK(open(p.c_str(), O_CREAT | O_EXCL | O_RDWR, 0644) == -1);
  CHECK(errno == EEXIST);
  fd = open(p.c_str(), O_WRONLY | O_TRUNC);
  REQUIRE(fd >= 0);
  close(fd);
  REQUIRE(stat(p.c_str(), &st) == 0);
  CHECK(st.st_size == 0);
}

TEST_CASE("Files open and are made without OPEN, CREATE or RELEASE requests") {
  FakeMount m;
  const std::string p = m.Path("f");
  for (int i = 0; i < 3; i++) {
    int fd = open(p.c_str(), O_CREAT | O_RDWR, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "abc", 3) == 3);
    close(fd);
  }
  int fd = open(m.Path("g").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0400);  // mode refuses writes
  REQUIRE(fd >= 0);
  CHECK(write(fd, "x", 1) == 1);  // but the creating open may write
  close(fd);
  fd = open(p.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  char buf[8];
  CHECK(read(fd, buf, sizeof buf) == 3);
  close(fd);
  // The kernel asked once (answered ENOSYS), then made files with MKNOD
  // and opened them itself (Adapter::no_open).
  CHECK(m.fs().Calls("create") == 0);
  CHECK(m.fs().Calls("open") == 0);
  CHECK(m.fs().Calls("mknod") == 2);
  // Truncation through open(O_TRUNC) arrives as a SETATTR.
  fd = open(p.c_str(), O_WRONLY | O_TRUNC);
  REQUIRE(fd >= 0);
  close(fd);
  struct stat st;
  REQUIRE(stat(p.c_str(), &st) == 0);
  CHECK(st.st_size == 0);
}

// FUSE_HANDLE_KILLPRIV_V2, which the adapter adds to libfuse's INIT reply
// (kernel_channel.h): the kernel asks for security.capability before the
// first write to a file only, not before each, and leaves clearing
// setuid to the filesystem (a chown of nothing arrives as a SETATTR of
// nothing, kClearPrivileges). Without it, a GETXATTR before every write,
// and the kernel clears setuid itself with a chmod.
TEST_CASE("The kernel leaves clearing setuid to the filesystem when the adapter takes it") {
  for (const bool handle : {true, false}) {
    INFO("fuse.handle_killpriv = " << handle);
    fuse::FuseOptions options;
    options.handle_killpriv = handle;
    FakeMount m(options);
    const std::string p = m.Path("f");
    int fd = open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0755);
    REQUIRE(fd >= 0);
    for (int i = 0; i < 3; i++) REQUIRE(pwrite(fd, "abc", 3, i * 3) == 3);
    close(fd);
    const bool granted = m.server().filesystem_clears_privileges();
    if (handle && !granted) WARN("this kernel does not offer FUSE_HANDLE_KILLPRIV_V2");
    CHECK((granted && !handle) == false);
    CHECK(m.fs().Calls("getxattr") == (granted ? 1u : 3u));
    REQUIRE(chmod(p.c_str(), 04755) == 0);
    REQUIRE(chown(p.c_str(), uid_t(-1), gid_t(-1)) == 0);
    struct stat st;
    REQUIRE(stat(p.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0755);
  }
}

TEST_CASE("The INIT reply gains the asked-for flags the kernel offered, and no others") {
  constexpr size_t kIn = 40;  // fuse_in_header
  std::vector<std::byte> init(kIn + 64);
  const uint32_t opcode = 26, flags = (1u << 28) | (1u << 30), flags2 = 1u << 3;
  std::memcpy(init.data() + 4, &opcode, 4);
  std::memcpy(init.data() + kIn + 12, &flags, 4);
  std::memcpy(init.data() + kIn + 16, &flags2, 4);
  CHECK(fuse::OfferedInitFlags(init) == (uint64_t{flags2} << 32 | flags));
  CHECK(fuse::OfferedInitFlags(std::span(init).first(kIn + 15)) == std::nullopt);  // short
  const uint32_t lookup = 1;
  std::memcpy(init.data() + 4, &lookup, 4);
  CHECK(fuse::OfferedInitFlags(init) == std::nullopt);

  std::vector<std::byte> reply(64);  // fuse_init_out: flags at 12, flags2 at 32
  const uint32_t libfuse_flags = 0x0040f021u;  // without FUSE_INIT_EXT
  std::memcpy(reply.data() + 12, &libfuse_flags, 4);
  const uint64_t offered = uint64_t{flags2} << 32 | flags;
  // Not offered, or offered in flags2 without FUSE_INIT_EXT in the reply:
  // nothing added.
  CHECK(fuse::AddInitFlags(reply, offered, 1u << 19) == 0);
  CHECK(fuse::AddInitFlags(reply, offered, uint64_t{1} << 35) == 0);
  CHECK(fuse::AddInitFlags(reply, offered, fuse::kInitHandleKillprivV2 | (1u << 19)) ==
        fuse::kInitHandleKillprivV2);
  uint32_t now;
  std::memcpy(&now, reply.data() + 12, 4);
  CHECK(now == (libfuse_flags | (1u << 28)));
  CHECK(fuse::AddInitFlags(std::span(reply).first(15), offered, fuse::kInitHandleKillprivV2) == 0);
  const uint32_t ext = libfuse_flags | (1u << 30);
  std::memcpy(reply.data() + 12, &ext, 4);
  CHECK(fuse::AddInitFlags(reply, offered, uint64_t{1} << 35) == uint64_t{1} << 35);
  uint32_t now2;
  std::memcpy(&now2, reply.data() + 32, 4);
  CHECK(now2 == (1u << 3));
}

// An O_DIRECT write sent asynchronously (libaio's io_submit): the kernel
// drops the range's pages before it sends the WRITE, not after it
// completes, so a buffered read while the WRITE is in flight brings the old
// bytes back into the page cache. Once the write has completed, a buffered
// read must see the new bytes, as on ext4 (which drops the pages again at
// completion).
TEST_CASE("A buffered read after an asynchronous O_DIRECT write sees the written bytes") {
  FakeMount m;
  const std::string p = m.Path("f");
  constexpr size_t kSize = 64 << 10;
  const std::string old(kSize, 'A'), now(kSize, 'B');
  // How many of the file's first kSize bytes, read through `f`, are `c`.
  auto count_of = [&](int f, char c) {
    std::string got(kSize, '\0');
    REQUIRE(pread(f, got.data(), kSize, 0) == ssize_t(kSize));
    return size_t(std::count(got.begin(), got.end(), c));
  };
  int fd = open(p.c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(pwrite(fd, old.data(), kSize, 0) == ssize_t(kSize));
  REQUIRE(count_of(fd, 'A') == kSize);
  int dfd = open(p.c_str(), O_RDWR | O_DIRECT);
  REQUIRE(dfd >= 0);
  void* aligned = nullptr;
  REQUIRE(posix_memalign(&aligned, 4096, kSize) == 0);
  std::memcpy(aligned, now.data(), kSize);
  aio_context_t ctx = 0;
  REQUIRE(syscall(SYS_io_setup, 1, &ctx) == 0);
  iocb cb{};
  cb.aio_fildes = uint32_t(dfd);
  cb.aio_lio_opcode = IOCB_CMD_PWRITE;
  cb.aio_buf = uint64_t(uintptr_t(aligned));
  cb.aio_nbytes = kSize;
  cb.aio_offset = 0;
  iocb* cbs[] = {&cb};
  m.fs().HoldWrites(true);
  // Submitted from a thread of its own: should the kernel send this one
  // synchronously, io_submit returns only once the write is let go.
  long submitted = -1;
  std::thread submitter([&] { submitted = syscall(SYS_io_submit, ctx, 1, cbs); });
  m.fs().WaitForHeldWrites(1);
  // The write has not completed: the old bytes are what a read may see.
  CHECK(count_of(fd, 'A') == kSize);
  m.fs().HoldWrites(false);
  submitter.join();
  REQUIRE(submitted == 1);
  io_event ev{};
  REQUIRE(syscall(SYS_io_getevents, ctx, 1, 1, &ev, nullptr) == 1);
  CHECK(ev.res == int64_t(kSize));
  CHECK(count_of(fd, 'B') == kSize);
  int fd2 = open(p.c_str(), O_RDONLY);
  REQUIRE(fd2 >= 0);
  CHECK(count_of(fd2, 'B') == kSize);
  close(fd2);
  syscall(SYS_io_destroy, ctx);
  std::free(aligned);
  close(dfd);
  close(fd);
}

TEST_CASE("Names made through the mount are listed once each by readdir") {
  FakeMount m;
  std::set<std::string> made;
  for (int i = 0; i < 300; i++) {
    const std::string name = "a-rather-long-file-name-to-fill-readdir-buffers-" + std::to_string(i);
    int fd = open(m.Path(name).c_str(), O_CREAT | O_WRONLY, 0600);
    REQUIRE(fd >= 0);
    close(fd);
    made.insert(name);
  }
  REQUIRE(mkdir(m.Path("sub").c_str(), 0755) == 0);
  made.insert("sub");
  REQUIRE(symlink("data", m.Path("link").c_str()) == 0);
  made.insert("link");
  char target[64] = {};
  CHECK(readlink(m.Path("link").c_str(), target, sizeof target - 1) == 4);
  CHECK(std::string(target) == "data");

  std::multiset<std::string> seen;
  DIR* d = opendir(m.Path("").c_str());
  REQUIRE(d != nullptr);
  while (dirent* e = readdir(d)) seen.insert(e->d_name);
  closedir(d);
  CHECK(seen.count(".") == 1);
  CHECK(seen.count("..") == 1);
  seen.erase(".");
  seen.erase("..");
  CHECK(std::set<std::string>(seen.begin(), seen.end()) == made);
  CHECK(seen.size() == made.size());

  CHECK(rmdir(m.Path("sub").c_str()) == 0);
  CHECK(unlink(m.Path("link").c_str()) == 0);
  CHECK(rename(m.Path("a-rather-long-file-name-to-fill-readdir-buffers-0").c_str(),
               m.Path("renamed").c_str()) == 0);
  struct stat st;
  CHECK(stat(m.Path("renamed").c_str(), &st) == 0);
  CHECK(stat(m.Path("sub").c_str(), &st) == -1);
  CHECK(errno == ENOENT);
}

TEST_CASE("Extended attributes answer size queries and ERANGE through the mount") {
  FakeMount m;
  const std::string p = m.Path("x");
  int fd = open(p.c_str(), O_CREAT | O_WRONLY, 0600);
  REQUIRE(fd >= 0);
  close(fd);
  REQUIRE(setxattr(p.c_str(), "user.k", "value", 5, XATTR_CREATE) == 0);
  CHECK(setxattr(p.c_str(), "user.k", "v", 1, XATTR_CREATE) == -1);
  CHECK(errno == EEXIST);
  CHECK(getxattr(p.c_str(), "user.k", nullptr, 0) == 5);
  char small[2];
  CHECK(getxattr(p.c_str(), "user.k", small, sizeof small) == -1);
  CHECK(errno == ERANGE);
  char buf[16] = {};
  CHECK(getxattr(p.c_str(), "user.k", buf, sizeof buf) == 5);
  CHECK(std::string(buf) == "value");
  CHECK(listxattr(p.c_str(), buf, sizeof buf) == 7);  // "user.k\0"
  CHECK(getxattr(p.c_str(), "user.none", buf, sizeof buf) == -1);
  CHECK(errno == ENODATA);
  CHECK(removexattr(p.c_str(), "user.k") == 0);
  CHECK(removexattr(p.c_str(), "user.k") == -1);
  CHECK(errno == ENODATA);
}

TEST_CASE("A Status from the filesystem reaches the caller as its errno") {
  FakeMount m;
  const std::string f = m.Path("f");
  int fd = open(f.c_str(), O_CREAT | O_RDWR, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(mkdir(m.Path("d").c_str(), 0755) == 0);
  struct stat st;

  m.fs().FailNext("lookup", Status::Corruption("object 9 L0 block 0: checksum mismatch"));
  CHECK(stat(m.Path("never-looked-up-1").c_str(), &st) == -1);
  CHECK(errno == EIO);
  m.fs().FailNext("lookup", Status(StatusCode::kPermissionDenied, "search"));
  CHECK(stat(m.Path("never-looked-up-2").c_str(), &st) == -1);
  CHECK(errno == EACCES);
  m.fs().FailNext("mknod", Status::NoSpace("pool full"));  // how the kernel makes files here
  CHECK(open(m.Path("g").c_str(), O_CREAT | O_WRONLY, 0600) == -1);
  CHECK(errno == ENOSPC);
  m.fs().FailNext("mkdir", Status(StatusCode::kReadOnly, "ro"));
  CHECK(mkdir(m.Path("e").c_str(), 0755) == -1);
  CHECK(errno == EROFS);
  m.fs().FailNext("write", Status(StatusCode::kFileTooLarge, "max size"));
  CHECK(pwrite(fd, "x", 1, 0) == -1);
  CHECK(errno == EFBIG);
  m.fs().FailNext("link", Status(StatusCode::kTooManyLinks, "limit"));
  CHECK(link(f.c_str(), m.Path("f2").c_str()) == -1);
  CHECK(errno == EMLINK);
  m.fs().FailNext("unlink", Status(StatusCode::kNotPermitted, "sticky"));
  CHECK(unlink(f.c_str()) == -1);
  CHECK(errno == EPERM);
  m.fs().FailNext("setxattr", Status(StatusCode::kNotSupported, "namespace"));
  CHECK(setxattr(f.c_str(), "user.a", "b", 1, 0) == -1);
  CHECK(errno == EOPNOTSUPP);
  m.fs().FailNext("fsync", Status::IOError("vdev 0: write failed"));
  CHECK(fsync(fd) == -1);
  CHECK(errno == EIO);
  m.fs().FailNext("rmdir", Status(StatusCode::kNotEmpty, "d"));
  CHECK(rmdir(m.Path("d").c_str()) == -1);
  CHECK(errno == ENOTEMPTY);
  close(fd);
}

// copy_file_range(2) between two files of the mount: COPY_FILE_RANGE
// reaches Filesystem::CopyFileRange, whose count is the syscall's, and the
// destination's pages the kernel had cached are dropped, so reads (and the
// size) show the copied bytes.
TEST_CASE("copy_file_range through the mount reaches the filesystem and reads back") {
  FakeMount m;
  std::string src(300 * 1024, '\0');
  for (size_t i = 0; i < src.size(); i++) src[i] = char('a' + i % 19);
  const std::string old(400 * 1024, 'O');
  int in = open(m.Path("src").c_str(), O_CREAT | O_RDWR, 0644);
  int out = open(m.Path("dst").c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(in >= 0);
  REQUIRE(out >= 0);
  REQUIRE(pwrite(in, src.data(), src.size(), 0) == ssize_t(src.size()));
  REQUIRE(pwrite(out, old.data(), old.size(), 0) == ssize_t(old.size()));
  std::string back(old.size(), '\0');
  REQUIRE(pread(out, back.data(), back.size(), 0) == ssize_t(back.size()));  // now cached

  loff_t off_in = 4096, off_out = 8192;
  CHECK(copy_file_range(in, &off_in, out, &off_out, 200 * 1024, 0) == 200 * 1024);
  CHECK(m.fs().Calls("copy_file_range") == 1);
  CHECK(off_in == 4096 + 200 * 1024);
  CHECK(off_out == 8192 + 200 * 1024);
  std::string want = old;
  want.replace(8192, 200 * 1024, src, 4096, 200 * 1024);
  REQUIRE(pread(out, back.data(), back.size(), 0) == ssize_t(back.size()));
  CHECK(back == want);

  // Past the destination's end: it grows. The count stops at the source's end.
  off_in = 0;
  off_out = loff_t(old.size()) - 1000;
  CHECK(copy_file_range(in, &off_in, out, &off_out, src.size() + 5000, 0) == ssize_t(src.size()));
  want.resize(old.size() - 1000);
  want += src;
  struct stat st;
  REQUIRE(fstat(out, &st) == 0);
  CHECK(st.st_size == off_t(want.size()));
  back.assign(want.size(), '\0');
  REQUIRE(pread(out, back.data(), back.size(), 0) == ssize_t(back.size()));
  CHECK(back == want);
  close(in);
  close(out);
}

// NotSupported must leave the copy to the kernel (it reads and writes
// itself, and the caller sees a success) without turning COPY_FILE_RANGE
// off for the mount: EOPNOTSUPP, not ENOSYS (file_ops.cc says why). Other
// errors reach the caller as their errno.
TEST_CASE("copy_file_range the filesystem declines is copied by the kernel, and asked again") {
  FakeMount m;
  const std::string src(64 * 1024, 's');
  int in = open(m.Path("src").c_str(), O_CREAT | O_RDWR, 0644);
  int out = open(m.Path("dst").c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(in >= 0);
  REQUIRE(out >= 0);
  REQUIRE(pwrite(in, src.data(), src.size(), 0) == ssize_t(src.size()));
  for (int round = 1; round <= 2; round++) {
    INFO("round " << round);
    REQUIRE(ftruncate(out, 0) == 0);
    const uint64_t writes = m.fs().Calls("write");
    m.fs().FailNext("copy_file_range", Status::NotSupported("no cloning here"));
    loff_t off_in = 0, off_out = 0;
    CHECK(copy_file_range(in, &off_in, out, &off_out, src.size(), 0) == ssize_t(src.size()));
    CHECK(m.fs().Calls("copy_file_range") == uint64_t(round));  // asked each time
    CHECK(m.fs().Calls("write") > writes);                      // the kernel wrote it
    std::string back(src.size(), '\0');
    REQUIRE(pread(out, back.data(), back.size(), 0) == ssize_t(back.size()));
    CHECK(back == src);
  }
  const std::pair<Status, int> errors[] = {
      {Status::NoSpace("pool full"), ENOSPC},
      {Status(StatusCode::kQuotaExceeded, "quota"), EDQUOT},
      {Status::InvalidArgument("overlap"), EINVAL},
      {Status::IOError("vdev 0: read failed"), EIO},
  };
  for (const auto& [st, err] : errors) {
    INFO(st.ToString());
    m.fs().FailNext("copy_file_range", st);
    loff_t off_in = 0, off_out = 0;
    CHECK(copy_file_range(in, &off_in, out, &off_out, src.size(), 0) == -1);
    CHECK(errno == err);
  }
  close(in);
  close(out);
}

TEST_CASE("RequestUnmount ends the request loop and unmounts") {
  std::string dir;
  {
    FakeMount m;
    dir = m.Path("");
    int fd = open(m.Path("f").c_str(), O_CREAT | O_WRONLY, 0600);
    REQUIRE(fd >= 0);
    close(fd);
  }  // the destructor checks that Run returned OK and removes the empty directory
  CHECK(access(dir.c_str(), F_OK) == -1);
  CHECK(errno == ENOENT);
}

}  // namespace
}  // namespace poolfs
