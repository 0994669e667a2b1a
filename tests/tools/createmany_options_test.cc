#include "tools/createmany/createmany_options.h"

#include <catch2/catch.hpp>

namespace poolfs::createmany {
namespace {

Options Parse(std::vector<std::string> args) {
  auto o = ParseArgs(args);
  INFO(o.status().ToString());
  REQUIRE(o.ok());
  return *o;
}

TEST_CASE("ParseArgs reads the Lustre form FMT START COUNT", "[options]") {
  Options o = Parse({"-o", "/mnt/f%d", "10", "1000"});
  CHECK(o.mode == Mode::kOpen);
  CHECK(o.format == "/mnt/f%d");
  CHECK(o.start == 10);
  CHECK(o.count == 1000);
  CHECK(o.threads == 1);
  CHECK(o.dir.empty());
  CHECK_FALSE(o.time_limit_s);
  CHECK_FALSE(o.unlink_after);
}

TEST_CASE("ParseArgs reads FMT COUNT with START defaulting to zero", "[options]") {
  Options o = Parse({"-m", "f", "5"});
  CHECK(o.mode == Mode::kMknod);
  CHECK(o.start == 0);
  CHECK(o.count == 5);
}

TEST_CASE("ParseArgs takes a trailing negative number as the time limit", "[options]") {
  Options o = Parse({"-d", "d", "-30"});
  CHECK(o.mode == Mode::kMkdir);
  CHECK_FALSE(o.count);
  REQUIRE(o.time_limit_s);
  CHECK(*o.time_limit_s == 30.0);
  Options both = Parse({"-o", "f", "100", "-2.5"});
  CHECK(both.count == 100);
  CHECK(*both.time_limit_s == 2.5);
}

TEST_CASE("ParseArgs reads threads and a directory and lets FMT default with -D", "[options]") {
  Options o = Parse({"-o", "-t", "32", "-D", "/mnt/bench", "1000000"});
  CHECK(o.threads == 32);
  CHECK(o.dir == "/mnt/bench");
  CHECK(o.format == "f");
  CHECK(o.count == 1000000);
  Options with_start = Parse({"-o", "-t4", "-D", "d", "7", "20"});
  CHECK(with_start.start == 7);
  CHECK(with_start.count == 20);
  Options with_format = Parse({"-o", "-D", "d", "g%04d", "20"});
  CHECK(with_format.format == "g%04d");
}

TEST_CASE("ParseArgs takes the link target attached or separate", "[options]") {
  CHECK(Parse({"-l", "target", "f", "3"}).link_target == "target");
  Options attached = Parse({"-ltarget", "f", "3"});
  CHECK(attached.mode == Mode::kLink);
  CHECK(attached.link_target == "target");
  CHECK(attached.format == "f");
}

TEST_CASE("ParseArgs takes the unlink format only when attached as in Lustre", "[options]") {
  Options plain = Parse({"-o", "-r", "f", "3"});
  CHECK(plain.unlink_after);
  CHECK_FALSE(plain.unlink_format);
  CHECK(plain.format == "f");
  Options attached = Parse({"-o", "-rg%d", "f", "3"});
  CHECK(attached.unlink_after);
  CHECK(attached.unlink_format == "g%d");
  Options synonym = Parse({"-m", "-u", "f", "3"});
  CHECK(synonym.unlink_after);
}

TEST_CASE("ParseArgs makes -r alone an unlink-only run", "[options]") {
  Options o = Parse({"-r", "f", "3"});
  CHECK(o.mode == Mode::kUnlinkOnly);
  CHECK(o.unlink_after);
}

TEST_CASE("ParseArgs reads the progress interval and clustered flags", "[options]") {
  Options o = Parse({"-oi", "0.5", "f", "3"});
  CHECK(o.mode == Mode::kOpen);
  CHECK(o.interval_s == 0.5);
  CHECK(Parse({"-o", "-i", "0", "f", "3"}).interval_s == 0.0);
}

TEST_CASE("ParseArgs reports help", "[options]") {
  CHECK(Parse({"-h"}).help);
  CHECK(Parse({"--help"}).help);
  CHECK_THAT(Usage("createmany"), Catch::Contains("-t THREADS") && Catch::Contains("-SECONDS"));
}

TEST_CASE("ParseArgs refuses bad arguments with a message naming them", "[options]") {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const Case cases[] = {
      {{}, "one of -o"},
      {{"f", "10"}, "one of -o"},
      {{"-o", "-m", "f", "10"}, "only one"},
      {{"-o", "-l", "t", "f", "10"}, "only one"},
      {{"-o"}, "missing FMT"},
      {{"-o", "f"}, "COUNT or a time limit"},
      {{"-o", "f", "ten"}, "COUNT 'ten'"},
      {{"-o", "f", "-1x"}, "unknown option -1"},
      {{"-o", "f", "1", "2", "3"}, "too many"},
      {{"-o", "f", "-5", "-6"}, "twice"},
      {{"-o", "f", "-0"}, "> 0"},
      {{"-o", "-t", "0", "f", "10"}, "THREADS '0'"},
      {{"-o", "-t", "5000", "f", "10"}, "THREADS '5000'"},
      {{"-o", "-t", "f", "10"}, "THREADS 'f'"},
      {{"-o", "-t"}, "-t needs a value"},
      {{"-o", "-D"}, "-D needs a value"},
      {{"-o", "-i", "-1", "f", "10"}, "INTERVAL"},
      {{"-x", "f", "10"}, "unknown option -x"},
      {{"-o", "f%s", "10"}, "not an integer conversion"},
      {{"-o", "-rg%s", "f", "10"}, "not an integer conversion"},
      {{"-o", "-D", "d", "/abs%d", "10"}, "relative"},
      {{"-o", "f", "99999999999999999999"}, "COUNT"},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += "'" + a + "' ";
    INFO("args: " << joined);
    auto o = ParseArgs(c.args);
    REQUIRE_FALSE(o.ok());
    CHECK(o.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(o.status().message(), Catch::Contains(c.says));
  }
}

}  // namespace
}  // namespace poolfs::createmany
