// Parity scenarios for names: lookup, create, mknod, mkdir, unlink, rmdir,
// symlink, readlink and link.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "parity/scenario.h"

namespace poolfs::e2e {
namespace {

void LookupBasics(Sys& s) {
  s.Stat("missing");
  Touch(s, "f", "data");
  s.Stat("f");
  s.Stat("f/x");        // ENOTDIR: a file as a path component
  s.Stat("missing/x");  // ENOENT
  s.Stat(".");
  s.Stat("f/..");  // ENOTDIR
  std::string n255(255, 'n'), n256(256, 'n');
  Touch(s, n255, "long");
  s.Stat(n255);
  s.Open(n256, O_CREAT | O_WRONLY, 0644);  // ENAMETOOLONG
  s.Stat(n256);
  s.Mkdir(n256, 0755);
  Touch(s, "name with spaces and \xc3\xa9", "x");
  s.Stat("name with spaces and \xc3\xa9");
  s.Stat("NAME WITH SPACES AND \xc3\xa9");  // names are case-sensitive
  s.ReadDir(".");
}

void CreateExcl(Sys& s) {
  int fd = s.Open("f", O_CREAT | O_EXCL | O_RDWR, 0640);
  s.Close(fd);
  s.Open("f", O_CREAT | O_EXCL | O_RDWR, 0640);  // EEXIST
  fd = s.Open("f", O_CREAT | O_RDWR, 0600);      // exists: opened, mode kept
  s.Close(fd);
  s.Stat("f");
  s.Mkdir("d", 0755);
  s.Open("d", O_CREAT | O_RDWR, 0644);            // EISDIR
  s.Open("d", O_CREAT | O_EXCL | O_RDWR, 0644);   // EEXIST
  s.Open("missing/f", O_CREAT | O_RDWR, 0644);    // ENOENT
  s.Open("f/g", O_CREAT | O_RDWR, 0644);          // ENOTDIR
  fd = s.Open("all", O_CREAT | O_WRONLY, 07777);  // umask 022 applies
  s.Close(fd);
  s.Stat("all");
  fd = s.Open("none", O_CREAT | O_WRONLY, 0);  // mode 0: still opened for writing
  s.Write(fd, "x");
  s.Close(fd);
  s.Stat("none");
  s.Open("none", O_RDONLY);  // EACCES unless root
  Touch(s, "d/inner", "in");
  s.Stat("d");
  s.ReadDir("d");
}

void MknodKinds(Sys& s) {
  s.Mknod("reg", S_IFREG | 0640, 0);
  s.Mknod("fifo", S_IFIFO | 0600, 0);
  s.Mknod("sock", S_IFSOCK | 0644, 0);
  s.Mknod("chr", S_IFCHR | 0644, makedev(1, 3));    // EPERM unless root
  s.Mknod("blk", S_IFBLK | 0600, makedev(7, 200));  // EPERM unless root
  s.Mknod("reg", S_IFREG | 0640, 0);                // EEXIST
  s.Mknod("plain", 0640, 0);                        // no type: a regular file
  s.Mknod("dir", S_IFDIR | 0755, 0);                // EPERM: mknod does not make directories
  for (const char* p : {"reg", "fifo", "sock", "chr", "blk", "plain"}) s.Stat(p);
  // A fifo opens without a writer when non-blocking; device nodes are not
  // opened (a FUSE mount by a user is nodev).
  int fd = s.Open("fifo", O_RDONLY | O_NONBLOCK);
  s.Close(fd);
  s.ReadDir(".");
}

void MkdirRmdir(Sys& s) {
  s.Mkdir("d", 0755);
  s.Mkdir("d", 0755);  // EEXIST
  s.Mkdir("d/e", 0700);
  s.Stat("d");  // nlink 3
  s.Stat("d/e");
  s.Rmdir("d");  // ENOTEMPTY
  s.Rmdir("d/e");
  s.Stat("d");          // nlink 2
  s.Rmdir("d/e");       // ENOENT
  s.Mkdir("m", 07777);  // umask, and mkdir keeps only the sticky bit
  s.Stat("m");
  s.Mkdir("a/b/c", 0755);  // ENOENT
  Touch(s, "f");
  s.Rmdir("f");          // ENOTDIR
  s.Mkdir("f", 0755);    // EEXIST
  s.Mkdir("f/x", 0755);  // ENOTDIR
  s.Rmdir(".");          // EINVAL
  s.Rmdir("d/.");        // EINVAL
  s.Rmdir("d/..");       // ENOTEMPTY
  s.Mkdir("d/e", 0755);
  Touch(s, "d/e/file");
  s.Rmdir("d/e");  // ENOTEMPTY
  s.Unlink("d/e/file");
  s.Rmdir("d/e");
  s.Rmdir("d");
  s.Stat("d");
  s.Stat(".");
}

void UnlinkBasics(Sys& s) {
  Touch(s, "f", "contents");
  s.Unlink("f");
  s.Unlink("f");  // ENOENT
  s.Stat("f");
  s.Mkdir("d", 0755);
  s.Unlink("d");   // EISDIR
  s.Unlink("d/");  // EISDIR
  Touch(s, "g", "g");
  s.Unlink("g/");  // ENOTDIR
  // An unlinked file stays usable through its open fd.
  int fd = s.Open("open", O_CREAT | O_RDWR, 0644);
  s.Write(fd, "before unlink");
  s.Unlink("open");
  s.Fstat(fd);  // nlink 0
  s.Pwrite(fd, "AFTER", 0);
  s.Pread(fd, 100, 0);
  s.Fsync(fd);
  s.Close(fd);
  s.Stat("open");
  s.ReadDir(".");
}

void SymlinkReadlink(Sys& s) {
  s.Symlink("target", "l");
  s.Readlink("l");
  s.Stat("l", false);  // size: the target's length
  s.Stat("l");         // ENOENT: dangling
  Touch(s, "target", "through the link");
  s.Stat("l");
  Cat(s, "l");
  s.Symlink("/nonexistent/absolute", "abs");
  s.Readlink("abs");
  s.Symlink(std::string(4095, 't'), "long");
  s.Readlink("long");
  s.Stat("long", false);
  s.Symlink(std::string(4096, 't'), "toolong");  // ENAMETOOLONG
  s.Readlink("target");                          // EINVAL: not a symlink
  s.Readlink("missing");                         // ENOENT
  s.Open("l", O_RDONLY | O_NOFOLLOW);            // ELOOP
  s.Symlink("b", "a");
  s.Symlink("a", "b");
  s.Stat("a");  // ELOOP
  s.Mkdir("dir", 0755);
  s.Symlink("dir", "dirlink");
  Touch(s, "dirlink/file", "via a symlinked directory");
  s.Stat("dir/file");
  s.Symlink("x", "l");     // EEXIST
  s.Symlink("", "empty");  // ENOENT
  s.Unlink("dirlink");
  s.Stat("dir/file");
  s.ReadDir(".");
}

void HardLinks(Sys& s) {
  Touch(s, "f", "shared");
  s.MarkTimes("f", "before");
  s.Link("f", "g");
  s.TimesSince("f", "before");  // ctime changes, mtime does not
  s.Stat("f");                  // nlink 2
  s.Link("missing", "h");       // ENOENT
  s.Link("f", "g");             // EEXIST
  s.Mkdir("d", 0755);
  s.Link("d", "dlink");  // EPERM: no hard links to directories
  s.Link("f", "d/f2");   // another directory
  s.Stat("g");           // nlink 3
  s.Unlink("f");
  s.Stat("g");  // nlink 2
  Cat(s, "d/f2");
  s.Symlink("g", "sym");
  s.Link("sym", "symlink2");  // links the symlink itself (linkat without FOLLOW)
  s.Stat("symlink2", false);
  s.Stat("sym", false);
  int fd = s.Open("g", O_WRONLY | O_APPEND);
  s.Write(fd, " and appended");
  s.Close(fd);
  Cat(s, "d/f2");
  s.Unlink("g");
  s.Unlink("d/f2");
  s.Stat("d/f2");
  for (int i = 0; i < 20; ++i) {
    if (i == 0)
      Touch(s, "many0", "m");
    else
      s.Link("many0", "many" + std::to_string(i));
  }
  s.Stat("many7");  // nlink 20
}

void LookupPermissions(Sys& s) {
  s.Mkdir("d", 0755);
  Touch(s, "d/f", "x");
  s.Chmod("d", 0644);  // no search permission
  s.Stat("d/f");       // EACCES unless root
  s.Open("d/f", O_RDONLY);
  s.ReadDir("d");      // reading the names is allowed
  s.Chmod("d", 0311);  // search and write, no read
  s.Stat("d/f");
  s.ReadDir("d");      // EACCES unless root
  s.Chmod("d", 0555);  // no write
  Touch(s, "d/g");     // EACCES unless root
  s.Unlink("d/f");     // EACCES unless root
  s.Mkdir("d/sub", 0755);
  s.Chmod("d", 0755);
  s.Access("d", R_OK | W_OK | X_OK);
  s.Access("d/f", X_OK);  // EACCES: no x bit at all, even for root
  s.Chmod("d/f", 0744);
  s.Access("d/f", X_OK);
  s.Access("d/f", F_OK);
  s.Access("d/missing", F_OK);
  s.ReadDir("d");
}

void DirLinkCounts(Sys& s) {
  s.Mkdir("p", 0755);
  s.Mkdir("p/a", 0755);
  s.Mkdir("p/b", 0755);
  Touch(s, "p/file");
  s.Stat("p");  // nlink 4
  s.Mkdir("q", 0755);
  s.Rename("p/a", "q/a");
  s.Stat("p");  // 3
  s.Stat("q");  // 3
  s.Stat("q/a/..");
  s.Rmdir("p/b");
  s.Stat("p");  // 2
  s.Stat(".");
}

}  // namespace

void AddNameScenarios(std::vector<Scenario>* out) {
  out->push_back({"lookup_basics", LookupBasics});
  out->push_back({"create_excl", CreateExcl});
  out->push_back({"mknod_kinds", MknodKinds});
  out->push_back({"mkdir_rmdir", MkdirRmdir});
  out->push_back({"unlink_basics", UnlinkBasics});
  out->push_back({"symlink_readlink", SymlinkReadlink});
  out->push_back({"hard_links", HardLinks});
  out->push_back({"lookup_permissions", LookupPermissions});
  out->push_back({"dir_link_counts", DirLinkCounts});
}

}  // namespace poolfs::e2e
