// Tests for Status and Result<T> (core/include/poolfs/status.h): codes and
// their names, messages, WithContext, and the early-return macros.

#include "poolfs/status.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

namespace poolfs {
namespace {

TEST_CASE("Status default-constructs to OK with an empty message", "[status]") {
  Status s;
  CHECK(s.ok());
  CHECK(s.code() == StatusCode::kOk);
  CHECK(s.message().empty());
  CHECK(s.ToString() == "OK");
  CHECK(Status::Ok().ok());
}

TEST_CASE("Status factories set their code and keep the message", "[status]") {
  struct Case {
    Status status;
    StatusCode code;
    const char* name;
  };
  std::vector<Case> cases = {
      {Status::NotFound("m"), StatusCode::kNotFound, "NotFound"},
      {Status::Corruption("m"), StatusCode::kCorruption, "Corruption"},
      {Status::IOError("m"), StatusCode::kIOError, "IOError"},
      {Status::NoSpace("m"), StatusCode::kNoSpace, "NoSpace"},
      {Status::InvalidArgument("m"), StatusCode::kInvalidArgument, "InvalidArgument"},
      {Status::AlreadyExists("m"), StatusCode::kAlreadyExists, "AlreadyExists"},
      {Status::Busy("m"), StatusCode::kBusy, "Busy"},
      {Status::NotSupported("m"), StatusCode::kNotSupported, "NotSupported"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK_FALSE(c.status.ok());
    CHECK(c.status.code() == c.code);
    CHECK(c.status.message() == "m");
    CHECK(StatusCodeName(c.code) == c.name);
    CHECK(c.status.ToString() == std::string(c.name) + ": m");
  }
}

TEST_CASE("StatusCodeName names every code", "[status]") {
  CHECK(StatusCodeName(StatusCode::kOk) == "OK");
  CHECK(StatusCodeName(StatusCode::kPermissionDenied) == "PermissionDenied");
  CHECK(StatusCodeName(StatusCode::kNotEmpty) == "NotEmpty");
  CHECK(StatusCodeName(StatusCode::kNameTooLong) == "NameTooLong");
  CHECK(StatusCodeName(StatusCode::kNotADirectory) == "NotADirectory");
  CHECK(StatusCodeName(StatusCode::kIsADirectory) == "IsADirectory");
  CHECK(StatusCodeName(StatusCode::kAborted) == "Aborted");
  // Codes built from the general constructor print the same way.
  Status s(StatusCode::kAborted, "txg 9 torn down");
  CHECK(s.ToString() == "Aborted: txg 9 torn down");
}

TEST_CASE("Status predicates match only their own code", "[status]") {
  CHECK(Status::Corruption("x").IsCorruption());
  CHECK_FALSE(Status::Corruption("x").IsNotFound());
  CHECK(Status::NotFound("x").IsNotFound());
  CHECK_FALSE(Status::NotFound("x").IsNoSpace());
  CHECK(Status::NoSpace("x").IsNoSpace());
  CHECK_FALSE(Status::NoSpace("x").IsCorruption());
  CHECK_FALSE(Status().IsCorruption());
}

TEST_CASE("WithContext prefixes the message and keeps the code", "[status]") {
  Status s = Status::Corruption("run past end");
  Status wrapped = s.WithContext("space map record 17");
  CHECK(wrapped.code() == StatusCode::kCorruption);
  CHECK(wrapped.message() == "space map record 17: run past end");
  CHECK(wrapped.ToString() == "Corruption: space map record 17: run past end");
  // The original is untouched, and contexts nest outermost first.
  CHECK(s.message() == "run past end");
  CHECK(wrapped.WithContext("metaslab 3").message() ==
        "metaslab 3: space map record 17: run past end");
}

TEST_CASE("WithContext leaves an OK status OK and without a message", "[status]") {
  Status s = Status::Ok().WithContext("anything");
  CHECK(s.ok());
  CHECK(s.message().empty());
}

TEST_CASE("Result holds either a value or a non-OK status", "[status][result]") {
  Result<int> good(42);
  REQUIRE(good.ok());
  CHECK(good.status().ok());
  CHECK(good.value() == 42);
  CHECK(*good == 42);

  Result<int> bad(Status::NotFound("object 7"));
  CHECK_FALSE(bad.ok());
  CHECK(bad.status().IsNotFound());
  CHECK(bad.status().message() == "object 7");
}

TEST_CASE("Result gives access to its value through * and ->", "[status][result]") {
  Result<std::string> r(std::string("tank"));
  REQUIRE(r.ok());
  CHECK(r->size() == 4);
  r->append("0");
  CHECK(*r == "tank0");
  const Result<std::string>& cr = r;
  CHECK(cr->size() == 5);
  CHECK(cr.value() == "tank0");
}

TEST_CASE("Result moves a move-only value out", "[status][result]") {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(5));
  REQUIRE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  REQUIRE(p != nullptr);
  CHECK(*p == 5);
}

// Helpers for the macro tests.
Result<int> ParsePositive(int v) {
  if (v <= 0) return Status::InvalidArgument("not positive: " + std::to_string(v));
  return v;
}

Status CheckPositive(int v) {
  if (v <= 0) return Status::InvalidArgument("not positive");
  return Status::Ok();
}

Result<int> SumOfTwo(int a, int b, int* reached) {
  POOLFS_ASSIGN_OR_RETURN(int x, ParsePositive(a));
  *reached = 1;
  POOLFS_ASSIGN_OR_RETURN(int y, ParsePositive(b));
  *reached = 2;
  return x + y;
}

Status BothPositive(int a, int b, int* reached) {
  POOLFS_RETURN_IF_ERROR(CheckPositive(a));
  *reached = 1;
  POOLFS_RETURN_IF_ERROR(CheckPositive(b));
  *reached = 2;
  return Status::Ok();
}

Result<std::unique_ptr<int>> MakeBox(int v) {
  if (v < 0) return Status::InvalidArgument("negative");
  return std::make_unique<int>(v);
}

Result<int> Unbox(int v) {
  std::unique_ptr<int> box;
  POOLFS_ASSIGN_OR_RETURN(box, MakeBox(v));  // assigns to an existing variable
  return *box + 1;
}

TEST_CASE("POOLFS_ASSIGN_OR_RETURN binds the value when OK", "[status][macros]") {
  int reached = 0;
  Result<int> r = SumOfTwo(2, 3, &reached);
  REQUIRE(r.ok());
  CHECK(*r == 5);
  CHECK(reached == 2);
}

TEST_CASE("POOLFS_ASSIGN_OR_RETURN returns the first error unchanged", "[status][macros]") {
  int reached = 0;
  Result<int> r = SumOfTwo(2, -1, &reached);
  REQUIRE_FALSE(r.ok());
  CHECK(reached == 1);
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message() == "not positive: -1");

