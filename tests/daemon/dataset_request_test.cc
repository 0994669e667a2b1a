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
    DatasetInfo a{"tank", 1,   1,   0,         3 << 20, 1 << 20, 100 << 20,
                  5,      1.5, "/", 512 << 10, 1 << 20, ""};
    DatasetInfo b{"tank/home", 2,   7,       0, 2 << 20, 2 << 20, 100 << 20,
                  9,           2.0, "/home", 0, 2 << 20, ""};
    if (!recursive) return std::vector<DatasetInfo>{root == "tank/home" ? b : a};
    return std::vector<DatasetInfo>{a, b};
  }
  Status Rollback(std::string_view name, bool destroy_later) override {
    calls.push_back("rollback " + std::string(name) + (destroy_later ? " -r" : ""));
    return next;
  }
  Status Clone(std::string_view origin, std::string_view name,
               const std::vector<PropertyAssignment>& props) override {
    std::string c = "clone " + std::string(origin) + " " + std::string(name);
    for (const auto& p : props) c += " " + p.name + "=" + p.value;
    calls.push_back(c);
    return next;
  }
  Status Promote(std::string_view name) override {
    calls.push_back("promote " + std::string(name));
    return next;
  }
  Status Snapshot(const std::vector<std::string>& names, bool recursive) override {
    std::string c = "snapshot";
    for (const std::string& n : names) c += " " + n;
    calls.push_back(c + (recursive ? " -r" : ""));
    return next;
  }
  // Two snapshots of tank, one of tank/home.
  Result<std::vector<SnapshotInfo>> ListSnapshots(std::string_view root, bool recursive) override {
    calls.push_back("list-snapshots " + std::string(root) + (recursive ? " -r" : ""));
    if (!next.ok()) return next;
    const SnapshotInfo one{"tank@one", 3,       10,      1000,
                           512 << 10,  1 << 20, 1 << 20, 18446744073709551557ull};
    const SnapshotInfo two{"tank@two", 4, 12, 2000, 0, 1 << 20, 512 << 10, 42};
    const SnapshotInfo home{"tank/home@two", 5, 12, 2000, 4096, 2 << 20, 2 << 20, 7};
    if (root == "tank/home") return std::vector<SnapshotInfo>{home};
    if (!recursive) return std::vector<SnapshotInfo>{one, two};
    return std::vector<SnapshotInfo>{one, two, home};
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
  Result<std::vector<DiffEntry>> Diff(std::string_view from, std::string_view to) override {
    calls.push_back("diff " + std::string(from) + " " + std::string(to));
    if (!next.ok()) return next;
    return std::vector<DiffEntry>{{DiffEntry::Type::kModified, "/", ""},
                                  {DiffEntry::Type::kCreated, "/a b", ""},
                                  {DiffEntry::Type::kRenamed, "/c", "/d/e"},
                                  {DiffEntry::Type::kRemoved, "/f", ""}};
  }
  Result<SendSummary> Send(const SendOptions& options, const StreamSink&) override {
    calls.push_back("send " + options.snapshot);
    return Status::NotSupported("fake");
  }
  Result<ReceiveSummary> Receive(const ReceiveOptions& options, const StreamSource&) override {
    calls.push_back("receive " + options.target);
    return Status::NotSupported("fake");
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

TEST_CASE("snapshot commands reach the admin as given") {
  FakeAdmin admin;
  DatasetCommand snap = Make(DatasetCommand::Verb::kSnapshot, {"tank@a", "tank/home@b"});
  snap.recursive = true;
  REQUIRE(ExecuteDatasetCommand(admin, snap).ok());
  DatasetCommand destroy = Make(DatasetCommand::Verb::kDestroy, {"tank/home@b"});
  REQUIRE(ExecuteDatasetCommand(admin, destroy).ok());
  DatasetCommand rollback = Make(DatasetCommand::Verb::kRollback, {"tank@a"});
  rollback.recursive = true;
  REQUIRE(ExecuteDatasetCommand(admin, rollback).ok());
  CHECK(admin.calls == std::vector<std::string>{"snapshot tank@a tank/home@b -r",
                                                "destroy tank/home@b", "rollback tank@a -r"});
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kRollback, {"tank"})).code() ==
        StatusCode::kInvalidArgument);
  CHECK(
      ValidateDatasetCommand(Make(DatasetCommand::Verb::kRollback, {"tank@a", "tank@b"})).code() ==
      StatusCode::kInvalidArgument);
  // Nothing to print: as zfs snapshot, silent on success.
  CHECK(RenderDatasetResult(snap, DatasetResult{}).empty());
}

