// Send: one snapshot of a dataset as a replication stream (stream.h), in
// full or as the changes since an earlier snapshot of it.
//
// Theory. A stream carries objects, not files: every object of the dataset
// (files' data, directories, the znodes in their bonus, xattrs, the
// filesystem's own objects) goes with its id, type, block size, length,
// generation and bonus, and its data blocks as logical bytes, so the
// receiver rebuilds the same object set whatever its pool's ashift,
// compression or vdevs.
//
// Which objects. The walk of the two metadnode trees (dmu/objset_walk.h,
// WalkChangedDnodes) reads only the dnode blocks born after the base's txg
// and reports, in id order, each object whose dnode differs: one freed
// since becomes part of a FREEOBJECTS run; any other an OBJECT record. A
// full send walks against an empty set, so every allocated object is new.
//
// Which blocks. An object is new to the receiver when the base does not
// have it, or had another object under the same id (another generation:
// the txg that created it), or had it with another block size (a change
// of block size rewrote every block, and the receiver's copy may be
// longer than the one block the change needs): then every data block goes (WRITE), and its
// holes need no record (a new object starts empty). An object the base has
// (same generation) sends only what changed after the base's txg
// (WalkObjectData): each data block born after it, and each hole below an
// indirect block born after it (a FREE: the hole may be new, and a hole
// has no birth of its own), which the walk finds without reading any data
// block nor any subtree the two snapshots share. A shrunk object ends with
// a FREE to its end. So an incremental stream costs what changed, plus the
// indirect blocks above it.
//
// Order: objects by id, each one's blocks by offset, as stream.h requires.
//
// Compressed streams (`send -c`): a block stored compressed goes as its
// stored bytes (zio::ReadStored, checked as any read), with its codec; the
// receiver decodes it and stores it with its own compression. Others go
// as their logical bytes.
//
// Estimates (`send -n -v`): the same walk, counting the records and their
// payloads instead of reading data blocks and writing them.
//
// Errors: IOError or Corruption from reads, naming the dataset, object and
// block; the writer's error (a closed pipe) passes through. A failure
// leaves the stream without its END, which every reader refuses.
//
// Thread safety: Send runs on the calling thread; the trees it walks must
// not change meanwhile (snapshots never do).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dmu/objset_walk.h"
#include "poolfs/status.h"
#include "send/stream.h"
#include "zio/zio.h"

namespace poolfs::core::send {

// A synced state of a dataset: a snapshot's root block and txg, its guid,
// and its name (after the '@').
struct SendPoint {
  zio::BlockPtr root;
  Txg txg;
  uint64_t guid = 0;
  std::string snapshot;
};

struct SendRequest {
  zio::Zio* zio = nullptr;
  std::string dataset;  // "tank/home": the sender's dataset, for BEGIN
  SendPoint to;
  int64_t creation_time = 0;  // the snapshot's, seconds since the epoch
  // The base of an incremental stream (an earlier snapshot of the same
  // dataset); none: a full stream.
  std::optional<SendPoint> from;
  // send -c: data blocks stored compressed go as they are stored (the
  // COMPRESSED feature), not decompressed.
  bool compressed = false;
  // Local properties to carry in BEGIN (a package's first stream of a
  // dataset), sorted by name.
  std::vector<std::pair<std::string, std::string>> props;
  // Nonzero: the stream resumes there (resume_token.h): the RESUMING
  // feature, and no record of an object before it.
  uint64_t resume_object = 0;
};

// What a send wrote (or would write).
struct SendStats {
  uint64_t records = 0;
  uint64_t stream_bytes = 0;   // headers and payloads
  uint64_t objects = 0;        // OBJECT records
  uint64_t freed_objects = 0;  // ids in FREEOBJECTS records
  uint64_t writes = 0;         // WRITE records
  uint64_t write_bytes = 0;    // their logical bytes
  uint64_t frees = 0;          // FREE records
  // What the walks read: the metadnode trees' blocks, and the data blocks
  // read for WRITEs.
  dmu::DnodeDiffStats dnodes;
  uint64_t data_blocks_read = 0;
};

// Writes the stream of `r` to `w` (a fresh writer: BEGIN through END).
// With `w` null, writes nothing and reads no data block: *stats is then the
// estimate. InvalidArgument for a request that names no zio, a zero guid,
// or a base no older than the snapshot.
Status Send(const SendRequest& r, StreamWriter* w, SendStats* stats);

}  // namespace poolfs::core::send
