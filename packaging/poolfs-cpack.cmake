# Debian package for poolfs, built with CPack. The top-level CMakeLists.txt
# includes this file last (after every target is defined):
#
#   include(packaging/poolfs-cpack.cmake)
#
# then `cmake --build build && cd build && cpack` writes poolfs_<version>_<arch>.deb.
# What the package holds: the poolfs and poolfs-bench binaries (each when
# built) and the default config. The systemd user unit, mount.poolfs and the
# man pages are not packaged yet (packaging/README.md).

include(GNUInstallDirs)

# --- What gets installed -----------------------------------------------------
foreach(poolfs_bin poolfs poolfs-bench)
  if(TARGET ${poolfs_bin})
    install(TARGETS ${poolfs_bin} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
# The default configuration, as a template: copy it to
# ~/.config/poolfs/poolfs.toml and edit.
install(FILES ${CMAKE_CURRENT_LIST_DIR}/poolfs.toml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/poolfs)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/../README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# --- Package description -----------------------------------------------------
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "poolfs")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "poolfs developers")
set(CPACK_PACKAGE_CONTACT "poolfs developers <poolfs-dev@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "userspace copy-on-write transactional storage pool, mounted with FUSE")
set(CPACK_PACKAGE_DESCRIPTION
    "poolfs keeps a ZFS-style copy-on-write, transactional storage pool in \
ordinary files or block devices and mounts it through FUSE as an unprivileged \
user. Every block is checksummed (XXH3-128) and optionally compressed (lz4, \
zstd); changes are grouped into transaction groups that reach the disk \
atomically.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")

set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_SECTION "utils")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")
# Runtime libraries of Debian 12 (bookworm). dpkg-shlibdeps adds whatever the
# binaries really link, so this list is the floor, not the whole story.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libfuse3-3 (>= 3.14), fuse3, libxxhash0 (>= 0.8), liblz4-1, libzstd1, libspdlog1.10, libfmt9, libtcmalloc-minimal4")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

include(CPack)
