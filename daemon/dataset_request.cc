// DatasetCommand: run, carried and printed; see dataset_request.h.
#include "dataset_request.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>

namespace poolfs::daemon {
namespace {

using nlohmann::json;

constexpr DatasetCommand::Verb kVerbs[] = {
    DatasetCommand::Verb::kCreate,  DatasetCommand::Verb::kDestroy, DatasetCommand::Verb::kRename,
    DatasetCommand::Verb::kList,    DatasetCommand::Verb::kGet,     DatasetCommand::Verb::kSet,
    DatasetCommand::Verb::kInherit,
};

// The columns `list` fills from DatasetInfo; any other is a property.
enum class InfoColumn : uint8_t {
  kName,
  kUsed,
  kAvail,
  kRefer,
  kMountpoint,
  kObjects,
  kCreation,
  kRatio,
  kType
};
std::optional<InfoColumn> FindInfoColumn(std::string_view c) {
  static const std::map<std::string_view, InfoColumn> kColumns = {
      {"name", InfoColumn::kName},
      {"used", InfoColumn::kUsed},
      {"avail", InfoColumn::kAvail},
      {"available", InfoColumn::kAvail},
      {"refer", InfoColumn::kRefer},
      {"referenced", InfoColumn::kRefer},
      {"mountpoint", InfoColumn::kMountpoint},
      {"objects", InfoColumn::kObjects},
      {"creation", InfoColumn::kCreation},
      {"compressratio", InfoColumn::kRatio},
      {"ratio", InfoColumn::kRatio},
      {"type", InfoColumn::kType},
  };
  auto it = kColumns.find(c);
  if (it == kColumns.end()) return std::nullopt;
  return it->second;
}

// The properties whose values are byte counts (printed with units unless -p).
bool IsBytesProperty(std::string_view p) {
  return p == "used" || p == "available" || p == "referenced" || p == "quota" ||
         p == "reservation" || p == "recordsize";
}

std::vector<std::string> Columns(const DatasetCommand& c) {
  if (!c.columns.empty()) return c.columns;
  std::vector<std::string> out;
  std::string_view s = kDefaultListColumns;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    out.emplace_back(s.substr(0, comma));
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
  }
  return out;
}

bool AllDigits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

std::string FormatTime(int64_t t);

std::string FormatValue(std::string_view prop, const std::string& value, bool exact) {
  if (exact || !AllDigits(value) || value.size() > 18) return value;
  if (prop == "creation") return FormatTime(std::stoll(value));
  if (!IsBytesProperty(prop)) return value;
  const uint64_t n = std::stoull(value);
  if (n == 0 && (prop == "quota" || prop == "reservation")) return "none";
  return HumanBytes(n);
}

std::string FormatTime(int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  if (localtime_r(&tt, &tm) == nullptr) return std::to_string(t);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a %b %e %H:%M %Y", &tm);
  return buf;
}

std::string FormatRatio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", r);
  return buf;
}

std::string Upper(std::string s) {
  for (char& ch : s) ch = char(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
  return s;
}

// Prints rows as a table: columns padded to their widest cell (the last
// not padded), or with `scripted` tab-separated without the header.
std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows, bool scripted) {
  std::string out;
  if (scripted) {
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); i++) out += (i ? "\t" : "") + row[i];
      out += "\n";
    }
    return out;
  }
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); i++) width[i] = header[i].size();
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size() && i < width.size(); i++)
      width[i] = std::max(width[i], row[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); i++) {
      out += cells[i];
      if (i + 1 < cells.size()) out += std::string(width[i] - cells[i].size() + 2, ' ');
    }
    out += "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out;
}

const DatasetProperty* FindProp(const DatasetResult& r, const std::string& dataset,
                                const std::string& prop) {
  for (const DatasetProperties& dp : r.properties) {
    if (dp.dataset != dataset) continue;
    for (const DatasetProperty& p : dp.props)
      if (p.name == prop) return &p;
  }
  return nullptr;
}

json InfoJson(const DatasetInfo& d) {
  return json{{"name", d.name},
              {"id", d.id},
              {"creation_txg", d.creation_txg},
              {"creation", d.creation_time},
              {"used", d.used},
              {"referenced", d.referenced},
              {"available", d.available},
              {"objects", d.objects},
              {"compressratio", d.compressratio},
              {"mountpoint", d.mountpoint}};
}

