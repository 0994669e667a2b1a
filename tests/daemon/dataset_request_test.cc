// `poolfs dataset` apart from its command line: commands validated, run on
// an admin, carried over the socket intact (and refused when malformed),
// and printed as zfs list/get print.
#include "daemon/dataset_request.h"

#include <catch2/catch.hpp>
#include <map>

namespace poolfs::daemon {
namespace {

// An admin that records the calls and answers from a fixed tree.
class FakeAdmin : public DatasetAdmin {
 public:
  std::vector<std::string> calls;
  Status next = Status::Ok();

  Status Create(std::string_view name, bool parents,
                const std::vector<PropertyAssignment>& props) override {
    std::string c = "create " + std::string(name) + (parents ? " -p" : "");
    for (const auto& p : props) c += " " + p.name + "=" + p.value;
    calls.push_back(c);
    return next;
  }
  Status Destroy(std::string_view name, bool recursive) override {
    calls.push_back("destroy " + std::string(name) + (recursive ? " -r" : ""));
    return next;
  }
  Status Rename(std::string_view from, std::string_view to) override {
    calls.push_back("rename " + std::string(from) + " " + std::string(to));
    return next;
  }
  Result<std::vector<DatasetInfo>> List(std::string_view root, bool recursive) override {
    calls.push_back("list " + std::string(root) + (recursive ? " -r" : ""));
    if (!next.ok()) return next;
    DatasetInfo a{"tank", 1, 1, 0, 3 << 20, 1 << 20, 100 << 20, 5, 1.5, "/"};
    DatasetInfo b{"tank/home", 2, 7, 0, 2 << 20, 2 << 20, 100 << 20, 9, 2.0, "/home"};
    if (!recursive) return std::vector<DatasetInfo>{root == "tank/home" ? b : a};
    return std::vector<DatasetInfo>{a, b};
  }
  Result<std::vector<DatasetProperty>> Get(std::string_view name,
                                           const std::vector<std::string>& props) override {
    calls.push_back("get " + std::string(name));
    if (!next.ok()) return next;
    std::vector<DatasetProperty> out;
    for (const std::string& p : props) {
      if (p == "quota")
        out.push_back({p, "10737418240", "local"});
      else if (p == "compression")
        out.push_back({p, "zstd", "inherited from tank"});
      else
        return Status::InvalidArgument("unknown property '" + p + "'");
    }
    return out;
  }
  Status Set(std::string_view name, const PropertyAssignment& p) override {
    calls.push_back("set " + std::string(name) + " " + p.name + "=" + p.value);
    return next;
  }
  Status Inherit(std::string_view name, std::string_view prop) override {
    calls.push_back("inherit " + std::string(name) + " " + std::string(prop));
    return next;
  }
};

DatasetCommand Make(DatasetCommand::Verb v, std::vector<std::string> names) {
  DatasetCommand c;
  c.verb = v;
  c.names = std::move(names);
  return c;
}

TEST_CASE("dataset commands reach the admin as given") {
  FakeAdmin admin;
  DatasetCommand create = Make(DatasetCommand::Verb::kCreate, {"tank/a/b"});
  create.parents = true;
  create.props = {{"compression", "zstd"}, {"quota", "1G"}};
  REQUIRE(ExecuteDatasetCommand(admin, create).ok());
  DatasetCommand destroy = Make(DatasetCommand::Verb::kDestroy, {"tank/a"});
  destroy.recursive = true;
  REQUIRE(ExecuteDatasetCommand(admin, destroy).ok());
  REQUIRE(
      ExecuteDatasetCommand(admin, Make(DatasetCommand::Verb::kRename, {"tank/a", "tank/b"})).ok());
  DatasetCommand set = Make(DatasetCommand::Verb::kSet, {"tank/b"});
  set.props = {{"atime", "off"}};
  REQUIRE(ExecuteDatasetCommand(admin, set).ok());
  DatasetCommand inherit = Make(DatasetCommand::Verb::kInherit, {"tank/b"});
  inherit.props = {{"atime", ""}};
  REQUIRE(ExecuteDatasetCommand(admin, inherit).ok());
  CHECK(admin.calls == std::vector<std::string>{"create tank/a/b -p compression=zstd quota=1G",
                                                "destroy tank/a -r", "rename tank/a tank/b",
                                                "set tank/b atime=off", "inherit tank/b atime"});
}

TEST_CASE("malformed dataset commands are refused before they are sent") {
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kRename, {"tank/a"})).code() ==
        StatusCode::kInvalidArgument);
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kGet, {"tank"})).code() ==
        StatusCode::kInvalidArgument);  // no properties named
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kSet, {"tank"})).code() ==
        StatusCode::kInvalidArgument);  // no PROP=VALUE
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kCreate, {"tank//a"})).code() ==
        StatusCode::kInvalidArgument);
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kCreate, {"tank/a@b"})).code() ==
        StatusCode::kInvalidArgument);
  FakeAdmin admin;
  CHECK_FALSE(ExecuteDatasetCommand(admin, Make(DatasetCommand::Verb::kDestroy, {})).ok());
  CHECK(admin.calls.empty());
}

