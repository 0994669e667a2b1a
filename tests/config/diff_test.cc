#include <catch2/catch.hpp>

#include "config/config.h"
#include "parse_util.h"

namespace poolfs::config {
namespace {

using testing::Parse;

TEST_CASE("Diff of equal values is empty") {
  CHECK(Diff(Tunables{}, Tunables{}).empty());
  CHECK(Diff(Tunables{}, Tunables{}).ToString().empty());
  // Setting a tunable to its default is no change.
  CHECK(Diff(Tunables{}, Parse("txg.timeout_ms = 5000")).empty());
}

TEST_CASE("Diff splits changes into live and at-mount, in table order") {
  const Tunables loaded = Parse(R"(
[txg]
timeout_ms = 1000
sync_threads = 4
[alloc]
allocators = 2
[dmu]
metadnode_backfill = "off"
[log]
level = "debug"
)");
  const ConfigDiff d = Diff(Tunables{}, loaded);
  REQUIRE(d.live.size() == 4);
  CHECK(d.live[0].tunable->name == "txg.timeout_ms");
  CHECK(d.live[0].old_value == 5000);
  CHECK(d.live[0].new_value == 1000);
  CHECK(d.live[1].tunable->name == "txg.sync_threads");
  CHECK(d.live[2].tunable->name == "dmu.metadnode_backfill");
  CHECK(d.live[3].tunable->name == "log.level");
  REQUIRE(d.at_mount.size() == 1);
  CHECK(d.at_mount[0].tunable->name == "alloc.allocators");
  CHECK(d.ToString() ==
        "txg.timeout_ms: 5000ms -> 1000ms (live)\n"
        "txg.sync_threads: 0 -> 4 (live)\n"
        "dmu.metadnode_backfill: auto -> off (live)\n"
        "log.level: info -> debug (live)\n"
        "alloc.allocators: 0 -> 2 (at the next mount)\n");
}

TEST_CASE("ApplyLive takes the live tunables of a reload and keeps the others running") {
  const Tunables running = Parse("alloc.allocators = 2\ntxg.timeout_ms = 3000\n");
  const Tunables loaded = Parse(
      "alloc.allocators = 8\ndmu.metadnode_backfill = \"on\"\n"
      "arc.max_bytes = \"256MiB\"\narc.sublists = 16\n");
  const Tunables now = ApplyLive(running, loaded);
  CHECK(now.core.txg.timeout_ms == 5000);  // live: back to the file's (default) value
  CHECK(now.core.objects.backfill == BackfillMode::kOn);
  CHECK(now.core.arc.max_bytes == uint64_t{256} << 20);
  CHECK(now.core.space.allocators == 2);  // at mount: the running value stays
  CHECK(now.core.arc.sublists == 0);
  // What is left to apply at the next mount is exactly the at-mount part.
  const ConfigDiff rest = Diff(now, loaded);
  CHECK(rest.live.empty());
  CHECK(rest.at_mount.size() == 2);
  CHECK(Diff(running, loaded).at_mount.size() == 2);
}

TEST_CASE("Every tunable is either live or at mount in Diff") {
  for (const TunableInfo& t : AllTunables()) {
    INFO(t.name);
    Tunables changed;
    const uint64_t other = t.type == TunableType::kEnum || t.type == TunableType::kBool
                               ? (t.default_value() == 0 ? 1 : 0)
                               : (t.default_value() == t.max ? t.min : t.max);
    t.set(changed, other);
    const ConfigDiff d = Diff(Tunables{}, changed);
    const size_t expect_live = t.applies == Applies::kLive ? 1 : 0;
    CHECK(d.live.size() == expect_live);
    CHECK(d.at_mount.size() == 1 - expect_live);
  }
}

}  // namespace
}  // namespace poolfs::config