TEST_CASE("bad snapshot names are refused naming the argument") {
  for (const char* bad : {"tank", "tank@", "tank@a@b", "tank@a/b", "tank/@a", "@a", "tank@.",
                          "tank@..", "tank@a%b"}) {
    CAPTURE(bad);
    Status st = ValidateDatasetCommand(Make(DatasetCommand::Verb::kSnapshot, {bad}));
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find(std::string("'") + bad + "'") != std::string::npos);
    if (std::string_view(bad) != "tank" && std::string_view(bad) != "tank@a%b")
      CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kDestroy, {bad})).code() ==
            StatusCode::kInvalidArgument);  // "tank": a dataset; "a%b": a range
  }
  // destroy takes ranges (either end may be left out), nothing else does.
  for (const char* range : {"tank@a%b", "tank@%b", "tank@a%", "tank@%"})
    CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kDestroy, {range})).ok());
  for (const char* bad : {"tank@a%b%c", "tank@a%b/c", "tank@a%.."})
    CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kDestroy, {bad})).code() ==
          StatusCode::kInvalidArgument);
  CHECK(ValidateSnapshotName("tank@" + std::string(255, 'x')).ok());
  CHECK_FALSE(ValidateSnapshotName("tank@" + std::string(256, 'x')).ok());
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kSnapshot, {})).code() ==
        StatusCode::kInvalidArgument);
  // One command, one txg, one pool.
  Status two_pools =
      ValidateDatasetCommand(Make(DatasetCommand::Verb::kSnapshot, {"tank@a", "other@a"}));
  CHECK(two_pools.code() == StatusCode::kInvalidArgument);
  CHECK(two_pools.message().find("other@a") != std::string::npos);
  // A snapshot is renamed to a snapshot name, a dataset to a dataset name;
  // '@' is not in a dataset created or listed.
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kRename, {"tank@a", "tank@b"})).ok());
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kRename, {"tank/a", "tank@b"})).code() ==
        StatusCode::kInvalidArgument);
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kRename, {"tank@a", "tank/b"})).code() ==
        StatusCode::kInvalidArgument);
  DatasetCommand create = Make(DatasetCommand::Verb::kCreate, {"tank/a"});
  create.type = DatasetCommand::ListType::kSnapshot;
  CHECK(ValidateDatasetCommand(create).code() == StatusCode::kInvalidArgument);
  FakeAdmin admin;
  CHECK_FALSE(
      ExecuteDatasetCommand(admin, Make(DatasetCommand::Verb::kSnapshot, {"tank@a@b"})).ok());
  CHECK(admin.calls.empty());
  CHECK(PoolOf("tank/home@monday") == "tank");
  CHECK(PoolOf("tank@monday") == "tank");
  CHECK(PoolOf("tank") == "tank");
}

TEST_CASE("diff reaches the admin, crosses the socket and prints as zfs diff does") {
  FakeAdmin admin;
  // One name: the snapshot against its dataset as it is now.
  DatasetCommand now = Make(DatasetCommand::Verb::kDiff, {"tank/home@a"});
  DatasetCommand later = Make(DatasetCommand::Verb::kDiff, {"tank/home@a", "tank/home@b"});
  REQUIRE(ExecuteDatasetCommand(admin, now).ok());
  auto r = DecodeDatasetResult(HandleDatasetRequest(&admin, EncodeDatasetCommand(later)));
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(admin.calls ==
        std::vector<std::string>{"diff tank/home@a tank/home", "diff tank/home@a tank/home@b"});
  REQUIRE(r->diffs.size() == 4);
  CHECK(r->diffs[2] == DiffEntry{DiffEntry::Type::kRenamed, "/c", "/d/e"});
  CHECK(RenderDatasetResult(later, *r) == "M\t/\n+\t/a b\nR\t/c -> /d/e\n-\t/f\n");
  // A name with a newline, tab or backslash stays on its line.
  DatasetResult odd;
  odd.diffs = {{DiffEntry::Type::kCreated, "/a\nb\tc\\d", ""}};
  CHECK(RenderDatasetResult(later, odd) == "+\t/a\\012b\\011c\\134d\n");
  // The admin's refusal crosses with its code and message.
  admin.next = Status::NotFound("no snapshot tank/home@a");
  r = DecodeDatasetResult(HandleDatasetRequest(&admin, EncodeDatasetCommand(now)));
  CHECK(r.status().code() == StatusCode::kNotFound);
  CHECK(r.status().message() == "no snapshot tank/home@a");
  // A reply with a bad entry is refused.
  CHECK(DecodeDatasetResult("{\"code\":0,\"datasets\":[],\"properties\":[],\"diffs\":"
                            "[{\"type\":\"X\",\"path\":\"/\",\"new_path\":\"\"}]}")
            .status()
            .code() == StatusCode::kCorruption);
}

