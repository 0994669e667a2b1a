// Parity scenarios for file data and directories: open, read, write,
// truncate, fallocate, fsync, statfs, readdir.
#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <map>

#include "parity/scenario.h"

namespace poolfs::e2e {
namespace {

void WriteRead(Sys& s) {
  int fd = s.Open("f", O_CREAT | O_RDWR, 0644);
  s.Write(fd, "hello");
  s.Lseek(fd, 0, SEEK_CUR);
  s.Lseek(fd, 0, SEEK_END);
  s.Pread(fd, 100, 0);
  s.Pwrite(fd, "sparse", 100000);  // a hole from 5 to 100000
  s.Fstat(fd);
  s.Pread(fd, 20, 0);
  s.Pread(fd, 10, 99995);
  s.Pread(fd, 10, 200000);  // past the end: 0 bytes
  s.Lseek(fd, 0, SEEK_SET);
  s.Read(fd, 3);
  s.Read(fd, 3);
  s.Lseek(fd, -1, SEEK_SET);  // EINVAL
  s.Close(fd);
  fd = s.Open("f", O_RDONLY);
  s.Write(fd, "x");  // EBADF
  s.Close(fd);
  fd = s.Open("f", O_WRONLY);
  s.Read(fd, 1);      // EBADF
  s.Write(fd, "HE");  // overwrites at offset 0
  s.Close(fd);
  Cat(s, "f", 10);
  s.Stat("f");
}

void LargeUnalignedWrites(Sys& s) {
  int fd = s.Open("big", O_CREAT | O_RDWR, 0644);
  s.Pwrite(fd, Pattern(1 << 20, 1), 0);
  s.Pwrite(fd, Pattern(300000, 2), 12345);          // across record boundaries
  s.Pwrite(fd, Pattern(4096, 3), (1 << 20) - 100);  // straddles the end
  s.Pwrite(fd, Pattern(1, 4), 131071);
  s.Pwrite(fd, Pattern(1, 5), 131072);
  s.Pwrite(fd, Pattern(70000, 6), 5 << 20);  // far past the end: a hole
  s.Fstat(fd);
  s.Pread(fd, 1 << 20, 0);
  s.Pread(fd, 300000, 12345);
  s.Pread(fd, 8192, (1 << 20) - 4096);
  s.Pread(fd, 1 << 20, 2 << 20);  // inside the hole: zeros
  s.Pread(fd, 100000, 5 << 20);
  s.Fsync(fd);
  s.Close(fd);
  // Many small appends.
  fd = s.Open("log", O_CREAT | O_WRONLY | O_APPEND, 0644);
  for (int i = 0; i < 200; ++i) s.Write(fd, Pattern(333, 100 + i));
  s.Close(fd);
  s.Stat("log");
  Cat(s, "log");
}

// Offsets past 4 GiB (64-bit offsets through FUSE and the block tree), on a
// sparse file.
void LargeOffsets(Sys& s) {
  const off_t five_gib = 5ll << 30;
  int fd = s.Open("sparse", O_CREAT | O_RDWR, 0644);
  s.Pwrite(fd, "at five GiB plus three", five_gib + 3);
  s.Pwrite(fd, Pattern(200000, 30), (4ll << 30) - 100000);  // across 4 GiB
  s.Fstat(fd);
  s.Pread(fd, 64, five_gib);
  s.Pread(fd, 200000, (4ll << 30) - 100000);
  s.Pread(fd, 4096, 3ll << 30);  // a hole: zeros
  s.Lseek(fd, 0, SEEK_END);
  s.Ftruncate(fd, (4ll << 30) + 1);
  s.Fstat(fd);
  s.Pread(fd, 100, (4ll << 30) - 50);
  s.Ftruncate(fd, five_gib);  // grows again: the cut data must read as zeros
  s.Pread(fd, 100, (4ll << 30) - 50);
  s.Close(fd);
  // Gone before the tree walk, which would read all 5 GiB through the mount.
  s.Unlink("sparse");
}

void AppendMode(Sys& s) {
  Touch(s, "f", "start");
  int fd = s.Open("f", O_WRONLY | O_APPEND);
  s.Write(fd, "+one");
  s.Lseek(fd, 0, SEEK_SET);
  s.Write(fd, "+two");        // still at the end
  s.Pwrite(fd, "+three", 0);  // Linux: pwrite on O_APPEND appends too
  s.Lseek(fd, 0, SEEK_CUR);
  s.Close(fd);
  Cat(s, "f");
}

void TruncateSizes(Sys& s) {
  Touch(s, "f", Pattern(8192, 7));
  s.Truncate("f", 5000);  // inside a block
  s.Truncate("f", 8192);  // grows again: 5000..8192 must read zeros
  Cat(s, "f");
  s.Truncate("f", 3 << 20);
  s.Stat("f");
  Cat(s, "f", 4 << 20);
  s.Truncate("f", 10);
  Cat(s, "f");
  s.Truncate("f", 0);
  s.Stat("f");
  s.Truncate("f", -1);  // EINVAL
  s.Mkdir("d", 0755);
  s.Truncate("d", 0);        // EISDIR
  s.Truncate("missing", 0);  // ENOENT
  int fd = s.Open("f", O_RDONLY);
  s.Ftruncate(fd, 5);  // EINVAL or EBADF: not open for writing
  s.Close(fd);
  Touch(s, "t", "abcdefgh");
  fd = s.Open("t", O_RDWR | O_TRUNC);
  s.Fstat(fd);
  s.Write(fd, "xy");
  s.Ftruncate(fd, 100);
  s.Pread(fd, 200, 0);
  s.Close(fd);
  s.MarkTimes("t", "before");
  s.Truncate("t", 100);  // same size: Linux still updates mtime and ctime
  s.TimesSince("t", "before");
}

// POSIX: ftruncate needs a descriptor open for writing, not write
// permission now: a file created with mode 0 through open(O_CREAT | O_RDWR)
// can be truncated through that descriptor (truncate by path cannot).
void FtruncateWithoutWritePermission(Sys& s) {
  int fd = s.Open("f", O_CREAT | O_RDWR, 0);
  s.Ftruncate(fd, 100);
  s.Fstat(fd);
  s.Write(fd, "abc");
  s.Ftruncate(fd, 2);
  s.Pread(fd, 10, 0);
  s.Truncate("f", 1);  // EACCES unless root
  s.Close(fd);
  s.Stat("f");
  fd = s.Open("g", O_CREAT | O_WRONLY | O_TRUNC, 0);
  s.Ftruncate(fd, 4096);
  s.Close(fd);
  s.Stat("g");
}

void OpenFlags(Sys& s) {
  Touch(s, "f", "data");
  s.Mkdir("d", 0755);
  s.Open("f", O_RDONLY | O_DIRECTORY);  // ENOTDIR
  s.Open("d", O_WRONLY);                // EISDIR
  s.Open("d", O_RDWR);                  // EISDIR
  int fd = s.Open("d", O_RDONLY | O_DIRECTORY);
  s.Read(fd, 10);  // EISDIR
  s.Fsync(fd);     // fsyncdir
  s.Close(fd);
  fd = s.Open("f", O_RDONLY | O_TRUNC);  // Linux truncates (it is unspecified)
  s.Close(fd);
  s.Stat("f");
  s.Open("missing", O_RDONLY);  // ENOENT
  s.Open("f/", O_RDONLY);       // ENOTDIR
  fd = s.Open("f", O_PATH);
  s.Read(fd, 1);  // EBADF
  s.Close(fd);
}

void FallocateModes(Sys& s) {
  int fd = s.Open("f", O_CREAT | O_RDWR, 0644);
  s.Pwrite(fd, Pattern(256 << 10, 8), 0);
  s.Fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192);
  s.Fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100000, 1000);  // unaligned
  s.Pread(fd, 256 << 10, 0);
  s.Fstat(fd);
  s.Fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096);  // EOPNOTSUPP: punching needs KEEP_SIZE
  s.Fallocate(fd, 0, 0, 0);                        // EINVAL: empty range
  s.Fallocate(fd, 0, -1, 10);                      // EINVAL
  // FALLOC_FL_ZERO_RANGE is left out: tmpfs does not support it
  // (EOPNOTSUPP), ext4 does; it is not a POSIX call.
  s.Close(fd);
  fd = s.Open("f", O_RDONLY);
  s.Fallocate(fd, 0, 0, 10);  // EBADF
  s.Close(fd);
  s.Stat("f");
}

