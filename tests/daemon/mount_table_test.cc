// The mount table as `poolfs mount`, `status` and `unmount` read it: a
// mountinfo line with its escapes and the FUSE owner, and the statfs probe
// that tells a dead mount from a live one.
#include "daemon/mount_table.h"

#include <catch2/catch.hpp>
#include <cerrno>

#include "daemon/dead_mount.h"
#include "test_env.h"

namespace poolfs::daemon {
namespace {

TEST_CASE("a mountinfo line gives the mount point, type, source and the FUSE owner") {
  const auto e = ParseMountInfoLine(
      "45 27 0:40 / /home/a/my\\040tank rw,nosuid,nodev,relatime shared:1 - fuse.poolfs "
      "/home/a/tank.pool rw,user_id=1000,group_id=1000,default_permissions");
  REQUIRE(e.has_value());
  CHECK(e->mountpoint == "/home/a/my tank");
  CHECK(e->fstype == kPoolfsFsType);
  CHECK(e->source == "/home/a/tank.pool");
  CHECK(e->device == "0:40");
  CHECK(FuseMountOwner(*e) == 1000u);
  const auto root = ParseMountInfoLine(
      "50 27 0:41 / /mnt rw - fuse.poolfs /p rw,user_id=0,group_id=0,default_permissions");
  REQUIRE(root.has_value());
  CHECK(FuseMountOwner(*root) == 0u);
  const auto ext4 = ParseMountInfoLine("22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw");
  REQUIRE(ext4.has_value());
  CHECK_FALSE(FuseMountOwner(*ext4).has_value());
  CHECK_FALSE(ParseMountInfoLine("not a mountinfo line").has_value());
  MountEntry bad;
  bad.super_options = "rw,user_id=12x";
  CHECK_FALSE(FuseMountOwner(bad).has_value());
}

TEST_CASE("the statfs probe answers for a folder and reports a missing one") {
  testing::TempDir dir;
  CHECK(ProbeMount(dir.path()).state == MountState::kAnswers);
  const ProbeResult missing = ProbeMount(dir / "missing");
  CHECK(missing.state == MountState::kFailed);
  CHECK(missing.err == ENOENT);
  // Not a mount at all, so not a dead one.
  MountEntry e;
  e.mountpoint = dir.path();
  e.fstype = kPoolfsFsType;
  e.super_options = "rw,user_id=" + std::to_string(getuid());
  CHECK_FALSE(IsOwnDeadPoolfsMount(e));
}

TEST_CASE("a path under a folder is made canonical without a stat of its last component") {
  testing::TempDir dir;
  auto p = CanonicalParentPath(dir / "./x/");
  REQUIRE(p.ok());
  CHECK(*p == dir / "x");
  CHECK(CanonicalParentPath(dir / "no/x").status().code() == StatusCode::kNotFound);
}

}  // namespace
}  // namespace poolfs::daemon