json PropJson(const DatasetProperty& p) {
  return json{{"property", p.name}, {"value", p.value}, {"source", p.source}};
}

std::string RenderList(const DatasetCommand& c, const DatasetResult& r) {
  const std::vector<std::string> cols = Columns(c);
  if (c.json) {
    json out = json::array();
    for (const DatasetInfo& d : r.datasets) {
      json row = json::object();
      for (const std::string& col : cols) {
        std::optional<InfoColumn> ic = FindInfoColumn(col);
        if (!ic) {
          const DatasetProperty* p = FindProp(r, d.name, col);
          row[col] = p != nullptr ? json(p->value) : json(nullptr);
          continue;
        }
        switch (*ic) {
          case InfoColumn::kName: row["name"] = d.name; break;
          case InfoColumn::kUsed: row["used"] = d.used; break;
          case InfoColumn::kAvail: row["available"] = d.available; break;
          case InfoColumn::kRefer: row["referenced"] = d.referenced; break;
          case InfoColumn::kMountpoint: row["mountpoint"] = d.mountpoint; break;
          case InfoColumn::kObjects: row["objects"] = d.objects; break;
          case InfoColumn::kCreation: row["creation"] = d.creation_time; break;
          case InfoColumn::kRatio: row["compressratio"] = d.compressratio; break;
          case InfoColumn::kType: row["type"] = "filesystem"; break;
        }
      }
      out.push_back(std::move(row));
    }
    return out.dump(2) + "\n";
  }
  std::vector<std::string> header;
  for (const std::string& col : cols) {
    std::optional<InfoColumn> ic = FindInfoColumn(col);
    header.push_back(ic == InfoColumn::kAvail   ? "AVAIL"
                     : ic == InfoColumn::kRefer ? "REFER"
                     : ic == InfoColumn::kRatio ? "RATIO"
                                                : Upper(col));
  }
  std::vector<std::vector<std::string>> rows;
  auto bytes = [&](uint64_t n) { return c.exact ? std::to_string(n) : HumanBytes(n); };
  for (const DatasetInfo& d : r.datasets) {
    std::vector<std::string> row;
    for (const std::string& col : cols) {
      std::optional<InfoColumn> ic = FindInfoColumn(col);
      if (!ic) {
        const DatasetProperty* p = FindProp(r, d.name, col);
        row.push_back(p != nullptr ? FormatValue(col, p->value, c.exact) : "-");
        continue;
      }
      switch (*ic) {
        case InfoColumn::kName: row.push_back(d.name); break;
        case InfoColumn::kUsed: row.push_back(bytes(d.used)); break;
        case InfoColumn::kAvail: row.push_back(bytes(d.available)); break;
        case InfoColumn::kRefer: row.push_back(bytes(d.referenced)); break;
        case InfoColumn::kMountpoint: row.push_back(d.mountpoint); break;
        case InfoColumn::kObjects: row.push_back(std::to_string(d.objects)); break;
        case InfoColumn::kCreation:
          row.push_back(c.exact ? std::to_string(d.creation_time) : FormatTime(d.creation_time));
          break;
        case InfoColumn::kRatio: row.push_back(FormatRatio(d.compressratio)); break;
        case InfoColumn::kType: row.push_back("filesystem"); break;
      }
    }
    rows.push_back(std::move(row));
  }
  return Table(header, rows, c.scripted);
}

std::string RenderGet(const DatasetCommand& c, const DatasetResult& r) {
  if (c.json) {
    json out = json::object();
    for (const DatasetProperties& dp : r.properties) {
      json props = json::object();
      for (const DatasetProperty& p : dp.props)
        props[p.name] = json{{"value", p.value}, {"source", p.source}};
      out[dp.dataset] = std::move(props);
    }
    return out.dump(2) + "\n";
  }
  std::vector<std::vector<std::string>> rows;
  for (const DatasetProperties& dp : r.properties)
    for (const DatasetProperty& p : dp.props)
      rows.push_back({dp.dataset, p.name, FormatValue(p.name, p.value, c.exact), p.source});
  return Table({"NAME", "PROPERTY", "VALUE", "SOURCE"}, rows, c.scripted);
}