TEST_CASE("diff refuses a first name that is no snapshot, two datasets and three names") {
  auto refused = [](std::vector<std::string> names) {
    Status st = ValidateDatasetCommand(Make(DatasetCommand::Verb::kDiff, std::move(names)));
    INFO(st.ToString());
    CHECK(st.code() == StatusCode::kInvalidArgument);
    return st.message();
  };
  CHECK(refused({"tank/home"}).find("'tank/home'") != std::string::npos);
  CHECK(refused({"tank/home", "tank/home@b"}).find("'tank/home'") != std::string::npos);
  CHECK(refused({}).find("diff") != std::string::npos);
  CHECK(refused({"tank@a", "tank@b", "tank"}).find("diff") != std::string::npos);
  CHECK(refused({"tank@a@b"}).find("'tank@a@b'") != std::string::npos);
  CHECK(refused({"tank@a", "other@b"}).find("different pools") != std::string::npos);
  CHECK(refused({"tank@a", "other"}).find("different pools") != std::string::npos);
  // Another dataset of the pool may be a clone: the pool decides.
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kDiff, {"tank@a", "tank/home"})).ok());
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kDiff, {"tank@a", "tank"})).ok());
  CHECK(ValidateDatasetCommand(Make(DatasetCommand::Verb::kDiff, {"tank@a", "tank@b"})).ok());
  FakeAdmin admin;
  CHECK_FALSE(ExecuteDatasetCommand(admin, Make(DatasetCommand::Verb::kDiff, {"tank"})).ok());
  CHECK(admin.calls.empty());
}

