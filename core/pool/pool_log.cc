// Pool: the intent log's storage, the log areas of the vdevs (pool.h).
#include "pool/pool.h"
#include "vdev/vdev_layout.h"

namespace poolfs::core::pool {

Status Pool::CheckLogRange(uint32_t vdev, uint64_t off, uint64_t len) const {
  if (vdev >= devs_.size())
    return Status::InvalidArgument("log area of vdev " + std::to_string(vdev) + " in a pool of " +
                                   std::to_string(devs_.size()));
  if (off > vdev::kLogAreaSize || len > vdev::kLogAreaSize - off)
    return Status::InvalidArgument("log area range [" + std::to_string(off) + ", +" +
                                   std::to_string(len) + ") past its " +
                                   std::to_string(vdev::kLogAreaSize) + " bytes");
  return Status::Ok();
}

Status Pool::WriteLogArea(uint32_t vdev, uint64_t off, std::span<const uint8_t> bytes) {
  if (options_.read_only)
    return Status(StatusCode::kReadOnly, "pool '" + config_.name + "' is imported read-only");
  POOLFS_RETURN_IF_ERROR(CheckLogRange(vdev, off, bytes.size()));
  return devs_[vdev]
      ->Write(vdev::kLogAreaOffset + off, bytes.data(), bytes.size())
      .WithContext("log area of vdev " + std::to_string(vdev));
}

Status Pool::ReadLogArea(uint32_t vdev, uint64_t off, std::span<uint8_t> bytes) const {
  POOLFS_RETURN_IF_ERROR(CheckLogRange(vdev, off, bytes.size()));
  return devs_[vdev]
      ->Read(vdev::kLogAreaOffset + off, bytes.data(), bytes.size())
      .WithContext("log area of vdev " + std::to_string(vdev));
}

Status Pool::FlushLogArea(uint32_t vdev) {
  POOLFS_RETURN_IF_ERROR(CheckLogRange(vdev, 0, 0));
  return devs_[vdev]->Flush().WithContext("log area of vdev " + std::to_string(vdev));
}

Status Pool::PrepareLogArea(uint32_t vdev) {
  POOLFS_RETURN_IF_ERROR(CheckLogRange(vdev, 0, 0));
  if (options_.read_only) return Status::Ok();  // nothing will write it
  return devs_[vdev]
      ->FillHoles(vdev::kLogAreaOffset, vdev::kLogAreaSize)
      .WithContext("log area of vdev " + std::to_string(vdev));
}

std::string Pool::EncodeLogBlockPtr(const zio::BlockPtr& bp) const {
  std::string out(zio::BlockPtrSize(zio_->format()), '\0');
  zio::EncodeBlockPtr(bp, reinterpret_cast<uint8_t*>(out.data()), zio_->format());
  return out;
}

Result<std::string> Pool::ReadLogBlock(std::string_view encoded, std::string_view where) {
  return zio_->ReadEncoded(encoded, where);
}

Status Pool::FlushLogBlocks() { return zio_->FlushAll(); }

void Pool::SetLogStateSource(std::function<LogState(Txg)> state,
                             std::function<void(Txg)> durable) {
  util::MutexLock l(&log_mu_);
  log_state_ = std::move(state);
  log_durable_ = std::move(durable);
}

}  // namespace poolfs::core::pool