template <typename T>
bool Get(const json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  try {
    *out = it->get<T>();
  } catch (const json::exception&) {
    return false;
  }
  return true;
}

}  // namespace

std::string_view VerbName(DatasetCommand::Verb v) {
  switch (v) {
    case DatasetCommand::Verb::kCreate: return "create";
    case DatasetCommand::Verb::kDestroy: return "destroy";
    case DatasetCommand::Verb::kRename: return "rename";
    case DatasetCommand::Verb::kList: return "list";
    case DatasetCommand::Verb::kGet: return "get";
    case DatasetCommand::Verb::kSet: return "set";
    case DatasetCommand::Verb::kInherit: return "inherit";
  }
  return "?";
}

std::string HumanBytes(uint64_t n) {
  static const char kUnits[] = "BKMGTPE";
  if (n < 1024) return std::to_string(n) + "B";
  double v = double(n);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    u++;
  }
  char buf[32];
  if (v < 10)
    std::snprintf(buf, sizeof buf, "%.2f%c", v, kUnits[u]);
  else if (v < 100)
    std::snprintf(buf, sizeof buf, "%.1f%c", v, kUnits[u]);
  else
    std::snprintf(buf, sizeof buf, "%.0f%c", v, kUnits[u]);
  return buf;
}

Status ValidateDatasetCommand(const DatasetCommand& c) {
  const std::string verb(VerbName(c.verb));
  auto count = [&](size_t lo, size_t hi, const char* what) -> Status {
    if (c.names.size() < lo || c.names.size() > hi)
      return Status::InvalidArgument("dataset " + verb + " takes " + what);
    return Status::Ok();
  };
  switch (c.verb) {
    case DatasetCommand::Verb::kCreate:
    case DatasetCommand::Verb::kDestroy:
      POOLFS_RETURN_IF_ERROR(count(1, 1, "one POOL/PATH"));
      break;
    case DatasetCommand::Verb::kRename:
      POOLFS_RETURN_IF_ERROR(count(2, 2, "two names, POOL/FROM POOL/TO"));
      break;
    case DatasetCommand::Verb::kList: break;
    case DatasetCommand::Verb::kGet:
      POOLFS_RETURN_IF_ERROR(count(1, SIZE_MAX, "one or more POOL/PATH"));
      if (c.columns.empty())
        return Status::InvalidArgument("dataset get: name the properties (PROP[,PROP] or all)");
      break;
    case DatasetCommand::Verb::kSet:
      POOLFS_RETURN_IF_ERROR(count(1, 1, "PROP=VALUE and one POOL/PATH"));
      if (c.props.size() != 1) return Status::InvalidArgument("dataset set takes one PROP=VALUE");
      break;
    case DatasetCommand::Verb::kInherit:
      POOLFS_RETURN_IF_ERROR(count(1, 1, "PROP and one POOL/PATH"));
      if (c.props.size() != 1 || c.props[0].name.empty())
        return Status::InvalidArgument("dataset inherit takes one PROP");
      break;
  }
  for (const std::string& n : c.names) {
    Status st = ValidateDatasetPath(n);
    if (!st.ok()) return st;
  }
  for (const PropertyAssignment& p : c.props)
    if (p.name.empty())
      return Status::InvalidArgument("a property assignment needs a name (PROP=VALUE)");
  for (const std::string& col : c.columns)
    if (col.empty()) return Status::InvalidArgument("an empty column or property name");
  return Status::Ok();
}

