#include "createmany_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "name_format.h"

namespace poolfs::createmany {
namespace {

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "-10" or "-2.5": Lustre's positional time limit.
bool IsTimeLimit(std::string_view s) {
  if (s.size() < 2 || s[0] != '-' || s[1] < '0' || s[1] > '9') return false;
  size_t dots = 0;
  for (char c : s.substr(1)) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots <= 1;
}

Result<int64_t> ParseInt(std::string_view what, const std::string& text, int64_t min, int64_t max) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 0);  // 0: 0x.. and 0.. as in Lustre
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    return Status::InvalidArgument(std::string(what) + " '" + text + "': not a whole number in " +
                                   std::to_string(min) + ".." + std::to_string(max));
  }
  return static_cast<int64_t>(v);
}

Result<double> ParseSeconds(std::string_view what, const std::string& text, bool zero_ok) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < 0 ||
      (!zero_ok && v == 0) || v > 1e9) {
    return Status::InvalidArgument(std::string(what) + " '" + text + "': not a number of seconds " +
                                   (zero_ok ? ">= 0" : "> 0"));
  }
  return v;
}

}  // namespace

Result<Options> ParseArgs(const std::vector<std::string>& args) {
  Options o;
  int modes = 0;
  std::vector<std::string> positional;
  bool options_done = false;
  for (size_t a = 0; a < args.size(); ++a) {
    const std::string& arg = args[a];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    if (IsTimeLimit(arg)) {
      if (o.time_limit_s) return Status::InvalidArgument("time limit given twice: '" + arg + "'");
      POOLFS_ASSIGN_OR_RETURN(o.time_limit_s, ParseSeconds("time limit", arg.substr(1), false));
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "--help") {
      o.help = true;
      return o;
    }
    // A cluster of one-letter options, getopt style: "-om", "-t4", "-rname%d".
    for (size_t i = 1; i < arg.size(); ++i) {
      char c = arg[i];
      std::string rest = arg.substr(i + 1);
      auto value = [&]() -> Result<std::string> {
        if (!rest.empty()) return rest;
        if (a + 1 >= args.size()) {
          return Status::InvalidArgument(std::string("option -") + c + " needs a value");
        }
        return args[++a];
      };
      bool consumed_rest = false;
      switch (c) {
        case 'h': o.help = true; return o;
        case 'o':
          o.mode = Mode::kOpen;
          ++modes;
          break;
        case 'm':
          o.mode = Mode::kMknod;
          ++modes;
          break;
        case 'd':
          o.mode = Mode::kMkdir;
          ++modes;
          break;
        case 'l': {
          POOLFS_ASSIGN_OR_RETURN(o.link_target, value());
          if (o.link_target.empty()) return Status::InvalidArgument("option -l: empty TARGET");
          o.mode = Mode::kLink;
          ++modes;
          consumed_rest = true;
          break;
        }
        case 'r':
        case 'u':
          o.unlink_after = true;
          if (!rest.empty()) o.unlink_format = rest;
          consumed_rest = true;
          break;
        case 't': {
          POOLFS_ASSIGN_OR_RETURN(std::string v, value());
          POOLFS_ASSIGN_OR_RETURN(int64_t t, ParseInt("-t THREADS", v, 1, kMaxThreads));
          o.threads = static_cast<int>(t);
          consumed_rest = true;
          break;
        }
        case 'D': {
          POOLFS_ASSIGN_OR_RETURN(o.dir, value());
          if (o.dir.empty()) return Status::InvalidArgument("option -D: empty DIR");
          consumed_rest = true;
          break;
        }
        case 'i': {
          POOLFS_ASSIGN_OR_RETURN(std::string v, value());
          POOLFS_ASSIGN_OR_RETURN(o.interval_s, ParseSeconds("-i INTERVAL", v, true));
          consumed_rest = true;
          break;
        }
        default:
          return Status::InvalidArgument(std::string("unknown option -") + c + " (in '" + arg +
                                         "')");
      }
      if (consumed_rest) break;
    }
  }

  if (modes > 1) return Status::InvalidArgument("give only one of -o, -m, -d, -l");
  if (modes == 0) {
    if (!o.unlink_after) return Status::InvalidArgument("give one of -o, -m, -d, -l (or -r)");
    o.mode = Mode::kUnlinkOnly;
  }

  // Positional arguments: FMT [[START] COUNT]; with -D, FMT may be left out.
  bool have_format = !positional.empty() && (o.dir.empty() || !AllDigits(positional[0]));
  if (!have_format && o.dir.empty()) return Status::InvalidArgument("missing FMT (file names)");
  size_t first_number = have_format ? 1 : 0;
  size_t numbers = positional.size() - first_number;
  if (numbers > 2) {
    return Status::InvalidArgument("too many arguments: '" + positional[first_number + 2] +
                                   "' after FMT START COUNT");
  }
  if (have_format) o.format = positional[0];
  POOLFS_RETURN_IF_ERROR(NameFormat::Parse(o.format).status());
  if (o.unlink_format) POOLFS_RETURN_IF_ERROR(NameFormat::Parse(*o.unlink_format).status());
  if (!o.dir.empty() && (o.format[0] == '/' || (o.unlink_format && (*o.unlink_format)[0] == '/'))) {
    return Status::InvalidArgument(
        "with -D, FMT and UNLINKFMT are relative to each thread's "
        "directory; '" +
        o.format + "' is absolute");
  }
  constexpr int64_t kMax = int64_t{1} << 52;  // indices stay exact and far from overflow
  if (numbers == 2) {
    POOLFS_ASSIGN_OR_RETURN(o.start, ParseInt("START", positional[first_number], 0, kMax));
  }
  if (numbers >= 1) {
    POOLFS_ASSIGN_OR_RETURN(o.count, ParseInt("COUNT", positional.back(), 0, kMax));
  }
  if (!o.count && !o.time_limit_s) {
    return Status::InvalidArgument("give COUNT or a time limit (-SECONDS), or both");
  }
  return o;
}

std::string Usage(std::string_view prog) {
  std::string p(prog);
  return "usage: " + p +
         " {-o|-m|-d|-l TARGET} [-r[UNLINKFMT]] [-t THREADS] [-D DIR] [-i INTERVAL]\n"
         "       " +
         std::string(p.size(), ' ') +
         " [FMT] [[START] COUNT] [-SECONDS]\n"
         "  -o          open(O_CREAT|O_RDWR, 0644) and close each file\n"
         "  -m          mknod each file (S_IFREG|0444)\n"
         "  -d          mkdir each name (0755)\n"
         "  -l TARGET   hard-link each name to TARGET\n"
         "  -r[FMT]     unlink (rmdir for -d) each name after creating it, or the name\n"
         "              FMT gives for the same index (attached: -rg%d); alone, only unlink\n"
         "  -t THREADS  threads (default 1); COUNT is the total across them\n"
         "  -D DIR      thread i works in DIR/t<i> (created if missing); FMT is relative\n"
         "              to it and defaults to \"f\"\n"
         "  -i SECONDS  progress line interval (default 10; 0: none)\n"
         "  FMT         file names, printf style with one integer conversion (f%d,\n"
         "              f%08x); without one the index is appended\n"
         "  START       first index (default 0)\n"
         "  COUNT       how many (default: until the time limit)\n"
         "  -SECONDS    stop creating after SECONDS\n"
         "Prints 'total: N creates in S seconds: R creates/second'; exits 1 if any\n"
         "operation failed, 2 for bad arguments.\n";
}

}  // namespace poolfs::createmany
