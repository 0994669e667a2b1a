#include "config/units.h"

#include <catch2/catch.hpp>

namespace poolfs::config {
namespace {

TEST_CASE("ParseSize reads binary units, short and long, in any case") {
  CHECK(*ParseSize("16KiB") == 16384);
  CHECK(*ParseSize("16K") == 16384);
  CHECK(*ParseSize("16k") == 16384);
  CHECK(*ParseSize("16kib") == 16384);
  CHECK(*ParseSize("512M") == uint64_t{512} << 20);
  CHECK(*ParseSize("512MiB") == uint64_t{512} << 20);
  CHECK(*ParseSize("1GiB") == uint64_t{1} << 30);
  CHECK(*ParseSize("1G") == uint64_t{1} << 30);
  CHECK(*ParseSize("2TiB") == uint64_t{2} << 40);
  CHECK(*ParseSize("3P") == uint64_t{3} << 50);
  CHECK(*ParseSize("15EiB") == uint64_t{15} << 60);
}

TEST_CASE("ParseSize reads bare bytes, a B suffix and spaces around the unit") {
  CHECK(*ParseSize("0") == 0);
  CHECK(*ParseSize("4096") == 4096);
  CHECK(*ParseSize("4096B") == 4096);
  CHECK(*ParseSize(" 16 KiB ") == 16384);
  CHECK(*ParseSize("18446744073709551615") == UINT64_MAX);
}

TEST_CASE("ParseSize refuses ambiguous decimal units, fractions, junk and overflow") {
  const Result<uint64_t> gb = ParseSize("1GB");
  REQUIRE_FALSE(gb.ok());
  CHECK(gb.status().message().find("ambiguous") != std::string::npos);
  CHECK(gb.status().message().find("\"GiB\"") != std::string::npos);
  const Result<uint64_t> frac = ParseSize("1.5GiB");
  REQUIRE_FALSE(frac.ok());
  CHECK(frac.status().message().find("whole") != std::string::npos);
  const Result<uint64_t> unit = ParseSize("3 parsecs");
  REQUIRE_FALSE(unit.ok());
  CHECK(unit.status().message().find("unknown unit \"parsecs\"") != std::string::npos);
  CHECK_FALSE(ParseSize("").ok());
  CHECK_FALSE(ParseSize("GiB").ok());
  CHECK_FALSE(ParseSize("-1").ok());
  CHECK_FALSE(ParseSize("16EiB").ok());
  CHECK_FALSE(ParseSize("18446744073709551616").ok());
  CHECK_FALSE(ParseSize("1 2K").ok());
}

TEST_CASE("FormatSize picks the largest exact unit and round-trips through ParseSize") {
  CHECK(FormatSize(0) == "0");
  CHECK(FormatSize(1000) == "1000");
  CHECK(FormatSize(16384) == "16KiB");
  CHECK(FormatSize(uint64_t{1} << 30) == "1GiB");
  CHECK(FormatSize(uint64_t{1536} << 20) == "1536MiB");
  CHECK(FormatSize(uint64_t{1} << 60) == "1EiB");
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{1023}, uint64_t{1024}, uint64_t{3} << 40,
                     (uint64_t{1} << 50) + 1024, UINT64_MAX, UINT64_MAX - 1023}) {
    INFO(v);
    CHECK(*ParseSize(FormatSize(v)) == v);
  }
}

TEST_CASE("ParseDecimal takes digits only") {
  CHECK(*ParseDecimal("0") == 0);
  CHECK(*ParseDecimal("600000") == 600000);
  CHECK_FALSE(ParseDecimal("").ok());
  CHECK_FALSE(ParseDecimal("+5").ok());
  CHECK_FALSE(ParseDecimal("5 ").ok());
  CHECK_FALSE(ParseDecimal("99999999999999999999").ok());
}

}  // namespace
}  // namespace poolfs::config
