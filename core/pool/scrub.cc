#include "pool/scrub.h"

#include <algorithm>
#include <ctime>
#include <optional>

#include "dmu/dnode_phys.h"
#include "space/allocator.h"
#include "util/check.h"
#include "zio/zio.h"

namespace poolfs::core::pool {

namespace {

int64_t NowSeconds() { return int64_t(std::time(nullptr)); }

// Ordering of positions (objset, object, blkid).
struct Position {
  uint64_t objset = 0, object = 0, blkid = 0;
  auto operator<=>(const Position&) const = default;
};

// The level shown for an object set's root block in an error.
constexpr uint8_t kRootLevel = 255;

}  // namespace

// One round's walk: from the bookmark, through the tree of one synced txg,
// until the budget is spent. Blocks before the bookmark are only descended
// through (read to find the bookmark's path) when they hide it.
class Scrub::Walker {
 public:
  Walker(zio::Zio* zio, ScrubPhys* state, uint64_t budget_bytes,
         std::chrono::steady_clock::time_point deadline, const std::function<bool()>& halted)
      : zio_(zio),
        format_(zio->format()),
        state_(state),
        start_{state->objset, state->object, state->blkid},
        budget_(budget_bytes),
        deadline_(deadline),
        halted_(halted) {}

  // Walks the tree; true when it reached the end (the scrub is done).
  bool Walk(const SyncedRoots& roots) {
    if (start_.objset == 0 && !Objset(0, roots.mos)) return false;
    for (const auto& [id, root] : roots.datasets) {
      if (id < start_.objset) continue;
      if (!Objset(id, root)) return false;
    }
    return true;
  }

 private:
  static constexpr uint64_t kNone = ~uint64_t{0};

  // Whether the budget is spent (the caller then stops where it is).
  bool Spent() {
    if (read_ >= budget_ || halted_()) return true;
    if ((++calls_ & 63) == 0 && std::chrono::steady_clock::now() >= deadline_) return true;
    return false;
  }

  // Reads every copy of bp; repairs the bad ones from a good one. Returns
  // the block's bytes, or nothing when no copy verifies (an error).
  std::optional<std::string> Visit(const zio::BlockPtr& bp, const ScrubError& where) {
    std::vector<zio::Zio::CopyError> bad;
    Result<std::string> data = zio_->ReadEveryCopy(bp, &bad);
    const uint64_t n = uint64_t(bp.psize) * uint64_t(std::max(1, bp.copies()));
    read_ += n;
    state_->examined += n;
    state_->blocks++;
    if (!data.ok()) {
      state_->errors++;
      if (state_->error_list.size() < ScrubPhys::kMaxErrors) state_->error_list.push_back(where);
      return std::nullopt;
    }
    for (const zio::Zio::CopyError& e : bad)
      if (zio_->RepairCopy(bp, e.copy).ok()) state_->repaired++;
    return std::move(data).value();
  }

  // A block on the path to the bookmark, scrubbed in an earlier round: read
  // to find what lies below, not counted again.
  std::optional<std::string> Descend(const zio::BlockPtr& bp) {
    Result<std::string> r = zio_->Read(bp);
    if (!r.ok()) return std::nullopt;
    return std::move(r).value();
  }

  // Marks everything before `p` done.
  void Done(const Position& p) {
    state_->objset = p.objset;
    state_->object = p.object;
    state_->blkid = p.blkid;
  }

  bool Objset(uint64_t id, const zio::BlockPtr& root) {
    const Position from = id == start_.objset ? start_ : Position{id, 0, 0};
    const bool resuming = from.object != 0 || from.blkid != 0;
    if (root.IsHole()) return true;
    if (!resuming && Spent()) return false;
    std::optional<std::string> bytes =
        resuming ? Descend(root) : Visit(root, {id, 0, 0, kRootLevel});
    if (!bytes) return true;  // an error: nothing below can be found
    Result<dmu::ObjsetPhys> phys = dmu::DecodeObjset(*bytes, "scrub", format_);
    if (!phys.ok()) return true;  // a verified block that does not decode: poolfs check's
    // The metadnode's level-0 blocks are the dnode blocks: resume at the
    // bookmark's dnode block (read only, when the bookmark is inside one
    // of its objects).
    const uint64_t first = from.object == 0 ? from.blkid : from.object / dmu::kDnodesPerBlock;
    const uint64_t path = from.object == 0 ? kNone : first;
    if (!Tree(id, 0, phys->metadnode, first, path, from)) return false;
    Done({id + 1, 0, 0});
    return true;
  }

