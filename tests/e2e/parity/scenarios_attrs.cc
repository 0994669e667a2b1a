// Parity scenarios for attributes: chmod, chown, utimensat (nanoseconds,
// dates past 2038 and before 1970), permission checks, and the clearing of
// setuid/setgid on write, truncate, chown and chmod.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parity/scenario.h"

namespace poolfs::e2e {
namespace {

void ChmodModes(Sys& s) {
  Touch(s, "f", "x");
  for (mode_t m : {0600u, 0777u, 04755u, 02755u, 01755u, 07777u, 0u, 0644u}) {
    s.Chmod("f", m);
    s.Stat("f");
  }
  s.Mkdir("d", 0755);
  s.Chmod("d", 07777);
  s.Stat("d");
  s.Chmod("d", 0755);
  s.Chmod("missing", 0644);  // ENOENT
  s.Symlink("f", "l");
  s.Chmod("l", 0600);  // follows the link
  s.Stat("f");
  s.Stat("l", false);
  int fd = s.Open("f", O_RDONLY);
  s.Fchmod(fd, 0640);
  s.Fstat(fd);
  s.Close(fd);
  s.MarkTimes("f", "before");
  s.Chmod("f", 0644);
  s.TimesSince("f", "before");  // ctime later
}

void ChownOwners(Sys& s) {
  uid_t me = geteuid();
  gid_t my_gid = getegid();
  gid_t other_gid = Sys::OtherGroupOfCaller();
  Touch(s, "f", "x");
  s.Chown("f", 1234, 5678);  // root only
  s.Stat("f");
  s.Chown("f", me, my_gid);
  s.Chown("f", -1, other_gid);  // a group the caller is in (any group for root)
  s.Stat("f");
  s.Chown("f", -1, 5679);  // a group the caller is not in: EPERM unless root
  s.Stat("f");
  s.Chown("f", -1, -1);  // nothing to change
  s.Stat("f");
  s.Symlink("f", "l");
  s.Chown("l", -1, my_gid, false);  // the link itself
  s.Stat("l", false);
  s.Stat("f");
  s.Mkdir("d", 0755);
  s.Chown("d", 1234, -1);
  s.Stat("d");
  s.MarkTimes("f", "before");
  s.Chown("f", -1, my_gid);
  s.TimesSince("f", "before");  // ctime later
}

// Linux: a chown of a non-directory clears setuid, and setgid when the
// group may execute; root included. Directories keep both.
void SetidClearedByChown(Sys& s) {
  gid_t other_gid = Sys::OtherGroupOfCaller();
  Touch(s, "both", "x");
  s.Chmod("both", 06755);
  s.Chown("both", -1, other_gid);
  s.Stat("both");
  Touch(s, "noexec", "x");
  s.Chmod("noexec", 06745);  // setgid without group execute
  s.Chown("noexec", -1, other_gid);
  s.Stat("noexec");
  Touch(s, "same", "x");
  s.Chmod("same", 04755);
  s.Chown("same", -1, -1);  // no change asked
  s.Stat("same");
  s.Mkdir("d", 0755);
  s.Chmod("d", 06755);
  s.Chown("d", -1, other_gid);
  s.Stat("d");
}

// Linux: a write or truncate by a caller without CAP_FSETID clears setuid,
// and setgid when the group may execute. Root keeps them.
void SetidClearedByWrite(Sys& s) {
  Touch(s, "w", "x");
  s.Chmod("w", 06755);
  int fd = s.Open("w", O_WRONLY);
  s.Write(fd, "y");
  s.Fstat(fd);
  s.Close(fd);
  s.Stat("w");
  Touch(s, "t", "x");
  s.Chmod("t", 06755);
  s.Truncate("t", 100);
  s.Stat("t");
  Touch(s, "g", "x");
  s.Chmod("g", 02745);  // setgid without group execute: kept
  fd = s.Open("g", O_WRONLY);
  s.Write(fd, "y");
  s.Close(fd);
  s.Stat("g");
  Touch(s, "open-trunc", "x");
  s.Chmod("open-trunc", 04755);
  fd = s.Open("open-trunc", O_WRONLY | O_TRUNC);
  s.Close(fd);
  s.Stat("open-trunc");
  Touch(s, "shared", "x", 0666);
  s.Chmod("shared", 04777);
  s.AsOther("write to a setuid file of another owner", [](Sys& o) {
    int f = o.Open("shared", O_WRONLY);
    o.Write(f, "z");
    o.Close(f);
    o.Stat("shared");
  });
}

// Linux 6.x: a write, truncate or hole punch by a caller without CAP_FSETID
// clears setgid also without group execute when the caller is not in the
// file's group (root's files here, group 0), and a chown by such an owner
// does too; a member of the group keeps it.
void SetgidClearedForNonMembers(Sys& s) {
  for (const char* name : {"w", "t", "ft", "punch"}) {
    Touch(s, name, "some data", 0666);
    s.Chmod(name, 02666);
  }
  Touch(s, "x", "some data", 0666);
  s.Chmod("x", 02676);
  Touch(s, "both", "some data", 0666);
  s.Chmod("both", 06666);
  s.AsOther("write, truncate and punch setgid files of a group it is not in", [](Sys& o) {
    int f = o.Open("w", O_WRONLY);
    o.Write(f, "y");
    o.Close(f);
    o.Truncate("t", 2);
    f = o.Open("ft", O_RDWR);
    o.Ftruncate(f, 3);
    o.Close(f);
    f = o.Open("punch", O_RDWR);
    o.Fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 2);
    o.Close(f);
    f = o.Open("x", O_WRONLY);
    o.Write(f, "y");
    o.Close(f);
    f = o.Open("both", O_WRONLY);
    o.Write(f, "y");
    o.Close(f);
  });
  for (const char* name : {"w", "t", "ft", "punch", "x", "both"}) s.Stat(name);
  // The caller's own file, of its own group: setgid without group execute stays.
  Touch(s, "mine", "x");
  s.Chmod("mine", 02644);
  int fd = s.Open("mine", O_WRONLY);
  s.Write(fd, "y");
  s.Fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096);
  s.Ftruncate(fd, 1);
  s.Close(fd);
  s.Stat("mine");
  // An owner outside the file's group gives it to its own group (root
  // makes it so: EPERM as a user).
  s.Mkdir("o", 0777);
  s.Chmod("o", 0777);
  s.AsOther("own a file", [](Sys& o) { Touch(o, "o/theirs", "x", 0644); });
  s.Chown("o/theirs", -1, 4243);
  s.Chmod("o/theirs", 02745);
  s.AsOther("chgrp from a group it is not in to its own", [](Sys& o) {
    o.Chown("o/theirs", -1, getegid());
    o.Stat("o/theirs");
  });
}

