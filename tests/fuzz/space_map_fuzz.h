// Shared by the space map fuzzer and its corpus generator.
#pragma once

#include <cstdint>

#include "space/space_map.h"

namespace poolfs::fuzz {

// The geometry every input is decoded against first: 512 MiB at 1 GiB, 512 B
// sectors. (Inputs are also decoded against the geometry in their own header.)
inline constexpr core::space::SpaceMapGeometry kSpaceMapFuzzGeometry{uint64_t{1} << 30,
                                                                    uint64_t{1} << 29, 9};

}  // namespace poolfs::fuzz
