// `poolfs create POOLFILE... --size SIZE [--name NAME] [--ashift N] [--force]`:
// creates a pool striped over sparse files of SIZE bytes each.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "config/units.h"
#include "poolfs/pool_admin.h"

namespace poolfs::daemon {

namespace {
struct CreateArgs {
  std::vector<std::string> paths;
  std::string size;
  CreatePoolOptions options;
};

// --size: the config's sizes (config/units.h: binary units, "GB" refused as
// ambiguous), more than zero.
Result<uint64_t> ParseVdevSize(const std::string& text) {
  auto size = config::ParseSize(text);
  if (!size.ok() || *size == 0) {
    const std::string why = size.ok() ? "it must be more than zero" : size.status().message();
    return Status::InvalidArgument("bad size '" + text + "': " + why +
                                   " (examples: 20G, 512MiB, 1T, 1048576)");
  }
  return size;
}

int RunCreate(const CreateArgs& args) {
  auto size = ParseVdevSize(args.size);
  if (!size.ok()) return ReportError("create", size.status());
  Status st = CreatePool(args.paths, *size, args.options);
  if (!st.ok()) return ReportError("create", st);
  std::cout << "created pool '" << args.options.name << "' on " << args.paths.size()
            << (args.paths.size() == 1 ? " vdev" : " vdevs") << " of " << *size << " bytes:";
  for (const std::string& p : args.paths) std::cout << " " << p;
  std::cout << "\n";
  return kExitOk;
}
}  // namespace

Command AddCreateCommand(CLI::App& parent) {
  auto args = std::make_shared<CreateArgs>();
  CLI::App* app = parent.add_subcommand(
      "create", "Create a pool in one or more sparse files (striped); the pool is left exported");
  app->add_option("POOLFILE", args->paths,
                  "the vdev files, created sparse (an empty one is reused)")
      ->required();
  app->add_option("--size", args->size,
                  "size of each file: bytes, or a binary unit: 20G, 512MiB, 1T (as in the config "
                  "file; \"GB\" is refused as ambiguous)")
      ->required();
  app->add_option("--name", args->options.name, "the pool's name (also its first dataset's)")
      ->capture_default_str();
  app->add_option("--ashift", args->options.ashift, "log2 of the sector size, 9..16")
      ->capture_default_str();
  app->add_flag("--force", args->options.force,
                "overwrite a file that is not empty or that holds a pool (never one in use)");
  return {app, [args] { return RunCreate(*args); }};
}

}  // namespace poolfs::daemon
