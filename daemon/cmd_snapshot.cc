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

namespace {

// A subcommand `name` of one DatasetCommand verb over snapshot names, -r
// meaning `recursive`, sent as `poolfs dataset ...` is.
Command AddSnapshotVerb(CLI::App& parent, DatasetCommand::Verb verb, const std::string& name,
                        const std::string& help, const std::string& r_help,
                        const std::string& names_help, bool one) {
  struct Args {
    DatasetCommand cmd;
    std::vector<std::string> pool_files;
  };
  auto a = std::make_shared<Args>();
  a->cmd.verb = verb;
  CLI::App* app = parent.add_subcommand(name, help);
  app->add_flag("-r", a->cmd.recursive, r_help);
  AddDatasetPoolOption(app, a->pool_files);
  CLI::Option* names = app->add_option("POOL/PATH@NAME", a->cmd.names, names_help)->required();
  if (one) names->expected(1);
  return {app, [a, name] { return RunDatasetCommand(name, a->cmd, a->pool_files); }};
}

}  // namespace

Command AddSnapshotCommand(CLI::App& parent) {
  return AddSnapshotVerb(
      parent, DatasetCommand::Verb::kSnapshot, "snapshot",
      "Take read-only snapshots of datasets, all at one point in time (POOL/PATH@NAME...)",
      "every descendant of each dataset gets a snapshot of the same name",
      "the snapshots to take, all of one pool", false);
}

Command AddRollbackCommand(CLI::App& parent) {
  return AddSnapshotVerb(
      parent, DatasetCommand::Verb::kRollback, "rollback",
      "Roll a dataset back to its newest snapshot, discarding every change since",
      "roll back to an older snapshot, destroying the snapshots after it",
      "the snapshot to roll back to", true);
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
  struct Args {
    DatasetCommand cmd;
    std::vector<std::string> pool_files;
  };
  auto a = std::make_shared<Args>();
  a->cmd.verb = DatasetCommand::Verb::kPromote;
  CLI::App* app = parent.add_subcommand(
      "promote",
      "Make a clone the owner of its origin snapshot and the ones before it, so that the "
      "dataset it was cloned from can be destroyed");
  AddDatasetPoolOption(app, a->pool_files);
  app->add_option("POOL/PATH", a->cmd.names, "the clone")->required()->expected(1);
  return {app, [a] { return RunDatasetCommand("promote", a->cmd, a->pool_files); }};
}

}  // namespace poolfs::daemon
