// `poolfs mount POOL/PATH MNT` while POOL is mounted: the request the
// client sends the pool's daemon ("mount-dataset {json}") and the bare
// status it answers cross the control socket intact, and anything else is
// refused before the daemon acts on it.
#include <catch2/catch.hpp>
#include <string>

#include "daemon/dataset_request.h"

namespace poolfs::daemon {
namespace {

DatasetMountRequest SampleMountRequest() {
  DatasetMountRequest r;
  r.dataset = "tank/home/alice";
  r.mountpoint = "/home/alice/docs";
  r.read_only = true;
  r.fuse_options = {"allow_other", "default_permissions", "nodev", "nosuid"};
  r.entry_timeout = 1.5;
  r.attr_timeout = 2;
  r.negative_timeout = 0.25;
  return r;
}

TEST_CASE("a dataset mount request crosses the socket intact") {
  const DatasetMountRequest sent = SampleMountRequest();
  auto got = DecodeDatasetMountRequest(EncodeDatasetMountRequest(sent));
  REQUIRE(got.ok());
  CHECK(got->dataset == sent.dataset);
  CHECK(got->mountpoint == sent.mountpoint);
  CHECK(got->read_only);
  CHECK(got->fuse_options == sent.fuse_options);
  CHECK(got->entry_timeout == 1.5);
  CHECK(got->attr_timeout == 2);
  CHECK(got->negative_timeout == 0.25);
}

TEST_CASE("malformed dataset mount requests are refused") {
  for (const char* bad : {"", "nonsense", "[]", "{}", "{\"dataset\":\"tank/home\"}"}) {
    CAPTURE(bad);
    CHECK(DecodeDatasetMountRequest(bad).status().code() == StatusCode::kInvalidArgument);
  }
  auto refused = [](void (*change)(DatasetMountRequest*)) {
    DatasetMountRequest r = SampleMountRequest();
    change(&r);
    return DecodeDatasetMountRequest(EncodeDatasetMountRequest(r)).status().code() ==
           StatusCode::kInvalidArgument;
  };
  CHECK(refused([](DatasetMountRequest* r) { r->dataset = "tank/../etc"; }));
  CHECK(refused([](DatasetMountRequest* r) { r->dataset = ""; }));
  CHECK(refused([](DatasetMountRequest* r) { r->mountpoint = "relative/mnt"; }));
  CHECK(refused([](DatasetMountRequest* r) { r->fuse_options.push_back("ro,suid"); }));
  CHECK(refused([](DatasetMountRequest* r) { r->fuse_options.push_back(""); }));
  // A field of the wrong type.
  std::string text = EncodeDatasetMountRequest(SampleMountRequest());
  const std::string ro = "\"read_only\":true";
  REQUIRE(text.find(ro) != std::string::npos);
  text.replace(text.find(ro), ro.size(), "\"read_only\":\"yes\"");
  CHECK(DecodeDatasetMountRequest(text).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a status reply crosses the socket with its code and message") {
  CHECK(DecodeStatus(EncodeStatus(Status::Ok())).ok());
  const Status busy = DecodeStatus(EncodeStatus(Status::Busy("/mnt/a is busy")));
  CHECK(busy.code() == StatusCode::kBusy);
  CHECK(busy.message() == "/mnt/a is busy");
  const Status missing = DecodeStatus(EncodeStatus(Status::NotFound("no dataset tank/x")));
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message() == "no dataset tank/x");
  for (const char* bad : {"", "pong", "{}", "{\"code\":-1}", "{\"code\":\"0\"}",
                          "{\"code\":100000,\"message\":\"\"}"}) {
    CAPTURE(bad);
    CHECK(DecodeStatus(bad).code() == StatusCode::kCorruption);
  }
}

}  // namespace
}  // namespace poolfs::daemon