Result<DatasetResult> ExecuteDatasetCommand(DatasetAdmin& admin, const DatasetCommand& c) {
  POOLFS_RETURN_IF_ERROR(ValidateDatasetCommand(c));
  DatasetResult r;
  switch (c.verb) {
    case DatasetCommand::Verb::kCreate:
      POOLFS_RETURN_IF_ERROR(admin.Create(c.names[0], c.parents, c.props));
      return r;
    case DatasetCommand::Verb::kDestroy:
      POOLFS_RETURN_IF_ERROR(admin.Destroy(c.names[0], c.recursive));
      return r;
    case DatasetCommand::Verb::kRename:
      POOLFS_RETURN_IF_ERROR(admin.Rename(c.names[0], c.names[1]));
      return r;
    case DatasetCommand::Verb::kSet:
      POOLFS_RETURN_IF_ERROR(admin.Set(c.names[0], c.props[0]));
      return r;
    case DatasetCommand::Verb::kInherit:
      POOLFS_RETURN_IF_ERROR(admin.Inherit(c.names[0], c.props[0].name));
      return r;
    case DatasetCommand::Verb::kGet:
      for (const std::string& n : c.names) {
        POOLFS_ASSIGN_OR_RETURN(std::vector<DatasetProperty> props, admin.Get(n, c.columns));
        r.properties.push_back({n, std::move(props)});
      }
      return r;
    case DatasetCommand::Verb::kList: {
      std::vector<std::string> roots = c.names;
      if (roots.empty()) roots.push_back("");
      for (const std::string& root : roots) {
        // Without -r a named dataset lists alone; no name lists the pool.
        POOLFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> infos,
                                admin.List(root, c.recursive || root.empty()));
        for (DatasetInfo& d : infos) r.datasets.push_back(std::move(d));
      }
      std::vector<std::string> props;
      for (const std::string& col : Columns(c))
        if (!FindInfoColumn(col)) props.push_back(col);
      if (!props.empty()) {
        for (const DatasetInfo& d : r.datasets) {
          POOLFS_ASSIGN_OR_RETURN(std::vector<DatasetProperty> got, admin.Get(d.name, props));
          r.properties.push_back({d.name, std::move(got)});
        }
      }
      return r;
    }
  }
  return Status::InvalidArgument("unknown dataset command");
}

std::string EncodeDatasetCommand(const DatasetCommand& c) {
  json props = json::array();
  for (const PropertyAssignment& p : c.props) props.push_back({p.name, p.value});
  return json{{"verb", std::string(VerbName(c.verb))},
              {"names", c.names},
              {"parents", c.parents},
              {"recursive", c.recursive},
              {"props", props},
              {"columns", c.columns},
              {"scripted", c.scripted},
              {"exact", c.exact},
              {"json", c.json}}
      .dump();
}

Result<DatasetCommand> DecodeDatasetCommand(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument("dataset request: not a JSON object");
  DatasetCommand c;
  std::string verb;
  if (!Get(j, "verb", &verb)) return Status::InvalidArgument("dataset request: no verb");
  bool known = false;
  for (DatasetCommand::Verb v : kVerbs) {
    if (VerbName(v) == verb) {
      c.verb = v;
      known = true;
    }
  }
  if (!known) return Status::InvalidArgument("dataset request: unknown verb '" + verb + "'");
  std::vector<std::vector<std::string>> props;
  if (!Get(j, "names", &c.names) || !Get(j, "parents", &c.parents) ||
      !Get(j, "recursive", &c.recursive) || !Get(j, "props", &props) ||
      !Get(j, "columns", &c.columns) || !Get(j, "scripted", &c.scripted) ||
      !Get(j, "exact", &c.exact) || !Get(j, "json", &c.json))
    return Status::InvalidArgument("dataset request: a field is missing or of the wrong type");
  for (const auto& p : props) {
    if (p.size() != 2) return Status::InvalidArgument("dataset request: a bad property pair");
    c.props.push_back({p[0], p[1]});
  }
  return c;
}

std::string EncodeDatasetMountRequest(const DatasetMountRequest& r) {
  return json{{"dataset", r.dataset},
              {"mountpoint", r.mountpoint},
              {"read_only", r.read_only},
              {"fuse_options", r.fuse_options},
              {"entry_timeout", r.entry_timeout},
              {"attr_timeout", r.attr_timeout},
              {"negative_timeout", r.negative_timeout}}
      .dump();
}

Result<DatasetMountRequest> DecodeDatasetMountRequest(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument("dataset mount request: not a JSON object");
  DatasetMountRequest r;
  if (!Get(j, "dataset", &r.dataset) || !Get(j, "mountpoint", &r.mountpoint) ||
      !Get(j, "read_only", &r.read_only) || !Get(j, "fuse_options", &r.fuse_options) ||
      !Get(j, "entry_timeout", &r.entry_timeout) || !Get(j, "attr_timeout", &r.attr_timeout) ||
      !Get(j, "negative_timeout", &r.negative_timeout))
    return Status::InvalidArgument("dataset mount request: a field is missing or malformed");
  POOLFS_RETURN_IF_ERROR(ValidateDatasetPath(r.dataset));
  if (!r.mountpoint.starts_with("/"))
    return Status::InvalidArgument("dataset mount request: mount point '" + r.mountpoint +
                                   "' is not absolute");
  for (const std::string& o : r.fuse_options)
    if (o.empty() || o.find(',') != std::string::npos)
      return Status::InvalidArgument("dataset mount request: bad FUSE option '" + o + "'");
  return r;
}

