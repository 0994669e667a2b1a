// Which uberblock an import opens, and a rewind: shared by Pool::Open and
// the pool check, so that `poolfs check` names the txg a mount would open.
//
// Theory
// ------
// The candidates are the valid uberblocks of every label ring of every
// vdev (vdev/label.h) whose pool GUID, vdev GUID sum and format version are
// the pool's, newest first; copies with equal content are one.
//
// A normal import opens the newest txg. A torn uberblock write (a power cut
// during step 3 of a sync) fails its checksum and is no candidate at all, so
// crash recovery needs no choice: the newest valid uberblock's blocks were
// durable before it was written (uberblock.h). When its tree does not verify
// anyway, that is damage after the fact (media, a stray write), and the
// import fails rather than silently dropping the newest txgs and writing
// over their blocks: the user decides, with a rewind.
//
// A rewind import (read-only only) tries the candidates newest first and
// opens the first whose tree verifies. Frees are deferred kTxgDeferSize (2)
// txgs (space/metaslab.h): a block freed in txg F is not reused before txg
// F + 3, so at newest txg M the trees of M - 1 and M - 2 still have every
// block. An uberblock older than M - kTxgDeferSize is outside the rewind
// window and never opened: its freed blocks may hold later txgs' data. The
// deferral is kept in memory: an import starts with every free of its space
// maps reusable, so a txg older than the last import's first txg may have
// lost blocks to reuse even inside the window. That is caught, not
// trusted: every block is read through its checksum, so a reused block is
// Corruption, never other data; the verification (below) rejects a tree
// whose metadata was reused, and a reused data block fails its read (EIO).
//
// What "verifies" means (the `verify` callback; Pool::OpenAt and the
// check's TryOpen): the MOS root block, the MOS metadnode blocks it needs,
// the pool directory, every space map (replayed into its metaslab), and
// each dataset's root block and metadnode, all read and checksum-verified.
// A rewind also requires every dnode block the dataset's object allocator
// reads at open (all but full ones past the first) to read and agree with
// its block pointer: a normal import tolerates such a block (its objects
// fail when used), a rewind wants the tree that has none. Data blocks and
// the objects' indirect blocks are not read: `poolfs check --rewind` walks
// every block of the tree a rewind would open.
//
// Thread safety: values and free functions.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "poolfs/status.h"
#include "poolfs/types.h"
#include "vdev/label.h"
#include "vdev/uberblock.h"

namespace poolfs::core::pool {

// The uberblocks an import may open.
struct UberblockCandidates {
  std::vector<vdev::Uberblock> list;  // newest first
  uint64_t max_txg = 0;               // the newest txg of any valid slot (0: none)
};

// Collects the candidates from every vdev's labels.
UberblockCandidates CollectUberblocks(const std::vector<vdev::VdevLabelInfo>& infos,
                                      uint64_t pool_guid, uint64_t guid_sum, uint32_t version);

// Why a pool has no candidate, as Corruption: "no valid uberblock: every
// slot of every label fails its checksum (...)" when slots were written but
// none decodes as one of this pool's; "has no uberblock: its creation never
// completed" when every slot of every ring is empty.
Status NoUberblock(const std::string& pool, const std::vector<vdev::VdevLabelInfo>& infos);

// What ChooseUberblock decided.
struct UberblockChoice {
  const vdev::Uberblock* chosen = nullptr;  // into the candidates; nullptr: none verifies
  Txg newest;                               // the newest candidate's txg
  bool rewind = false;                      // a rewind was asked for
  // The candidates tried that did not verify, newest first, and why.
  std::vector<std::pair<Txg, Status>> failed;
  // The newest candidate left untried for being outside the rewind window
  // (Txg(0): none).
  Txg outside_window;

  // An older txg than the newest was chosen.
  bool rewound() const { return chosen != nullptr && chosen->txg < newest; }
  // For the log and the CLI: "rewound to txg N (the newest, txg M, does not
  // verify: <why>)", or "rewind: txg M, the newest, verifies: nothing to
  // rewind"; "" for a normal import.
  std::string Note() const;
  // Corruption naming the pool, each failure, and (a normal import) that a
  // rewind may help, or (a rewind) the window. Only when chosen is nullptr.
  Status Failure(const std::string& pool) const;
};

// Tries the candidates with `verify`: a normal import only those of the
// newest txg, a rewind every one within kTxgDeferSize txgs of max_txg,
// newest first; the first that verifies is chosen.
UberblockChoice ChooseUberblock(const UberblockCandidates& candidates, bool rewind,
                                const std::function<Status(const vdev::Uberblock&)>& verify);

}  // namespace poolfs::core::pool
