// Parity scenarios for rename(2) and renameat2(2): POSIX's overwrite rules,
// directory moves, RENAME_NOREPLACE and RENAME_EXCHANGE.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parity/scenario.h"

namespace poolfs::e2e {
namespace {

void RenameFiles(Sys& s) {
  Touch(s, "a", "aaa");
  s.Rename("a", "b");
  s.Stat("a");
  Cat(s, "b");
  s.Rename("missing", "c");  // ENOENT
  Touch(s, "c", "ccc");
  int fd = s.Open("c", O_RDONLY);
  s.Rename("b", "c");  // replaces c
  Cat(s, "c");
  s.Read(fd, 100);  // the open fd still reads the replaced file
  s.Close(fd);
  s.Rename("c", "c");  // itself: nothing happens
  Cat(s, "c");
  s.Mkdir("d", 0755);
  s.Rename("c", "d/c");
  s.Rename("d/c", "missingdir/c");         // ENOENT
  s.Rename("d/c", "d/c/x");                // ENOTDIR
  s.Rename("d/c", std::string(256, 'x'));  // ENAMETOOLONG
  s.ReadDir(".");
  s.ReadDir("d");
}

void RenameOverwriteRules(Sys& s) {
  Touch(s, "file", "f");
  s.Mkdir("empty", 0755);
  s.Mkdir("full", 0755);
  Touch(s, "full/x");
  s.Mkdir("dir", 0700);
  Touch(s, "dir/inside", "i");
  s.Rename("file", "empty");  // EISDIR
  s.Rename("dir", "file");    // ENOTDIR
  s.Rename("dir", "full");    // ENOTEMPTY
  s.Rename("dir", "empty");   // replaces the empty directory
  s.Stat("empty");
  Cat(s, "empty/inside");
  s.Rename("empty", "empty/sub");  // EINVAL: below itself
  s.Mkdir("empty/sub", 0755);
  s.Rename("empty", "empty/sub/deeper");  // EINVAL
  s.Rename("empty/sub", "empty/sub");     // itself: nothing happens
  s.Rename(".", "dot");                   // EBUSY
  s.Rename("empty/sub/..", "x");          // EBUSY or ENOTEMPTY: whatever Linux says
  s.Rename("empty", "full/x");            // ENOTDIR
  s.Rename("full/x", "full/x/");          // ENOTDIR
  s.Stat(".");
  s.Stat("empty");
  s.Stat("full");
}

void RenameHardLinksOfOneFile(Sys& s) {
  Touch(s, "a", "one file");
  s.Link("a", "b");
  s.Rename("a", "b");  // POSIX: nothing happens, both names stay
  s.Stat("a");
  s.Stat("b");
  s.Rename("a", "c");
  s.Stat("b");
  s.ReadDir(".");
}

void RenameNoReplace(Sys& s) {
  Touch(s, "a", "a");
  Touch(s, "b", "b");
  s.Rename("a", "b", RENAME_NOREPLACE);  // EEXIST
  Cat(s, "a");
  Cat(s, "b");
  s.Rename("a", "c", RENAME_NOREPLACE);
  s.Stat("a");
  Cat(s, "c");
  s.Mkdir("d", 0755);
  s.Rename("d", "c", RENAME_NOREPLACE);  // EEXIST
  s.Rename("d", "e", RENAME_NOREPLACE);
  s.Rename("c", "c", RENAME_NOREPLACE);                    // EEXIST: itself exists
  s.Rename("c", "e", RENAME_NOREPLACE | RENAME_EXCHANGE);  // EINVAL
  s.ReadDir(".");
}

void RenameExchange(Sys& s) {
  Touch(s, "f", "file contents");
  s.Mkdir("d", 0755);
  Touch(s, "d/inner", "inner");
  s.Rename("f", "d", RENAME_EXCHANGE);  // a file and a directory swap
  Cat(s, "d");
  Cat(s, "f/inner");
  s.Stat("f");
  s.Stat("d");
  s.Rename("f", "missing", RENAME_EXCHANGE);  // ENOENT
  s.Mkdir("p", 0755);
  s.Mkdir("p/sub1", 0755);
  s.Mkdir("p/sub2", 0755);
  s.Mkdir("q", 0755);
  Touch(s, "q/file", "q");
  s.Rename("p/sub1", "q/file", RENAME_EXCHANGE);  // across parents: link counts move
  s.Stat("p");
  s.Stat("q");
  s.Stat("q/file");
  s.Stat("p/sub1");
  s.Rename("q", "q/file", RENAME_EXCHANGE);     // EINVAL: into itself
  s.Rename("q/file/..", "p", RENAME_EXCHANGE);  // EBUSY or such
  s.Rename("f", "f", RENAME_EXCHANGE);          // itself
  s.ReadDir(".");
  s.ReadDir("p");
  s.ReadDir("q");
}

void RenameDirectories(Sys& s) {
  s.Mkdir("p1", 0755);
  s.Mkdir("p2", 0755);
  s.Mkdir("p1/d", 0755);
  s.Mkdir("p1/d/e", 0755);
  Touch(s, "p1/d/e/f", "deep");
  s.Rename("p1/d", "p2/d");
  s.Stat("p1");       // nlink 2
  s.Stat("p2");       // nlink 3
  s.Stat("p2/d/..");  // ".." follows the move
  s.Rename("p2/d/e", "p1/e");
  Cat(s, "p1/e/f");
  s.Stat("p1");
  s.Stat("p2/d");
  s.Mkdir("p2/empty", 0755);
  s.Rename("p1/e", "p2/empty");  // replaces an empty directory: counts stay right
  s.Stat("p1");
  s.Stat("p2");
  s.Stat("p2/empty/f");
  s.Rename("p2", "p2/empty/into");  // EINVAL
  s.Rename("p1", "p3");
  s.Stat(".");
  s.ReadDir(".");
}

void RenameTimes(Sys& s) {
  s.Mkdir("from", 0755);
  s.Mkdir("to", 0755);
  Touch(s, "from/f", "f");
  s.MarkTimes("from", "from");
  s.MarkTimes("to", "to");
  s.MarkTimes("from/f", "file");
  s.Rename("from/f", "to/f");
  s.TimesSince("from", "from");  // mtime and ctime later
  s.TimesSince("to", "to");
  s.TimesSince("to/f", "file");  // ctime later (Linux), mtime same
}

void RenameSticky(Sys& s) {
  // A sticky directory: others' files may not be removed or renamed.
  s.Mkdir("sticky", 01777);
  s.Chmod("sticky", 01777);
  Touch(s, "sticky/mine", "owner's", 0666);
  s.AsOther("rename and unlink another user's file in a sticky directory", [](Sys& o) {
    o.Rename("sticky/mine", "sticky/taken");  // EPERM
    o.Unlink("sticky/mine");                  // EPERM
    Touch(o, "sticky/theirs", "other's", 0666);
    o.Rename("sticky/theirs", "sticky/theirs2");
    o.Rename("sticky/theirs2", "sticky/mine");  // EPERM: would replace another's file
    Cat(o, "sticky/mine");
  });
  s.Unlink("sticky/theirs2");  // the directory's owner may
  s.ReadDir("sticky");
}

}  // namespace

void AddRenameScenarios(std::vector<Scenario>* out) {
  out->push_back({"rename_files", RenameFiles});
  out->push_back({"rename_overwrite_rules", RenameOverwriteRules});
  out->push_back({"rename_hard_links_of_one_file", RenameHardLinksOfOneFile});
  out->push_back({"rename_noreplace", RenameNoReplace});
  out->push_back({"rename_exchange", RenameExchange});
  out->push_back({"rename_directories", RenameDirectories});
  out->push_back({"rename_times", RenameTimes});
  out->push_back({"rename_sticky", RenameSticky});
}

}  // namespace poolfs::e2e