std::string EncodeStatus(const Status& st) {
  return json{{"code", int(st.code())}, {"message", st.message()}}.dump();
}

Status DecodeStatus(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  int code = -1;
  if (j.is_discarded() || !j.is_object() || !Get(j, "code", &code) || code < 0 ||
      code > int(kLastStatusCode))
    return Status::Corruption("reply from the daemon: not a status: " + std::string(text));
  std::string message;
  Get(j, "message", &message);
  return code == 0 ? Status::Ok() : Status(static_cast<StatusCode>(code), message);
}

std::string EncodeDatasetResult(const Result<DatasetResult>& r) {
  if (!r.ok())
    return json{{"code", int(r.status().code())}, {"message", r.status().message()}}.dump();
  json datasets = json::array();
  for (const DatasetInfo& d : r->datasets) datasets.push_back(InfoJson(d));
  json properties = json::array();
  for (const DatasetProperties& dp : r->properties) {
    json props = json::array();
    for (const DatasetProperty& p : dp.props) props.push_back(PropJson(p));
    properties.push_back(json{{"dataset", dp.dataset}, {"props", props}});
  }
  return json{{"code", 0}, {"datasets", datasets}, {"properties", properties}}.dump();
}

Result<DatasetResult> DecodeDatasetResult(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::Corruption("dataset reply from the daemon: not a JSON object");
  int code = -1;
  if (!Get(j, "code", &code) || code < 0 || code > int(kLastStatusCode))
    return Status::Corruption("dataset reply from the daemon: no valid code");
  if (code != 0) {
    std::string message;
    Get(j, "message", &message);
    return Status(static_cast<StatusCode>(code), message);
  }
  DatasetResult r;
  auto bad = [] { return Status::Corruption("dataset reply from the daemon: a malformed entry"); };
  if (!j.contains("datasets") || !j["datasets"].is_array() || !j.contains("properties") ||
      !j["properties"].is_array())
    return bad();
  for (const json& d : j["datasets"]) {
    DatasetInfo info;
    if (!d.is_object() || !Get(d, "name", &info.name) || !Get(d, "id", &info.id) ||
        !Get(d, "creation_txg", &info.creation_txg) || !Get(d, "creation", &info.creation_time) ||
        !Get(d, "used", &info.used) || !Get(d, "referenced", &info.referenced) ||
        !Get(d, "available", &info.available) || !Get(d, "objects", &info.objects) ||
        !Get(d, "compressratio", &info.compressratio) || !Get(d, "mountpoint", &info.mountpoint))
      return bad();
    r.datasets.push_back(std::move(info));
  }
  for (const json& dp : j["properties"]) {
    DatasetProperties out;
    if (!dp.is_object() || !Get(dp, "dataset", &out.dataset) || !dp.contains("props") ||
        !dp["props"].is_array())
      return bad();
    for (const json& p : dp["props"]) {
      DatasetProperty prop;
      if (!p.is_object() || !Get(p, "property", &prop.name) || !Get(p, "value", &prop.value) ||
          !Get(p, "source", &prop.source))
        return bad();
      out.props.push_back(std::move(prop));
    }
    r.properties.push_back(std::move(out));
  }
  return r;
}

std::string HandleDatasetRequest(DatasetAdmin* admin, std::string_view text) {
  Result<DatasetCommand> c = DecodeDatasetCommand(text);
  if (!c.ok()) return EncodeDatasetResult(c.status());
  if (admin == nullptr)
    return EncodeDatasetResult(Status::NotSupported("this mount serves no datasets"));
  return EncodeDatasetResult(ExecuteDatasetCommand(*admin, *c));
}

std::string RenderDatasetResult(const DatasetCommand& c, const DatasetResult& r) {
  switch (c.verb) {
    case DatasetCommand::Verb::kList: return RenderList(c, r);
    case DatasetCommand::Verb::kGet: return RenderGet(c, r);
    default: return "";
  }
}

}  // namespace poolfs::daemon
