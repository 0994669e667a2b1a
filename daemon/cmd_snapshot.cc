// `poolfs snapshot [-r] POOL/PATH@NAME...`: takes read-only, point-in-time
// snapshots of datasets (poolfs/dataset.h, DatasetAdmin::Snapshot), all in
// one txg of one pool, so that they agree with each other. `poolfs rollback
// [-r] POOL/PATH@NAME` rolls a dataset back to one (DatasetAdmin::Rollback).
// Each is a DatasetCommand of its verb, sent as `poolfs dataset ...` is
// (cmd_dataset.cc): to the daemon serving the pool, or run here on the
// pool's files with --pool. `poolfs dataset list -t snapshot` lists
// snapshots, `poolfs dataset destroy POOL/PATH@NAME` destroys one.
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "dataset_request.h"

namespace poolfs::daemon {

Command AddSnapshotCommand(CLI::App& parent) {
  struct Args {
    DatasetCommand cmd;
    std::vector<std::string> pool_files;
  };
  auto a = std::make_shared<Args>();
  a->cmd.verb = DatasetCommand::Verb::kSnapshot;
  CLI::App* app = parent.add_subcommand(
      "snapshot",
      "Take read-only snapshots of datasets, all at one point in time (POOL/PATH@NAME...)");
  app->add_flag("-r", a->cmd.recursive,
                "every descendant of each dataset gets a snapshot of the same name");
  AddDatasetPoolOption(app, a->pool_files);
  app->add_option("POOL/PATH@NAME", a->cmd.names, "the snapshots to take, all of one pool")
      ->required();
  return {app, [a] { return RunDatasetCommand("snapshot", a->cmd, a->pool_files); }};
}

Command AddRollbackCommand(CLI::App& parent) {
  struct Args {
    DatasetCommand cmd;
    std::vector<std::string> pool_files;
  };
  auto a = std::make_shared<Args>();
  a->cmd.verb = DatasetCommand::Verb::kRollback;
  CLI::App* app = parent.add_subcommand(
      "rollback", "Roll a dataset back to its newest snapshot, discarding every change since");
  app->add_flag("-r", a->cmd.recursive,
                "roll back to an older snapshot, destroying the snapshots after it");
  AddDatasetPoolOption(app, a->pool_files);
  app->add_option("POOL/PATH@NAME", a->cmd.names, "the snapshot to roll back to")
      ->required()
      ->expected(1);
  return {app, [a] { return RunDatasetCommand("rollback", a->cmd, a->pool_files); }};
}

}  // namespace poolfs::daemon
