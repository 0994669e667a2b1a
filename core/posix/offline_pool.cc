// OfflinePool::Open (poolfs/dataset.h): a pool imported for administration
// without a mount. It lives in the POSIX layer so that its admin can diff
// (posix/diff.h), which the pool layer below cannot.
#include "pool/dataset_admin.h"
#include "posix/diff.h"
#include "send/receive.h"

namespace poolfs {

namespace {

class PoolOffline final : public OfflinePool {
 public:
  explicit PoolOffline(std::unique_ptr<core::pool::Pool> pool)
      : pool_(std::move(pool)),
        admin_(
            pool_.get(),
            [](core::pool::Pool& p, std::string_view from, std::string_view to) {
              return core::posix::DiffDatasets(p, from, to);
            },
            core::send::Replicator()) {}
  ~PoolOffline() override { Close().ok(); }
  const std::string& name() const override { return pool_->name(); }
  DatasetAdmin& datasets() override { return admin_; }
  Status Close() override {
    if (!closed_) {
      closed_ = true;
      status_ = pool_->Export();
    }
    return status_;
  }

 private:
  std::unique_ptr<core::pool::Pool> pool_;
  core::pool::PoolDatasetAdmin admin_;
  bool closed_ = false;
  Status status_;
};

}  // namespace

Result<std::unique_ptr<OfflinePool>> OfflinePool::Open(const std::vector<std::string>& paths) {
  core::pool::PoolOptions options;
  POOLFS_ASSIGN_OR_RETURN(auto pool, core::pool::Pool::Import(paths, options));
  return std::unique_ptr<OfflinePool>(new PoolOffline(std::move(pool)));
}

}  // namespace poolfs