// chmod by a caller outside the file's group, without CAP_FSETID: setgid
// silently dropped.
void SetgidDroppedByChmod(Sys& s) {
  s.Mkdir("sg", 0777);
  s.Chmod("sg", 0777);
  s.AsOther("chmod g+s on a file whose group the caller is not in",
            [](Sys& o) { Touch(o, "sg/f", "x", 0644); });
  s.Chown("sg/f", -1, 4243);  // root gives it a group nobody has
  s.AsOther("chmod 2755", [](Sys& o) {
    o.Chmod("sg/f", 02755);
    o.Stat("sg/f");
  });
  Touch(s, "mine", "x");
  s.Chown("mine", -1, 4243);  // EPERM unless root
  s.Chmod("mine", 02755);     // root keeps it; a member keeps it
  s.Stat("mine");
}

void SetgidDirectories(Sys& s) {
  gid_t other_gid = Sys::OtherGroupOfCaller();
  s.Mkdir("d", 0775);
  s.Chown("d", -1, other_gid);
  s.Chmod("d", 02775);
  s.Stat("d");
  Touch(s, "d/f", "x");
  s.Stat("d/f");  // the directory's group
  s.Mkdir("d/sub", 0755);
  s.Stat("d/sub");  // the group and the setgid bit
  s.Mknod("d/fifo", S_IFIFO | 02755, 0);
  s.Stat("d/fifo");
  s.Symlink("f", "d/link");
  s.Stat("d/link", false);
}

void TimesExact(Sys& s) {
  Touch(s, "f", "x");
  struct timespec t[2] = {{1, 500000000}, {2, 123456789}};
  s.Utimens("f", t);
  s.ExactTimes("f");
  struct timespec y2100[2] = {{4102444800LL, 999999999}, {4102444801LL, 1}};  // past 2038
  s.Utimens("f", y2100);
  s.ExactTimes("f");
  struct timespec far[2] = {{253402300799LL, 0}, {32503680000LL, 42}};  // years 9999, 3000
  s.Utimens("f", far);
  s.ExactTimes("f");
  struct timespec before1970[2] = {{-1, 0}, {-86400LL * 365, 7}};
  s.Utimens("f", before1970);
  s.ExactTimes("f");
  struct timespec bad[2] = {{0, 1000000000}, {0, 0}};  // EINVAL
  s.Utimens("f", bad);
  struct timespec omit[2] = {{5, 5}, {0, UTIME_OMIT}};
  s.Utimens("f", omit);
  s.ExactTimes("f");
  s.MarkTimes("f", "before-now");
  struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  s.Utimens("f", now);
  s.TimesSince("f", "before-now");
  s.Symlink("f", "l");
  struct timespec lt[2] = {{1000, 1}, {2000, 2}};
  s.Utimens("l", lt, false);  // the link itself
  s.ExactTimes("l", false);
  s.Mkdir("d", 0755);
  s.Utimens("d", y2100);
  s.ExactTimes("d");
  s.Utimens("missing", now);  // ENOENT
}