  // The block tree of object `object` (0: the metadnode) from level-0 block
  // `first` on; level-0 block `path` is only read (see Objset).
  bool Tree(uint64_t objset, uint64_t object, const dmu::DnodePhys& d, uint64_t first,
            uint64_t path, const Position& from) {
    if (d.bp.IsHole()) return true;
    return Block(objset, object, d.bp, uint8_t(d.nlevels - 1), 0, first, path, from);
  }

  // Block `index` at `level`, covering level-0 blocks [index * span,
  // (index + 1) * span).
  bool Block(uint64_t objset, uint64_t object, const zio::BlockPtr& bp, uint8_t level,
             uint64_t index, uint64_t first, uint64_t path, const Position& from) {
    const uint64_t span = uint64_t{1} << (dmu::kIndirectShift * level);
    if ((index + 1) * span <= first) return true;  // wholly before the bookmark
    const bool on_path = level > 0 ? index * span < first : index == path;
    // A block written since the scrub began is not verified (see scrub.h):
    // a data block is skipped, an indirect or dnode block only read through
    // to reach the older blocks below it.
    const bool newer = bp.birth.value() >= state_->start_txg;
    if (newer && level == 0 && object != 0) {
      Done({objset, object, index + 1});
      return true;
    }
    if (!on_path && Spent()) return false;
    std::optional<std::string> bytes =
        on_path || newer ? Descend(bp) : Visit(bp, {objset, object, index * span, level});
    if (!bytes) return true;
    if (level == 0) {
      if (object != 0) {
        Done({objset, object, index + 1});
        return true;
      }
      return DnodeBlock(objset, index, *bytes, from);
    }
    for (uint64_t i = 0; i < dmu::kFanout; i++) {
      Result<zio::BlockPtr> child = zio::DecodeBlockPtr(
          reinterpret_cast<const uint8_t*>(bytes->data()) + i * zio::BlockPtrSize(format_), {},
          format_);
      if (!child.ok() || child->IsHole()) continue;
      if (!Block(objset, object, *child, uint8_t(level - 1), index * dmu::kFanout + i, first, path,
                 from))
        return false;
    }
    return true;
  }

  // Dnode block `b` of an object set: each allocated object's tree.
  bool DnodeBlock(uint64_t objset, uint64_t b, const std::string& data, const Position& from) {
    const bool here = from.objset == objset && from.object / dmu::kDnodesPerBlock == b;
    for (uint64_t slot = 0; slot < dmu::kDnodesPerBlock; slot++) {
      const uint64_t id = b * dmu::kDnodesPerBlock + slot;
      if (id == 0) continue;  // the metadnode's own slot
      if (here && id < from.object) continue;
      if ((slot + 1) * dmu::kDnodeSize > data.size()) break;
      const auto* p = reinterpret_cast<const uint8_t*>(data.data()) + slot * dmu::kDnodeSize;
      if (p[0] == 0) continue;
      Result<dmu::DnodePhys> d = dmu::DecodeDnode(p, "scrub", format_);
      if (!d.ok() || d->free()) continue;
      if (d->generation >= state_->start_txg) continue;  // created since the scrub began
      const uint64_t first = here && id == from.object ? from.blkid : 0;
      if (!Tree(objset, id, *d, first, kNone, from)) return false;
      Done({objset, id + 1, 0});
    }
    Done({objset, 0, b + 1});  // the metadnode's walk goes on at the next dnode block
    return true;
  }

