#include "tools/createmany/name_format.h"

#include <catch2/catch.hpp>

namespace poolfs::createmany {
namespace {

std::string Name(const std::string& format, int64_t index) {
  auto f = NameFormat::Parse(format);
  REQUIRE(f.ok());
  return f->Format(index);
}

TEST_CASE("NameFormat appends the index when the format has no conversion", "[name_format]") {
  CHECK(Name("f", 0) == "f0");
  CHECK(Name("dir/file-", 1234567) == "dir/file-1234567");
}

TEST_CASE("NameFormat puts the index where the conversion is", "[name_format]") {
  CHECK(Name("f%d", 7) == "f7");
  CHECK(Name("a%db", 42) == "a42b");
  CHECK(Name("%i.x", 3) == "3.x");
  CHECK(Name("f%u", 9) == "f9");
}

TEST_CASE("NameFormat honours flags width precision and bases", "[name_format]") {
  CHECK(Name("f%08d", 42) == "f00000042");
  CHECK(Name("f%-4d|", 5) == "f5   |");
  CHECK(Name("f%.3d", 5) == "f005");
  CHECK(Name("f%x", 255) == "fff");
  CHECK(Name("f%X", 255) == "fFF");
  CHECK(Name("f%#o", 8) == "f010");
  CHECK(Name("f%ld", 1LL << 40) == "f1099511627776");  // length modifiers ignored
  CHECK(Name("f%lld", 12) == "f12");
}

TEST_CASE("NameFormat keeps a doubled percent sign as one literal percent", "[name_format]") {
  CHECK(Name("100%%-%d", 1) == "100%-1");
  CHECK(Name("%d%%", 2) == "2%");
  CHECK(Name("p%%", 3) == "p%3");  // no conversion: the index is appended
}

TEST_CASE("NameFormat refuses formats that are not one integer conversion", "[name_format]") {
  for (const char* bad :
       {"", "f%s", "f%d%d", "f%", "f%*d", "f%f", "f%n", "f%999d", "f%.300d", "f%p"}) {
    INFO("format: '" << bad << "'");
    auto f = NameFormat::Parse(bad);
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("NameFormat error names the format and the offending conversion", "[name_format]") {
  auto f = NameFormat::Parse("abc%s");
  REQUIRE_FALSE(f.ok());
  CHECK_THAT(f.status().message(), Catch::Contains("abc%s") && Catch::Contains("offset 3"));
}

}  // namespace
}  // namespace poolfs::createmany
