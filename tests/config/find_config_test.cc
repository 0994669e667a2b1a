#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "config/config.h"

namespace poolfs::config {
namespace {

namespace fs = std::filesystem;

// A fresh temporary folder with home/, xdg/ and etc/ inside, removed at the
// end of the test.
class TempTree {
 public:
  TempTree() {
    std::string tmpl = (fs::temp_directory_path() / "poolfs-config-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    root_ = tmpl;
    fs::create_directories(root_ / "home");
    fs::create_directories(root_ / "xdg");
    fs::create_directories(root_ / "etc");
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string path(const std::string& rel) const { return (root_ / rel).string(); }
  // Creates the file rel (and its folders) and returns its path.
  std::string Touch(const std::string& rel) const {
    fs::create_directories((root_ / rel).parent_path());
    std::FILE* f = std::fopen(path(rel).c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("# test\n", f);
    std::fclose(f);
    return path(rel);
  }
  ConfigSearchPaths Paths() const {
    return {.xdg_config_home = path("xdg"), .home = path("home"),
            .system_file = path("etc/poolfs/poolfs.toml")};
  }

 private:
  fs::path root_;
};

std::optional<std::string> Find(std::string_view explicit_path, const ConfigSearchPaths& p) {
  Result<std::optional<std::string>> r = FindConfigFile(explicit_path, p);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

TEST_CASE("FindConfigFile: --config first, then XDG, then /etc, then none") {
  TempTree tree;
  const ConfigSearchPaths p = tree.Paths();
  CHECK(Find("", p) == std::nullopt);
  const std::string etc = tree.Touch("etc/poolfs/poolfs.toml");
  CHECK(Find("", p) == etc);
  const std::string xdg = tree.Touch("xdg/poolfs/poolfs.toml");
  CHECK(Find("", p) == xdg);
  const std::string mine = tree.Touch("mine.toml");
  CHECK(Find(mine, p) == mine);
}

TEST_CASE("FindConfigFile uses ~/.config only when XDG_CONFIG_HOME is unset or relative") {
  TempTree tree;
  ConfigSearchPaths p = tree.Paths();
  const std::string home = tree.Touch("home/.config/poolfs/poolfs.toml");
  const std::string etc = tree.Touch("etc/poolfs/poolfs.toml");
  // XDG set (and absolute) but without the file: ~/.config is not looked at.
  CHECK(Find("", p) == etc);
  p.xdg_config_home = "";
  CHECK(Find("", p) == home);
  p.xdg_config_home = "relative/xdg";
  CHECK(Find("", p) == home);
  p.home = "";
  CHECK(Find("", p) == etc);
}

TEST_CASE("FindConfigFile fails for a missing --config file and for a folder") {
  TempTree tree;
  const ConfigSearchPaths p = tree.Paths();
  const std::string missing = tree.path("nope.toml");
  Result<std::optional<std::string>> r = FindConfigFile(missing, p);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().IsNotFound());
  CHECK(r.status().message().find(missing) != std::string::npos);
  fs::create_directories(tree.path("xdg/poolfs/poolfs.toml"));
  r = FindConfigFile("", p);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("not a regular file") != std::string::npos);
  CHECK_FALSE(FindConfigFile(tree.path("xdg"), p).ok());
}

TEST_CASE("FindConfigFile reads HOME and XDG_CONFIG_HOME from the environment") {
  TempTree tree;
  const char* old_home = std::getenv("HOME");
  const char* old_xdg = std::getenv("XDG_CONFIG_HOME");
  const std::string saved_home = old_home ? old_home : "";
  const std::string saved_xdg = old_xdg ? old_xdg : "";

  const std::string home = tree.Touch("home/.config/poolfs/poolfs.toml");
  const std::string xdg = tree.Touch("xdg/poolfs/poolfs.toml");
  ::setenv("HOME", tree.path("home").c_str(), 1);
  ::setenv("XDG_CONFIG_HOME", tree.path("xdg").c_str(), 1);
  const ConfigSearchPaths env = ConfigSearchPaths::FromEnvironment();
  CHECK(env.xdg_config_home == tree.path("xdg"));
  CHECK(env.home == tree.path("home"));
  CHECK(env.system_file == "/etc/poolfs/poolfs.toml");
  Result<std::optional<std::string>> with_xdg = FindConfigFile("");
  ::unsetenv("XDG_CONFIG_HOME");
  Result<std::optional<std::string>> without_xdg = FindConfigFile("");

  if (old_home) ::setenv("HOME", saved_home.c_str(), 1); else ::unsetenv("HOME");
  if (old_xdg) ::setenv("XDG_CONFIG_HOME", saved_xdg.c_str(), 1);
  REQUIRE(with_xdg.ok());
  CHECK(*with_xdg == xdg);
  REQUIRE(without_xdg.ok());
  CHECK(*without_xdg == home);
}

TEST_CASE("LoadConfigFile parses the file and names it in errors") {
  TempTree tree;
  const std::string path = tree.path("poolfs.toml");
  std::FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs("[txg]\ntimeout_ms = 100\n", f);
  std::fclose(f);
  Result<Config> c = LoadConfigFile(path);
  REQUIRE(c.ok());
  CHECK(c->values().core.txg.timeout_ms == 100);
  CHECK(c->source() == path);
  CHECK(c->origin(*FindTunable("txg.timeout_ms")) == path + ":2");

  f = std::fopen(path.c_str(), "w");
  std::fputs("[txg]\ntimeout_ms = \"fast\"\n", f);
  std::fclose(f);
  c = LoadConfigFile(path);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().rfind(path + ":2: txg.timeout_ms = \"fast\"", 0) == 0);

  c = LoadConfigFile(tree.path("missing.toml"));
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().IsNotFound());
  CHECK(c.status().message().find("missing.toml") != std::string::npos);
  CHECK_FALSE(LoadConfigFile(tree.path("etc")).ok());  // a folder
}

}  // namespace
}  // namespace poolfs::config
