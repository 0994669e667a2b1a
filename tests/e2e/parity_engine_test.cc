// The parity engine, checked without any mount: two folders of one
// filesystem must agree on every scenario, and a difference planted on one
// side must be reported (the checker can fail).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "parity/parity.h"
#include "parity/tree_walk.h"

namespace {

using namespace poolfs::e2e;

// A fresh folder below $TMPDIR (or /tmp) with sides a/ and b/, removed at
// the end.
struct TwoSides {
  std::filesystem::path root;
  TwoSides() {
    std::string tmpl = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                       "/e2e-parity-test.XXXXXX";
    root = ::mkdtemp(tmpl.data());
    std::filesystem::create_directory(root / "a");
    std::filesystem::create_directory(root / "b");
  }
  ~TwoSides() {
    // Scenarios leave read-only folders behind: make them removable first.
    for (auto& e : std::filesystem::recursive_directory_iterator(
             root, std::filesystem::directory_options::skip_permission_denied)) {
      if (std::filesystem::is_directory(e.symlink_status())) ::chmod(e.path().c_str(), 0755);
    }
    std::filesystem::remove_all(root);
  }
  ParityOptions Options() const {
    ParityOptions o;
    o.dir_a = root / "a";
    o.dir_b = root / "b";
    return o;
  }
};

TEST_CASE("Every scenario gives the same results in two folders of one filesystem") {
  TwoSides sides;
  // statfs_figures is left out: it checks that writing 8 MiB lowers the free
  // space, and the shared filesystem of /tmp has other writers (the e2e
  // drivers run it on private tmpfs and poolfs mounts).
  std::vector<Scenario> scenarios;
  for (auto& sc : AllScenarios()) {
    if (sc.name != "statfs_figures") scenarios.push_back(sc);
  }
  auto report = RunParity(scenarios, sides.Options());
  REQUIRE(report.error.empty());
  CHECK(report.scenarios == static_cast<int>(scenarios.size()));
  CHECK(report.lines_compared > 1000);
  for (const auto& d : report.differences) {
    INFO(d.scenario << " " << d.where << "\nA: " << d.a << "\nB: " << d.b);
    CHECK(false);
  }
}

TEST_CASE("A call that behaves differently on one side is reported") {
  TwoSides sides;
  // A scenario that makes a file only on its second run (side B).
  bool on_b = false;
  std::vector<Scenario> uneven = {{"uneven", [&on_b](Sys& s) {
                                     if (on_b) Touch(s, "only-on-b", "x");
                                     on_b = true;
                                     s.Stat("only-on-b");
                                   }}};
  auto report = RunParity(uneven, sides.Options());
  REQUIRE(report.error.empty());
  bool saw_call = false, saw_tree = false;
  for (const auto& d : report.differences) {
    if (d.a == "stat(only-on-b) = -1 ENOENT") saw_call = true;
    if (d.where == "tree entry only-on-b" && d.a == "(none)") saw_tree = true;
  }
  CHECK(saw_call);
  CHECK(saw_tree);
}

TEST_CASE("One call that fails on one side shows as one difference not a shifted log") {
  TwoSides sides;
  // Side B makes one call more in the middle; every later line still agrees.
  bool on_b = false;
  std::vector<Scenario> extra = {{"extra", [&on_b](Sys& s) {
                                    s.Mkdir("d1", 0755);
                                    if (on_b) s.Mkdir("only-b", 0755);
                                    on_b = true;
                                    s.Mkdir("d2", 0755);
                                    s.Mkdir("d3", 0755);
                                  }}};
  auto report = RunParity(extra, sides.Options());
  REQUIRE(report.error.empty());
  std::vector<std::string> calls;
  for (const auto& d : report.differences) {
    if (d.where.rfind("call", 0) == 0) calls.push_back(d.a + " | " + d.b);
  }
  REQUIRE(calls.size() == 1);
  CHECK(calls[0] == "(none) | mkdir(only-b, 0755) = 0");
}

TEST_CASE("A known difference is marked with its reason and others are not") {
  std::vector<Difference> diffs = {
      {"s1", "call 1", "chmod(f, 0644) = 0", "chmod(f, 0644) = -1 EIO", ""},
      {"s2", "call 1", "chmod(f, 0644) = 0", "x", ""}};
  std::vector<KnownDifference> known = {{"s1", "chmod(f,", "a reason"}};
  MarkKnown(known, &diffs);
  CHECK(diffs[0].known == "a reason");
  CHECK(diffs[1].known.empty());
}

TEST_CASE("A known-differences file with a malformed line is refused with its line number") {
  TwoSides sides;
  auto path = sides.root / "known.txt";
  std::ofstream(path) << "# comment\n\nscenario\tprefix\treason\nbroken line\n";
  std::vector<KnownDifference> known;
  std::string error;
  CHECK_FALSE(ReadKnownDifferences(path, &known, &error));
  CHECK(error.find(":4:") != std::string::npos);
}

TEST_CASE("The snapshot shows content hashes and a file's identity") {
  TwoSides sides;
  std::ofstream(sides.root / "a" / "f") << "hello";
  std::filesystem::create_hard_link(sides.root / "a" / "f", sides.root / "a" / "g");
  auto lines = Snapshot(sides.root / "a");
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("reg f:") == 0);
  CHECK(lines[0].find("content:" + HashHex("hello")) != std::string::npos);
  CHECK(lines[0].find(" ino=") != std::string::npos);
  CHECK(lines[1].find("same-file-as=f") != std::string::npos);
}

}  // namespace
