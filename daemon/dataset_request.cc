// DatasetCommand: run, carried and printed; see dataset_request.h.
#include "dataset_request.h"
#include "json_field.h"

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
    DatasetCommand::Verb::kCreate,   DatasetCommand::Verb::kDestroy,
    DatasetCommand::Verb::kRename,   DatasetCommand::Verb::kList,
    DatasetCommand::Verb::kGet,      DatasetCommand::Verb::kSet,
    DatasetCommand::Verb::kInherit,  DatasetCommand::Verb::kSnapshot,
    DatasetCommand::Verb::kRollback, DatasetCommand::Verb::kClone,
    DatasetCommand::Verb::kPromote,  DatasetCommand::Verb::kDiff,
};
constexpr DatasetCommand::ListType kListTypes[] = {
    DatasetCommand::ListType::kFilesystem,
    DatasetCommand::ListType::kSnapshot,
    DatasetCommand::ListType::kAll,
};

// The columns `list` fills from DatasetInfo and SnapshotInfo; any other
// is a property.
enum class InfoColumn : uint8_t {
  kName,
  kUsed,
  kAvail,
  kRefer,
  kMountpoint,
  kObjects,
  kCreation,
  kRatio,
  kType,
  kWritten,
  kUsedSnap,
  kUsedDs,
  kGuid
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
      {"written", InfoColumn::kWritten},
      {"usedsnap", InfoColumn::kUsedSnap},
      {"usedbysnapshots", InfoColumn::kUsedSnap},
      {"usedds", InfoColumn::kUsedDs},
      {"usedbydataset", InfoColumn::kUsedDs},
      {"guid", InfoColumn::kGuid},
  };
  auto it = kColumns.find(c);
  if (it == kColumns.end()) return std::nullopt;
  return it->second;
}

// The properties whose values are byte counts (printed with units unless -p).
bool IsBytesProperty(std::string_view p) {
  return p == "used" || p == "available" || p == "referenced" || p == "quota" ||
         p == "reservation" || p == "recordsize" || p == "usedbysnapshots" || p == "written";
}

void AppendColumns(std::string_view s, std::vector<std::string>& out) {
  while (!s.empty()) {
    const size_t comma = s.find(',');
    out.emplace_back(s.substr(0, comma));
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
  }
}

// list's columns: -o's ("space" expanded), or the default of its type.
std::vector<std::string> Columns(const DatasetCommand& c) {
  std::vector<std::string> out;
  if (c.columns.empty()) {
    AppendColumns(c.type == DatasetCommand::ListType::kSnapshot ? kDefaultSnapshotColumns
                                                                : kDefaultListColumns,
                  out);
    return out;
  }
  for (const std::string& col : c.columns) {
    if (col == "space")
      AppendColumns(kSpaceListColumns, out);
    else
      out.push_back(col);
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
              {"mountpoint", d.mountpoint},
              {"usedbysnapshots", d.usedbysnapshots},
              {"usedbydataset", d.usedbydataset},
              {"origin", d.origin}};
}

json SnapshotJson(const SnapshotInfo& s) {
  return json{{"name", s.name},       {"id", s.id},
              {"txg", s.txg},         {"creation", s.creation_time},
              {"used", s.used},       {"referenced", s.referenced},
              {"written", s.written}, {"guid", s.guid}};
}

json PropJson(const DatasetProperty& p) {
  return json{{"property", p.name}, {"value", p.value}, {"source", p.source}};
}

// One cell of a list row before it is printed: text, or a number to print
// as bytes, a count, a time or a ratio; kNone where the row has no value
// (a snapshot's mountpoint, a property of a snapshot): "-", or null in JSON.
struct Cell {
  enum Kind : uint8_t { kNone, kText, kBytes, kCount, kTime, kRatio } kind = kNone;
  std::string text;
  uint64_t n = 0;
  int64_t time = 0;
  double ratio = 0;
  static Cell Text(std::string t) { return {kText, std::move(t)}; }
  static Cell Bytes(uint64_t v) { return {kBytes, {}, v}; }
  static Cell Count(uint64_t v) { return {kCount, {}, v}; }
  static Cell Time(int64_t t) { return {kTime, {}, 0, t}; }
  static Cell Ratio(double r) { return {kRatio, {}, 0, 0, r}; }
};

