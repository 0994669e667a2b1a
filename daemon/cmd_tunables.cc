// `poolfs tunables [--toml]`: the tunables table with defaults, ranges, when
// each applies and its doc string (config/render.h); --toml prints a config
// file that sets every tunable to its default, with the docs as comments.
#include <iostream>
#include <memory>

#include "command.h"
#include "config/render.h"

namespace poolfs::daemon {

Command AddTunablesCommand(CLI::App& parent) {
  auto toml = std::make_shared<bool>(false);
  CLI::App* app = parent.add_subcommand(
      "tunables",
      "List every tunable: type, default, accepted values, live or at the next mount, and what "
      "it does");
  app->add_flag("--toml", *toml,
                "print a complete poolfs.toml with every default instead (a starting point)");
  return {app, [toml] {
            std::cout << (*toml ? config::RenderDefaultConfig() : config::RenderTunablesTable());
            return kExitOk;
          }};
}

}  // namespace poolfs::daemon