// Punching far past the end changes nothing, whatever the pool's size.
void PunchPastTheEnd(Sys& s) {
  int fd = s.Open("f", O_CREAT | O_RDWR, 0644);
  s.Write(fd, "abc");
  s.Fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2ll << 30, 65536);
  s.Fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1ll << 40, 4096);
  s.Fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1, 1ll << 40);
  s.Fstat(fd);
  s.Pread(fd, 16, 0);
  s.Close(fd);
}

// Preallocation (mode 0, KEEP_SIZE) within the size: tmpfs reserves, poolfs
// refuses (known_differences.txt); the file is the same either way.
void FallocatePreallocation(Sys& s) {
  int fd = s.Open("f", O_CREAT | O_RDWR, 0644);
  s.Pwrite(fd, Pattern(8192, 3), 0);
  s.Fallocate(fd, 0, 0, 4096);
  s.Fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 8192);
  s.Fstat(fd);
  s.Pread(fd, 8192, 0);
  s.Close(fd);
}

void FsyncCalls(Sys& s) {
  int fd = s.Open("f", O_CREAT | O_RDWR, 0644);
  s.Write(fd, Pattern(100000, 9));
  s.Fsync(fd);
  s.Fdatasync(fd);
  s.Close(fd);
  fd = s.Open("f", O_RDONLY);
  s.Fsync(fd);  // allowed on a read-only fd
  s.Close(fd);
  s.Mkdir("d", 0755);
  fd = s.Open("d", O_RDONLY | O_DIRECTORY);
  s.Fsync(fd);  // fsyncdir
  s.Fdatasync(fd);
  s.Close(fd);
  fd = s.Open(".", O_RDONLY | O_DIRECTORY);
  s.Fsync(fd);
  s.Close(fd);
}

