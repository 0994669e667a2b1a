// `poolfs dataset create|destroy|rename|list|get|set|inherit`: the datasets
// of a pool (poolfs/dataset.h says what they are and which properties they
// have), and their snapshots (`destroy POOL/PATH@NAME`, `list -t`; `poolfs
// snapshot` takes them, cmd_snapshot.cc, through RunDatasetCommand).
//
// A command reaches the daemon that serves the pool named by the dataset's
// first component for this user (pool_registry.h: no mount point to type),
// through its control socket; with `--pool FILE...` it opens the pool's
// files itself (an exported pool: OfflinePool) and exports them again when
// done. `list` without a name lists every pool this user has mounted. The
// daemon runs the change and returns data; this command prints it
// (dataset_request.h), so one table can hold the datasets of several pools.
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "control.h"
#include "dataset_request.h"
#include "pool_registry.h"
#include "poolfs/dataset.h"

namespace poolfs::daemon {
namespace {

struct DatasetArgs {
  DatasetCommand cmd;
  std::vector<std::string> pool_files;  // --pool
  std::vector<std::string> options;     // -o PROP=VALUE (create) or COLUMNS (list)
  std::string props;                    // get: PROP[,PROP] | all; set: PROP=VALUE; inherit: PROP
  std::string type;                     // list -t
};

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t from = 0;
  for (;;) {
    const size_t comma = s.find(',', from);
    out.push_back(s.substr(from, comma - from));
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

// Fills cmd from the positional and -o arguments of each verb.
Status Complete(DatasetArgs& a) {
  DatasetCommand& c = a.cmd;
  switch (c.verb) {
    case DatasetCommand::Verb::kCreate:
      for (const std::string& o : a.options) {
        POOLFS_ASSIGN_OR_RETURN(PropertyAssignment p, ParsePropertyAssignment(o));
        c.props.push_back(std::move(p));
      }
      break;
    case DatasetCommand::Verb::kList:
      for (const std::string& o : a.options)
        for (std::string& col : SplitCommas(o)) c.columns.push_back(std::move(col));
      if (!a.type.empty()) {
        POOLFS_ASSIGN_OR_RETURN(c.type, ParseListType(a.type));
      }
      break;
    case DatasetCommand::Verb::kGet: c.columns = SplitCommas(a.props); break;
    case DatasetCommand::Verb::kSet: {
      POOLFS_ASSIGN_OR_RETURN(PropertyAssignment p, ParsePropertyAssignment(a.props));
      c.props.push_back(std::move(p));
      break;
    }
    case DatasetCommand::Verb::kInherit: c.props.push_back({a.props, ""}); break;
    default: break;
  }
  // `rename POOL/PATH@A @B`: B of the same dataset.
  if (c.verb == DatasetCommand::Verb::kRename && c.names.size() == 2 &&
      c.names[1].starts_with("@") && c.names[0].find('@') != std::string::npos)
    c.names[1] = c.names[0].substr(0, c.names[0].find('@')) + c.names[1];
  if (c.verb == DatasetCommand::Verb::kRename && c.names.size() == 2 &&
      PoolOf(c.names[0]) != PoolOf(c.names[1]))
    return Status::InvalidArgument("cannot rename " + c.names[0] + " to " + c.names[1] +
                                   ": a dataset stays in its pool");
  return Status::Ok();
}

// Runs the command on the pool in `files`, opened here.
Result<DatasetResult> RunOffline(const DatasetCommand& c, const std::vector<std::string>& files) {
  POOLFS_ASSIGN_OR_RETURN(std::unique_ptr<OfflinePool> pool, OfflinePool::Open(files));
  for (const std::string& n : c.names) {
    if (PoolOf(n) != pool->name()) {
      (void)pool->Close();
      return Status::InvalidArgument("the pool in " + files[0] + " is '" + pool->name() +
                                     "', not '" + PoolOf(n) + "' (" + n + ")");
    }
  }
  Result<DatasetResult> r = ExecuteDatasetCommand(pool->datasets(), c);
  Status closed = pool->Close();
  if (r.ok() && !closed.ok()) return closed;
  return r;
}

// Sends `c` to the daemon serving `pool`.
Result<DatasetResult> RunOnDaemon(const std::string& pool, const DatasetCommand& c) {
  POOLFS_ASSIGN_OR_RETURN(std::optional<RegisteredPool> reg, FindRegisteredPool(pool));
  if (!reg.has_value())
    return Status::NotFound(
        "no mounted pool named '" + pool + "' (" +
        (c.names.empty() || c.names[0] == pool ? "" : "for " + c.names[0] + "; ") +
        "mount it with poolfs mount, or name its files with --pool)");
  POOLFS_ASSIGN_OR_RETURN(std::string reply,
                          ControlCall(reg->mountpoint, "dataset " + EncodeDatasetCommand(c)));
  if (reply.starts_with("error: "))
    return Status::IOError("the daemon of " + reg->mountpoint + ": " + reply.substr(7));
  return DecodeDatasetResult(reply);
}

Result<DatasetResult> Run(const DatasetCommand& c, const std::vector<std::string>& pool_files) {
  if (!pool_files.empty()) return RunOffline(c, pool_files);
  // The pools the command names, in order; `list` of nothing: every one.
  std::vector<std::string> pools;
  std::map<std::string, std::vector<std::string>> names_of;
  for (const std::string& n : c.names) {
    const std::string p = PoolOf(n);
    if (!names_of.contains(p)) pools.push_back(p);
    names_of[p].push_back(n);
  }
  if (c.verb == DatasetCommand::Verb::kList && pools.empty()) {
    POOLFS_ASSIGN_OR_RETURN(std::vector<RegisteredPool> regs, ListRegisteredPools());
    if (regs.empty())
      return Status::NotFound("no mounted pools (give POOL, or a pool's files with --pool)");
    for (const RegisteredPool& r : regs) {
      pools.push_back(r.name);
      names_of[r.name] = {r.name};
    }
  }
  DatasetResult all;
  for (const std::string& p : pools) {
    DatasetCommand part = c;
    part.names = names_of[p];
    if (c.verb == DatasetCommand::Verb::kList && c.names.empty()) part.recursive = true;
    POOLFS_ASSIGN_OR_RETURN(DatasetResult r, RunOnDaemon(p, part));
    for (DatasetInfo& d : r.datasets) all.datasets.push_back(std::move(d));
    for (SnapshotInfo& s : r.snapshots) all.snapshots.push_back(std::move(s));
    for (DatasetProperties& dp : r.properties) all.properties.push_back(std::move(dp));
    for (DiffEntry& d : r.diffs) all.diffs.push_back(std::move(d));
  }
  return all;
}

int RunDataset(DatasetArgs& a) {
  const std::string what = "dataset " + std::string(VerbName(a.cmd.verb));
  Status st = Complete(a);
  if (!st.ok()) return ReportError(what, st);
  return RunDatasetCommand(what, a.cmd, a.pool_files);
}

}  // namespace

int RunDatasetCommand(std::string_view what, const DatasetCommand& cmd,
                      const std::vector<std::string>& pool_files) {
  Status st = ValidateDatasetCommand(cmd);
  if (!st.ok()) return ReportError(what, st);
  Result<DatasetResult> r = Run(cmd, pool_files);
  if (!r.ok()) return ReportError(what, r.status());
  std::cout << RenderDatasetResult(cmd, *r);
  return kExitOk;
}

void AddDatasetPoolOption(CLI::App* app, std::vector<std::string>& pool_files) {
  app->add_option("--pool", pool_files,
                  "the vdev files of an exported pool, opened by this command (no daemon); "
                  "repeat it or separate them with commas for a pool of several")
      ->expected(1)
      ->allow_extra_args(false)
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

Command AddDatasetCommand(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "dataset", "Create, destroy, rename, list and tune the datasets of a pool (POOL/PATH)");
  app->require_subcommand(1);
  struct Verb {
    CLI::App* app;
    std::shared_ptr<DatasetArgs> args;
  };
  auto verbs = std::make_shared<std::vector<Verb>>();
  auto add = [&](DatasetCommand::Verb v, const char* help) {
    auto args = std::make_shared<DatasetArgs>();
    args->cmd.verb = v;
    CLI::App* sub = app->add_subcommand(std::string(VerbName(v)), help);
    AddDatasetPoolOption(sub, args->pool_files);
    verbs->push_back({sub, args});
    return std::pair(sub, args.get());
  };
  {
    auto [sub, a] = add(DatasetCommand::Verb::kCreate,
                        "Create a dataset; it appears as a folder of its parent in the mount");
    sub->add_flag("-p", a->cmd.parents, "create missing parents too; an existing dataset is fine");
    sub->add_option("-o", a->options, "set a property, PROP=VALUE (repeatable)")
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    sub->add_option("POOL/PATH", a->cmd.names, "the new dataset")->required()->expected(1);
  }
  {
    auto [sub, a] = add(DatasetCommand::Verb::kDestroy,
                        "Destroy a dataset or a snapshot and free the blocks only it held");
    sub->add_flag("-r", a->cmd.recursive,
                  "destroy its descendants too (a snapshot: that snapshot of every descendant)");
    sub->add_option("POOL/PATH[@NAME]", a->cmd.names, "the dataset or snapshot")
        ->required()
        ->expected(1);
  }
  {
    auto [sub, a] = add(DatasetCommand::Verb::kRename,
                        "Rename or move a dataset within its pool (its descendants follow)");
    sub->add_option("NAMES", a->cmd.names, "POOL/FROM POOL/TO")->required()->expected(2);
  }
  {
    auto [sub, a] = add(DatasetCommand::Verb::kList,
                        "List datasets or snapshots with their space (like zfs list)");
    sub->add_flag("-r", a->cmd.recursive, "with their descendants");
    sub->add_option("-t", a->type,
                    "what to list: filesystem (the default), snapshot, or all (each dataset "
                    "followed by its snapshots)")
        ->expected(1);
    sub->add_flag("-H", a->cmd.scripted, "no header, columns separated by tabs");
    sub->add_flag("-p", a->cmd.exact, "exact numbers (bytes, seconds)");
    sub->add_flag("-j,--json", a->cmd.json, "print JSON");
    sub->add_option("-o", a->options,
                    std::string("the columns, comma-separated (default ") + kDefaultListColumns +
                        ", with -t snapshot " + kDefaultSnapshotColumns +
                        "; also objects, creation, compressratio, type, written, usedsnap, "
                        "usedds, guid (snapshots), any property, and space for " +
                        kSpaceListColumns + ")")
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    sub->add_option("POOL[/PATH]", a->cmd.names,
                    "what to list (default: every pool this user has mounted)");
  }
  {
    auto [sub, a] = add(DatasetCommand::Verb::kGet,
                        "Show properties with their source (local, inherited, default)");
    sub->add_flag("-H", a->cmd.scripted, "no header, columns separated by tabs");
    sub->add_flag("-p", a->cmd.exact, "exact numbers");
    sub->add_flag("-j,--json", a->cmd.json, "print JSON");
    sub->add_option("PROPS", a->props, "PROP[,PROP...] or all")->required();
    sub->add_option("POOL/PATH", a->cmd.names, "the datasets")->required();
  }
  {
    auto [sub, a] = add(DatasetCommand::Verb::kSet,
                        "Set a property on a dataset (it applies at once and persists)");
    sub->add_option("PROP=VALUE", a->props, "e.g. compression=zstd, quota=10G")->required();
    sub->add_option("POOL/PATH", a->cmd.names, "the dataset")->required()->expected(1);
  }
  {
    auto [sub, a] = add(DatasetCommand::Verb::kInherit,
                        "Remove a local setting: the property inherits from the parent again");
    sub->add_option("PROP", a->props, "the property")->required();
    sub->add_option("POOL/PATH", a->cmd.names, "the dataset")->required()->expected(1);
  }
  return {app, [verbs] {
            for (Verb& v : *verbs)
              if (v.app->parsed()) return RunDataset(*v.args);
            return kExitUsage;
          }};
}

}  // namespace poolfs::daemon
