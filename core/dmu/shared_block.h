// SharedBlock: one block of an object that its owner keeps in memory and
// changes in place, the buffer itself being the dnode's dirty copy.
//
// Why. A zap changes a few bytes of an 8 KiB block per entry added or
// removed. Written with ObjectSet::Write, every change copies the whole
// block into the dnode's dirty copy, and the owner keeps a second copy to
// read from. With a SharedBlock the owner hands the buffer itself to the
// dnode (ObjectSet::PutBlock): from then on, changes in the same txg go
// straight into the dirty copy, and PutBlock again returns at once. This
// is ZFS's dbuf: one buffer, dirtied in place, copied once per txg.
//
// The rule that makes it safe. After PutBlock in txg t, the buffer is t's
// dirty copy, and t's sync writes it without any lock once t has closed.
// So Edit(u) changes the buffer in place only when PutBlock never made it
// a dirty copy, or made it u's own (u is still open: the caller holds a Tx
// of u, so u's sync has not begun). Otherwise it is an older txg's dirty
// copy, which that txg's sync may be writing at this moment: Edit first
// copies the bytes into a new buffer, which the next PutBlock makes u's. The
// owner must change its blocks only from open context (a Tx of the open
// txg), never from a sync pass, and nothing else may write the object's
// blocks while a SharedBlock of it is in use.
//
// Copying a SharedBlock copies the bytes (the copy is not anyone's dirty
// copy); moving it keeps the buffer and its txg.
//
// Thread safety: a value. Reading bytes() concurrently with a sync that
// writes the same buffer is fine (both read); the owner serializes its
// changes with its own reads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "poolfs/types.h"

namespace poolfs::core::dmu {

class SharedBlock {
 public:
  SharedBlock() = default;
  explicit SharedBlock(std::string bytes) : buf_(std::make_shared<std::string>(std::move(bytes))) {}
  SharedBlock(const SharedBlock& o)
      : buf_(o.buf_ ? std::make_shared<std::string>(*o.buf_) : nullptr) {}
  SharedBlock& operator=(const SharedBlock& o) {
    if (this != &o) *this = SharedBlock(o);
    return *this;
  }
  SharedBlock(SharedBlock&& o) noexcept : buf_(std::move(o.buf_)), txg_(std::exchange(o.txg_, 0)) {}
  SharedBlock& operator=(SharedBlock&& o) noexcept {
    buf_ = std::move(o.buf_);
    txg_ = std::exchange(o.txg_, 0);
    return *this;
  }

  bool empty() const { return !buf_ || buf_->empty(); }
  size_t size() const { return buf_ ? buf_->size() : 0; }
  const std::string& bytes() const { return buf_ ? *buf_ : Empty(); }
  const char* data() const { return bytes().data(); }
  // The txg whose dirty copy this buffer was made by PutBlock (0: none).
  uint64_t txg() const { return txg_; }

  // The bytes to change in txg t (see the theory comment): these, or a copy
  // of them that no txg holds yet.
  std::string& Edit(Txg t) {
    if (txg_ != 0 && txg_ != t.value()) {
      buf_ = std::make_shared<std::string>(*buf_);
      txg_ = 0;
    }
    if (!buf_) buf_ = std::make_shared<std::string>();
    return *buf_;
  }
  // Replaces the bytes with new ones that no txg holds yet.
  void Reset(std::string bytes) {
    buf_ = std::make_shared<std::string>(std::move(bytes));
    txg_ = 0;
  }

 private:
  friend class ObjectSet;  // PutBlock hands buf_ to the dnode and sets txg_
  static const std::string& Empty() {
    static const std::string empty;
    return empty;
  }

  std::shared_ptr<std::string> buf_;
  uint64_t txg_ = 0;
};

}  // namespace poolfs::core::dmu
