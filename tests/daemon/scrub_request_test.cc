// `poolfs scrub` and what `poolfs status` shows of a scrub: the control
// requests round-trip, the daemon starts and stops the filesystem's scrub
// and passes its refusals back, and the "scan:" line reads as zpool
// status's does in each state, with the damaged files listed.
#include <catch2/catch.hpp>

#include <string>

#include "daemon/dataset_request.h"
#include "daemon/live_config.h"
#include "daemon/scrub_request.h"
#include "test_env.h"

namespace poolfs::daemon {
namespace {

using testing::FakeFilesystem;

// A fake whose pool scrubs: one scrub at a time.
class ScrubbingFilesystem : public FakeFilesystem {
 public:
  Status StartScrub() override {
    if (running_) return Status::AlreadyExists("a scrub of pool 'tank' is already running");
    running_ = true;
    starts++;
    return Status::Ok();
  }
  Status StopScrub() override {
    if (!running_) return Status::NotFound("no scrub of pool 'tank' is running");
    running_ = false;
    return Status::Ok();
  }
  int starts = 0;

 private:
  bool running_ = false;
};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("scrub requests round-trip and refuse anything but start and stop") {
  CHECK(EncodeScrubRequest(ScrubAction::kStart) == "scrub start");
  CHECK(EncodeScrubRequest(ScrubAction::kStop) == "scrub stop");
  CHECK(*DecodeScrubRequest("start") == ScrubAction::kStart);
  CHECK(*DecodeScrubRequest("stop") == ScrubAction::kStop);
  CHECK(DecodeScrubRequest("pause").status().code() == StatusCode::kInvalidArgument);
  CHECK(DecodeScrubRequest("").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("the daemon starts and stops the scrub and passes its refusals back") {
  ScrubbingFilesystem fs;
  LiveConfig live(config::Config(), "", &fs);
  auto call = [&](ScrubAction a) {
    return DecodeStatus(HandleControlRequest(live, fs, EncodeScrubRequest(a)));
  };
  CHECK(call(ScrubAction::kStop).code() == StatusCode::kNotFound);
  CHECK(call(ScrubAction::kStart).ok());
  const Status again = call(ScrubAction::kStart);
  CHECK(again.code() == StatusCode::kAlreadyExists);
  CHECK(Contains(again.message(), "already running"));
  CHECK(call(ScrubAction::kStop).ok());
  CHECK(fs.starts == 1);
  CHECK(DecodeStatus(HandleControlRequest(live, fs, "scrub now")).code() ==
        StatusCode::kInvalidArgument);
  // A filesystem without a pool says so.
  FakeFilesystem plain;
  CHECK(DecodeStatus(HandleControlRequest(live, plain, "scrub start")).code() ==
        StatusCode::kNotSupported);
}

TEST_CASE("poolfs status shows the scrub as zpool status does") {
  ScrubStatus s;
  SECTION("none") { CHECK(RenderScrubStatus(s) == "scan:             no scrub has run\n"); }
  s.start_time = 1700000000;
  s.total = uint64_t{4} << 30;
  s.examined = uint64_t{1} << 30;
  s.blocks = 8192;
  SECTION("running") {
    s.state = ScrubStatus::State::kRunning;
    s.rate = uint64_t{45} << 20;
    const std::string text = RenderScrubStatus(s);
    CHECK(text == "scan:             scrub in progress since " + FormatLocalTime(s.start_time) +
                      ": 1.00GiB of 4.00GiB examined at 45.0MiB/s, 25% done, 0 repaired, "
                      "0 errors\n");
  }
  SECTION("finished with errors, the files listed") {
    s.state = ScrubStatus::State::kFinished;
    s.end_time = s.start_time + 12;
    s.repaired = 2;
    s.errors = 3;
    s.error_list = {{.where = "tank/ds:/dir/file"}, {.where = "<metadata>:<object 0x1f>"}};
    const std::string text = RenderScrubStatus(s);
    CHECK(Contains(text, "scan:             scrub repaired 2 copies in 00:00:12 with 3 errors on " +
                             FormatLocalTime(s.end_time) + " (1.00GiB in 8192 blocks examined)\n"));
    CHECK(Contains(text,
                   "errors:           Permanent errors have been detected in the "
                   "following files:\n  tank/ds:/dir/file\n  <metadata>:<object 0x1f>\n"
                   "  ... and 1 more blocks, not listed\n"));
  }
  SECTION("finished clean") {
    s.state = ScrubStatus::State::kFinished;
    s.end_time = s.start_time + 3725;
    s.repaired = 1;
    const std::string text = RenderScrubStatus(s);
    CHECK(Contains(text, "scrub repaired 1 copy in 01:02:05 with 0 errors on "));
    CHECK(!Contains(text, "errors:"));
  }
  SECTION("stopped") {
    s.state = ScrubStatus::State::kStopped;
    s.end_time = s.start_time + 5;
    CHECK(RenderScrubStatus(s) == "scan:             scrub stopped on " +
                                      FormatLocalTime(s.end_time) +
                                      " after 00:00:05: 1.00GiB of 4.00GiB examined, 0 repaired, "
                                      "0 errors\n");
  }
}

TEST_CASE("poolfs status has the scan line after the state") {
  FakeFilesystem fs;
  const std::string text = RenderStatus(fs.GetStatus(), config::Config(), "");
  const size_t state = text.find("state:");
  const size_t scan = text.find("scan:             no scrub has run\n");
  REQUIRE(state != std::string::npos);
  REQUIRE(scan != std::string::npos);
  CHECK(state < scan);
  CHECK(scan < text.find("last synced txg:"));
}

TEST_CASE("FormatElapsed gives hours, minutes and seconds") {
  CHECK(FormatElapsed(0) == "00:00:00");
  CHECK(FormatElapsed(12) == "00:00:12");
  CHECK(FormatElapsed(3725) == "01:02:05");
  CHECK(FormatElapsed(100000) == "27:46:40");
  CHECK(FormatElapsed(-4) == "00:00:00");
}

}  // namespace
}  // namespace poolfs::daemon
