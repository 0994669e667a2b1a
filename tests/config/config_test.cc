#include "config/config.h"

#include <catch2/catch.hpp>
#include <string>

#include "parse_util.h"

namespace poolfs::config {
namespace {

using testing::Parse;

// Parses `text`, requires it to fail, and returns the error message.
std::string Error(std::string_view text) {
  Result<Config> c = ParseConfig(text, "poolfs.toml");
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == StatusCode::kInvalidArgument);
  return c.status().message();
}

TEST_CASE("An empty file gives the defaults") {
  CHECK(Parse("") == Tunables{});
  CHECK(Parse("# nothing here\n\n") == Tunables{});
  Result<Config> c = ParseConfig("", "x.toml");
  REQUIRE(c.ok());
  CHECK(c->source() == "x.toml");
  CHECK(c->origin(*FindTunable("txg.timeout_ms")).empty());
}

TEST_CASE("Table and dotted forms set the same tunable") {
  CHECK(Parse("[txg]\ntimeout_ms = 1234\n").core.txg.timeout_ms == 1234);
  CHECK(Parse("txg.timeout_ms = 1234\n").core.txg.timeout_ms == 1234);
  CHECK(Parse("[txg]\ntimeout_ms = 1234\n") == Parse("txg.timeout_ms = 1234\n"));
  // Mixed: dotted keys for one table, a header for another; inline tables too.
  const Tunables t = Parse("alloc.allocators = 4\n[txg]\nsync_threads = 3\n"
                           "[log]\nlevel = \"debug\"\n");
  CHECK(t.core.space.allocators == 4);
  CHECK(t.daemon.sync_threads == 3);
  CHECK(t.daemon.log_level == LogLevel::kDebug);
  CHECK(Parse("arc = { sublists = 8 }\n").core.arc.sublists == 8);
}

TEST_CASE("Every type parses: integer, duration, size, enum, bool") {
  const Tunables t = Parse(R"(
[txg]
timeout_ms = 250
dirty_max_bytes = "512M"
dirty_sync_percent = 30
delay_min_dirty_percent = 0
[alloc]
size_tree_floor = 8192
df_max_search = "1 GiB"
[dmu]
metadnode_backfill = "legacy"
alloc_chunk = 1
[arc]
max_bytes = "0"
[fuse]
writeback_cache = true
)");
  CHECK(t.core.txg.timeout_ms == 250);
  CHECK(t.core.txg.dirty_max_bytes == uint64_t{512} << 20);
  CHECK(t.core.txg.dirty_sync_percent == 30);
  CHECK(t.core.txg.delay_min_dirty_percent == 0);
  CHECK(t.core.space.size_tree_floor == 8192);
  CHECK(t.core.space.df_max_search == uint64_t{1} << 30);
  CHECK(t.core.objects.backfill == BackfillMode::kLegacy);
  CHECK(t.core.objects.chunk == 1);
  CHECK(t.core.arc.max_bytes == 0);
  CHECK(t.daemon.fuse_writeback_cache);
  // Untouched tunables keep their defaults.
  CHECK(t.core.space.allocators == Tunables{}.core.space.allocators);
  CHECK(t.daemon.log_level == LogLevel::kInfo);
}

TEST_CASE("Sizes take every unit, bare bytes, and TOML integers in any base") {
  CHECK(Parse("arc.max_bytes = \"128MiB\"").core.arc.max_bytes == uint64_t{128} << 20);
  CHECK(Parse("arc.max_bytes = \"2G\"").core.arc.max_bytes == uint64_t{2} << 30);
  CHECK(Parse("arc.max_bytes = \"1TiB\"").core.arc.max_bytes == uint64_t{1} << 40);
  CHECK(Parse("arc.max_bytes = \"4096K\"").core.arc.max_bytes == uint64_t{4} << 20);
  CHECK(Parse("arc.max_bytes = \"1048576\"").core.arc.max_bytes == uint64_t{1} << 20);
  CHECK(Parse("arc.max_bytes = 1048576").core.arc.max_bytes == uint64_t{1} << 20);
  CHECK(Parse("arc.max_bytes = 0x100000").core.arc.max_bytes == uint64_t{1} << 20);
  CHECK(Parse("arc.max_bytes = 1_048_576").core.arc.max_bytes == uint64_t{1} << 20);
}

TEST_CASE("Both ends of a range are accepted, one past either end is not") {
  CHECK(Parse("txg.timeout_ms = 1").core.txg.timeout_ms == 1);
  CHECK(Parse("txg.timeout_ms = 600000").core.txg.timeout_ms == 600000);
  CHECK(Error("txg.timeout_ms = 0") ==
        "poolfs.toml:1: txg.timeout_ms = 0: expected an integer number of milliseconds from 1 "
        "to 600000");
  CHECK(Error("txg.timeout_ms = 600001").find("from 1 to 600000") != std::string::npos);
  CHECK(Parse("txg.dirty_max_bytes = \"1TiB\"").core.txg.dirty_max_bytes == uint64_t{1} << 40);
  CHECK(Error("txg.dirty_max_bytes = \"1025GiB\"")
            .find("txg.dirty_max_bytes = \"1025GiB\": expected a size from 1MiB to 1TiB") !=
        std::string::npos);
  CHECK(Error("[txg]\ndirty_sync_percent = -1").find("poolfs.toml:2: txg.dirty_sync_percent = -1: "
                                                     "expected an integer from 1 to 100") == 0);
}

TEST_CASE("A special 0 is accepted and small non-zero values are not") {
  CHECK(Parse("arc.max_bytes = 0").core.arc.max_bytes == 0);
  CHECK(Parse("txg.sync_threads = 0").daemon.sync_threads == 0);
  CHECK(Error("arc.max_bytes = \"512K\"")
            .find("expected 0 (a share of RAM) or a size from 1MiB to 1PiB") != std::string::npos);
}

TEST_CASE("A wrong type names the file, line, key, value and accepted values") {
  CHECK(Error("\n\n[txg]\n\n\n\ntimeout_ms = \"fast\"\n") ==
        "poolfs.toml:7: txg.timeout_ms = \"fast\": expected an integer number of milliseconds "
        "from 1 to 600000");
  CHECK(Error("txg.timeout_ms = 5.5").find("txg.timeout_ms = 5.5: expected an integer") !=
        std::string::npos);
  CHECK(Error("dmu.alloc_chunk = \"128\"").find("dmu.alloc_chunk = \"128\": expected an integer") !=
        std::string::npos);
  CHECK(Error("dmu.metadnode_backfill = \"sometimes\"") ==
        "poolfs.toml:1: dmu.metadnode_backfill = \"sometimes\": expected one of \"auto\", \"on\", "
        "\"off\", \"legacy\"");
  CHECK(Error("dmu.metadnode_backfill = 1").find("expected one of \"auto\"") != std::string::npos);
  CHECK(Error("fuse.writeback_cache = \"yes\"") ==
        "poolfs.toml:1: fuse.writeback_cache = \"yes\": expected true or false");
  CHECK(Error("fuse.writeback_cache = 1").find("expected true or false") != std::string::npos);
  CHECK(Error("log.level = [\"info\"]").find("log.level = [...]: expected one of") !=
        std::string::npos);
  CHECK(Error("[txg.timeout_ms]\nx = 1").find("txg.timeout_ms = {...}: expected an integer") !=
        std::string::npos);
  CHECK(Error("txg.timeout_ms = 1979-05-27").find("<date/time>") != std::string::npos);
  CHECK(Error("txg = 5") == "poolfs.toml:1: txg = 5: expected a table ([txg])");
}

TEST_CASE("A bad size string says what is wrong with it, then what is accepted") {
  const std::string e = Error("[arc]\nmax_bytes = \"1GB\"");
  CHECK(e.find("poolfs.toml:2: arc.max_bytes = \"1GB\": unit \"GB\" is ambiguous") == 0);
  CHECK(e.find("; expected 0 (a share of RAM) or a size") != std::string::npos);
  CHECK(Error("arc.max_bytes = \"lots\"").find("no number") != std::string::npos);
}

TEST_CASE("An unknown key suggests the nearest known key") {
  CHECK(Error("[txg]\ntimout_ms = 5000") ==
        "poolfs.toml:2: unknown key txg.timout_ms; did you mean txg.timeout_ms?");
  CHECK(Error("txg.timout_ms = 5000") ==
        "poolfs.toml:1: unknown key txg.timout_ms; did you mean txg.timeout_ms?");
  // A key in the wrong table, and one outside any table.
  CHECK(Error("[dmu]\ntimeout_ms = 5000").find("did you mean txg.timeout_ms?") !=
        std::string::npos);
  CHECK(Error("timeout_ms = 5000") ==
        "poolfs.toml:1: unknown key timeout_ms; did you mean txg.timeout_ms?");
  // Nothing near: the keys of the table are listed instead.
  const std::string far = Error("[log]\nwhere = \"/tmp\"");
  CHECK(far.find("poolfs.toml:2: unknown key log.where (keys of [log]: level)") == 0);
  CHECK(Error("zebra = 1").find("`poolfs tunables` lists the known keys") != std::string::npos);
}

TEST_CASE("An unknown table suggests the nearest known table or lists them") {
  CHECK(Error("[tgx]\ntimeout_ms = 5000") ==
        "poolfs.toml:1: unknown table [tgx]; did you mean [txg]?");
  CHECK(Error("\n[logging]\nlevel = \"info\"") ==
        "poolfs.toml:2: unknown table [logging] (known tables: [txg] [alloc] [vdev] [dmu] [arc] "
        "[fuse] [zil] [log])");
  CHECK(Error("[txg.extra]\na = 1").find("unknown key txg.extra") != std::string::npos);
}

TEST_CASE("A quoted dotted key is explained, not silently accepted") {
  CHECK(Error("\"txg.timeout_ms\" = 100").find("is quoted, so it is one key") != std::string::npos);
  CHECK(Error("[txg]\n\"a b\" = 1").find("unknown key txg.\"a b\"") != std::string::npos);
}

TEST_CASE("Non-ASCII text is fine in comments and refused in keys and values") {
  CHECK(Parse("# caf\xc3\xa9 \xc2\xa7\n[txg] # d\xc3\xa9j\xc3\xa0 vu\ntimeout_ms = 7\n")
            .core.txg.timeout_ms == 7);
  CHECK(Parse("\xEF\xBB\xBFtxg.timeout_ms = 7\n").core.txg.timeout_ms == 7);  // a byte order mark
  CHECK(Error("[txg]\ntimeout_ms\xc2\xa0= 7\n") ==
        "poolfs.toml:2:11: non-ASCII character outside a comment or string (keys and values "
        "of poolfs.toml are ASCII)");
  CHECK(Error("log.level = \"\xc3\xa9\"\n").find("log.level = \"??\": expected one of") !=
        std::string::npos);
  // toml++ 3.3.0 reached __builtin_unreachable() on these (upstream #190, #295).
  CHECK(Error("s = \"\"\"\\\n\xc2\xa7\"\"\"\n").find("unknown key s") != std::string::npos);
  CHECK(Error("\xcc\xaa").find("non-ASCII") != std::string::npos);
  CHECK(Error("log.le_bytes = \"1GB\"\ntxg.dirtycaf\xc3\xa9\n").find("poolfs.toml:2:") == 0);
}

TEST_CASE("A TOML syntax error names the file, line and column") {
  const std::string e = Error("[txg]\ntimeout_ms = 5000\nsync_threads = = 2\n");
  CHECK(e.rfind("poolfs.toml:3:", 0) == 0);
  CHECK(e.find("TOML syntax error") != std::string::npos);
  CHECK(Error("[txg\n").rfind("poolfs.toml:1:", 0) == 0);
  // toml++ quotes the text it choked on, a newline included: still one line.
  const std::string nl = Error("a = tr\n");
  CHECK(nl.find('\n') == std::string::npos);
  CHECK(nl.find("\\n") != std::string::npos);
}

TEST_CASE("A duplicate key is an error, in either form") {
  CHECK(Error("[txg]\ntimeout_ms = 1\ntimeout_ms = 2\n").rfind("poolfs.toml:3:", 0) == 0);
  CHECK(Error("txg.timeout_ms = 1\n[txg]\ntimeout_ms = 2\n").rfind("poolfs.toml:", 0) == 0);
  CHECK(Error("[txg]\ntimeout_ms = 1\n[txg]\n").rfind("poolfs.toml:3:", 0) == 0);
}

TEST_CASE("Every mistake is reported, in file order, and nothing is applied") {
  const std::string text =
      "[txg]\n"
      "timeout_ms = 100\n"           // fine, but must not be applied
      "sync_threads = 999\n"         // line 3: out of range
      "[tgx]\n"                      // line 4: unknown table
      "[dmu]\n"
      "metadnode_backfill = \"no\"\n"  // line 6: bad choice
      "alloc_chnk = 4\n";            // line 7: unknown key
  Result<Config> c = ParseConfig(text, "/etc/poolfs/poolfs.toml");
  REQUIRE_FALSE(c.ok());
  const std::string& e = c.status().message();
  const size_t l3 = e.find("/etc/poolfs/poolfs.toml:3: txg.sync_threads = 999");
  const size_t l4 = e.find("/etc/poolfs/poolfs.toml:4: unknown table [tgx]");
  const size_t l6 = e.find("/etc/poolfs/poolfs.toml:6: dmu.metadnode_backfill = \"no\"");
  const size_t l7 = e.find("/etc/poolfs/poolfs.toml:7: unknown key dmu.alloc_chnk; did you mean "
                           "dmu.alloc_chunk?");
  REQUIRE(l3 != std::string::npos);
  REQUIRE(l4 != std::string::npos);
  REQUIRE(l6 != std::string::npos);
  REQUIRE(l7 != std::string::npos);
  CHECK(l3 < l4);
  CHECK(l4 < l6);
  CHECK(l6 < l7);
  CHECK(std::count(e.begin(), e.end(), '\n') == 3);
}

TEST_CASE("Very many mistakes are cut short with a count") {
  std::string text = "[txg]\n";
  for (int i = 0; i < 30; i++) text += "bad" + std::to_string(i) + " = 1\n";
  const std::string e = Error(text);
  CHECK(std::count(e.begin(), e.end(), '\n') == 20);
  CHECK(e.find("poolfs.toml: ... and 10 more errors") != std::string::npos);
}

TEST_CASE("Values record where they were set") {
  Result<Config> c = ParseConfig("\n[txg]\ntimeout_ms = 100\n", "a.toml");
  REQUIRE(c.ok());
  CHECK(c->origin(*FindTunable("txg.timeout_ms")) == "a.toml:3");
  CHECK(c->origin(*FindTunable("txg.sync_threads")).empty());
}

TEST_CASE("Typed getters return values by name and refuse the wrong type") {
  Result<Config> c = ParseConfig("dmu.metadnode_backfill = \"off\"\nfuse.writeback_cache = true\n"
                                 "txg.dirty_max_bytes = \"2GiB\"", "a.toml");
  REQUIRE(c.ok());
  CHECK(*c->GetU64("txg.dirty_max_bytes") == uint64_t{2} << 30);
  CHECK(*c->GetU64("txg.timeout_ms") == 5000);
  CHECK(*c->GetEnum("dmu.metadnode_backfill") == "off");
  CHECK(*c->GetBool("fuse.writeback_cache"));
  CHECK(c->GetU64("txg.nope").status().IsNotFound());
  CHECK(c->GetU64("log.level").status().code() == StatusCode::kInvalidArgument);
  CHECK(c->GetBool("txg.timeout_ms").status().code() == StatusCode::kInvalidArgument);
  CHECK(c->GetEnum("fuse.writeback_cache").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("Config::Set refuses a value out of range and changes nothing") {
  Config c;
  const TunableInfo& t = *FindTunable("txg.timeout_ms");
  const Status st = c.Set(t, 0, "test");
  CHECK(st.message() == "txg.timeout_ms = 0ms: expected an integer number of milliseconds from 1 "
                        "to 600000");
  CHECK(c.values() == Tunables{});
  CHECK(c.origin(t).empty());
  CHECK(c.Set(t, 42, "test").ok());
  CHECK(c.values().core.txg.timeout_ms == 42);
  CHECK(c.origin(t) == "test");
}

TEST_CASE("ApplyAssignment parses KEY=VALUE as a command line writes it") {
  const Config base;
  Result<Config> a = ApplyAssignment(base, "dmu.metadnode_backfill=off");
  REQUIRE(a.ok());
  CHECK(a->values().core.objects.backfill == BackfillMode::kOff);
  CHECK(a->origin(*FindTunable("dmu.metadnode_backfill")) == "poolfs tune");
  CHECK(ApplyAssignment(base, "log.level = \"warn\"")->values().daemon.log_level ==
        LogLevel::kWarn);
  CHECK(ApplyAssignment(base, "arc.max_bytes=128MiB")->values().core.arc.max_bytes ==
        (uint64_t{128} << 20));
  CHECK(ApplyAssignment(base, "txg.timeout_ms=100")->values().core.txg.timeout_ms == 100);
  CHECK(ApplyAssignment(base, "fuse.writeback_cache=true")->values().daemon.fuse_writeback_cache);
  // The base is untouched.
  CHECK(base.values() == Tunables{});
}

TEST_CASE("ApplyAssignment errors name the key and the accepted values") {
  const Config base;
  CHECK(ApplyAssignment(base, "txg.timeout_ms=fast").status().message() ==
        "txg.timeout_ms=fast: expected an integer number of milliseconds from 1 to 600000");
  CHECK(ApplyAssignment(base, "txg.timeout_ms=0").status().message().find("from 1 to 600000") !=
        std::string::npos);
  CHECK(ApplyAssignment(base, "txg.timout_ms=5").status().message().find(
            "unknown key txg.timout_ms; did you mean txg.timeout_ms?") == 0);
  CHECK(ApplyAssignment(base, "txg.timeout_ms").status().message().find("expected KEY=VALUE") !=
        std::string::npos);
  CHECK(ApplyAssignment(base, "arc.max_bytes=1GB").status().message().find("ambiguous") !=
        std::string::npos);
  CHECK(ApplyAssignment(base, "dmu.metadnode_backfill=Auto").status().message().find(
            "expected one of") != std::string::npos);
  CHECK(ApplyAssignment(base, "fuse.writeback_cache=1").status().message().find(
            "expected true or false") != std::string::npos);
}

}  // namespace
}  // namespace poolfs::config
