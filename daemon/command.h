// The `poolfs` program's subcommands: each file cmd_<name>.cc defines
// Add<Name>Command, which declares its arguments on the CLI11 app and returns
// what runs it; main() lists them (one line per subcommand).
//
// Exit codes, for every subcommand:
//   0  success (for `check`: the pool is healthy)
//   1  the operation failed (for `check`: the pool is damaged, or is not a
//      pool at all)
//   2  usage: bad arguments, a file that does not exist, a pool in use
//
// Thread safety: main's thread only.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dataset_request.h"
#include "poolfs/status.h"

namespace poolfs::daemon {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct Command {
  CLI::App* app = nullptr;   // the subcommand
  std::function<int()> run;  // runs it once the command line parsed; the exit code
};

Command AddCreateCommand(CLI::App& parent);
Command AddCheckCommand(CLI::App& parent);
Command AddMountCommand(CLI::App& parent);
Command AddUnmountCommand(CLI::App& parent);
Command AddTunablesCommand(CLI::App& parent);
Command AddTuneCommand(CLI::App& parent);
Command AddStatusCommand(CLI::App& parent);
Command AddDatasetCommand(CLI::App& parent);
Command AddIostatCommand(CLI::App& parent);
Command AddScrubCommand(CLI::App& parent);
Command AddSnapshotCommand(CLI::App& parent);
Command AddRollbackCommand(CLI::App& parent);
Command AddCloneCommand(CLI::App& parent);
Command AddPromoteCommand(CLI::App& parent);
Command AddDiffCommand(CLI::App& parent);
Command AddSendCommand(CLI::App& parent);     // cmd_send.cc
Command AddReceiveCommand(CLI::App& parent);  // cmd_send.cc

// Runs a dataset command (cmd_dataset.cc) and prints what it returns: on
// the daemon serving its pool, or on the pool in `pool_files` opened here
// (--pool). Errors are reported as "poolfs <what>: ..."; the exit code.
int RunDatasetCommand(std::string_view what, const DatasetCommand& cmd,
                      const std::vector<std::string>& pool_files);
// The --pool option of the commands that run a DatasetCommand.
void AddDatasetPoolOption(CLI::App* app, std::vector<std::string>& pool_files);
// A subcommand that runs one DatasetCommand verb over the names given as
// its positional argument (1 to `most` of them; -1: any number), with -r
// meaning `recursive` when `r_help` is not empty, and --pool: sent as
// `poolfs dataset ...` is (cmd_snapshot.cc).
struct NamesVerb {
  DatasetCommand::Verb verb;
  std::string name, help, r_help, positional, names_help;
  int most = 1;
};
Command AddNamesVerb(CLI::App& parent, const NamesVerb& v);

// The exit code for a failed `st` (the one mapping of Status to exit
// code): kExitUsage for InvalidArgument, NotFound, Busy and
// PermissionDenied, kExitFailure otherwise (kExitOk for OK).
int ExitCodeFor(const Status& st);

// Prints "poolfs <command>: <message>" to stderr and returns
// ExitCodeFor(st).
int ReportError(std::string_view command, const Status& st);

}  // namespace poolfs::daemon