TEST_CASE("list -t takes filesystem, snapshot, all and their short forms") {
  using T = DatasetCommand::ListType;
  CHECK(*ParseListType("filesystem") == T::kFilesystem);
  CHECK(*ParseListType("fs") == T::kFilesystem);
  CHECK(*ParseListType("snapshot") == T::kSnapshot);
  CHECK(*ParseListType("snap") == T::kSnapshot);
  CHECK(*ParseListType("all") == T::kAll);
  CHECK(*ParseListType("filesystem,snapshot") == T::kAll);
  for (const char* bad : {"", "volume", "snapshot,", "fs,bogus"}) {
    CAPTURE(bad);
    CHECK(ParseListType(bad).status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(ParseListType("fs,bogus").status().message().find("'bogus'") != std::string::npos);
}

TEST_CASE("snapshot commands and snapshots cross the socket intact") {
  DatasetCommand c = Make(DatasetCommand::Verb::kList, {"tank"});
  c.type = DatasetCommand::ListType::kAll;
  c.recursive = true;
  auto back = DecodeDatasetCommand(EncodeDatasetCommand(c));
  REQUIRE(back.ok());
  CHECK(back->type == DatasetCommand::ListType::kAll);
  DatasetCommand snap = Make(DatasetCommand::Verb::kSnapshot, {"tank@a"});
  back = DecodeDatasetCommand(EncodeDatasetCommand(snap));
  REQUIRE(back.ok());
  CHECK(back->verb == DatasetCommand::Verb::kSnapshot);
  CHECK(back->names == snap.names);
  // A request without "type" (a client from before snapshots) lists
  // datasets; an unknown type is refused.
  const std::string old =
      "{\"verb\":\"list\",\"names\":[],\"parents\":false,\"recursive\":false,"
      "\"props\":[],\"columns\":[],\"scripted\":false,\"exact\":false,\"json\":false";
  back = DecodeDatasetCommand(old + "}");
  REQUIRE(back.ok());
  CHECK(back->type == DatasetCommand::ListType::kFilesystem);
  CHECK(DecodeDatasetCommand(old + ",\"type\":\"volume\"}").status().code() ==
        StatusCode::kInvalidArgument);

  FakeAdmin admin;
  auto r = DecodeDatasetResult(HandleDatasetRequest(&admin, EncodeDatasetCommand(c)));
  REQUIRE(r.ok());
  CHECK(admin.calls == std::vector<std::string>{"list tank -r", "list-snapshots tank -r"});
  REQUIRE(r->datasets.size() == 2);
  CHECK(r->datasets[0].usedbysnapshots == 512 << 10);
  REQUIRE(r->snapshots.size() == 3);
  CHECK(r->snapshots[2].name == "tank/home@two");
  CHECK(r->snapshots[0].txg == 10);
  CHECK(r->snapshots[0].creation_time == 1000);
  CHECK(r->snapshots[0].used == 512 << 10);
  CHECK(r->snapshots[1].written == 512 << 10);
  CHECK(r->snapshots[0].guid == 18446744073709551557ull);  // all 64 bits carried

  // -t snapshot asks for snapshots only.
  admin.calls.clear();
  c.type = DatasetCommand::ListType::kSnapshot;
  c.recursive = false;
  r = ExecuteDatasetCommand(admin, c);
  REQUIRE(r.ok());
  CHECK(admin.calls == std::vector<std::string>{"list-snapshots tank"});
  CHECK(r->datasets.empty());
  CHECK(r->snapshots.size() == 2);

  // A reply without snapshots (a daemon from before them) decodes.
  auto plain = DecodeDatasetResult("{\"code\":0,\"datasets\":[],\"properties\":[]}");
  REQUIRE(plain.ok());
  CHECK(plain->snapshots.empty());
  CHECK(DecodeDatasetResult("{\"code\":0,\"datasets\":[],\"snapshots\":[{\"name\":\"a@b\"}],"
                            "\"properties\":[]}")
            .status()
            .code() == StatusCode::kCorruption);
}

TEST_CASE("list -t snapshot and -t all print as zfs list does") {
  FakeAdmin admin;
  DatasetCommand list = Make(DatasetCommand::Verb::kList, {});
  list.type = DatasetCommand::ListType::kSnapshot;
  list.exact = true;  // CREATION in seconds: the same in every time zone
  auto r = ExecuteDatasetCommand(admin, list);
  REQUIRE(r.ok());
  CHECK(RenderDatasetResult(list, *r) ==
        "NAME           USED    REFER    WRITTEN  CREATION\n"
        "tank@one       524288  1048576  1048576  1000\n"
        "tank@two       0       1048576  524288   2000\n"
        "tank/home@two  4096    2097152  2097152  2000\n");
  list.exact = false;
  list.columns = {"name", "used", "refer", "written"};
  CHECK(RenderDatasetResult(list, *r) ==
        "NAME           USED   REFER  WRITTEN\n"
        "tank@one       512K   1.00M  1.00M\n"
        "tank@two       0B     1.00M  512K\n"
        "tank/home@two  4.00K  2.00M  2.00M\n");
  // A snapshot's guid: a decimal number, as zfs prints it.
  list.columns = {"name", "guid"};
  CHECK(RenderDatasetResult(list, *r) ==
        "NAME           GUID\n"
        "tank@one       18446744073709551557\n"
        "tank@two       42\n"
        "tank/home@two  7\n");
  list.columns = {"name", "used", "refer", "written"};

  // -t all: each dataset, then its snapshots; "-" where a row has no value.
  list.type = DatasetCommand::ListType::kAll;
  list.columns.clear();
  r = ExecuteDatasetCommand(admin, list);
  REQUIRE(r.ok());
  CHECK(RenderDatasetResult(list, *r) ==
        "NAME           USED   AVAIL  REFER  MOUNTPOINT\n"
        "tank           3.00M  100M   1.00M  /\n"
        "tank@one       512K   -      1.00M  -\n"
        "tank@two       0B     -      1.00M  -\n"
        "tank/home      2.00M  100M   2.00M  /home\n"
        "tank/home@two  4.00K  -      2.00M  -\n");
  list.columns = {"name", "type", "quota"};
  r = ExecuteDatasetCommand(admin, list);
  REQUIRE(r.ok());
  list.scripted = true;
  CHECK(RenderDatasetResult(list, *r) ==
        "tank\tfilesystem\t10.0G\n"
        "tank@one\tsnapshot\t-\n"
        "tank@two\tsnapshot\t-\n"
        "tank/home\tfilesystem\t10.0G\n"
        "tank/home@two\tsnapshot\t-\n");
  list.scripted = false;
  list.json = true;
  const std::string j = RenderDatasetResult(list, *r);
  CHECK(j.find("\"name\": \"tank@one\",\n    \"quota\": null,\n    \"type\": \"snapshot\"") !=
        std::string::npos);

  // -o space, and the snapshots' share of a dataset's used.
  DatasetCommand space = Make(DatasetCommand::Verb::kList, {});
  space.columns = {"space"};
  r = ExecuteDatasetCommand(admin, space);
  REQUIRE(r.ok());
  CHECK(RenderDatasetResult(space, *r) ==
        "NAME       AVAIL  USED   USEDSNAP  USEDDS\n"
        "tank       100M   3.00M  512K      1.00M\n"
        "tank/home  100M   2.00M  0B        2.00M\n");
  space.columns = {"name", "usedbysnapshots"};
  space.json = true;
  CHECK(RenderDatasetResult(space, *r).find("\"usedbysnapshots\": 524288") != std::string::npos);
}

TEST_CASE("get prints usedbysnapshots and written as sizes") {
  DatasetCommand get = Make(DatasetCommand::Verb::kGet, {"tank"});
  get.columns = {"usedbysnapshots"};
  DatasetResult r;
  r.properties.push_back({"tank", {{"usedbysnapshots", "1048576", "-"}, {"written", "0", "-"}}});
  CHECK(RenderDatasetResult(get, r) ==
        "NAME  PROPERTY         VALUE  SOURCE\n"
        "tank  usedbysnapshots  1.00M  -\n"
        "tank  written          0B     -\n");
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
