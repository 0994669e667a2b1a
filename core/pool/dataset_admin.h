// PoolDatasetAdmin: poolfs::DatasetAdmin (poolfs/dataset.h) over a Pool.
//
// Each call takes the admin's lock (so calls are serialized, as dataset.h
// promises), makes its change through the Pool's dataset calls (pool.h,
// "Datasets") and, for a change, waits for the txg holding it to sync
// before returning: a change is on disk once its call returns.
//
// Diff compares files and directories, which this layer does not know:
// the POSIX layer, above it, gives the function that does (posix/diff.h)
// to the admins it makes; an admin made without one refuses Diff
// (NotSupported).
//
// Thread safety: any thread; calls are serialized by mu_. The Pool must
// outlive the admin.
#pragma once

#include <functional>

#include "pool/pool.h"
#include "poolfs/dataset.h"
#include "util/mutex.h"

namespace poolfs::core::pool {

class PoolDatasetAdmin final : public DatasetAdmin {
 public:
  // What Diff runs (see above), on the pool, with the admin's lock held.
  using Differ = std::function<Result<std::vector<DiffEntry>>(Pool& pool, std::string_view from,
                                                              std::string_view to)>;

  // Send and receive (poolfs/replication.h) run the send layer's engine,
  // above this one; the POSIX layer gives them. `finish` runs the
  // receive's last step (which makes the received snapshot, in one txg)
  // with the admin's lock held, after `before_finish` (see Receive), and
  // waits for its txg to sync.
  using Finisher =
      std::function<Status(std::string_view target, const std::function<Result<Txg>()>& finish)>;
  struct Replicator {
    std::function<Result<SendSummary>(Pool& pool, const SendOptions& options,
                                      const StreamSink& sink)>
        send;
    std::function<Result<ReceiveSummary>(Pool& pool, const ReceiveOptions& options,
                                         const StreamSource& source, const Finisher& finish)>
        receive;
  };

  explicit PoolDatasetAdmin(Pool* pool, Differ differ = nullptr, Replicator replicator = {})
      : pool_(pool), differ_(std::move(differ)), replicator_(std::move(replicator)) {}

  Status Create(std::string_view name, bool parents,
                const std::vector<PropertyAssignment>& props) override EXCLUDES(mu_);
  Status Destroy(std::string_view name, bool recursive) override EXCLUDES(mu_);
  Status Rename(std::string_view from, std::string_view to) override EXCLUDES(mu_);
  Status Snapshot(const std::vector<std::string>& names, bool recursive) override EXCLUDES(mu_);
  Status Rollback(std::string_view name, bool destroy_later) override EXCLUDES(mu_);
  Status Clone(std::string_view origin, std::string_view name,
               const std::vector<PropertyAssignment>& props) override EXCLUDES(mu_);
  Status Promote(std::string_view name) override EXCLUDES(mu_);
  Result<std::vector<SnapshotInfo>> ListSnapshots(std::string_view root, bool recursive) override
      EXCLUDES(mu_);
  Result<std::vector<DatasetInfo>> List(std::string_view root, bool recursive) override
      EXCLUDES(mu_);
  Result<std::vector<DatasetProperty>> Get(std::string_view name,
                                           const std::vector<std::string>& props) override
      EXCLUDES(mu_);
  Status Set(std::string_view name, const PropertyAssignment& prop) override EXCLUDES(mu_);
  Status Inherit(std::string_view name, std::string_view prop) override EXCLUDES(mu_);
  Result<std::vector<DiffEntry>> Diff(std::string_view from, std::string_view to) override
      EXCLUDES(mu_);
  Result<SendSummary> Send(const SendOptions& options, const StreamSink& sink) override
      EXCLUDES(mu_);
  Result<ReceiveSummary> Receive(const ReceiveOptions& options, const StreamSource& source) override
      EXCLUDES(mu_) {
    return Receive(options, source, nullptr);
  }
  // Receive, calling `before_finish` with the target's name (with the
  // admin's lock held) just before the finish: a mount takes an
  // incremental's target out of its tree there, or refuses (Busy).
  Result<ReceiveSummary> Receive(const ReceiveOptions& options, const StreamSource& source,
                                 const std::function<Status(std::string_view)>& before_finish)
      EXCLUDES(mu_);

 private:
  // Waits for `t` to sync (Txg(0): nothing changed).
  Status Synced(Result<Txg> t);

  Pool* const pool_;
  const Differ differ_;
  const Replicator replicator_;
  util::Mutex mu_;
};

}  // namespace poolfs::core::pool
