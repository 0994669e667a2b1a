// libFuzzer target for the config parser (config/config.h).
//
// Input: any bytes, taken as a TOML document.
//
// Properties checked (a violation aborts):
//   - ParseConfig never crashes, and fails only with InvalidArgument whose
//     every line starts with the source name;
//   - a Config it returns holds only accepted values, and writing those
//     values back as TOML (FormatToml, in both the dotted and the [table]
//     form) parses to the same values;
//   - Diff against the defaults lists exactly the tunables that differ, and
//     ApplyLive keeps every at-mount value of the running side;
//   - the same bytes as one `KEY=VALUE` (ApplyAssignment) and as a size
//     (ParseSize) never crash, and a size that parses formats back to itself.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/render.h"
#include "config/units.h"

namespace {

using namespace poolfs::config;
using poolfs::Result;
using poolfs::StatusCode;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "config_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void CheckError(const poolfs::Status& st) {
  if (st.code() != StatusCode::kInvalidArgument) Fail("unexpected code", st.ToString());
  size_t pos = 0;
  const std::string& m = st.message();
  while (pos <= m.size()) {
    if (m.compare(pos, 9, "fuzz.toml") != 0) Fail("error line without the source", m);
    const size_t nl = m.find('\n', pos);
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
}

void CheckRoundTrip(const Config& c) {
  std::string dotted, tables;
  std::string_view table;
  for (const TunableInfo& t : AllTunables()) {
    const uint64_t v = c.raw(t);
    if (!t.Accepts(v)) Fail("value out of range", std::string(t.name));
    dotted += std::string(t.name) + " = " + t.FormatToml(v) + "\n";
    if (t.table() != table) {
      table = t.table();
      tables += "[" + std::string(table) + "]\n";
    }
    tables += std::string(t.key()) + " = " + t.FormatToml(v) + "\n";
  }
  for (const std::string& text : {dotted, tables}) {
    Result<Config> back = ParseConfig(text, "fuzz.toml");
    if (!back.ok()) Fail("rendered values do not parse", back.status().ToString() + "\n" + text);
    if (!(back->values() == c.values())) Fail("rendered values parse differently", text);
  }
  (void)RenderEffectiveTunables(c);

  const Tunables defaults;
  const ConfigDiff d = Diff(defaults, c.values());
  size_t differ = 0;
  for (const TunableInfo& t : AllTunables()) differ += t.get(defaults) != c.raw(t);
  if (d.live.size() + d.at_mount.size() != differ) Fail("diff size", d.ToString());
  const Tunables live = ApplyLive(defaults, c.values());
  for (const TunableInfo& t : AllTunables()) {
    const uint64_t want = t.applies == Applies::kLive ? c.raw(t) : t.get(defaults);
    if (t.get(live) != want) Fail("ApplyLive", std::string(t.name));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<Config> c = ParseConfig(text, "fuzz.toml");
  if (c.ok()) {
    CheckRoundTrip(*c);
  } else {
    CheckError(c.status());
  }

  const Config base;
  Result<Config> a = ApplyAssignment(base, text);
  if (a.ok()) {
    CheckRoundTrip(*a);
  } else if (a.status().code() != StatusCode::kInvalidArgument) {
    Fail("ApplyAssignment code", a.status().ToString());
  }

  if (size <= 64) {
    Result<uint64_t> bytes = ParseSize(text);
    if (bytes.ok()) {
      Result<uint64_t> again = ParseSize(FormatSize(*bytes));
      if (!again.ok() || *again != *bytes) Fail("size round trip", FormatSize(*bytes));
    }
  }
  return 0;
}
