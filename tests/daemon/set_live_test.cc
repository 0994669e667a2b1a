// The config table's "live" against the core: a real Filesystem (core/posix
// on a pool file) takes, through SetLive, a change of every tunable the
// table says is live, and refuses a change of every core tunable it says
// applies at mount, so `poolfs tune` and SIGHUP can neither promise a live
// change the core drops nor make one the table does not know of.
#include <catch2/catch.hpp>
#include <string>

#include "config/config.h"
#include "poolfs/fs.h"
#include "poolfs/pool_admin.h"
#include "test_env.h"

namespace poolfs::daemon {
namespace {

using testing::TempDir;

// A value of `t` other than its default that the row accepts.
uint64_t OtherValue(const config::TunableInfo& t) {
  const uint64_t d = t.default_value();
  switch (t.type) {
    case config::TunableType::kBool: return d == 0 ? 1 : 0;
    case config::TunableType::kEnum: return (d + 1) % t.choices.size();
    default: return d == t.min ? t.max : t.min;
  }
}

struct MountedPool {
  MountedPool() {
    REQUIRE(CreatePool({path}, uint64_t{128} << 20, CreatePoolOptions{}).ok());
    MountOptions o;
    o.tunables = config::Tunables{}.core;  // what a mount with no config file gets
    auto mounted = Filesystem::Mount({path}, o);
    REQUIRE(mounted.ok());
    fs = std::move(mounted).value();
  }
  TempDir dir;
  const std::string path = dir / "t.pool";
  std::unique_ptr<Filesystem> fs;
};

TEST_CASE("SetLive takes every live core tunable and refuses every at-mount one") {
  MountedPool m;
  const config::Tunables defaults;
  size_t live = 0, at_mount = 0;
  for (const config::TunableInfo& t : config::AllTunables()) {
    if (!t.maps_to.starts_with("core: ")) continue;  // the daemon's own
    INFO(t.name << " = " << t.Format(OtherValue(t)));
    config::Tunables changed = defaults;
    t.set(changed, OtherValue(t));
    REQUIRE(changed.core != defaults.core);
    const Status st = m.fs->SetLive(changed.core);
    if (t.applies == config::Applies::kLive) {
      CHECK(st.ok());
      live++;
    } else {
      CHECK(st.code() == StatusCode::kInvalidArgument);
      CHECK(st.message().find("at the next mount") != std::string::npos);
      at_mount++;
    }
    REQUIRE(m.fs->SetLive(defaults.core).ok());  // back, for the next row
  }
  CHECK(live >= 8);
  CHECK(at_mount >= 10);
}

TEST_CASE("SetLive reports what it refuses and changes nothing then") {
  MountedPool m;
  CoreTunables t;
  t.txg.timeout_ms = 1234;
  t.txg.dirty_sync_percent = 0;  // out of range: the whole update is refused
  const Status bad = m.fs->SetLive(t);
  CHECK(bad.code() == StatusCode::kInvalidArgument);
  CHECK(bad.message().find("txg.dirty_sync_percent") != std::string::npos);

  t = CoreTunables{};
  t.objects.backfill = BackfillMode::kOff;
  t.space.allocators = 3;  // at mount only: refused along with the live change
  CHECK(m.fs->SetLive(t).code() == StatusCode::kInvalidArgument);
  CHECK(m.fs->GetStatus().backfill == "auto");
  t.space = SpaceOptions{};
  REQUIRE(m.fs->SetLive(t).ok());
  CHECK(m.fs->GetStatus().backfill == "off");

  REQUIRE(m.fs->Unmount().ok());
  CHECK(m.fs->SetLive(CoreTunables{}).code() == StatusCode::kAborted);
}

}  // namespace
}  // namespace poolfs::daemon
