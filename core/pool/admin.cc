// The public pool administration API (poolfs/pool_admin.h): CreatePool over
// Pool::Create, and the check report's summary (CheckPool is the zil
// layer's, core/zil/check_pool.cc: the check reads the intent log too).
#include "poolfs/pool_admin.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <memory>

#include "pool/check.h"
#include "pool/pool.h"
#include "pool/pool_phys.h"
#include "vdev/file_device.h"
#include "vdev/vdev_layout.h"

namespace poolfs {

namespace {

using core::vdev::ErrnoText;

std::string Bytes(uint64_t n) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(n);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    u++;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", n);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s (%" PRIu64 " bytes)", v, kUnits[u], n);
  return buf;
}

std::string Plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

Status CreatePool(const std::vector<std::string>& paths, uint64_t size_bytes,
                  const CreatePoolOptions& options) {
  if (paths.empty()) return Status::InvalidArgument("a pool needs at least one vdev file");
  if (options.ashift < core::vdev::kMinAshift || options.ashift > core::vdev::kMaxAshift)
    return Status::InvalidArgument("ashift " + std::to_string(options.ashift) +
                                   " is outside 9..16");
  POOLFS_RETURN_IF_ERROR(core::pool::ValidateDatasetName(options.name).WithContext("pool name"));
  if (auto layout = core::vdev::ComputeVdevLayout(size_bytes); !layout.ok())
    return Status::InvalidArgument("size " + std::to_string(size_bytes) + ": " +
                                   layout.status().message());
  // Which files exist already (a path named twice is refused, by name or by
  // inode), so that a failure removes only the files this call created.
  std::vector<bool> existed;
  std::vector<std::pair<dev_t, ino_t>> ids;
  for (size_t i = 0; i < paths.size(); i++) {
    struct stat st;
    const bool exists = stat(paths[i].c_str(), &st) == 0;
    existed.push_back(exists);
    for (size_t j = 0; j < i; j++) {
      const bool same_inode =
          exists && existed[j] && ids[j] == std::make_pair(st.st_dev, st.st_ino);
      if (paths[i] == paths[j] || same_inode)
        return Status::InvalidArgument(paths[j] + " and " + paths[i] + " are the same file");
    }
    ids.emplace_back(exists ? st.st_dev : 0, exists ? st.st_ino : 0);
  }
  core::pool::CreateOptions create;
  create.name = options.name;
  create.ashift = options.ashift;
  create.force = options.force;
  Status st = core::pool::Pool::Create(paths, size_bytes, create);
  if (!st.ok())
    for (size_t i = 0; i < paths.size(); i++)
      if (!existed[i]) unlink(paths[i].c_str());
  return st;
}

std::string CheckReport::Summary() const {
  std::string s = "pool '" + pool + "', " + Plural(vdevs, "vdev", "vdevs") + ", checked at txg " +
                  std::to_string(txg) + "\n";
  if (!rewind.empty()) s += "  " + rewind + "\n";
  s += "  " + Plural(datasets, "dataset", "datasets") + ", " +
       (snapshots > 0 ? Plural(snapshots, "snapshot", "snapshots") + ", " : std::string()) +
       Plural(objects, "object", "objects") + ", " + Plural(blocks, "block", "blocks") + "\n";
  s += "  referenced " + Bytes(bytes_referenced) + "\n";
  s += "  allocated by the space maps " + Bytes(bytes_allocated_by_maps);
  if (deferred_frees > 0)
    s += ", " + Plural(deferred_frees, "block", "blocks") + " of them deferred frees";
  s += "\n";
  if (cloned_blocks > 0)
    s += "  block clones: " + Plural(cloned_blocks, "block", "blocks") + " shared by copies, " +
         Bytes(clone_saved_bytes) + " saved\n";
  if (log_blocks > 0)
    s += "  intent log: " + Plural(log_blocks, "block", "blocks") + ", " +
         Plural(log_records, "record", "records") + " for the next read-write mount to replay\n";
  if (trial_sync_passes > 0)
    s += "  trial sync of txg " + std::to_string(trial_sync_txg) + ": converged in " +
         Plural(trial_sync_passes, "MOS pass", "MOS passes") + "\n";
  s += "  " + Plural(checksum_errors, "checksum error", "checksum errors") + ", " +
       Plural(problems.size() + problems_omitted, "problem", "problems") + ", " +
       Plural(warnings.size(), "warning", "warnings") + "\n";
  if (txg != newest_txg && !rewind.empty())
    s += ok() ? "the tree of txg " + std::to_string(txg) +
                    " is healthy: poolfs mount -o ro,rewind opens it read-only\n"
              : "POOL IS DAMAGED, the rewound tree of txg " + std::to_string(txg) + " too\n";
  else
    s += ok() ? "pool is healthy\n" : "POOL IS DAMAGED\n";
  return s;
}

}  // namespace poolfs