  reached = 0;
  Result<int> first = SumOfTwo(0, -1, &reached);
  CHECK(reached == 0);
  CHECK(first.status().message() == "not positive: 0");
}

TEST_CASE("POOLFS_ASSIGN_OR_RETURN assigns move-only values to existing variables",
          "[status][macros]") {
  Result<int> ok = Unbox(9);
  REQUIRE(ok.ok());
  CHECK(*ok == 10);
  CHECK(Unbox(-1).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("Busy carries the holder's pid as a field, through WithContext", "[status]") {
  CHECK(Status::Busy("in use").holder_pid() == 0);
  const Status held = Status::Busy("a.pool is in use by another process (pid 4242)", 4242);
  CHECK(held.code() == StatusCode::kBusy);
  CHECK(held.holder_pid() == 4242);
  const Status wrapped = held.WithContext("import");
  CHECK(wrapped.holder_pid() == 4242);
  CHECK(wrapped.message() == "import: a.pool is in use by another process (pid 4242)");
  CHECK(Status::Ok().holder_pid() == 0);
}

TEST_CASE("POOLFS_RETURN_IF_ERROR stops at the first error", "[status][macros]") {
  int reached = 0;
  CHECK(BothPositive(1, 1, &reached).ok());
  CHECK(reached == 2);

  reached = 0;
  Status s = BothPositive(1, 0, &reached);
  CHECK(reached == 1);
  CHECK(s.code() == StatusCode::kInvalidArgument);

  reached = 0;
  CHECK_FALSE(BothPositive(0, 1, &reached).ok());
  CHECK(reached == 0);
}

}  // namespace
}  // namespace poolfs
