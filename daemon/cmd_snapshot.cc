// `poolfs snapshot [-r] POOL/PATH@NAME...`: takes read-only, point-in-time
// snapshots of datasets (poolfs/dataset.h, DatasetAdmin::Snapshot), all in
// one txg of one pool, so that they agree with each other. `poolfs rollback
// [-r] POOL/PATH@NAME` rolls a dataset back to one (DatasetAdmin::Rollback).
// Each is a DatasetCommand of its verb, sent as `poolfs dataset ...` is
// (cmd_dataset.cc): to the daemon serving the pool, or run here on the
// pool's files with --pool. `poolfs dataset list -t snapshot` lists
// snapshots, `poolfs dataset destroy POOL/PATH@NAME` destroys one.
//
// `poolfs clone [-o PROP=VALUE]... POOL/PATH@NAME POOL/NEW` makes a
// writable dataset from a snapshot (DatasetAdmin::Clone), and `poolfs
// promote POOL/NEW` makes a clone the owner of its origin
// (DatasetAdmin::Promote).
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "dataset_request.h"

namespace poolfs::daemon {

Command AddNamesVerb(CLI::App& parent, const NamesVerb& v) {
  struct Args {
    DatasetCommand cmd;
    std::vector<std::string> pool_files;
  };
  auto a = std::make_shared<Args>();
  a->cmd.verb = v.verb;
  CLI::App* app = parent.add_subcommand(v.name, v.help);
  if (!v.r_help.empty()) app->add_flag("-r", a->cmd.recursive, v.r_help);
  AddDatasetPoolOption(app, a->pool_files);
  app->add_option(v.positional, a->cmd.names, v.names_help)->required()->expected(1, v.most);
  return {app, [a, name = v.name] { return RunDatasetCommand(name, a->cmd, a->pool_files); }};
}

Command AddSnapshotCommand(CLI::App& parent) {
  return AddNamesVerb(
      parent,
      {DatasetCommand::Verb::kSnapshot, "snapshot",
       "Take read-only snapshots of datasets, all at one point in time (POOL/PATH@NAME...)",
       "every descendant of each dataset gets a snapshot of the same name", "POOL/PATH@NAME",
       "the snapshots to take, all of one pool", -1});
}

Command AddRollbackCommand(CLI::App& parent) {
  return AddNamesVerb(
      parent, {DatasetCommand::Verb::kRollback, "rollback",
               "Roll a dataset back to its newest snapshot, discarding every change since",
               "roll back to an older snapshot, destroying the snapshots after it",
               "POOL/PATH@NAME", "the snapshot to roll back to", 1});
}

Command AddCloneCommand(CLI::App& parent) {
  struct Args {
    DatasetCommand cmd;
    std::vector<std::string> pool_files;
    std::vector<std::string> options;
    std::string origin, name;
  };
  auto a = std::make_shared<Args>();
  a->cmd.verb = DatasetCommand::Verb::kClone;
  CLI::App* app = parent.add_subcommand(
      "clone", "Make a writable dataset from a snapshot; it shares every block with it");
  app->add_option("-o", a->options, "set a property of the clone, PROP=VALUE (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  AddDatasetPoolOption(app, a->pool_files);
  app->add_option("POOL/PATH@NAME", a->origin, "the snapshot")->required();
  app->add_option("POOL/NEW", a->name, "the new dataset (its parent exists)")->required();
  return {app, [a] {
            a->cmd.names = {a->origin, a->name};
            for (const std::string& o : a->options) {
              Result<PropertyAssignment> p = ParsePropertyAssignment(o);
              if (!p.ok()) return ReportError("clone", p.status());
              a->cmd.props.push_back(*p);
            }
            return RunDatasetCommand("clone", a->cmd, a->pool_files);
          }};
}

Command AddPromoteCommand(CLI::App& parent) {
  return AddNamesVerb(parent, {DatasetCommand::Verb::kPromote, "promote",
                               "Make a clone the owner of its origin snapshot and the ones "
                               "before it, so that the dataset it was cloned from can be destroyed",
                               "", "POOL/PATH", "the clone", 1});
}

}  // namespace poolfs::daemon
