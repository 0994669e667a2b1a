#include "tools/createmany/create_runner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "temp_dir.h"

namespace poolfs::createmany {
namespace {

using testing::CountEntries;
using testing::TempDir;
namespace fs = std::filesystem;

Options MustParse(std::vector<std::string> args) {
  auto o = ParseArgs(args);
  INFO(o.status().ToString());
  REQUIRE(o.ok());
  return *o;
}

RunReport MustRun(std::vector<std::string> args) {
  Options o = MustParse(std::move(args));
  auto r = RunCreatemany(o, nullptr);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

std::string ErrorsOf(const RunReport& r) {
  std::string all;
  for (const auto& e : r.errors) all += e + "\n";
  return all;
}

mode_t TypeOf(const std::string& path) {
  struct stat st;
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & S_IFMT;
}

TEST_CASE("createmany -o creates COUNT regular files named from START", "[runner]") {
  TempDir t;
  RunReport r = MustRun({"-o", t / "f%d", "5", "20"});
  INFO(ErrorsOf(r));
  CHECK(r.ok());
  CHECK(r.done == 20);
  CHECK(CountEntries(t.path()) == 20);
  CHECK(TypeOf(t / "f5") == S_IFREG);
  CHECK(TypeOf(t / "f24") == S_IFREG);
  CHECK_FALSE(fs::exists(t / "f4"));
  CHECK_FALSE(fs::exists(t / "f25"));
}

TEST_CASE("createmany -m makes regular files with mknod", "[runner]") {
  TempDir t;
  RunReport r = MustRun({"-m", t / "n", "10"});
  CHECK(r.ok());
  CHECK(r.done == 10);
  CHECK(CountEntries(t.path()) == 10);
  CHECK(TypeOf(t / "n9") == S_IFREG);
}

TEST_CASE("createmany -d makes directories", "[runner]") {
  TempDir t;
  RunReport r = MustRun({"-d", t / "d%03d", "10"});
  CHECK(r.ok());
  CHECK(r.done == 10);
  CHECK(CountEntries(t.path()) == 10);
  CHECK(TypeOf(t / "d009") == S_IFDIR);
}

TEST_CASE("createmany -l hard-links every name to the target", "[runner]") {
  TempDir t;
  std::ofstream(t / "target") << "x";
  RunReport r = MustRun({"-l", t / "target", t / "l", "12"});
  CHECK(r.ok());
  CHECK(r.done == 12);
  CHECK(fs::hard_link_count(t / "target") == 13);
  CHECK(fs::equivalent(t / "target", t / "l11"));
}

TEST_CASE("createmany with threads and -D splits COUNT over one subdirectory per thread",
          "[runner]") {
  TempDir t;
  RunReport r = MustRun({"-o", "-t", "4", "-D", t / "a/b", "10"});
  INFO(ErrorsOf(r));
  CHECK(r.ok());
  CHECK(r.done == 10);
  // Thread i of 4 handles indices i, i+4, ...: shares 3 3 2 2.
  CHECK(CountEntries(t / "a/b") == 4);
  CHECK(CountEntries(t / "a/b/t0") == 3);
  CHECK(CountEntries(t / "a/b/t1") == 3);
  CHECK(CountEntries(t / "a/b/t2") == 2);
  CHECK(CountEntries(t / "a/b/t3") == 2);
  CHECK(fs::exists(t / "a/b/t0/f8"));
  CHECK(fs::exists(t / "a/b/t1/f9"));
  CHECK(fs::exists(t / "a/b/t3/f7"));
}

TEST_CASE("createmany with more threads than files starts only the threads with work", "[runner]") {
  TempDir t;
  RunReport r = MustRun({"-m", "-t", "8", "-D", t.path(), "3"});
  CHECK(r.ok());
  CHECK(r.done == 3);
  CHECK(CountEntries(t.path()) == 3);  // t0 t1 t2
}

TEST_CASE("createmany with threads in one directory creates each index exactly once", "[runner]") {
  TempDir t;
  // mknod fails on an existing name, so a duplicate index would be an error.
  RunReport r = MustRun({"-m", "-t", "3", t / "f%d", "100", "200"});
  INFO(ErrorsOf(r));
  CHECK(r.ok());
  CHECK(r.done == 200);
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(t.path())) names.insert(e.path().filename());
  CHECK(names.size() == 200);
  CHECK(names.count("f100") == 1);
  CHECK(names.count("f299") == 1);
}

TEST_CASE("createmany -r unlinks each name right after creating it", "[runner]") {
  TempDir t;
  RunReport r = MustRun({"-o", "-r", "-t", "2", "-D", t.path(), "50"});
  INFO(ErrorsOf(r));
  CHECK(r.ok());
  CHECK(r.done == 50);
  CHECK(CountEntries(t / "t0") == 0);
  CHECK(CountEntries(t / "t1") == 0);

  RunReport dirs = MustRun({"-d", "-r", t / "d", "10"});
  CHECK(dirs.ok());
  CHECK(dirs.done == 10);
  CHECK(CountEntries(t.path()) == 2);  // rmdir'd; only t0 and t1 remain
}

TEST_CASE("createmany -rFMT unlinks the names UNLINKFMT gives for the same index", "[runner]") {
  TempDir t;
  REQUIRE(MustRun({"-m", t / "old%d", "10"}).ok());
  RunReport r = MustRun({"-o", "-r" + (t / "old%d"), t / "new%d", "10"});
  INFO(ErrorsOf(r));
  CHECK(r.ok());
  CHECK(r.done == 10);
  CHECK(CountEntries(t.path()) == 10);
  CHECK(fs::exists(t / "new9"));
  CHECK_FALSE(fs::exists(t / "old9"));
}

TEST_CASE("createmany -r without a mode only unlinks", "[runner]") {
  TempDir t;
  REQUIRE(MustRun({"-m", t / "f", "10"}).ok());
  Options o = MustParse({"-r", t / "f", "2", "5"});
  auto r = RunCreatemany(o, nullptr);
  REQUIRE(r.ok());
  CHECK(r->ok());
  CHECK(r->done == 5);
  CHECK(CountEntries(t.path()) == 5);
  CHECK(fs::exists(t / "f1"));
  CHECK_FALSE(fs::exists(t / "f2"));
  CHECK(TotalLine(o, *r).rfind("total: 5 unlinks in ", 0) == 0);
}

TEST_CASE("createmany stops an unbounded run at the time limit", "[runner]") {
  TempDir t;
  // No COUNT: only the limit can end this run (mknod fails on a repeated
  // name, so the loop cannot end early without an error).
  RunReport r = MustRun({"-m", "-r", "-t", "2", "-D", t.path(), "-0.3"});
  INFO(ErrorsOf(r));
  CHECK(r.ok());
  CHECK(r.done > 0);
  CHECK(r.seconds >= 0.3);
  CHECK(CountEntries(t / "t0") == 0);
}

TEST_CASE("createmany with COUNT and a time limit stops at whichever comes first", "[runner]") {
  TempDir t;
  RunReport r = MustRun({"-o", t / "f", "7", "-600"});
  CHECK(r.ok());
  CHECK(r.done == 7);
  CHECK(CountEntries(t.path()) == 7);
}

TEST_CASE("createmany reports a failed create with its name and errno and stops", "[runner]") {
  TempDir t;
  REQUIRE(MustRun({"-m", t / "f", "5", "1"}).ok());  // f5 exists
  RunReport r = MustRun({"-m", t / "f", "10"});
  REQUIRE(r.errors.size() == 1);
  CHECK_THAT(r.errors[0],
             Catch::Contains("mknod(" + (t / "f5") + ")") && Catch::Contains("errno 17"));
  CHECK(r.done == 5);  // f0..f4, then the failure
}

TEST_CASE("createmany reports a failed unlink with its name and errno", "[runner]") {
  TempDir t;
  RunReport r = MustRun({"-o", "-r" + (t / "missing"), t / "f", "3"});
  REQUIRE(r.errors.size() == 1);
  CHECK_THAT(r.errors[0],
             Catch::Contains("unlink(" + (t / "missing0") + ")") && Catch::Contains("errno 2"));
  CHECK(r.done == 0);
}

TEST_CASE("createmany stops every thread after one fails", "[runner]") {
  TempDir t;
  fs::create_directory(t / "t1");                       // will be thread 1's directory...
  REQUIRE(MustRun({"-m", t / "t1/f", "1", "1"}).ok());  // ...holding its first name, f1
  RunReport r = MustRun({"-m", "-t", "2", "-D", t.path(), "100000"});
  REQUIRE(r.errors.size() == 1);
  CHECK_THAT(r.errors[0], Catch::Contains("t1/f1)") && Catch::Contains("errno 17"));
  CHECK(r.done < 100000);
}

TEST_CASE("createmany fails the setup naming a -D path that cannot be a directory", "[runner]") {
  TempDir t;
  std::ofstream(t / "file") << "x";
  Options o = MustParse({"-o", "-D", t / "file/sub", "10"});
  auto r = RunCreatemany(o, nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("mkdir(" + (t / "file") + "): exists and is not a directory"));
}

TEST_CASE("createmany writes the Lustre total line and progress lines", "[runner]") {
  TempDir t;
  Options o = MustParse({"-o", "-i", "0.05", "-D", t.path(), "-0.2"});
  char* text = nullptr;
  size_t size = 0;
  std::FILE* progress = ::open_memstream(&text, &size);
  REQUIRE(progress != nullptr);
  auto r = RunCreatemany(o, progress);
  std::fclose(progress);
  std::string lines(text, size);
  std::free(text);
  REQUIRE(r.ok());
  CHECK_THAT(lines, Catch::StartsWith(" - ") && Catch::Contains("creates/second"));
  std::string total = TotalLine(o, *r);
  CHECK_THAT(total, Catch::StartsWith("total: " + std::to_string(r->done) + " creates in ") &&
                        Catch::EndsWith(" creates/second"));
}

}  // namespace
}  // namespace poolfs::createmany
