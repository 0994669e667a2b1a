// Parity scenarios for extended attributes: the user, trusted and security
// namespaces, the create/replace flags, sizes, and who may use them.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "parity/scenario.h"

namespace poolfs::e2e {
namespace {

void XattrUser(Sys& s) {
  Touch(s, "f", "x");
  s.ListXattr("f");
  s.SetXattr("f", "user.a", "one", 0);
  s.GetXattr("f", "user.a");
  s.GetXattr("f", "user.a", 0);                        // the size
  s.GetXattr("f", "user.a", 1);                        // ERANGE
  s.SetXattr("f", "user.a", "again", XATTR_CREATE);    // EEXIST
  s.SetXattr("f", "user.b", "absent", XATTR_REPLACE);  // ENODATA
  s.SetXattr("f", "user.a", "replaced", XATTR_REPLACE);
  s.GetXattr("f", "user.a");
  s.GetXattr("f", "user.missing");  // ENODATA
  s.SetXattr("f", "user.empty", "", 0);
  s.GetXattr("f", "user.empty");
  s.SetXattr("f", "user.big", Pattern(65536, 11), 0);  // the largest value
  s.GetXattr("f", "user.big", 65536);
  s.SetXattr("f", "user.toobig", Pattern(65537, 12), 0);  // E2BIG
  s.SetXattr("f", "user." + std::string(250, 'n'), "longest name", 0);
  s.GetXattr("f", "user." + std::string(250, 'n'));
  s.SetXattr("f", "user." + std::string(251, 'n'), "name too long", 0);  // ERANGE
  s.SetXattr("f", "user.", "no name", 0);                                // EINVAL
  s.SetXattr("f", "nonamespace", "x", 0);                                // EOPNOTSUPP
  s.SetXattr("f", "other.x", "x", 0);                                    // EOPNOTSUPP
  for (int i = 0; i < 40; ++i) s.SetXattr("f", "user.n" + std::to_string(i), Pattern(i * 7, i), 0);
  s.ListXattr("f");
  s.ListXattr("f", 0);  // the size
  s.ListXattr("f", 3);  // ERANGE
  s.RemoveXattr("f", "user.a");
  s.RemoveXattr("f", "user.a");  // ENODATA
  s.GetXattr("f", "user.a");
  s.ListXattr("f");
  s.MarkTimes("f", "before");
  s.SetXattr("f", "user.t", "t", 0);
  s.TimesSince("f", "before");  // ctime later, mtime same
}

void XattrNamespaces(Sys& s) {
  Touch(s, "f", "x");
  s.SetXattr("f", "trusted.t", "root only", 0);  // EPERM unless root
  s.GetXattr("f", "trusted.t");                  // ENODATA unless root
  s.SetXattr("f", "security.s", "secure", 0);
  s.GetXattr("f", "security.s");
  s.SetXattr("f", "user.u", "user", 0);
  s.ListXattr("f");  // trusted.* only for root
  s.RemoveXattr("f", "trusted.t");
  s.RemoveXattr("f", "security.s");
  s.ListXattr("f");
  // system.posix_acl_* are left out: tmpfs implements POSIX ACLs and poolfs
  // does not (fs.h: namespaces other than user, trusted, security are
  // NotSupported).
  s.AsOther("trusted.* as another user", [](Sys& o) {
    o.GetXattr("f", "trusted.t");
    o.ListXattr("f");
  });
}

void XattrOnFileTypes(Sys& s) {
  s.Mkdir("d", 0755);
  s.SetXattr("d", "user.dir", "on a directory", 0);
  s.GetXattr("d", "user.dir");
  Touch(s, "f", "x");
  s.Symlink("f", "l");
  s.SetXattr("l", "user.followed", "lands on f", 0);
  s.SetXattr("l", "user.link", "x", 0, false);     // EPERM: user.* not on symlinks
  s.SetXattr("l", "trusted.link", "x", 0, false);  // root may
  s.GetXattr("l", "trusted.link", 65536, false);
  s.ListXattr("l", 65536, false);
  s.ListXattr("f");
  s.Mknod("fifo", S_IFIFO | 0644, 0);
  s.SetXattr("fifo", "user.x", "x", 0);  // EPERM: user.* only on files and dirs
  s.SetXattr("fifo", "trusted.x", "x", 0);
  s.ListXattr("fifo");
  // Attributes belong to the file, not the name.
  s.Link("f", "g");
  s.GetXattr("g", "user.followed");
  s.Rename("f", "h");
  s.GetXattr("h", "user.followed");
}

// Paths that cross a symlink to a directory, and a symlink to a file in a
// directory reached that way: the attributes of what they lead to.
void XattrThroughSymlinks(Sys& s) {
  s.Mkdir("d", 0755);
  s.SetXattr("d", "user.dir", "on d", 0);
  s.SetXattr("d", "trusted.dir", "root's", 0);
  Touch(s, "d/f", "x");
  s.SetXattr("d/f", "user.file", "on f", 0);
  s.Symlink("d", "ld");
  s.ListXattr("ld");
  s.ListXattr("ld/");
  s.ListXattr("ld/f");
  s.ListXattr("ld", 0);  // the size only
  s.GetXattr("ld", "user.dir");
  s.GetXattr("ld/f", "user.file");
  s.Symlink("ld/f", "lf");
  s.ListXattr("lf");
  s.ListXattr("lf", 65536, false);  // the link itself: none
  s.AsOther("through the links as another user", [](Sys& o) {
    o.ListXattr("ld");
    o.ListXattr("lf");
    o.GetXattr("lf", "user.file");
  });
}

void XattrPermissions(Sys& s) {
  Touch(s, "ro", "x");
  s.SetXattr("ro", "user.keep", "v", 0);
  s.Chmod("ro", 0444);
  s.SetXattr("ro", "user.x", "x", 0);  // EACCES unless root
  s.GetXattr("ro", "user.keep");
  s.RemoveXattr("ro", "user.keep");  // EACCES unless root
  s.Chmod("ro", 0200);
  s.GetXattr("ro", "user.keep");  // EACCES unless root
  s.ListXattr("ro");              // listing needs no permission
  s.Chmod("ro", 0644);
  s.AsOther("another user's file", [](Sys& o) {
    o.GetXattr("ro", "user.keep");
    o.SetXattr("ro", "user.x", "x", 0);  // EACCES
    o.SetXattr("ro", "security.x", "x", 0);
  });
  s.Mkdir("sticky", 01777);
  s.Chmod("sticky", 01777);
  s.AsOther("user.* on a sticky directory of another owner", [](Sys& o) {
    o.SetXattr("sticky", "user.x", "x", 0);  // EPERM
  });
}

}  // namespace

void AddXattrScenarios(std::vector<Scenario>* out) {
  out->push_back({"xattr_user", XattrUser});
  out->push_back({"xattr_namespaces", XattrNamespaces});
  out->push_back({"xattr_on_file_types", XattrOnFileTypes});
  out->push_back({"xattr_through_symlinks", XattrThroughSymlinks});
  out->push_back({"xattr_permissions", XattrPermissions});
}

}  // namespace poolfs::e2e
