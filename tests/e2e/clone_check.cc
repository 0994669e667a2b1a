// e2e_clone_check: what a program sees of a file that copy_file_range(2)
// has just written over, on a real mount (tests/e2e/reflink_test.sh drives
// it). A filesystem that clones blocks keeps the destination's new block
// pointers apart from its dirty data until a txg syncs them; if reads,
// SEEK_DATA/SEEK_HOLE, the page cache or the size then disagree with the
// clone, a program sees the destination's old bytes, holes where the
// source has data (which cp skips: data lost), or a mix of both. OpenZFS
// shipped such bugs in its first release with block cloning. So each
// check here runs at once after the copy, before any txg can have synced
// it, and again later (after a sync, a remount, or a kill of the daemon)
// against the saved expectation.
//
//   e2e_clone_check make FILE SIZE [OFF:LEN]...
//       Writes FILE anew: SIZE bytes, data only in the extents OFF:LEN,
//       holes elsewhere (sizes in bytes, with a K or M suffix, or sums of
//       them: 3M+4321); the bytes come from FILE's name, so two files
//       differ. No fsync: one of more than a quarter of the intent log
//       syncs the txg, and a source must be able to stay unsynced.
//   e2e_clone_check clone SRC DST [--off-in N] [--off-out N] [--len N]
//                   [--exact-layout] [--fsync] [--save-old PATH] [--save-new PATH]
//       Reads DST (its pages are then cached) and maps it, copies with
//       copy_file_range (--len: the rest of SRC by default) and at once
//       checks DST: fstat's size, read(2) through the open descriptor and a
//       new one, the mapping made before the copy and a new one, and
//       SEEK_DATA/SEEK_HOLE: every hole reads as zeros, and with
//       --exact-layout (for a filesystem that shares SRC's blocks rather
//       than writes them: a written block of zeros is data), where the
//       range lies alike in its blocks, the layout is SRC's inside the
//       range and DST's old one outside. --fsync: then fsync(DST).
//       --save-old / --save-new: DST's bytes before and after (PATH) and
//       its expected layout (PATH.layout) for `verify`.
//   e2e_clone_check verify FILE EXPECTED
//       The same checks of FILE against EXPECTED (a --save-new PATH).
//   e2e_clone_check layout FILE
//       Prints FILE's data extents as SEEK_DATA/SEEK_HOLE report them.
//
// Exit status: 0 when every check passed, 1 when one failed, 2 on a usage
// error or a failed system call.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

// Data extents [start, end), sorted, apart, within the file's size.
using Layout = std::vector<std::pair<uint64_t, uint64_t>>;

int failures = 0;

void Fail(const std::string& what) {
  std::cout << "FAIL: " << what << "\n";
  failures++;
}

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "e2e_clone_check: " << what << ": " << std::strerror(errno) << "\n";
  std::exit(2);
}

// "4321", "128K", "3M", or a sum of them: "3M+4321".
uint64_t ParseSize(const std::string& s) {
  if (const size_t plus = s.find('+'); plus != std::string::npos)
    return ParseSize(s.substr(0, plus)) + ParseSize(s.substr(plus + 1));
  size_t used = 0;
  uint64_t v = std::stoull(s, &used);
  const std::string unit = s.substr(used);
  if (unit == "K") return v << 10;
  if (unit == "M") return v << 20;
  if (!unit.empty()) throw std::invalid_argument("bad size: " + s);
  return v;
}

// The bytes `make` writes at `off` of a file named `name`: each 8-byte
// word a hash of the name and the word's index, so two files differ
// everywhere and no block is zeros.
std::string Pattern(const std::string& name, uint64_t off, uint64_t len) {
  const uint64_t seed = std::hash<std::string>{}(name);
  std::string out(len, '\0');
  for (uint64_t i = 0; i < len; i++) {
    uint64_t x = seed ^ (((off + i) / 8) * 0x9E3779B97F4A7C15ull);  // splitmix64
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    out[i] = char((x >> (8 * ((off + i) % 8))) & 0xff);
  }
  return out;
}

std::string Base(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string ReadAll(int fd, uint64_t size) {
  std::string out(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = pread(fd, out.data() + done, size - done, off_t(done));
    if (n < 0) Die("read");
    if (n == 0) break;
    done += uint64_t(n);
  }
  out.resize(done);
  return out;
}

uint64_t SizeOf(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) Die("fstat");
  return uint64_t(st.st_size);
}

