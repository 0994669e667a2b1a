#!/usr/bin/env python3
"""Prints what a received copy of a tree must keep, one line per entry,
sorted by path, so that two trees compare with diff: the type, mode,
owner, group, link count, size and mtime in nanoseconds; a symlink's
target; a later name of a hard-linked file as such; the extended
attributes (name and value, hex); a regular file's data and hole map
(SEEK_DATA/SEEK_HOLE) and the SHA-256 of its bytes.

Left out, as they may differ between two pools: inode numbers, st_dev,
st_blocks, atime, ctime, and the sizes of directories.

Usage: tree_listing.py DIR   (send_receive_test.sh runs it)
"""
import hashlib
import os
import stat
import sys


def data_map(path, size):
    """The data segments of a file, "start-end,..." ("-" when all hole)."""
    segments = []
    fd = os.open(path, os.O_RDONLY)
    try:
        off = 0
        while off < size:
            try:
                start = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            segments.append("%d-%d" % (start, end))
            off = end
    finally:
        os.close(fd)
    return ",".join(segments) or "-"


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def xattrs(path):
    try:
        names = sorted(os.listxattr(path, follow_symlinks=False))
    except OSError:
        return "-"
    out = []
    for n in names:
        v = os.getxattr(path, n, follow_symlinks=False)
        out.append("%s=%s" % (n, v.hex()))
    return ";".join(out) or "-"


def main():
    root = sys.argv[1]
    entries = []
    for d, dirs, files in os.walk(root):
        # The snapshot folder is not part of the tree.
        dirs[:] = sorted(x for x in dirs if not (d == root and x == ".poolfs"))
        for name in dirs + sorted(files):
            entries.append(os.path.join(d, name))
    first_of_inode = {}
    for p in sorted(entries):
        rel = os.path.relpath(p, root)
        st = os.lstat(p)
        base = "%s mode=%o uid=%d gid=%d nlink=%d mtime=%d" % (
            rel, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_nlink, st.st_mtime_ns)
        if stat.S_ISDIR(st.st_mode):
            print("%s dir xattrs=%s" % (base, xattrs(p)))
        elif stat.S_ISLNK(st.st_mode):
            print("%s symlink -> %s" % (base, os.readlink(p)))
        elif stat.S_ISREG(st.st_mode):
            if st.st_nlink > 1 and st.st_ino in first_of_inode:
                print("%s hardlink of %s" % (base, first_of_inode[st.st_ino]))
                continue
            first_of_inode[st.st_ino] = rel
            print("%s file size=%d xattrs=%s data=%s sha256=%s" % (
                base, st.st_size, xattrs(p), data_map(p, st.st_size), digest(p)))
        else:
            print("%s other type=%o" % (base, stat.S_IFMT(st.st_mode)))


if __name__ == "__main__":
    main()
