// Strong identifier types shared by every layer: an ObjectId is not a Txg is
// not a byte offset, and the compiler says so.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace poolfs {

// A thin wrapper over uint64_t; `Tag` makes each instantiation its own type.
template <typename Tag>
class StrongId {
 public:
  constexpr StrongId() = default;
  constexpr explicit StrongId(uint64_t v) : v_(v) {}
  constexpr uint64_t value() const { return v_; }
  constexpr auto operator<=>(const StrongId&) const = default;

 private:
  uint64_t v_ = 0;
};

template <typename Tag>
std::ostream& operator<<(std::ostream& os, const StrongId<Tag>& id) {
  return os << id.value();
}

using ObjectId = StrongId<struct ObjectIdTag>;
using Txg = StrongId<struct TxgTag>;
using VdevId = StrongId<struct VdevIdTag>;

// A byte offset within a vdev's allocatable space.
using VdevOffset = StrongId<struct VdevOffsetTag>;

// Frees are not reused until this many txgs after the txg that freed them.
inline constexpr uint64_t kTxgDeferSize = 2;

}  // namespace poolfs

template <typename Tag>
struct std::hash<poolfs::StrongId<Tag>> {
  size_t operator()(const poolfs::StrongId<Tag>& id) const noexcept {
    return std::hash<uint64_t>()(id.value());
  }
};