// The data extents SEEK_DATA and SEEK_HOLE report.
Layout LayoutOf(int fd) {
  const uint64_t size = SizeOf(fd);
  Layout out;
  uint64_t at = 0;
  while (at < size) {
    const off_t data = lseek(fd, off_t(at), SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;
      Die("lseek SEEK_DATA");
    }
    const off_t hole = lseek(fd, data, SEEK_HOLE);
    if (hole < 0) Die("lseek SEEK_HOLE");
    if (uint64_t(hole) <= uint64_t(data)) {
      Fail("SEEK_HOLE from " + std::to_string(data) + " answered " + std::to_string(hole));
      break;
    }
    out.emplace_back(uint64_t(data), uint64_t(hole));
    at = uint64_t(hole);
  }
  return out;
}

std::string Show(const Layout& l) {
  std::ostringstream s;
  for (const auto& [a, b] : l) s << "[" << a << "," << b << ") ";
  return l.empty() ? "(no data)" : s.str();
}

// The extents of `l` within [from, to), moved by `shift`.
Layout Clip(const Layout& l, uint64_t from, uint64_t to, int64_t shift) {
  Layout out;
  for (const auto& [a, b] : l) {
    const uint64_t s = std::max(a, from), e = std::min(b, to);
    if (s < e) out.emplace_back(uint64_t(int64_t(s) + shift), uint64_t(int64_t(e) + shift));
  }
  return out;
}

Layout Merge(Layout l) {
  std::sort(l.begin(), l.end());
  Layout out;
  for (const auto& e : l) {
    if (!out.empty() && e.first <= out.back().second) {
      out.back().second = std::max(out.back().second, e.second);
    } else {
      out.push_back(e);
    }
  }
  return out;
}

// Compares what `fd` (and a new descriptor of `path`, and mappings)
// shows with `want`, and its layout with `layout` when given. `label`
// prefixes each line.
void Check(const std::string& label, const std::string& path, int fd, const std::string& want,
           const std::optional<Layout>& layout) {
  const int before = failures;
  const uint64_t size = SizeOf(fd);
  if (size != want.size())
    Fail(label + ": fstat size " + std::to_string(size) + ", expected " +
         std::to_string(want.size()));
  auto first_difference = [&](const std::string& got) -> std::string {
    if (got.size() != want.size())
      return std::to_string(got.size()) + " bytes, expected " + std::to_string(want.size());
    const auto m = std::mismatch(got.begin(), got.end(), want.begin());
    if (m.first == got.end()) return "";
    const uint64_t at = uint64_t(m.first - got.begin());
    uint64_t end = at;
    while (end < got.size() && got[end] != want[end]) end++;
    return "differs from byte " + std::to_string(at) + " (" + std::to_string(end - at) +
           " differing bytes from there)";
  };
  if (std::string d = first_difference(ReadAll(fd, want.size() + 4096)); !d.empty())
    Fail(label + ": read through the open descriptor " + d);
  const int fresh = open(path.c_str(), O_RDONLY);
  if (fresh < 0) Die("open " + path);
  if (std::string d = first_difference(ReadAll(fresh, want.size() + 4096)); !d.empty())
    Fail(label + ": read through a new descriptor " + d);
  // Within the file only: a mapping's pages past its end fault (SIGBUS).
  if (const uint64_t n = std::min(size, uint64_t(want.size())); n > 0) {
    void* map = mmap(nullptr, n, PROT_READ, MAP_SHARED, fresh, 0);
    if (map == MAP_FAILED) Die("mmap " + path);
    if (std::memcmp(map, want.data(), n) != 0) {
      const std::string got(static_cast<const char*>(map), n);
      Fail(label + ": a new mapping " + first_difference(got + want.substr(n)));
    }
    munmap(map, n);
  }
  close(fresh);
  const Layout got = LayoutOf(fd);
  for (uint64_t at = 0, i = 0; at < want.size(); i++) {
    const uint64_t hole_end =
        std::min<uint64_t>(i < got.size() ? got[i].first : want.size(), want.size());
    const uint64_t nonzero =
        uint64_t(std::find_if(want.begin() + int64_t(at), want.begin() + int64_t(hole_end),
                              [](char c) { return c != 0; }) -
                 want.begin());
    if (nonzero < hole_end)
      Fail(label + ": SEEK_HOLE/SEEK_DATA call [" + std::to_string(at) + "," +
           std::to_string(hole_end) + ") a hole, but byte " + std::to_string(nonzero) +
           " is data (a copy that skips holes would lose it)");
    if (i >= got.size()) break;
    at = got[i].second;
  }
  if (layout && got != *layout)
    Fail(label + ": SEEK_DATA/SEEK_HOLE report " + Show(got) + ", expected " + Show(*layout));
  if (failures == before)
    std::cout << "ok: " << label << ": size, read, mmap and SEEK_DATA/SEEK_HOLE"
              << (layout ? " (exact layout)" : "") << "\n";
}

void SaveFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) Die("write " + path);
}

void SaveLayout(const std::string& path, const std::optional<Layout>& l) {
  std::ofstream out(path, std::ios::trunc);
  if (!l) {
    out << "unknown\n";
  } else {
    out << "exact\n";
    for (const auto& [a, b] : *l) out << a << " " << b << "\n";
  }
  if (!out) Die("write " + path);
}

std::optional<Layout> LoadLayout(const std::string& path) {
  std::ifstream in(path);
  std::string kind;
  if (!(in >> kind) || kind != "exact") return std::nullopt;
  Layout l;
  uint64_t a, b;
  while (in >> a >> b) l.emplace_back(a, b);
  return l;
}

std::string ReadPath(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) Die("open " + path);
  std::string out = ReadAll(fd, SizeOf(fd));
  close(fd);
  return out;
}

int Make(const std::vector<std::string>& args) {
  if (args.size() < 2) return 2;
  const std::string& path = args[0];
  const uint64_t size = ParseSize(args[1]);
  const int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  if (fd < 0) Die("open " + path);
  if (ftruncate(fd, off_t(size)) != 0) Die("ftruncate " + path);
  for (size_t i = 2; i < args.size(); i++) {
    const size_t colon = args[i].find(':');
    if (colon == std::string::npos) return 2;
    const uint64_t off = ParseSize(args[i].substr(0, colon));
    const uint64_t len = std::min(ParseSize(args[i].substr(colon + 1)), size - std::min(size, off));
    const std::string bytes = Pattern(Base(path), off, len);
    if (pwrite(fd, bytes.data(), len, off_t(off)) != ssize_t(len)) Die("write " + path);
  }
  close(fd);
  return 0;
}

