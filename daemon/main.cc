// poolfs: the command-line entry point. Each subcommand lives in its own
// cmd_<name>.cc (see command.h); this file only parses and dispatches.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <vector>

#include "command.h"

int main(int argc, char** argv) {
  using namespace poolfs::daemon;
  CLI::App app{"poolfs: a userspace copy-on-write transactional storage pool", "poolfs"};
  app.require_subcommand(1);
  const std::vector<Command> commands = {
      AddCreateCommand(app),
      AddCheckCommand(app),
      AddMountCommand(app),
      AddUnmountCommand(app),
      AddStatusCommand(app),
      AddIostatCommand(app),
      AddScrubCommand(app),
      AddTuneCommand(app),
      AddTunablesCommand(app),
      AddDatasetCommand(app),
      AddSnapshotCommand(app),
      AddRollbackCommand(app),
      AddCloneCommand(app),
      AddPromoteCommand(app),
      AddDiffCommand(app),
      AddSendCommand(app),
      AddReceiveCommand(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and returns 0; any other parse error is a usage error.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  for (const Command& c : commands)
    if (c.app->parsed()) return c.run();
  return kExitUsage;
}