void StatFsFigures(Sys& s) {
  s.StatFs(".");
  long long before = s.FreeBlocks(".");
  int fd = s.Open("f", O_CREAT | O_WRONLY, 0644);
  s.Write(fd, Pattern(8 << 20, 10));
  s.Fsync(fd);
  s.Close(fd);
  long long after = s.FreeBlocks(".");
  // The figures differ between filesystems; that 8 MiB of data used at
  // least 4 MiB of the free space once fsync'ed does not.
  s.Note(std::string("statfs: free space went down by at least 4 MiB: ") +
         (before - after >= (4 << 20) ? "yes" : "no"));
  s.StatFs(".");
  s.StatFs("f");
}

void ReadDirMany(Sys& s) {
  s.Mkdir("d", 0755);
  s.ReadDir("d");  // only "." and ".."
  for (int i = 0; i < 400; ++i) {
    std::string name = "entry-" + std::to_string(i) + std::string(i % 50, 'x');
    if (i % 10 == 0)
      s.Mkdir("d/" + name, 0755);
    else if (i % 10 == 1)
      s.Symlink("target", "d/" + name);
    else
      Touch(s, "d/" + name);
  }
  Touch(s, "d/" + std::string(255, 'L'));
  s.ReadDir("d");
  for (int i = 0; i < 400; i += 3) {
    std::string name = "entry-" + std::to_string(i) + std::string(i % 50, 'x');
    if (i % 10 == 0)
      s.Rmdir("d/" + name);
    else
      s.Unlink("d/" + name);
  }
  s.ReadDir("d");
  s.Stat("d");
  s.ReadDir("missing");  // ENOENT
  Touch(s, "file");
  s.ReadDir("file");  // ENOTDIR
}

