// Receive: a replication stream (stream.h) applied to a pool, all or
// nothing; and the glue that gives the public API (poolfs/replication.h)
// both directions.
//
// Theory. A stream is applied to a hidden dataset (Pool::BeginReceive): an
// empty one for a full stream, a clone of the target's newest snapshot
// for an incremental one, whose BEGIN must name that snapshot's guid as
// its base. The records are read ahead in batches (up to 1 MiB), each
// batch checked by the reader (every checksum, every order rule) before
// one Tx applies it, so no Tx waits on the sender: a slow pipe never holds
// a txg open. OBJECT with NEW frees whatever the hidden dataset has under
// the id and claims it afresh (ObjectSet::Claim), with a generation of
// this pool (scrub and the intent log compare generations with local
// txgs); without NEW the object must be there, and takes the record's
// bonus (and block size, which a sender changes only by NEW). WRITE
// writes a whole block's logical bytes, FREE punches a hole, FREEOBJECTS
// frees the ids it covers; when the object's records end, it takes its
// length. The dataset's own compression and copies apply to what is
// written: a stream does not carry the sender's.
//
// Only once END has arrived, the checker has accepted it and the source
// is at its end (nothing may follow END), and the hidden dataset has
// synced, does Pool::FinishReceive make it appear, in one txg with the
// received snapshot (its sender's guid and creation time). Any failure
// before that (a damaged, truncated or mismatched stream, a full pool,
// the source's error) destroys the hidden dataset (Pool::AbandonReceive)
// and leaves the target as it was; a crash leaves the hidden dataset for
// the next import to destroy.
//
// Resumable receives (-s). The hidden dataset stays after a failure, with
// a resume token (resume_token.h) that Pool::SaveReceiveState keeps: the
// object of the last OBJECT or FREEOBJECTS record applied, once all that
// was applied has synced. It is also kept every kKeepStateEvery stream
// bytes, so that a receive killed outright resumes from near where it
// was (what was applied after the last keep comes again: applying
// records twice lands the same). A stream with the RESUMING feature
// (`send -t TOKEN`) continues into the kept dataset when its guids and
// resume object are the token's; any other stream into that target is
// refused until the kept receive is resumed or discarded (-A).
//
// Compound streams (send -R, stream.h's PACKAGE). They are received
// stream by stream, each as above into the dataset at its path below the
// target, a dataset's local properties set after its first stream; a
// failure leaves the streams before it received. Not resumable.
//
// Thread safety: Receive runs on the calling thread; several may run at
// once on one pool, each into its own hidden dataset. The finisher
// serializes the last step with the pool's other dataset changes.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "pool/dataset_admin.h"
#include "pool/pool.h"
#include "poolfs/replication.h"
#include "poolfs/status.h"

namespace poolfs::core::send {

// A resumable receive keeps its state (resume_token.h) after about this
// many stream bytes, and when it fails.
inline constexpr uint64_t kKeepStateEvery = 64u << 20;

// Reads a stream from `source` and applies it to `pool` as `options`
// says (poolfs/replication.h, DatasetAdmin::Receive); `finish` runs the
// last step (PoolDatasetAdmin::Finisher). `keep_every`: for tests.
Result<ReceiveSummary> Receive(pool::Pool& pool, const ReceiveOptions& options,
                               const StreamSource& source,
                               const pool::PoolDatasetAdmin::Finisher& finish,
                               uint64_t keep_every = kKeepStateEvery);

// Writes the stream of options.snapshot (DatasetAdmin::Send); with a null
// sink, counts instead (an estimate).
Result<SendSummary> SendSnapshot(pool::Pool& pool, const SendOptions& options,
                                 const StreamSink& sink);

// Both, for a PoolDatasetAdmin.
pool::PoolDatasetAdmin::Replicator Replicator();

}  // namespace poolfs::core::send