Cell DatasetCell(InfoColumn ic, const DatasetInfo& d) {
  switch (ic) {
    case InfoColumn::kName: return Cell::Text(d.name);
    case InfoColumn::kUsed: return Cell::Bytes(d.used);
    case InfoColumn::kAvail: return Cell::Bytes(d.available);
    case InfoColumn::kRefer: return Cell::Bytes(d.referenced);
    case InfoColumn::kMountpoint: return Cell::Text(d.mountpoint);
    case InfoColumn::kObjects: return Cell::Count(d.objects);
    case InfoColumn::kCreation: return Cell::Time(d.creation_time);
    case InfoColumn::kRatio: return Cell::Ratio(d.compressratio);
    case InfoColumn::kType: return Cell::Text("filesystem");
    case InfoColumn::kWritten: return {};  // the core keeps no figure for a dataset
    case InfoColumn::kUsedSnap: return Cell::Bytes(d.usedbysnapshots);
    case InfoColumn::kUsedDs: return Cell::Bytes(d.usedbydataset);
    case InfoColumn::kGuid: return {};  // snapshots only, for now
  }
  return {};
}

Cell SnapshotCell(InfoColumn ic, const SnapshotInfo& s) {
  switch (ic) {
    case InfoColumn::kName: return Cell::Text(s.name);
    case InfoColumn::kUsed: return Cell::Bytes(s.used);
    case InfoColumn::kRefer: return Cell::Bytes(s.referenced);
    case InfoColumn::kCreation: return Cell::Time(s.creation_time);
    case InfoColumn::kType: return Cell::Text("snapshot");
    case InfoColumn::kWritten: return Cell::Bytes(s.written);
    case InfoColumn::kGuid: return Cell::Count(s.guid);
    default: return {};  // read-only and unmounted: no avail, mountpoint, ...
  }
}

// The JSON key of a column: the property's full name.
std::string JsonKey(const std::string& col, std::optional<InfoColumn> ic) {
  if (!ic) return col;
  switch (*ic) {
    case InfoColumn::kAvail: return "available";
    case InfoColumn::kRefer: return "referenced";
    case InfoColumn::kRatio: return "compressratio";
    case InfoColumn::kUsedSnap: return "usedbysnapshots";
    case InfoColumn::kUsedDs: return "usedbydataset";
    default: return col;
  }
}

std::string Header(const std::string& col, std::optional<InfoColumn> ic) {
  if (!ic) return Upper(col);
  switch (*ic) {
    case InfoColumn::kAvail: return "AVAIL";
    case InfoColumn::kRefer: return "REFER";
    case InfoColumn::kRatio: return "RATIO";
    case InfoColumn::kUsedSnap: return "USEDSNAP";
    case InfoColumn::kUsedDs: return "USEDDS";
    default: return Upper(col);
  }
}

// The rows `list` prints, in order: its datasets, its snapshots, or (-t
// all) each dataset followed by its snapshots, oldest first.
struct ListRow {
  const DatasetInfo* dataset = nullptr;
  const SnapshotInfo* snapshot = nullptr;
};
std::vector<ListRow> ListRows(const DatasetCommand& c, const DatasetResult& r) {
  std::vector<ListRow> rows;
  switch (c.type) {
    case DatasetCommand::ListType::kFilesystem:
      for (const DatasetInfo& d : r.datasets) rows.push_back({&d, nullptr});
      break;
    case DatasetCommand::ListType::kSnapshot:
      for (const SnapshotInfo& s : r.snapshots) rows.push_back({nullptr, &s});
      break;
    case DatasetCommand::ListType::kAll: {
      std::map<std::string_view, std::vector<const SnapshotInfo*>> of;
      for (const SnapshotInfo& s : r.snapshots)
        of[std::string_view(s.name).substr(0, s.name.find('@'))].push_back(&s);
      for (const DatasetInfo& d : r.datasets) {
        rows.push_back({&d, nullptr});
        auto it = of.find(d.name);
        if (it == of.end()) continue;
        for (const SnapshotInfo* s : it->second) rows.push_back({nullptr, s});
        of.erase(it);
      }
      // A snapshot whose dataset was not listed (gone in between): last.
      for (const SnapshotInfo& s : r.snapshots)
        if (of.contains(std::string_view(s.name).substr(0, s.name.find('@'))))
          rows.push_back({nullptr, &s});
      break;
    }
  }
  return rows;
}