// Reads a directory with a small getdents64 buffer (so the listing takes
// many calls, each resuming from the last cookie), removing and adding
// entries after the first call. POSIX leaves it open whether removed or
// added entries show up; an entry that stays must be listed exactly once.
void ReadDirWhileChanging(Sys& s) {
  s.Mkdir("d", 0755);
  for (int i = 0; i < 300; ++i) Touch(s, "d/e" + std::to_string(i));
  int fd = ::openat(s.DirFd(), "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    s.Note("open d failed");
    return;
  }
  std::map<std::string, int> seen;
  char buf[1024];
  bool changed = false;
  long n;
  while ((n = ::syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
    for (long off = 0; off < n;) {
      auto* e = reinterpret_cast<struct dirent64*>(buf + off);
      seen[e->d_name]++;
      off += e->d_reclen;
    }
    if (!changed) {
      changed = true;
      for (int i = 0; i < 100; ++i) {
        ::unlinkat(s.DirFd(), ("d/e" + std::to_string(i * 3)).c_str(), 0);
        int f = ::openat(s.DirFd(), ("d/n" + std::to_string(i)).c_str(),
                         O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (f >= 0) ::close(f);
      }
    }
  }
  s.Note(std::string("getdents64 ended with ") + (n == 0 ? "0" : "an error"));
  ::close(fd);
  int stayed_once = 0, stayed_missing = 0, stayed_twice = 0, others_twice = 0;
  for (int i = 0; i < 300; ++i) {
    if (i % 3 == 0 && i / 3 < 100) continue;  // removed
    int count = seen["e" + std::to_string(i)];
    (count == 1 ? stayed_once : count == 0 ? stayed_missing : stayed_twice)++;
  }
  for (const auto& [name, count] : seen) {
    if (count > 1 && name[0] != 'e') others_twice++;
  }
  s.Note("entries that stayed: " + std::to_string(stayed_once) + " listed once, " +
         std::to_string(stayed_missing) + " missed, " + std::to_string(stayed_twice) +
         " listed twice; other entries listed twice: " + std::to_string(others_twice) +
         "; . and .. listed: " + std::to_string(seen["."]) + " " + std::to_string(seen[".."]));
  s.ReadDir("d");
}

void ReadDirTypes(Sys& s) {
  s.Mkdir("d", 0755);
  Touch(s, "d/reg");
  s.Mkdir("d/dir", 0755);
  s.Symlink("reg", "d/lnk");
  s.Mknod("d/fifo", S_IFIFO | 0644, 0);
  s.Mknod("d/sock", S_IFSOCK | 0644, 0);
  s.ReadDir("d");  // d_type of each
}

// Shared mappings: what is written through one reaches read(2), and the
// other way round.
void MmapShared(Sys& s) {
  Touch(s, "f", Pattern(3 * 4096 + 100, 20));
  s.MmapWrite("f", "written through a mapping", 5000);
  s.MmapWrite("f", Pattern(4096, 21), 8192);
  Cat(s, "f");
  int fd = s.Open("f", O_WRONLY);
  s.Pwrite(fd, "then through write(2)", 5010);
  s.Close(fd);
  s.MmapWrite("f", "x", 0);
  Cat(s, "f");
  s.Stat("f");
  s.MmapWrite("missing", "x", 0);  // ENOENT
}

void DataTimes(Sys& s) {
  Touch(s, "f", "data");
  s.MarkTimes("f", "created");
  int fd = s.Open("f", O_WRONLY);
  s.Write(fd, "more");
  s.Close(fd);
  s.TimesSince("f", "created");  // mtime, ctime later
  s.MarkTimes("f", "written");
  Cat(s, "f");
  // relatime: atime moves when it is older than mtime.
  s.TimesSince("f", "written");
  s.MarkTimes(".", "dir");
  Touch(s, "g");
  s.TimesSince(".", "dir");  // a new entry: mtime and ctime later
  s.MarkTimes(".", "dir2");
  s.Unlink("g");
  s.TimesSince(".", "dir2");
  // What changes a directory's times: each kind of entry change.
  s.Mkdir("d", 0755);
  Touch(s, "d/f");
  s.MarkTimes("d", "symlink");
  s.Symlink("f", "d/l");
  s.TimesSince("d", "symlink");
  s.MarkTimes("d", "link");
  s.Link("d/f", "d/f2");
  s.TimesSince("d", "link");
  s.MarkTimes("d/f", "file-link");
  s.TimesSince("d/f", "file-link");
  s.Mkdir("d/sub", 0755);
  s.MarkTimes("d", "rmdir");
  s.Rmdir("d/sub");
  s.TimesSince("d", "rmdir");
  s.MarkTimes("d", "chmod");
  s.Chmod("d", 0700);
  s.TimesSince("d", "chmod");  // ctime only
  s.MarkTimes("d", "read");
  s.ReadDir("d");
  s.TimesSince("d", "read");  // relatime: atime moves, it was older than mtime
  s.MarkTimes("d/f", "open-trunc");
  fd = s.Open("d/f", O_WRONLY | O_TRUNC);  // empty already: times still move
  s.Close(fd);
  s.TimesSince("d/f", "open-trunc");
}

// SEEK_DATA and SEEK_HOLE over a layout in 128 KiB pieces (poolfs answers
// by block, up to the recordsize; tmpfs by page): written, never written,
// punched, past the end, and pages written through a mapping and left
// dirty in the kernel, which the answer must count as data.
void SeekDataHole(Sys& s) {
  constexpr off_t k = 128 << 10;
  int fd = s.Open("f", O_CREAT | O_RDWR, 0644);
  s.Pwrite(fd, Pattern(k, 1), 0);
  s.Pwrite(fd, Pattern(2 * k, 2), 8 * k);
  s.Ftruncate(fd, 16 * k);
  for (off_t off : {off_t{0}, k / 2, k, 5 * k, 8 * k, 9 * k + 7, 10 * k, 16 * k - 1, 16 * k,
                    20 * k}) {
    s.Lseek(fd, off, SEEK_DATA);
    s.Lseek(fd, off, SEEK_HOLE);
  }
  s.Lseek(fd, -1, SEEK_DATA);  // ENXIO
  s.Fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8 * k, k);
  s.Lseek(fd, k, SEEK_DATA);
  s.Lseek(fd, 8 * k, SEEK_HOLE);
  s.Lseek(fd, 9 * k, SEEK_HOLE);
  // Dirty pages the kernel has not written back yet (where the hole after
  // them starts is a page or a block on: not asked).
  s.MmapWrite("f", "mapped", 12 * k + 3, /*sync=*/false, [&] {
    s.Lseek(fd, 10 * k, SEEK_DATA);
    s.Lseek(fd, 12 * k, SEEK_DATA);
  });
  s.Pread(fd, 16, 12 * k);
  s.Close(fd);
  // An empty file has neither.
  fd = s.Open("empty", O_CREAT | O_RDWR, 0644);
  s.Lseek(fd, 0, SEEK_DATA);
  s.Lseek(fd, 0, SEEK_HOLE);
  s.Close(fd);
}

// relatime, access after access: a read moves atime when atime is not
// after mtime or ctime, or is a day old; otherwise it stays.
void RelatimeAccesses(Sys& s) {
  Touch(s, "f", "data");
  s.MarkTimes("f", "created");
  Cat(s, "f");
  s.TimesSince("f", "created");  // first read: atime moves (it equalled mtime)
  s.MarkTimes("f", "read1");
  Cat(s, "f");
  s.TimesSince("f", "read1");  // second: stays
  s.MarkTimes("f", "read2");
  Cat(s, "f");
  s.TimesSince("f", "read2");  // third: stays
  s.Chmod("f", 0640);
  s.MarkTimes("f", "chmod");
  Cat(s, "f");
  s.TimesSince("f", "chmod");  // after a ctime change: moves once
  s.MarkTimes("f", "read3");
  Cat(s, "f");
  s.TimesSince("f", "read3");  // stays
  s.MarkTimes("f", "written");
  int fd = s.Open("f", O_WRONLY | O_APPEND);
  s.Write(fd, "more");
  s.Close(fd);
  Cat(s, "f");
  s.TimesSince("f", "written");  // after a write: moves again (with mtime, ctime)
  // An atime years old moves on the next read.
  const struct timespec old[2] = {{1000000000, 0}, {0, UTIME_OMIT}};
  s.Utimens("f", old);
  s.MarkTimes("f", "aged");  // (it waits: tmpfs's atime is coarser than its ctime)
  Cat(s, "f");
  s.TimesSince("f", "aged");  // moves
  s.MarkTimes("f", "aged-read");
  Cat(s, "f");
  s.TimesSince("f", "aged-read");  // stays
}

}  // namespace

