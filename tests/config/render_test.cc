#include "config/render.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

namespace poolfs::config {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST_CASE("The rendered default config parses back to the defaults, every key set") {
  const std::string text = RenderDefaultConfig();
  Result<Config> c = ParseConfig(text, "default.toml");
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  CHECK(c->values() == Tunables{});
  for (const TunableInfo& t : AllTunables()) {
    INFO(t.name);
    CHECK_FALSE(c->origin(t).empty());  // set explicitly by the file, not left out
  }
}

TEST_CASE("A config rendered with other values parses back to them") {
  // Each tunable at the far end of its range (or another choice), written
  // the way RenderDefaultConfig writes values.
  Tunables values;
  for (const TunableInfo& t : AllTunables()) {
    const uint64_t v = t.type == TunableType::kEnum   ? t.choices.size() - 1
                       : t.type == TunableType::kBool ? 1
                                                      : t.max;
    t.set(values, v);
  }
  std::string text;
  for (const TunableInfo& t : AllTunables()) {
    text += std::string(t.name) + " = " + t.FormatToml(t.get(values)) + "\n";
  }
  Result<Config> c = ParseConfig(text, "max.toml");
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  CHECK(c->values() == values);
}

TEST_CASE("The rendered default config documents every tunable and fits 79 columns") {
  const std::string text = RenderDefaultConfig();
  for (const TunableInfo& t : AllTunables()) {
    INFO(t.name);
    CHECK(text.find("\n" + std::string(t.key()) + " = ") != std::string::npos);
    CHECK(text.find("[" + std::string(t.table()) + "]") != std::string::npos);
  }
  CHECK(text.find("# Milliseconds, 1 to 600000; live.\ntimeout_ms = 5000\n") != std::string::npos);
  CHECK(text.find("dirty_max_bytes = \"256MiB\"\n") != std::string::npos);
  CHECK(text.find("# One of auto|on|off|legacy; live.\nmetadnode_backfill = \"auto\"\n") !=
        std::string::npos);
  CHECK(text.find("# Integer, 0 (one per allocator) or 1 to 256; live.\nsync_threads = 0\n") !=
        std::string::npos);
  for (const std::string& l : Lines(text)) {
    INFO(l);
    CHECK(l.size() <= 79);
  }
}

TEST_CASE("packaging/poolfs.toml is exactly the rendered default config") {
  const std::string path = std::string(POOLFS_SOURCE_DIR) + "/packaging/poolfs.toml";
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream shipped;
  shipped << in.rdbuf();
  // On a mismatch (a row of the table changed), regenerate the file:
  //   build/bin/config_render_default > packaging/poolfs.toml
  CHECK(shipped.str() == RenderDefaultConfig());
}

TEST_CASE("The tunables table has aligned columns and every tunable's doc") {
  const std::string table = RenderTunablesTable();
  const std::vector<std::string> lines = Lines(table);
  REQUIRE(!lines.empty());
  const std::string& header = lines[0];
  const size_t type_col = header.find("TYPE");
  const size_t default_col = header.find("DEFAULT");
  const size_t range_col = header.find("RANGE");
  const size_t applies_col = header.find("APPLIES");
  REQUIRE(header.rfind("NAME", 0) == 0);
  REQUIRE(type_col < default_col);
  REQUIRE(default_col < range_col);
  REQUIRE(range_col < applies_col);
  size_t rows = 0;
  for (const TunableInfo& t : AllTunables()) {
    INFO(t.name);
    const std::string start = std::string(t.name) + " ";
    bool found = false;
    for (const std::string& l : lines) {
      if (l.rfind(start, 0) != 0) continue;
      found = true;
      rows++;
      CHECK(l.substr(type_col, TypeName(t.type).size()) == TypeName(t.type));
      const std::string def = t.Format(t.default_value());
      CHECK(l.substr(default_col, def.size()) == def);
      CHECK(l.substr(range_col, t.RangeText().size()) == t.RangeText());
      CHECK(l.substr(applies_col) == (t.applies == Applies::kLive ? "live" : "mount"));
    }
    CHECK(found);
    // The doc's first words follow, indented.
    const std::string first_words(t.doc.substr(0, t.doc.find(' ', 12)));
    CHECK(table.find("    " + first_words) != std::string::npos);
  }
  CHECK(rows == AllTunables().size());
  CHECK(table.find("    0 means one per allocator.\n") != std::string::npos);
  CHECK(table.find("Maps to core: TxgOptions::timeout_ms.") != std::string::npos);
}

TEST_CASE("The tunables in effect show values and where the non-defaults came from") {
  Result<Config> c = ParseConfig("[txg]\ntimeout_ms = 100\n", "my.toml");
  REQUIRE(c.ok());
  const std::string text = RenderEffectiveTunables(*c);
  CHECK(text.find("txg.timeout_ms = 100ms") != std::string::npos);
  CHECK(text.find("# my.toml:2") != std::string::npos);
  CHECK(text.find("txg.dirty_max_bytes = 256MiB\n") != std::string::npos);
  CHECK(Lines(text).size() == AllTunables().size());
}

}  // namespace
}  // namespace poolfs::config
