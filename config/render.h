// Renderings of the tunables table for people: `poolfs tunables`, the
// shipped default config file, and the values in effect (`poolfs status`).
//
// Thread safety: pure functions of the static table (and of their argument).
#pragma once

#include <string>

#include "config/config.h"

namespace poolfs::config {

// Returns what `poolfs tunables` prints: one row per tunable with aligned
// columns NAME, TYPE, DEFAULT, RANGE, APPLIES, followed by its doc string
// (wrapped, indented), what 0 means where it is special, and what it maps
// onto.
std::string RenderTunablesTable();

// Returns a complete poolfs.toml that sets every tunable to its default,
// each preceded by its doc string, type, range and when it applies, grouped
// into TOML tables. packaging/poolfs.toml is exactly this text (a test
// checks it); ParseConfig of it yields the defaults (another test).
std::string RenderDefaultConfig();

// Returns one line per tunable, "NAME = VALUE", aligned, with the origin of
// every value that is not the default ("# poolfs.toml:7"): what `poolfs
// status` shows as the tunables in effect.
std::string RenderEffectiveTunables(const Config& config);

}  // namespace poolfs::config
