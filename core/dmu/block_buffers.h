// BlockBuffers: keeps the memory of written dirty blocks for the next dirty
// blocks.
//
// Why. A stream of writes dirties whole blocks (128 KiB by default) faster
// than anything else the pool does, and without this each dirty copy would
// be a fresh allocation that the sync frees after writing it. glibc hands
// blocks of that size back to the kernel (mmap, or the trimmed top of the
// heap), so the next copy faults in zeroed pages: the kernel's page
// clearing is then the largest cost of `poolfs-bench pool` (a fifth of the
// writer's time). Kept here, a buffer goes from a synced block to a new
// dirty one with no fault.
//
// What is kept. Buffers of at least kMinKept bytes (smaller ones are cheap
// to get from malloc, which keeps them in its bins), up to `retain_bytes` in
// all, in lists by capacity. A buffer comes back here when the last
// reference to its block drops (the dnode's slot after the sync, or a reader
// that still held it); past the bound it is freed. New takes one of the
// exact capacity asked for, else allocates. What is kept follows demand:
// Trim (the pool calls it after each txg sync) frees what the txgs since
// the previous Trim did not ask for, so that memory kept for a stream of
// writes goes back once the stream stops (to the ARC, say, which then
// fills with the blocks read back).
//
// Released in batches. A sync drops every dirty block it wrote at once (a
// dnode's blocks when its sync ends), so the sync tasks hold a
// ReleaseBatch: for its scope, buffers whose last reference drops on that
// thread are gathered and come back with one lock round trip for the whole
// batch, not one per buffer. Elsewhere (a reader that held a block past
// the sync) a buffer comes back alone.
//
// Locks: one mutex, taken once per buffer of kMinKept bytes or more that
// New hands out, and once per buffer or per batch given back.
//
// Thread safety: every member function may be called from any thread, and a
// block from New may outlive the BlockBuffers that made it (its memory is
// then freed).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/mutex.h"

namespace poolfs::core::dmu {

class BlockBuffers {
 public:
  static constexpr uint32_t kMinKept = 32 * 1024;

  explicit BlockBuffers(uint64_t retain_bytes);
  BlockBuffers(const BlockBuffers&) = delete;
  BlockBuffers& operator=(const BlockBuffers&) = delete;

  // An empty string with room for at least `size` bytes.
  std::shared_ptr<std::string> New(uint32_t size);

  // Frees kept buffers beyond the bytes New handed out (of kMinKept or
  // more) since the previous Trim. Returns the bytes freed.
  uint64_t Trim();

  struct Stats {
    uint64_t reused = 0;         // New calls served from kept buffers
    uint64_t allocated = 0;      // New calls of kMinKept or more that allocated
    uint64_t kept_bytes = 0;     // capacity kept now
    uint64_t trimmed_bytes = 0;  // freed by Trim
    uint64_t given_alone = 0;    // buffers given back one at a time
    uint64_t given_batched = 0;  // buffers given back in a ReleaseBatch
    uint64_t batches = 0;        // ReleaseBatch scopes that gave buffers back
  };
  Stats stats() const;

 private:
  struct Lists;

 public:
  // For its scope, on the calling thread, the buffers of `buffers` whose last
  // reference drops are gathered and given back together when it ends (one
  // lock). Scopes nest (the innermost gathers); `buffers` may be null (then
  // nothing is gathered). Not movable: it is the thread's current batch.
  class ReleaseBatch {
   public:
    explicit ReleaseBatch(BlockBuffers* buffers);
    ~ReleaseBatch();
    ReleaseBatch(const ReleaseBatch&) = delete;
    ReleaseBatch& operator=(const ReleaseBatch&) = delete;

   private:
    friend class BlockBuffers;
    Lists* const lists_;
    ReleaseBatch* const outer_;
    std::vector<std::string*> gathered_;
  };

 private:
  struct Lists {
    explicit Lists(uint64_t retain) : retain_bytes(retain) {}
    ~Lists();
    // Takes back a buffer whose last reference dropped (into the calling
    // thread's ReleaseBatch for these lists, if there is one).
    void Give(std::string* s);
    // Takes back a batch with one lock; what does not fit is freed.
    void GiveBatch(std::vector<std::string*>* batch);
    const uint64_t retain_bytes;
    mutable util::Mutex mu;
    std::map<size_t, std::vector<std::string*>> by_capacity GUARDED_BY(mu);
    Stats stats GUARDED_BY(mu);
    uint64_t demand_bytes GUARDED_BY(mu) = 0;  // handed out since the last Trim
  };
  // Shared with every block handed out, so that it may outlive this.
  std::shared_ptr<Lists> lists_;
};

}  // namespace poolfs::core::dmu
