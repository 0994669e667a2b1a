// `poolfs diff [--pool FILE...] POOL/PATH@A [POOL/PATH@B | POOL/PATH]`: the
// files created (+), removed (-), renamed (R) and modified (M) between
// snapshot A and a later snapshot B of the same dataset, or the dataset as
// it is now (the default), one line each, sorted by path, as `zfs diff`
// prints them (DatasetAdmin::Diff says what each means). Only what was
// written since A is read, whatever the dataset's size. A DatasetCommand of
// the verb `diff`, sent as `poolfs dataset ...` is (cmd_dataset.cc): to the
// daemon serving the pool, or run here on the pool's files with --pool.
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "dataset_request.h"

namespace poolfs::daemon {

Command AddDiffCommand(CLI::App& parent) {
  return AddNamesVerb(
      parent,
      {DatasetCommand::Verb::kDiff, "diff",
       "List the files created (+), removed (-), renamed (R) and modified (M) since a snapshot",
       "", "NAMES",
       "POOL/PATH@A, then a later snapshot POOL/PATH@B or the dataset POOL/PATH (the default: "
       "the dataset as it is now)",
       2});
}

}  // namespace poolfs::daemon