void TimesPermissions(Sys& s) {
  Touch(s, "writable", "x", 0666);
  s.Chmod("writable", 0666);
  Touch(s, "readonly", "x", 0644);
  s.AsOther("utimens on another user's files", [](Sys& o) {
    struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
    struct timespec set[2] = {{10, 0}, {20, 0}};
    o.Utimens("writable", now);    // allowed: write permission
    o.Utimens("writable", set);    // EPERM: only the owner sets times
    o.Utimens("readonly", now);    // EACCES
    o.Chmod("writable", 0600);     // EPERM
    o.Chown("writable", -1, -1);   // EPERM? no change: allowed
    o.Open("readonly", O_WRONLY);  // EACCES
    o.Truncate("writable", 1);
    o.Stat("writable");
  });
  s.Stat("writable");
}

void PermissionBits(Sys& s) {
  Touch(s, "f", "secret");
  s.Chmod("f", 0);
  s.Open("f", O_RDONLY);  // EACCES unless root
  s.Access("f", R_OK);
  s.Access("f", W_OK);
  s.Chmod("f", 0200);
  int fd = s.Open("f", O_WRONLY);
  s.Close(fd);
  s.Open("f", O_RDONLY);  // EACCES unless root
  s.Chmod("f", 0400);
  s.Open("f", O_WRONLY);  // EACCES unless root
  fd = s.Open("f", O_RDONLY);
  s.Read(fd, 10);
  s.Close(fd);
  s.Chmod("f", 0644);
  s.AsOther("another user, through the group and other bits", [](Sys& o) {
    o.Open("f", O_WRONLY);  // EACCES
    int f = o.Open("f", O_RDONLY);
    o.Close(f);
    o.Access("f", R_OK);
    o.Access("f", W_OK);
  });
  s.Chmod("f", 0604);
  s.Chown("f", -1, 4244);  // a group the other user is not in (root only)
  s.AsOther("others' bits", [](Sys& o) { o.Open("f", O_RDONLY); });
  s.Chmod("f", 0640);
  s.AsOther("no bits for others", [](Sys& o) { o.Open("f", O_RDONLY); });
  // Through a supplementary group of the other user (poolfs-e2e-g2): the
  // group bits apply. The core fetches supplementary groups only when a
  // check needs them, so this is the path that reads them.
  Touch(s, "g", "group data");
  s.Chown("g", -1, s.OtherUsersGroup());  // root only: EPERM as a user
  s.Chmod("g", 0660);
  s.Mkdir("gd", 0770);
  s.Chown("gd", -1, s.OtherUsersGroup());
  s.Chmod("gd", 0770);
  s.AsOther("through a supplementary group", [](Sys& o) {
    int f = o.Open("g", O_RDWR);
    o.Write(f, "G");
    o.Close(f);
    o.Access("g", R_OK | W_OK);
    Touch(o, "gd/made-by-group-member", "x");
    o.ReadDir("gd");
  });
}

// The owner may set times even without write permission.
void TimesByOwner(Sys& s) {
  Touch(s, "ro", "x");
  s.Chmod("ro", 0444);
  struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  struct timespec set[2] = {{100, 1}, {200, 2}};
  s.Utimens("ro", now);
  s.Utimens("ro", set);
  s.ExactTimes("ro");
  s.Chown("ro", -1, -1);  // no change: allowed to the owner
}

}  // namespace

void AddAttrScenarios(std::vector<Scenario>* out) {
  out->push_back({"chmod_modes", ChmodModes});
  out->push_back({"chown_owners", ChownOwners});
  out->push_back({"setid_cleared_by_chown", SetidClearedByChown});
  out->push_back({"setid_cleared_by_write", SetidClearedByWrite});
  out->push_back({"setgid_cleared_for_non_members", SetgidClearedForNonMembers});
  out->push_back({"setgid_dropped_by_chmod", SetgidDroppedByChmod});
  out->push_back({"setgid_directories", SetgidDirectories});
  out->push_back({"times_exact", TimesExact});
  out->push_back({"times_permissions", TimesPermissions});
  out->push_back({"permission_bits", PermissionBits});
  out->push_back({"times_by_owner", TimesByOwner});
}

}  // namespace poolfs::e2e
