// CheckSpace: step 4 of the pool check (see check.h): replays every
// metaslab's space map and compares what it says is allocated with what the
// walk found referenced, both ways.
//
// Thread safety: a function over values the caller owns.
#pragma once

#include <cstdint>
#include <vector>

#include "pool/check_walker.h"
#include "poolfs/pool_admin.h"

namespace poolfs::core::pool {

// One entry of the pool directory's list of space maps, with the content of
// its MOS object (nullptr when the MOS has no such object).
struct SpaceMapInput {
  uint32_t vdev = 0;
  uint64_t metaslab = 0;
  uint64_t object = 0;
  const GatheredObject* content = nullptr;
};

// Replays the maps (a metaslab without one is all free) and checks that
// every extent in walker.refs() is allocated and every allocated byte is
// referenced. Adds report->bytes_allocated_by_maps and the problems: a map
// that does not decode or contradicts itself (names the record), a
// referenced block that is free (names the block), a leaked run (names vdev,
// metaslab and offset; summed into one problem when the walk skipped
// damaged subtrees, since their blocks are among the runs).
void CheckSpace(const CheckWalker& walker, const std::vector<VdevGeometry>& vdevs,
                const std::vector<SpaceMapInput>& maps, CheckReport* report, ProblemSink* sink);

}  // namespace poolfs::core::pool
