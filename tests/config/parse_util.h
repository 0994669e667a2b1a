// Helpers shared by the config tests.
#pragma once

#include <catch2/catch.hpp>
#include <string_view>

#include "config/config.h"

namespace poolfs::config::testing {

// Parses `text` as "poolfs.toml" and returns the values, failing the test
// (with the error) when it does not parse.
inline Tunables Parse(std::string_view text) {
  Result<Config> c = ParseConfig(text, "poolfs.toml");
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  return c->values();
}

}  // namespace poolfs::config::testing
