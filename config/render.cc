#include "config/render.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "config/tunables.h"

namespace poolfs::config {
namespace {

constexpr size_t kWidth = 79;

// Splits `text` into lines of at most `width` characters at spaces (a word
// longer than `width` gets a line of its own).
std::vector<std::string> Wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(std::move(line));
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string_view AppliesText(Applies a) { return a == Applies::kLive ? "live" : "mount"; }

// "0 (one per allocator) or 1 to 256", "1MiB to 1TiB".
std::string RangeWords(const TunableInfo& t, const std::string& min, const std::string& max) {
  std::string zero;
  if (!t.zero_means.empty()) zero = "0 (" + std::string(t.zero_means) + ") or ";
  return zero + min + " to " + max;
}

// "Milliseconds, 1 to 600000; live." for the config file.
std::string TypeLine(const TunableInfo& t) {
  std::string type;
  const std::string min = std::to_string(t.min), max = std::to_string(t.max);
  switch (t.type) {
    case TunableType::kBool: type = "Bool (true or false)"; break;
    case TunableType::kInteger: type = "Integer, " + RangeWords(t, min, max); break;
    case TunableType::kDuration: type = "Milliseconds, " + RangeWords(t, min, max); break;
    case TunableType::kSize:
      type = "Size, " + RangeWords(t, t.Format(t.min), t.Format(t.max));
      break;
    case TunableType::kEnum: type = "One of " + t.RangeText(); break;
  }
  return type + (t.applies == Applies::kLive ? "; live." : "; at mount.");
}

constexpr std::string_view kConfigHeader =
    "# poolfs configuration: every tunable, set to its default.\n"
    "#\n"
    "# Generated from the tunables table (config/tunables.cc, RenderDefaultConfig);\n"
    "# `poolfs tunables` prints the same table. Sizes are a number of bytes or a\n"
    "# string with a binary unit (\"16KiB\", \"512M\", \"1GiB\"); durations are\n"
    "# milliseconds. Live tunables change on SIGHUP or `poolfs tune MOUNTPOINT\n"
    "# KEY=VALUE`; the others at the next mount. A bad value is reported with\n"
    "# this file's name, the line, the key and the accepted values, and nothing\n"
    "# changes: a bad reload keeps the running values.\n";

}  // namespace

std::string RenderTunablesTable() {
  struct Row {
    std::string cells[5];
  };
  std::vector<Row> rows;
  rows.push_back({{"NAME", "TYPE", "DEFAULT", "RANGE", "APPLIES"}});
  for (const TunableInfo& t : AllTunables()) {
    rows.push_back({{std::string(t.name), std::string(TypeName(t.type)),
                     t.Format(t.default_value()), t.RangeText(),
                     std::string(AppliesText(t.applies))}});
  }
  size_t widths[5] = {};
  for (const Row& r : rows) {
    for (size_t i = 0; i < 5; i++) widths[i] = std::max(widths[i], r.cells[i].size());
  }
  const auto line = [&](const Row& r) {
    std::string out;
    for (size_t i = 0; i < 4; i++) out += Pad(r.cells[i], widths[i] + 2);
    return out + r.cells[4] + "\n";
  };
  std::string out = line(rows[0]);
  const auto all = AllTunables();
  for (size_t i = 0; i < all.size(); i++) {
    const TunableInfo& t = all[i];
    out += "\n" + line(rows[i + 1]);
    for (const std::string& l : Wrap(t.doc, kWidth - 4)) out += "    " + l + "\n";
    if (!t.zero_means.empty()) out += "    0 means " + std::string(t.zero_means) + ".\n";
    for (const std::string& l : Wrap("Maps to " + std::string(t.maps_to) + ".", kWidth - 4)) {
      out += "    " + l + "\n";
    }
  }
  return out;
}

std::string RenderDefaultConfig() {
  std::string out(kConfigHeader);
  std::string_view table;
  for (const TunableInfo& t : AllTunables()) {
    if (t.table() != table) {
      table = t.table();
      out += "\n[" + std::string(table) + "]\n";
    } else {
      out += "\n";
    }
    for (const std::string& l : Wrap(t.doc, kWidth - 2)) out += "# " + l + "\n";
    for (const std::string& l : Wrap(TypeLine(t), kWidth - 2)) out += "# " + l + "\n";
    out += std::string(t.key()) + " = " + t.FormatToml(t.default_value()) + "\n";
  }
  return out;
}

std::string RenderEffectiveTunables(const Config& config) {
  size_t width = 0;
  for (const TunableInfo& t : AllTunables()) {
    width = std::max(width, t.name.size() + 3 + t.Format(config.raw(t)).size());
  }
  std::string out;
  for (const TunableInfo& t : AllTunables()) {
    std::string l = std::string(t.name) + " = " + t.Format(config.raw(t));
    const std::string& origin = config.origin(t);
    if (!origin.empty()) l = Pad(std::move(l), width + 2) + "# " + origin;
    out += l + "\n";
  }
  return out;
}

}  // namespace poolfs::config