  zio::Zio* const zio_;
  const zio::BpFormat format_;
  ScrubPhys* const state_;
  const Position start_;
  const uint64_t budget_;
  const std::chrono::steady_clock::time_point deadline_;
  const std::function<bool()>& halted_;
  uint64_t read_ = 0;
  uint64_t calls_ = 0;
};

Scrub::Scrub(ScrubHooks hooks, ScrubPhys state) : hooks_(std::move(hooks)) {
  util::MutexLock l(&mu_);
  state_ = std::move(state);
}

Scrub::~Scrub() { Halt(); }

Status Scrub::Start(Txg txg) {
  util::MutexLock l(&mu_);
  if (state_.state == ScrubPhys::State::kRunning && thread_.joinable())
    return Status::AlreadyExists("a scrub is running (started at txg " +
                                 std::to_string(state_.start_txg) + ")");
  state_ = ScrubPhys{};
  state_.state = ScrubPhys::State::kRunning;
  state_.start_txg = txg.value();
  state_.start_time = NowSeconds();
  state_.total = hooks_.space->Stats().allocated;
  hooks_.save(state_);
  StartThread();
  return Status::Ok();
}

Status Scrub::Stop() {
  std::thread t;
  {
    util::MutexLock l(&mu_);
    if (state_.state != ScrubPhys::State::kRunning) return Status::NotFound("no scrub is running");
    halt_ = true;
    wake_.SignalAll();
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
  util::MutexLock l(&mu_);
  halt_ = false;
  state_.state = ScrubPhys::State::kStopped;
  state_.end_time = NowSeconds();
  hooks_.save(state_);
  return Status::Ok();
}

void Scrub::Resume() {
  util::MutexLock l(&mu_);
  if (state_.state == ScrubPhys::State::kRunning && !thread_.joinable()) StartThread();
}

void Scrub::Halt() {
  std::thread t;
  {
    util::MutexLock l(&mu_);
    halt_ = true;
    wake_.SignalAll();
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
  util::MutexLock l(&mu_);
  halt_ = false;
}

ScrubPhys Scrub::status() const {
  util::MutexLock l(&mu_);
  return state_;
}

void Scrub::StartThread() {
  // A thread of an earlier scrub has ended (its state is not running) or is
  // about to: it needs no lock on its way out.
  if (thread_.joinable()) thread_.join();
  rounds_.store(0, std::memory_order_release);
  thread_ = std::thread([this] { Run(); });
}

void Scrub::Run() {
  for (;;) {
    ScrubPhys state;
    {
      util::MutexLock l(&mu_);
      if (halt_) return;
      state = state_;
    }
    const uint64_t io_before = hooks_.io_bytes();
    const auto started = std::chrono::steady_clock::now();
    const bool done = Round(&state);
    const auto took = std::chrono::steady_clock::now() - started;
    const uint64_t scrub_io = state.examined - [&] {
      util::MutexLock l(&mu_);
      return state_.examined;
    }();
    // Others' I/O during the round: the scrub's reads and repairs aside.
    const uint64_t others = hooks_.io_bytes() - io_before;
    const bool busy = others > scrub_io + scrub_io / 4;
    {
      util::MutexLock l(&mu_);
      if (state_.state != ScrubPhys::State::kRunning) return;  // stopped meanwhile
      state_ = state;
      if (done) {
        state_.state = ScrubPhys::State::kFinished;
        state_.end_time = NowSeconds();
      }
      hooks_.save(state_);
      rounds_.fetch_add(1, std::memory_order_acq_rel);
      if (done) return;
      // The throttle (see the top of the file).
      wake_.WaitFor(&mu_, busy ? took * 2 : took);
    }
  }
}

bool Scrub::Round(ScrubPhys* state) {
  hooks_.space->HoldReuse();
  struct Release {
    space::SpaceManager* space;
    ~Release() { space->ReleaseReuse(); }
  } release{hooks_.space};
  const SyncedRoots roots = hooks_.roots();
  const std::function<bool()> halted = [this] {
    util::MutexLock l(&mu_);
    return halt_;
  };
  Walker w(hooks_.zio, state, kRoundBytes, std::chrono::steady_clock::now() + kRoundTime, halted);
  return w.Walk(roots);
}

}  // namespace poolfs::core::pool
