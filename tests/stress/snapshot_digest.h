// DigestObjectSet: a 64-bit digest of what an object set holds.
//
// The workload reads each snapshot it takes back once the snapshot's txg
// has synced and logs this digest (op_log.h, kSnapshot); after the crash
// the verifier reads the snapshot again and must find the same one: what a
// live pool showed of a snapshot is what the pool shows after a crash, a
// power cut or a remount.
//
// The digest covers every allocated object in id order: its id, type,
// block size, length, bonus type and bonus bytes, and its data as the
// 64 KiB pages (by offset) that are not all zeros, found through the
// object's data regions (ObjectSet::Seek), so that sparse objects many
// GiB long read only what they hold. Pages of zeros are left out, so the
// digest says nothing of how the zeros are stored (a hole, or a block
// that was written with zeros), only what reads back.
//
// Thread safety: as the object set's reads (a snapshot's is read-only).
#pragma once

#include <cstdint>

#include "dmu/objset.h"
#include "poolfs/status.h"

namespace poolfs::stress {

struct ObjectSetDigest {
  uint64_t hash = 0;
  uint64_t objects = 0;
};

// The digest of `os` as it reads now. Fails with the error of a read,
// naming the object set and object.
Result<ObjectSetDigest> DigestObjectSet(core::dmu::ObjectSet* os);

}  // namespace poolfs::stress