TEST_CASE("a dataset command and its result cross the socket intact") {
  DatasetCommand c = Make(DatasetCommand::Verb::kList, {"tank", "tank/home"});
  c.recursive = true;
  c.columns = {"name", "quota"};
  c.scripted = c.exact = c.json = true;
  c.props = {{"a", "b=c"}};
  auto back = DecodeDatasetCommand(EncodeDatasetCommand(c));
  REQUIRE(back.ok());
  CHECK(back->verb == c.verb);
  CHECK(back->names == c.names);
  CHECK(back->recursive);
  CHECK(back->columns == c.columns);
  CHECK((back->scripted && back->exact && back->json));
  REQUIRE(back->props.size() == 1);
  CHECK(back->props[0].value == "b=c");

  FakeAdmin admin;
  auto r = DecodeDatasetResult(HandleDatasetRequest(&admin, EncodeDatasetCommand(c)));
  REQUIRE(r.ok());
  REQUIRE(r->datasets.size() == 4);  // both roots, recursively
  CHECK(r->datasets[1].name == "tank/home");
  CHECK(r->datasets[1].compressratio == 2.0);
  REQUIRE(r->properties.size() == 4);
  CHECK(r->properties[0].props[0].value == "10737418240");
}

TEST_CASE("a failure crosses the socket with its code and message") {
  FakeAdmin admin;
  admin.next = Status::Busy("tank/home is in use");
  auto r = DecodeDatasetResult(HandleDatasetRequest(
      &admin, EncodeDatasetCommand(Make(DatasetCommand::Verb::kDestroy, {"tank/home"}))));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kBusy);
  CHECK(r.status().message() == "tank/home is in use");
  auto none = DecodeDatasetResult(
      HandleDatasetRequest(nullptr, EncodeDatasetCommand(Make(DatasetCommand::Verb::kList, {}))));
  CHECK(none.status().code() == StatusCode::kNotSupported);
}

TEST_CASE("malformed requests and replies are refused") {
  for (const char* bad : {"", "[]", "{}", "{\"verb\":\"explode\"}", "{\"verb\":\"list\"}",
                          "{\"verb\":\"list\",\"names\":1,\"parents\":false,\"recursive\":false,"
                          "\"props\":[],\"columns\":[],\"scripted\":false,\"exact\":false,"
                          "\"json\":false}"}) {
    CAPTURE(bad);
    CHECK(DecodeDatasetCommand(bad).status().code() == StatusCode::kInvalidArgument);
  }
  for (const char* bad : {"", "nonsense", "{}", "{\"code\":99}", "{\"code\":0}",
                          "{\"code\":0,\"datasets\":[{}],\"properties\":[]}",
                          "{\"code\":0,\"datasets\":[],\"properties\":[{\"dataset\":1}]}"}) {
    CAPTURE(bad);
    CHECK(DecodeDatasetResult(bad).status().code() == StatusCode::kCorruption);
  }
}

TEST_CASE("list and get print as zfs list and zfs get do") {
  FakeAdmin admin;
  DatasetCommand list = Make(DatasetCommand::Verb::kList, {});
  auto r = ExecuteDatasetCommand(admin, list);
  REQUIRE(r.ok());
  CHECK(RenderDatasetResult(list, *r) ==
        "NAME       USED   AVAIL  REFER  MOUNTPOINT\n"
        "tank       3.00M  100M   1.00M  /\n"
        "tank/home  2.00M  100M   2.00M  /home\n");
  list.scripted = list.exact = true;
  list.columns = {"name", "used", "quota"};
  r = ExecuteDatasetCommand(admin, list);
  REQUIRE(r.ok());
  CHECK(RenderDatasetResult(list, *r) ==
        "tank\t3145728\t10737418240\ntank/home\t2097152\t10737418240\n");

  DatasetCommand get = Make(DatasetCommand::Verb::kGet, {"tank/home"});
  get.columns = {"quota", "compression"};
  r = ExecuteDatasetCommand(admin, get);
  REQUIRE(r.ok());
  CHECK(RenderDatasetResult(get, *r) ==
        "NAME       PROPERTY     VALUE  SOURCE\n"
        "tank/home  quota        10.0G  local\n"
        "tank/home  compression  zstd   inherited from tank\n");
  get.json = true;
  CHECK(RenderDatasetResult(get, *r).find("\"source\": \"inherited from tank\"") !=
        std::string::npos);
  get.columns = {"bogus"};
  CHECK(ExecuteDatasetCommand(admin, get).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("sizes print with binary units and three digits") {
  CHECK(HumanBytes(0) == "0B");
  CHECK(HumanBytes(1023) == "1023B");
  CHECK(HumanBytes(1024) == "1.00K");
  CHECK(HumanBytes(131072) == "128K");
  CHECK(HumanBytes(uint64_t(15) << 30) == "15.0G");
  CHECK(HumanBytes(uint64_t(1536) << 20) == "1.50G");
}

}  // namespace
}  // namespace poolfs::daemon
