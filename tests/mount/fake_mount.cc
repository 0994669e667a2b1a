// fake_mount: serves a FakeFilesystem (in memory, no core) on MOUNTPOINT in
// the foreground with the given request loop and cache timeouts, to measure
// the adapter alone. Prints "mounted" once the mount is up; SIGTERM or
// SIGINT (or fusermount3 -u) ends it.
//
//   fake_mount MOUNTPOINT [--threads N] [--single] [--clone-fd]
//              [--timeout SECONDS] [--negative SECONDS]
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "fuse/fuse_server.h"
#include "mount/fake_filesystem.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: fake_mount MOUNTPOINT [--threads N] [--single] [--clone-fd] "
                 "[--timeout S] [--negative S]\n";
    return 2;
  }
  poolfs::fuse::FuseOptions o;
  o.mountpoint = argv[1];
  o.fsname = "fake";
  for (int i = 2; i < argc; i++) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::atof(argv[++i]) : 0.0; };
    if (a == "--threads") {
      o.threads = uint32_t(next());
    } else if (a == "--single") {
      o.single_threaded = true;
    } else if (a == "--clone-fd") {
      o.clone_fd = true;
    } else if (a == "--timeout") {
      o.entry_timeout = o.attr_timeout = next();
    } else if (a == "--negative") {
      o.negative_timeout = next();
    } else {
      std::cerr << "fake_mount: unknown argument " << a << "\n";
      return 2;
    }
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  poolfs::testing::FakeFilesystem fs;
  auto server = poolfs::fuse::FuseServer::Mount(&fs, o);
  if (!server.ok()) {
    std::cerr << "fake_mount: " << server.status().ToString() << "\n";
    return 1;
  }
  std::thread signals([&] {
    int sig;
    sigwait(&set, &sig);
    if (sig != 0) (void)(*server)->RequestUnmount();
  });
  signals.detach();
  std::cout << "mounted" << std::endl;
  poolfs::Status st = (*server)->Run();
  if (!st.ok()) std::cerr << "fake_mount: " << st.ToString() << "\n";
  return st.ok() ? 0 : 1;
}
