// The state a parity scenario leaves behind, as text lines that two
// filesystems must agree on; and the snapshot the persistence tests compare
// across a remount.
//
// WalkTree records, for every entry below a directory (sorted by path):
// type, permission bits, nlink, uid, gid, size (not for directories),
// device numbers, symlink target, a hash of a regular file's contents, the
// extended attributes (names and value hashes), which paths are hard links
// of one another, and the relation "ctime >= mtime". Inode numbers, st_dev,
// st_blocks, st_blksize, directory sizes and absolute clock-set times are
// filesystem-specific and left out (see StatText in sys.cc).
//
// Snapshot records what must survive a remount of the same filesystem: the
// WalkTree lines plus every entry's inode number and the kernel's file handle
// (name_to_handle_at: for FUSE it holds the node id and the generation), and
// exact mtimes.
//
// Thread safety: none needed (pure functions of the tree).
#pragma once

#include <string>
#include <vector>

namespace poolfs::e2e {

// Walks the tree below directory `dirfd` (not owned, not closed). Errors
// (EACCES on a directory or a file) are recorded as lines too.
std::vector<std::string> WalkTree(int dirfd);

// WalkTree plus identities (inode number, file handle) and exact mtimes of
// every entry below `path`, for comparing one filesystem with itself.
std::vector<std::string> Snapshot(const std::string& path);

// Opens every entry of `snapshot` (Snapshot's lines for the tree below
// `path`, taken earlier: across a remount, say) by its file handle
// (open_by_handle_at with O_PATH, which needs CAP_DAC_READ_SEARCH) and
// checks that it is the entry's inode. Returns one line per entry that is
// not, and *opened the number that are.
std::vector<std::string> OpenByHandles(const std::string& path,
                                       const std::vector<std::string>& snapshot, int* opened);

}  // namespace poolfs::e2e
