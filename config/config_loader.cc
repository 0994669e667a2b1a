// The TOML side of the config layer: ParseConfig and LoadConfigFile (see
// config.h for the rules and the error formats).
//
// This is the only file that includes toml++ (it is heavy to compile). It is
// used header-only, with exceptions off, so that the parser is compiled with
// our flags (and, in the fuzz build, instrumented with the rest) and
// toml::parse returns a parse_result instead of throwing.
//
// The walk: toml++ parses the whole document first (a syntax error, a
// duplicate key: one error, no Config). Then every key of the root must be a
// known table, and every key of a known table a known tunable whose value
// has the right type and is in range; each mistake adds one error line, and
// the walk goes on so that one run reports them all. Only when there is no
// error is the Config returned.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTERS 0
#include <toml++/toml.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/units.h"

namespace poolfs::config {
namespace {

constexpr size_t kMaxErrors = 20;
constexpr size_t kMaxFileBytes = size_t{1} << 20;
constexpr size_t kMaxShownChars = 40;

bool IsBareKey(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
  });
}

// `s` as a TOML basic string, printable and at most kMaxShownChars long.
std::string QuoteString(std::string_view s) {
  std::string out = "\"";
  size_t shown = 0;
  for (char c : s) {
    if (shown++ == kMaxShownChars) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// `s` with control characters escaped, so that an error stays on one line
// (toml++ quotes the offending text, newlines included).
std::string OneLine(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// A key as the user would write it: bare when it can be, else quoted.
std::string ShowKey(std::string_view key) { return IsBareKey(key) ? std::string(key) : QuoteString(key); }

// A value, short, as it appears in the file.
std::string ShowValue(const toml::node& node) {
  if (const auto* s = node.as_string()) return QuoteString(s->get());
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* f = node.as_floating_point()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", f->get());
    return buf;
  }
  if (node.is_array()) return "[...]";
  if (node.is_table()) return "{...}";
  return "<date/time>";
}

// toml++ 3.3.0 (Debian 12's) reaches __builtin_unreachable() in its check
// for non-ASCII whitespace for some code points (U+00A7, U+00E9, ...; upstream
// issues marzer/tomlplusplus#190 and #295, fixed by #305 after 3.4). No key
// or value of poolfs.toml has a reason to be anything but ASCII, so toml++
// never sees a non-ASCII byte: in comments and strings each becomes '?'
// (comments are ignored; no accepted string value has one anyway), and one
// anywhere else is our own error. The classification is a small lexer; if it
// misjudges invalid TOML, the result is still pure ASCII, and toml++ reports
// the invalid TOML.
struct AsciiText {
  std::string text;
  uint32_t bad_line = 0;  // > 0: a non-ASCII byte outside comments and strings
  uint32_t bad_column = 0;
};

AsciiText MakeAscii(std::string_view in) {
  if (in.substr(0, 3) == "\xEF\xBB\xBF") in.remove_prefix(3);  // a UTF-8 byte order mark
  enum class State { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral };
  AsciiText out;
  out.text.reserve(in.size());
  State state = State::kCode;
  uint32_t line = 1, column = 1;
  for (size_t i = 0; i < in.size(); i++) {
    const char c = in[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      if (state == State::kCode) {
        out.bad_line = line;
        out.bad_column = column;
        return out;
      }
      out.text += '?';
      column++;
      continue;
    }
    out.text += c;
    column++;
    if (c == '\n') {
      line++;
      column = 1;
    }
    const std::string_view rest = in.substr(i);
    switch (state) {
      case State::kCode:
        if (c == '#') state = State::kComment;
        if (c == '"') state = rest.substr(0, 3) == "\"\"\"" ? State::kMultiBasic : State::kBasic;
        if (c == '\'') state = rest.substr(0, 3) == "'''" ? State::kMultiLiteral : State::kLiteral;
        if (state == State::kMultiBasic || state == State::kMultiLiteral) {
          out.text += in.substr(i + 1, 2);  // the rest of the opening quotes
          column += 2;
          i += 2;
        }
        break;
      case State::kComment:
        if (c == '\n') state = State::kCode;
        break;
      case State::kBasic:
      case State::kMultiBasic:
        if (c == '\\' && i + 1 < in.size() && static_cast<unsigned char>(in[i + 1]) < 0x80 &&
            in[i + 1] != '\n') {
          out.text += in[++i];  // an escaped character
          column++;
        } else if (state == State::kBasic && (c == '"' || c == '\n')) {
          state = State::kCode;
        } else if (state == State::kMultiBasic && rest.substr(0, 3) == "\"\"\"") {
          out.text += in.substr(i + 1, 2);
          column += 2;
          i += 2;
          state = State::kCode;
        }
        break;
      case State::kLiteral:
        if (c == '\'' || c == '\n') state = State::kCode;
        break;
      case State::kMultiLiteral:
        if (rest.substr(0, 3) == "'''") {
          out.text += in.substr(i + 1, 2);
          column += 2;
          i += 2;
          state = State::kCode;
        }
        break;
    }
  }
  return out;
}

class Walker {
 public:
  explicit Walker(std::string_view source) : source_(source) { config_.set_source(source_); }

  // Adds an error at `where`: "SOURCE:LINE: text" (or "SOURCE: text" when
  // the position is unknown).
  void Error(const toml::source_region& where, std::string text, bool with_column = false) {
    Error(where.begin.line, where.begin.column, std::move(text), with_column);
  }

  void Error(uint32_t line, uint32_t column, std::string text, bool with_column) {
    std::string prefix = source_;
    if (line > 0) {
      prefix += ":" + std::to_string(line);
      if (with_column) prefix += ":" + std::to_string(column);
    }
    errors_.push_back({line, column, prefix + ": " + std::move(text)});
  }

  void WalkRoot(const toml::table& root) {
    for (const auto& [key, node] : root) {
      const std::string_view name = key.str();
      if (const toml::table* table = node.as_table()) {
        const auto tables = TunableTables();
        if (std::find(tables.begin(), tables.end(), name) != tables.end()) {
          WalkTable(name, *table);
        } else {
          UnknownTable(key);
        }
      } else if (FindTunable(name) != nullptr) {
        Error(key.source(), "key " + QuoteString(name) +
                                " is quoted, so it is one key with a dot in its name; write " +
                                std::string(name) + " = ... without the quotes");
      } else {
        const auto tables = TunableTables();
        if (std::find(tables.begin(), tables.end(), name) != tables.end()) {
          Error(node.source(), std::string(name) + " = " + ShowValue(node) +
                                   ": expected a table ([" + std::string(name) + "])");
        } else {
          UnknownKey(key.source(), ShowKey(name), std::string(name), "");
        }
      }
    }
  }

  Result<Config> Finish() && {
    if (errors_.empty()) return std::move(config_);
    std::stable_sort(errors_.begin(), errors_.end(), [](const Entry& a, const Entry& b) {
      return std::pair(a.line, a.column) < std::pair(b.line, b.column);
    });
    std::string message;
    for (size_t i = 0; i < errors_.size() && i < kMaxErrors; i++) {
      if (i > 0) message += "\n";
      message += errors_[i].text;
    }
    if (errors_.size() > kMaxErrors) {
      message += "\n" + source_ + ": ... and " + std::to_string(errors_.size() - kMaxErrors) +
                 " more errors";
    }
    return Status::InvalidArgument(std::move(message));
  }

 private:
  struct Entry {
    uint32_t line;
    uint32_t column;
    std::string text;
  };

  void WalkTable(std::string_view table, const toml::table& t) {
    for (const auto& [key, node] : t) {
      const std::string full = std::string(table) + "." + std::string(key.str());
      const TunableInfo* info = FindTunable(full);
      if (info == nullptr) {
        UnknownKey(key.source(), std::string(table) + "." + ShowKey(key.str()), full, table);
        continue;
      }
      SetValue(*info, node);
    }
  }

  void UnknownTable(const toml::key& key) {
    std::string text = "unknown table [" + ShowKey(key.str()) + "]";
    const std::string_view near = SuggestTable(key.str());
    if (!near.empty()) {
      text += "; did you mean [" + std::string(near) + "]?";
    } else {
      text += " (known tables:";
      for (std::string_view t : TunableTables()) text += " [" + std::string(t) + "]";
      text += ")";
    }
    Error(key.source(), std::move(text));
  }

  // `shown` is the key as written, `full` the dotted name to match, `table`
  // the known table it is in ("" at the root).
  void UnknownKey(const toml::source_region& where, const std::string& shown,
                  const std::string& full, std::string_view table) {
    std::string text = "unknown key " + shown;
    const std::string_view near = SuggestTunable(full);
    if (!near.empty()) {
      text += "; did you mean " + std::string(near) + "?";
    } else if (!table.empty()) {
      text += " (keys of [" + std::string(table) + "]:";
      for (const TunableInfo& t : AllTunables()) {
        if (t.table() == table) text += " " + std::string(t.key());
      }
      text += ")";
    } else {
      text += " (`poolfs tunables` lists the known keys)";
    }
    Error(where, std::move(text));
  }

  void SetValue(const TunableInfo& t, const toml::node& node) {
    const auto fail = [&](std::string why) {
      Error(node.source(), std::string(t.name) + " = " + ShowValue(node) + ": " +
                               (why.empty() ? "" : why + "; ") + "expected " + t.Expected());
    };
    uint64_t value = 0;
    switch (t.type) {
      case TunableType::kBool: {
        const auto* b = node.as_boolean();
        if (b == nullptr) return fail("");
        value = b->get() ? 1 : 0;
        break;
      }
      case TunableType::kEnum: {
        const auto* s = node.as_string();
        if (s == nullptr) return fail("");
        const auto it = std::find(t.choices.begin(), t.choices.end(), s->get());
        if (it == t.choices.end()) return fail("");
        value = static_cast<uint64_t>(it - t.choices.begin());
        break;
      }
      case TunableType::kInteger:
      case TunableType::kDuration:
      case TunableType::kSize: {
        if (const auto* i = node.as_integer()) {
          if (i->get() < 0) return fail("");
          value = static_cast<uint64_t>(i->get());
        } else if (const auto* s = node.as_string(); s != nullptr && t.type == TunableType::kSize) {
          Result<uint64_t> bytes = ParseSize(s->get());
          if (!bytes.ok()) return fail(bytes.status().message());
          value = *bytes;
        } else {
          return fail("");
        }
        break;
      }
    }
    if (!t.Accepts(value)) return fail("");
    const Status st =
        config_.Set(t, value, source_ + ":" + std::to_string(node.source().begin.line));
    if (!st.ok()) fail(st.message());  // unreachable: Accepts was checked
  }

  std::string source_;
  Config config_;
  std::vector<Entry> errors_;
};

}  // namespace

Result<Config> ParseConfig(std::string_view text, std::string_view source_name) {
  Walker walker(source_name);
  const AsciiText ascii = MakeAscii(text);
  if (ascii.bad_line > 0) {
    walker.Error(ascii.bad_line, ascii.bad_column,
                 "non-ASCII character outside a comment or string (keys and values of "
                 "poolfs.toml are ASCII)",
                 /*with_column=*/true);
    return std::move(walker).Finish();
  }
  toml::parse_result parsed = toml::parse(ascii.text, source_name);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    walker.Error(e.source(), "TOML syntax error: " + OneLine(e.description()),
                 /*with_column=*/true);
    return std::move(walker).Finish();
  }
  walker.WalkRoot(parsed.table());
  return std::move(walker).Finish();
}

Result<Config> LoadConfigFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string message = path + ": " + std::strerror(err);
    return err == ENOENT ? Status::NotFound(message) : Status::IOError(message);
  }
  std::string text;
  char buf[65536];
  Status st;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      st = Status::IOError(path + ": " + std::strerror(errno));
      break;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxFileBytes) {
      st = Status::InvalidArgument(path + ": larger than 1MiB; not a config file?");
      break;
    }
  }
  ::close(fd);
  if (!st.ok()) return st;
  return ParseConfig(text, path);
}

}  // namespace poolfs::config