void AddDataScenarios(std::vector<Scenario>* out) {
  out->push_back({"write_read", WriteRead});
  out->push_back({"large_unaligned_writes", LargeUnalignedWrites});
  out->push_back({"large_offsets", LargeOffsets});
  out->push_back({"append_mode", AppendMode});
  out->push_back({"truncate_sizes", TruncateSizes});
  out->push_back({"ftruncate_without_write_permission", FtruncateWithoutWritePermission});
  out->push_back({"open_flags", OpenFlags});
  out->push_back({"fallocate_modes", FallocateModes});
  out->push_back({"punch_past_the_end", PunchPastTheEnd});
  out->push_back({"relatime_accesses", RelatimeAccesses});
  out->push_back({"seek_data_hole", SeekDataHole});
  out->push_back({"fallocate_preallocation", FallocatePreallocation});
  out->push_back({"fsync_calls", FsyncCalls});
  out->push_back({"statfs_figures", StatFsFigures});
  out->push_back({"readdir_many", ReadDirMany});
  out->push_back({"readdir_while_changing", ReadDirWhileChanging});
  out->push_back({"readdir_types", ReadDirTypes});
  out->push_back({"mmap_shared", MmapShared});
  out->push_back({"data_times", DataTimes});
}

}  // namespace poolfs::e2e