// The cell of `col` in `row`; a property's value (datasets only) as the
// daemon gave it, in `prop`.
Cell RowCell(const DatasetResult& r, const ListRow& row, const std::string& col,
             std::optional<InfoColumn> ic, const DatasetProperty** prop) {
  *prop = nullptr;
  if (row.snapshot != nullptr) return ic ? SnapshotCell(*ic, *row.snapshot) : Cell();
  if (ic) return DatasetCell(*ic, *row.dataset);
  *prop = FindProp(r, row.dataset->name, col);
  return *prop != nullptr ? Cell::Text((*prop)->value) : Cell();
}

std::string RenderList(const DatasetCommand& c, const DatasetResult& r) {
  const std::vector<std::string> cols = Columns(c);
  std::vector<std::optional<InfoColumn>> ics;
  for (const std::string& col : cols) ics.push_back(FindInfoColumn(col));
  const std::vector<ListRow> list = ListRows(c, r);
  if (c.json) {
    json out = json::array();
    for (const ListRow& lr : list) {
      json row = json::object();
      for (size_t i = 0; i < cols.size(); i++) {
        const DatasetProperty* prop;
        const Cell cell = RowCell(r, lr, cols[i], ics[i], &prop);
        json& v = row[JsonKey(cols[i], ics[i])];
        switch (cell.kind) {
          case Cell::kNone: v = nullptr; break;
          case Cell::kText: v = cell.text; break;
          case Cell::kBytes:
          case Cell::kCount: v = cell.n; break;
          case Cell::kTime: v = cell.time; break;
          case Cell::kRatio: v = cell.ratio; break;
        }
      }
      out.push_back(std::move(row));
    }
    return out.dump(2) + "\n";
  }
  std::vector<std::string> header;
  for (size_t i = 0; i < cols.size(); i++) header.push_back(Header(cols[i], ics[i]));
  std::vector<std::vector<std::string>> rows;
  for (const ListRow& lr : list) {
    std::vector<std::string> row;
    for (size_t i = 0; i < cols.size(); i++) {
      const DatasetProperty* prop;
      const Cell cell = RowCell(r, lr, cols[i], ics[i], &prop);
      switch (cell.kind) {
        case Cell::kNone: row.push_back("-"); break;
        case Cell::kText:
          row.push_back(prop != nullptr ? FormatValue(cols[i], cell.text, c.exact) : cell.text);
          break;
        case Cell::kBytes:
          row.push_back(c.exact ? std::to_string(cell.n) : HumanBytes(cell.n));
          break;
        case Cell::kCount: row.push_back(std::to_string(cell.n)); break;
        case Cell::kTime:
          row.push_back(c.exact ? std::to_string(cell.time) : FormatTime(cell.time));
          break;
        case Cell::kRatio: row.push_back(FormatRatio(cell.ratio)); break;
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

// A path as `diff` prints it: control characters and backslashes as a
// backslash and three octal digits, so that each change stays one line of
// tab-separated fields.
std::string EscapePath(std::string_view path) {
  std::string out;
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
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
    case DatasetCommand::Verb::kSnapshot: return "snapshot";
    case DatasetCommand::Verb::kRollback: return "rollback";
    case DatasetCommand::Verb::kClone: return "clone";
    case DatasetCommand::Verb::kPromote: return "promote";
    case DatasetCommand::Verb::kDiff: return "diff";
  }
  return "?";
}

std::string_view ListTypeName(DatasetCommand::ListType t) {
  switch (t) {
    case DatasetCommand::ListType::kFilesystem: return "filesystem";
    case DatasetCommand::ListType::kSnapshot: return "snapshot";
    case DatasetCommand::ListType::kAll: return "all";
  }
  return "?";
}

Result<DatasetCommand::ListType> ParseListType(std::string_view s) {
  bool fs = false, snap = false;
  for (std::string_view rest = s;;) {
    const size_t comma = rest.find(',');
    const std::string_view t = rest.substr(0, comma);
    if (t == "filesystem" || t == "fs")
      fs = true;
    else if (t == "snapshot" || t == "snap")
      snap = true;
    else if (t == "all")
      fs = snap = true;
    else
      return Status::InvalidArgument("-t '" + std::string(s) + "': '" + std::string(t) +
                                     "' is not a type (filesystem, snapshot or all)");
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (fs && snap) return DatasetCommand::ListType::kAll;
  return snap ? DatasetCommand::ListType::kSnapshot : DatasetCommand::ListType::kFilesystem;
}

Result<PropertyAssignment> ParsePropertyAssignment(std::string_view a) {
  const size_t eq = a.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return Status::InvalidArgument("'" + std::string(a) + "' is not PROP=VALUE");
  return PropertyAssignment{std::string(a.substr(0, eq)), std::string(a.substr(eq + 1))};
}

std::string PoolOf(std::string_view name) {
  return std::string(name.substr(0, name.find_first_of("/@")));
}

Status ValidateSnapshotName(std::string_view name, bool range) {
  const std::string quoted = "'" + std::string(name) + "'";
  const size_t at = name.find('@');
  if (at == std::string_view::npos)
    return Status::InvalidArgument(quoted + " is not a snapshot name (POOL/PATH@NAME): no '@'");
  if (Status st = ValidateDatasetPath(name.substr(0, at)); !st.ok())
    return st.WithContext("snapshot name " + quoted);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("snapshot name " + quoted + ": " + why);
  };
  // One name after '@', or with `range` FIRST%LAST (either may be empty:
  // the oldest, the newest; "%" alone: every snapshot of the dataset).
  std::string_view rest = name.substr(at + 1);
  const size_t pct = range ? rest.find('%') : std::string_view::npos;
  if (pct != std::string_view::npos && rest.find('%', pct + 1) == std::string_view::npos) {
    for (std::string_view part : {rest.substr(0, pct), rest.substr(pct + 1)}) {
      if (part.empty()) continue;
      if (Status st = ValidateSnapshotName(std::string(name.substr(0, at + 1)) + std::string(part));
          !st.ok())
        return bad(st.message());
    }
    return Status::Ok();
  }
  const std::string_view snap = rest;
  if (snap.empty()) return bad("nothing after '@'");
  if (snap.size() > 255)
    return bad("the name after '@' is " + std::to_string(snap.size()) + " bytes, more than 255");
  if (snap == "." || snap == "..") return bad("the name after '@' may not be '.' or '..'");
  for (char ch : snap) {
    if (ch == '@') return bad("more than one '@'");
    if (ch == '/') return bad("a '/' after '@'");
    if (ch == '%' || ch == '\0') return bad("the name after '@' holds a '%' or a NUL");
  }
  return Status::Ok();
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
    case DatasetCommand::Verb::kCreate: POOLFS_RETURN_IF_ERROR(count(1, 1, "one POOL/PATH")); break;
    case DatasetCommand::Verb::kDestroy:
      POOLFS_RETURN_IF_ERROR(count(1, 1, "one POOL/PATH or POOL/PATH@SNAPSHOT"));
      break;
    case DatasetCommand::Verb::kSnapshot:
      POOLFS_RETURN_IF_ERROR(count(1, SIZE_MAX, "one or more POOL/PATH@NAME"));
      break;
    case DatasetCommand::Verb::kRollback:
      POOLFS_RETURN_IF_ERROR(count(1, 1, "one POOL/PATH@NAME"));
      break;
    case DatasetCommand::Verb::kClone:
      POOLFS_RETURN_IF_ERROR(count(2, 2, "a snapshot POOL/PATH@NAME and a new POOL/PATH"));
      POOLFS_RETURN_IF_ERROR(ValidateSnapshotName(c.names[0]));
      POOLFS_RETURN_IF_ERROR(ValidateDatasetPath(c.names[1]));
      if (PoolOf(c.names[0]) != PoolOf(c.names[1]))
        return Status::InvalidArgument("cannot clone " + c.names[0] + " to " + c.names[1] +
                                       ": a clone is made in the pool of its snapshot");
      break;
    case DatasetCommand::Verb::kPromote:
      POOLFS_RETURN_IF_ERROR(count(1, 1, "one POOL/PATH, a clone"));
      break;
    case DatasetCommand::Verb::kRename:
      POOLFS_RETURN_IF_ERROR(count(2, 2, "two names, POOL/FROM POOL/TO"));
      break;
    case DatasetCommand::Verb::kDiff:
      POOLFS_RETURN_IF_ERROR(
          count(1, 2, "a snapshot POOL/PATH@A and a later POOL/PATH@B or the dataset POOL/PATH"));
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
  if (c.type != DatasetCommand::ListType::kFilesystem && c.verb != DatasetCommand::Verb::kList)
    return Status::InvalidArgument("dataset " + verb + " takes no -t");
  for (const std::string& n : c.names) {
    if (c.verb == DatasetCommand::Verb::kClone) break;  // checked above
    // Destroy, rename and get also take snapshots ("@B" as rename's new
    // name: the same dataset's); destroy a range of them too.
    const bool snapshot =
        c.verb == DatasetCommand::Verb::kSnapshot || c.verb == DatasetCommand::Verb::kRollback ||
        (c.verb == DatasetCommand::Verb::kDiff && &n == &c.names[0]) ||
        ((c.verb == DatasetCommand::Verb::kDestroy || c.verb == DatasetCommand::Verb::kRename ||
          c.verb == DatasetCommand::Verb::kGet || c.verb == DatasetCommand::Verb::kDiff) &&
         n.find('@') != std::string::npos);
    const std::string full = c.verb == DatasetCommand::Verb::kRename && n.starts_with("@")
                                 ? c.names[0].substr(0, c.names[0].find('@')) + n
                                 : n;
    Status st = snapshot ? ValidateSnapshotName(full, c.verb == DatasetCommand::Verb::kDestroy)
                         : ValidateDatasetPath(n);
    if (!st.ok()) return st;
  }
  if (c.verb == DatasetCommand::Verb::kRename && c.names.size() == 2 &&
      (c.names[0].find('@') == std::string::npos) != (c.names[1].find('@') == std::string::npos))
    return Status::InvalidArgument("cannot rename " + c.names[0] + " to " + c.names[1] +
                                   ": a snapshot is renamed to a snapshot name of its dataset, "
                                   "a dataset to a dataset name");
  // A diff compares two states of one dataset, or of a dataset and a
  // clone of it (the pool checks that): of one pool either way.
  if (c.verb == DatasetCommand::Verb::kDiff && c.names.size() == 2 &&
      PoolOf(c.names[0]) != PoolOf(c.names[1]))
    return Status::InvalidArgument("cannot diff " + c.names[0] + " and " + c.names[1] +
                                   ": they are of different pools");
  // The snapshots of one command are taken in one txg of one pool: there
  // is no such txg across pools.
  if (c.verb == DatasetCommand::Verb::kSnapshot) {
    for (const std::string& n : c.names)
      if (PoolOf(n) != PoolOf(c.names[0]))
        return Status::InvalidArgument("snapshots of one command must be of one pool: " +
                                       c.names[0] + " and " + n + " are not");
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
    case DatasetCommand::Verb::kSnapshot:
      POOLFS_RETURN_IF_ERROR(admin.Snapshot(c.names, c.recursive));
      return r;
    case DatasetCommand::Verb::kRollback:
      POOLFS_RETURN_IF_ERROR(admin.Rollback(c.names[0], c.recursive));
      return r;
    case DatasetCommand::Verb::kClone:
      POOLFS_RETURN_IF_ERROR(admin.Clone(c.names[0], c.names[1], c.props));
      return r;
    case DatasetCommand::Verb::kPromote:
      POOLFS_RETURN_IF_ERROR(admin.Promote(c.names[0]));
      return r;
    case DatasetCommand::Verb::kDiff: {
      const std::string to =
          c.names.size() == 2 ? c.names[1] : c.names[0].substr(0, c.names[0].find('@'));
      POOLFS_ASSIGN_OR_RETURN(r.diffs, admin.Diff(c.names[0], to));
      return r;
    }
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
      const bool datasets = c.type != DatasetCommand::ListType::kSnapshot;
      const bool snapshots = c.type != DatasetCommand::ListType::kFilesystem;
      for (const std::string& root : roots) {
        // Without -r a named dataset lists alone (with -t snapshot, its
        // own snapshots); no name lists the pool.
        const bool recursive = c.recursive || root.empty();
        if (datasets) {
          POOLFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> infos, admin.List(root, recursive));
          for (DatasetInfo& d : infos) r.datasets.push_back(std::move(d));
        }
        if (snapshots) {
          POOLFS_ASSIGN_OR_RETURN(std::vector<SnapshotInfo> snaps,
                                  admin.ListSnapshots(root, recursive));
          for (SnapshotInfo& s : snaps) r.snapshots.push_back(std::move(s));
        }
      }
      // Property columns are the datasets' (a snapshot shows "-").
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
              {"type", std::string(ListTypeName(c.type))},
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
  if (!JsonField(j, "verb", &verb)) return Status::InvalidArgument("dataset request: no verb");
  bool known = false;
  for (DatasetCommand::Verb v : kVerbs) {
    if (VerbName(v) == verb) {
      c.verb = v;
      known = true;
    }
  }
  if (!known) return Status::InvalidArgument("dataset request: unknown verb '" + verb + "'");
  std::vector<std::vector<std::string>> props;
  if (!JsonField(j, "names", &c.names) || !JsonField(j, "parents", &c.parents) ||
      !JsonField(j, "recursive", &c.recursive) || !JsonField(j, "props", &props) ||
      !JsonField(j, "columns", &c.columns) || !JsonField(j, "scripted", &c.scripted) ||
      !JsonField(j, "exact", &c.exact) || !JsonField(j, "json", &c.json))
    return Status::InvalidArgument("dataset request: a field is missing or of the wrong type");
  for (const auto& p : props) {
    if (p.size() != 2) return Status::InvalidArgument("dataset request: a bad property pair");
    c.props.push_back({p[0], p[1]});
  }
  // "type" is optional: a client from before snapshots lists datasets.
  if (j.contains("type")) {
    std::string type;
    if (!JsonField(j, "type", &type)) return Status::InvalidArgument("dataset request: a bad type");
    bool found = false;
    for (DatasetCommand::ListType t : kListTypes) {
      if (ListTypeName(t) == type) {
        c.type = t;
        found = true;
      }
    }
    if (!found) return Status::InvalidArgument("dataset request: unknown type '" + type + "'");
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
  if (!JsonField(j, "dataset", &r.dataset) || !JsonField(j, "mountpoint", &r.mountpoint) ||
      !JsonField(j, "read_only", &r.read_only) || !JsonField(j, "fuse_options", &r.fuse_options) ||
      !JsonField(j, "entry_timeout", &r.entry_timeout) ||
      !JsonField(j, "attr_timeout", &r.attr_timeout) ||
      !JsonField(j, "negative_timeout", &r.negative_timeout))
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
  if (j.is_discarded() || !j.is_object() || !JsonField(j, "code", &code) || code < 0 ||
      code > int(kLastStatusCode))
    return Status::Corruption("reply from the daemon: not a status: " + std::string(text));
  std::string message;
  JsonField(j, "message", &message);
  return code == 0 ? Status::Ok() : Status(static_cast<StatusCode>(code), message);
}

std::string EncodeDatasetResult(const Result<DatasetResult>& r) {
  if (!r.ok())
    return json{{"code", int(r.status().code())}, {"message", r.status().message()}}.dump();
  json datasets = json::array();
  for (const DatasetInfo& d : r->datasets) datasets.push_back(InfoJson(d));
  json snapshots = json::array();
  for (const SnapshotInfo& s : r->snapshots) snapshots.push_back(SnapshotJson(s));
  json properties = json::array();
  for (const DatasetProperties& dp : r->properties) {
    json props = json::array();
    for (const DatasetProperty& p : dp.props) props.push_back(PropJson(p));
    properties.push_back(json{{"dataset", dp.dataset}, {"props", props}});
  }
  json diffs = json::array();
  for (const DiffEntry& d : r->diffs)
    diffs.push_back(
        json{{"type", std::string(1, char(d.type))}, {"path", d.path}, {"new_path", d.new_path}});
  return json{{"code", 0},
              {"datasets", datasets},
              {"snapshots", snapshots},
              {"properties", properties},
              {"diffs", diffs}}
      .dump();
}

Result<DatasetResult> DecodeDatasetResult(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::Corruption("dataset reply from the daemon: not a JSON object");
  int code = -1;
  if (!JsonField(j, "code", &code) || code < 0 || code > int(kLastStatusCode))
    return Status::Corruption("dataset reply from the daemon: no valid code");
  if (code != 0) {
    std::string message;
    JsonField(j, "message", &message);
    return Status(static_cast<StatusCode>(code), message);
  }
  DatasetResult r;
  auto bad = [] { return Status::Corruption("dataset reply from the daemon: a malformed entry"); };
  if (!j.contains("datasets") || !j["datasets"].is_array() || !j.contains("properties") ||
      !j["properties"].is_array())
    return bad();
  for (const json& d : j["datasets"]) {
    DatasetInfo info;
    if (!d.is_object() || !JsonField(d, "name", &info.name) || !JsonField(d, "id", &info.id) ||
        !JsonField(d, "creation_txg", &info.creation_txg) ||
        !JsonField(d, "creation", &info.creation_time) || !JsonField(d, "used", &info.used) ||
        !JsonField(d, "referenced", &info.referenced) ||
        !JsonField(d, "available", &info.available) || !JsonField(d, "objects", &info.objects) ||
        !JsonField(d, "compressratio", &info.compressratio) ||
        !JsonField(d, "mountpoint", &info.mountpoint))
      return bad();
    // Optional, as "snapshots" below: a daemon from before snapshots has
    // neither.
    if (d.contains("usedbysnapshots") && !JsonField(d, "usedbysnapshots", &info.usedbysnapshots))
      return bad();
    // Optional too (a daemon from before clones): its own bytes were its
    // referenced ones.
    info.usedbydataset = info.referenced;
    if ((d.contains("usedbydataset") && !JsonField(d, "usedbydataset", &info.usedbydataset)) ||
        (d.contains("origin") && !JsonField(d, "origin", &info.origin)))
      return bad();
    r.datasets.push_back(std::move(info));
  }
  if (j.contains("snapshots")) {
    if (!j["snapshots"].is_array()) return bad();
    for (const json& s : j["snapshots"]) {
      SnapshotInfo info;
      if (!s.is_object() || !JsonField(s, "name", &info.name) || !JsonField(s, "id", &info.id) ||
          !JsonField(s, "txg", &info.txg) || !JsonField(s, "creation", &info.creation_time) ||
          !JsonField(s, "used", &info.used) || !JsonField(s, "referenced", &info.referenced) ||
          !JsonField(s, "written", &info.written))
        return bad();
      // Optional: a daemon from before snapshot guids sends none.
      if (s.contains("guid") && !JsonField(s, "guid", &info.guid)) return bad();
      r.snapshots.push_back(std::move(info));
    }
  }
  // Optional: a daemon from before diff sends none.
  if (j.contains("diffs")) {
    if (!j["diffs"].is_array()) return bad();
    for (const json& d : j["diffs"]) {
      DiffEntry e;
      std::string type;
      if (!d.is_object() || !JsonField(d, "type", &type) || !JsonField(d, "path", &e.path) ||
          !JsonField(d, "new_path", &e.new_path) || type.size() != 1 ||
          std::string_view("M+-R").find(type[0]) == std::string_view::npos)
        return bad();
      e.type = static_cast<DiffEntry::Type>(type[0]);
      r.diffs.push_back(std::move(e));
    }
  }
  for (const json& dp : j["properties"]) {
    DatasetProperties out;
    if (!dp.is_object() || !JsonField(dp, "dataset", &out.dataset) || !dp.contains("props") ||
        !dp["props"].is_array())
      return bad();
    for (const json& p : dp["props"]) {
      DatasetProperty prop;
      if (!p.is_object() || !JsonField(p, "property", &prop.name) ||
          !JsonField(p, "value", &prop.value) || !JsonField(p, "source", &prop.source))
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
    case DatasetCommand::Verb::kDiff: {
      std::string out;
      for (const DiffEntry& d : r.diffs) {
        out += std::string(1, char(d.type)) + "\t" + EscapePath(d.path);
        if (d.type == DiffEntry::Type::kRenamed) out += " -> " + EscapePath(d.new_path);
        out += "\n";
      }
      return out;
    }
    default: return "";
  }
}

}  // namespace poolfs::daemon
