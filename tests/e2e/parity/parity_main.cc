// e2e_parity: the POSIX parity checker and the tree snapshot of the FUSE
// end-to-end tests (tests/e2e/*.sh drive it).
//
//   e2e_parity compare [options] DIR_A DIR_B
//       Runs every scenario in DIR_A/<scenario> and DIR_B/<scenario> (the
//       scenario folders must not exist yet) and prints each difference.
//       --only TEXT         only scenarios whose name contains TEXT
//       --other-user NAME   the user Sys::AsOther switches to (needs root)
//       --known FILE        known differences (parity.h says the format)
//       --name-a, --name-b  what to call the two sides in the output
//       --verbose           print every call and tree line of side A too
//   e2e_parity snapshot DIR
//       Prints the tree below DIR with inode numbers, file handles (node id
//       and generation on FUSE), exact mtimes and content hashes.
//   e2e_parity open-handles DIR SNAPSHOT_FILE
//       Opens every entry of a snapshot of DIR (taken before a remount, say)
//       by its file handle and checks it is the same inode; prints each that
//       is not (needs CAP_DAC_READ_SEARCH: root).
//   e2e_parity list
//       Prints the scenario names.
//
// Exit status: 0 when the sides agree (known differences allowed), 1 when
// they differ, 2 on a usage error or when a scenario folder cannot be made.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "parity/parity.h"
#include "parity/tree_walk.h"

namespace {

using poolfs::e2e::OtherUser;

int Usage() {
  std::cerr << "usage: e2e_parity compare [--only TEXT] [--other-user NAME] [--known FILE]\n"
               "                          [--name-a A] [--name-b B] [--verbose] DIR_A DIR_B\n"
               "       e2e_parity snapshot DIR\n"
               "       e2e_parity open-handles DIR SNAPSHOT_FILE\n"
               "       e2e_parity list\n";
  return 2;
}

bool LookUpUser(const std::string& name, OtherUser* out) {
  struct passwd* pw = ::getpwnam(name.c_str());
  if (pw == nullptr) return false;
  out->uid = pw->pw_uid;
  out->gid = pw->pw_gid;
  int n = 64;
  std::vector<gid_t> groups(n);
  if (::getgrouplist(name.c_str(), pw->pw_gid, groups.data(), &n) < 0) return false;
  groups.resize(n);
  out->groups = groups;
  out->available = true;
  return true;
}

int Compare(int argc, char** argv) {
  poolfs::e2e::ParityOptions options;
  std::string known_file, name_a = "A", name_b = "B";
  bool verbose = false;
  std::vector<std::string> dirs;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--only")
      options.only = value();
    else if (arg == "--known")
      known_file = value();
    else if (arg == "--name-a")
      name_a = value();
    else if (arg == "--name-b")
      name_b = value();
    else if (arg == "--verbose")
      verbose = true;
    else if (arg == "--other-user") {
      std::string user = value();
      if (!LookUpUser(user, &options.other)) {
        std::cerr << "e2e_parity: no such user: " << user << "\n";
        return 2;
      }
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage();
    } else {
      dirs.push_back(arg);
    }
  }
  if (dirs.size() != 2) return Usage();
  options.dir_a = dirs[0];
  options.dir_b = dirs[1];
  std::vector<poolfs::e2e::KnownDifference> known;
  std::string error;
  if (!known_file.empty() && !poolfs::e2e::ReadKnownDifferences(known_file, &known, &error)) {
    std::cerr << "e2e_parity: " << error << "\n";
    return 2;
  }
  auto scenarios = poolfs::e2e::AllScenarios();
  auto report = poolfs::e2e::RunParity(scenarios, options);
  if (verbose) {
    for (const auto& line : report.transcript_a) std::cout << line << "\n";
  }
  if (!report.error.empty()) {
    std::cerr << "e2e_parity: " << report.error << "\n";
    return 2;
  }
  poolfs::e2e::MarkKnown(known, &report.differences);
  int unknown = 0, known_count = 0;
  for (const auto& d : report.differences) {
    bool is_known = !d.known.empty();
    (is_known ? known_count : unknown)++;
    std::cout << (is_known ? "KNOWN " : "DIFF ") << d.scenario << ", " << d.where << ":\n"
              << "  " << name_a << ": " << d.a << "\n"
              << "  " << name_b << ": " << d.b << "\n";
    if (is_known) std::cout << "  known: " << d.known << "\n";
  }
  // One line per scenario that differs, so that a long list stays readable.
  std::map<std::string, int> per_scenario;
  for (const auto& d : report.differences) {
    if (d.known.empty()) per_scenario[d.scenario]++;
  }
  for (const auto& [name, count] : per_scenario) {
    std::cout << "e2e_parity: scenario " << name << ": " << count << " differences\n";
  }
  std::cout << "e2e_parity: " << report.scenarios << " scenarios, " << report.lines_compared
            << " lines compared as uid " << ::geteuid() << ", " << unknown << " differences, "
            << known_count << " known\n";
  return unknown == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  std::string cmd = argv[1];
  if (cmd == "compare") return Compare(argc, argv);
  if (cmd == "snapshot" && argc == 3) {
    for (const auto& line : poolfs::e2e::Snapshot(argv[2])) std::cout << line << "\n";
    return 0;
  }
  if (cmd == "open-handles" && argc == 4) {
    std::ifstream in(argv[3]);
    if (!in) {
      std::cerr << "e2e_parity: cannot read " << argv[3] << "\n";
      return 2;
    }
    std::vector<std::string> snapshot;
    for (std::string line; std::getline(in, line);) snapshot.push_back(line);
    int opened = 0;
    const auto failures = poolfs::e2e::OpenByHandles(argv[2], snapshot, &opened);
    for (const auto& line : failures) std::cout << line << "\n";
    std::cout << "e2e_parity: " << opened << " entries opened by their handles, " << failures.size()
              << " not\n";
    return failures.empty() && opened > 0 ? 0 : 1;
  }
  if (cmd == "list") {
    for (const auto& sc : poolfs::e2e::AllScenarios()) std::cout << sc.name << "\n";
    return 0;
  }
  return Usage();
}
