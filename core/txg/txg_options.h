// TxgOptions: the txg.* tunables the txg layer reads (defined with their
// defaults in poolfs/options.h; the config layer maps the keys of the same
// names), and their validation.
//
// Thread safety: a value type.
#pragma once

#include <cstdint>

#include "poolfs/options.h"
#include "poolfs/status.h"

namespace poolfs::core::txg {

// The txg.* tunables: the public struct is their one home (poolfs/options.h).
using TxgOptions = ::poolfs::TxgOptions;

// Returns OK, or InvalidArgument naming the first key out of range.
Status ValidateTxgOptions(const TxgOptions& opts);

}  // namespace poolfs::core::txg