int Clone(const std::vector<std::string>& args) {
  if (args.size() < 2) return 2;
  const std::string src = args[0], dst = args[1];
  uint64_t off_in = 0, off_out = 0;
  std::optional<uint64_t> len;
  bool sync = false, exact = false;
  std::string save_old, save_new;
  for (size_t i = 2; i < args.size(); i++) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw std::invalid_argument(args[i] + " needs a value");
      return args[++i];
    };
    if (args[i] == "--off-in") {
      off_in = ParseSize(value());
    } else if (args[i] == "--off-out") {
      off_out = ParseSize(value());
    } else if (args[i] == "--len") {
      len = ParseSize(value());
    } else if (args[i] == "--exact-layout") {
      exact = true;
    } else if (args[i] == "--fsync") {
      sync = true;
    } else if (args[i] == "--save-old") {
      save_old = value();
    } else if (args[i] == "--save-new") {
      save_new = value();
    } else {
      return 2;
    }
  }
  const int in = open(src.c_str(), O_RDONLY);
  if (in < 0) Die("open " + src);
  const int out = open(dst.c_str(), O_RDWR);
  if (out < 0) Die("open " + dst);
  const std::string src_bytes = ReadAll(in, SizeOf(in));
  const Layout src_layout = LayoutOf(in);
  struct stat st;
  if (fstat(in, &st) != 0) Die("fstat " + src);
  const uint64_t block = std::max<uint64_t>(uint64_t(st.st_blksize), 4096);
  const uint64_t old_size = SizeOf(out);
  const std::string old_bytes = ReadAll(out, old_size);  // now in the page cache
  const Layout old_layout = LayoutOf(out);
  if (!save_old.empty()) SaveFile(save_old, old_bytes);
  // A mapping made before the copy, its pages touched: the copy must
  // reach it too.
  void* before_map = nullptr;
  if (old_size > 0) {
    before_map = mmap(nullptr, old_size, PROT_READ, MAP_SHARED, out, 0);
    if (before_map == MAP_FAILED) Die("mmap " + dst);
    volatile char sum = 0;
    for (uint64_t i = 0; i < old_size; i += 4096)
      sum = char(sum + static_cast<char*>(before_map)[i]);
  }

  const uint64_t want_len =
      len.value_or(src_bytes.size() - std::min<uint64_t>(off_in, src_bytes.size()));
  uint64_t copied = 0;
  loff_t pin = loff_t(off_in), pout = loff_t(off_out);
  const auto start = std::chrono::steady_clock::now();
  while (copied < want_len) {
    const ssize_t n = copy_file_range(in, &pin, out, &pout, want_len - copied, 0);
    if (n < 0) Die("copy_file_range " + src + " -> " + dst);
    if (n == 0) break;
    copied += uint64_t(n);
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "copy_file_range: " << copied << " bytes of " << src << " at " << off_in << " to "
            << dst << " at " << off_out << " in " << ms << " ms (block " << block << ")\n";
  if (copied !=
      std::min<uint64_t>(want_len, src_bytes.size() - std::min<uint64_t>(off_in, src_bytes.size())))
    Fail("copy_file_range copied " + std::to_string(copied) + " bytes");

  std::string want = old_bytes;
  if (want.size() < off_out + copied) want.resize(off_out + copied, '\0');
  want.replace(off_out, copied, src_bytes, off_in, copied);
  // The layout is certain where the range lies alike in its blocks and ends
  // at a block boundary or at the end of both files; elsewhere the blocks at
  // its edges hold both files' bytes, and only "holes read as zeros" holds.
  const uint64_t end_in = off_in + copied, end_out = off_out + copied;
  const bool aligned = off_in % block == 0 && off_out % block == 0 &&
                       ((end_in % block == 0 && end_out % block == 0) ||
                        (end_in == src_bytes.size() && end_out >= old_size));
  std::optional<Layout> layout;
  if (exact && !aligned) std::cout << "note: the range is not aligned alike: layout not exact\n";
  if (exact && aligned) {
    Layout l = Clip(old_layout, 0, off_out, 0);
    for (const auto& e : Clip(src_layout, off_in, end_in, int64_t(off_out) - int64_t(off_in)))
      l.push_back(e);
    for (const auto& e : Clip(old_layout, end_out, want.size(), 0)) l.push_back(e);
    layout = Merge(l);
  }

  Check("at once after the copy", dst, out, want, layout);
  if (before_map != nullptr) {
    const uint64_t n = std::min<uint64_t>(old_size, want.size());
    if (std::memcmp(before_map, want.data(), n) != 0)
      Fail("at once after the copy: the mapping made before it still shows old bytes");
    else
      std::cout << "ok: at once after the copy: the mapping made before it shows the new bytes\n";
    munmap(before_map, old_size);
  }
  if (sync) {
    if (fsync(out) != 0) Die("fsync " + dst);
    std::cout << "fsync'ed " << dst << "\n";
  }
  if (!save_new.empty()) {
    SaveFile(save_new, want);
    SaveLayout(save_new + ".layout", layout);
  }
  close(in);
  close(out);
  return failures == 0 ? 0 : 1;
}

int Verify(const std::vector<std::string>& args) {
  if (args.size() != 2) return 2;
  const int fd = open(args[0].c_str(), O_RDONLY);
  if (fd < 0) Die("open " + args[0]);
  Check("verify " + Base(args[0]), args[0], fd, ReadPath(args[1]), LoadLayout(args[1] + ".layout"));
  close(fd);
  return failures == 0 ? 0 : 1;
}

int PrintLayout(const std::vector<std::string>& args) {
  if (args.size() != 1) return 2;
  const int fd = open(args[0].c_str(), O_RDONLY);
  if (fd < 0) Die("open " + args[0]);
  std::cout << Show(LayoutOf(fd)) << "\n";
  close(fd);
  return failures == 0 ? 0 : 1;
}

int Usage() {
  std::cerr
      << "usage: e2e_clone_check make FILE SIZE [OFF:LEN]...\n"
         "       e2e_clone_check clone SRC DST [--off-in N] [--off-out N] [--len N]\n"
         "                       [--exact-layout] [--fsync] [--save-old PATH] [--save-new PATH]\n"
         "       e2e_clone_check verify FILE EXPECTED\n"
         "       e2e_clone_check layout FILE\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string cmd = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  int rc = 2;
  try {
    if (cmd == "make")
      rc = Make(args);
    else if (cmd == "clone")
      rc = Clone(args);
    else if (cmd == "verify")
      rc = Verify(args);
    else if (cmd == "layout")
      rc = PrintLayout(args);
  } catch (const std::exception& e) {
    std::cerr << "e2e_clone_check: " << e.what() << "\n";
    return 2;
  }
  return rc == 2 ? Usage() : rc;
}
