// build/bin/config_render_default: prints RenderDefaultConfig(), the text
// packaging/poolfs.toml must hold (render_test.cc checks it). After a change
// to the tunables table:
//   build/bin/config_render_default > packaging/poolfs.toml
#include <cstdio>

#include "config/render.h"

int main() {
  const std::string text = poolfs::config::RenderDefaultConfig();
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}
