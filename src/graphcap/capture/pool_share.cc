#include <graphcap/capture/pool_share.h>

#include <algorithm>
#include <string>

#include <graphcap/memory/size_class.h>

namespace graphcap::capture {

// ---- PoolShare: plain allocations -------------------------------------------------------------

std::shared_ptr<memory::Allocation> PoolShare::take(
    std::size_t bytes, const std::vector<std::shared_ptr<memory::Allocation>>& lent) {
  std::lock_guard lock(mutex_);
  std::shared_ptr<memory::Allocation> best;
  for (Entry& entry : entries_) {
    if (entry.capacity < bytes || !entry.borrower.expired()) continue;
    std::shared_ptr<memory::Allocation> memory = entry.memory.lock();
    if (!memory || std::find(lent.begin(), lent.end(), memory) != lent.end()) continue;
    if (!best || entry.capacity < best->slice().capacity) best = std::move(memory);
  }
  return best;
}

void PoolShare::borrowed(const memory::Allocation* memory,
                         const std::shared_ptr<memory::BufferState>& by) {
  std::lock_guard lock(mutex_);
  for (Entry& entry : entries_) {
    if (entry.address == memory && !entry.memory.expired()) entry.borrower = by;
  }
}

std::size_t PoolShare::adopt(const std::vector<std::shared_ptr<memory::Allocation>>& pins,
                             const std::vector<const memory::Allocation*>& allocated) {
  std::lock_guard lock(mutex_);
  if (range_) {
    // Every view of the range the graph pins is the pool's memory: its intermediates, laid out
    // from the base (nothing to adopt: the range holds them).
    std::size_t shared = 0;
    for (const auto& pin : pins) {
      if (pin->home() == range_.get()) shared += pin->slice().capacity;
    }
    return shared;
  }
  // Forget entries whose memory is gone (every graph pinning it went).
  std::erase_if(entries_, [](const Entry& e) { return e.memory.expired(); });
  std::size_t shared = 0;
  for (const auto& pin : pins) {
    if (pin->slice().kind != memory::SliceKind::device) continue;
    const bool known = std::any_of(entries_.begin(), entries_.end(),
                                   [&](const Entry& e) { return e.address == pin.get(); });
    if (!known) {
      // An intermediate: allocated inside the window, and only the recording holds it (no
      // buffer outlived the recording). Memory from before the window is the graph's own, even
      // when only the graph holds it now (a step counter that lives across replays).
      const bool inside =
          std::find(allocated.begin(), allocated.end(), pin.get()) != allocated.end();
      if (!inside || pin.use_count() != 1) continue;
      entries_.push_back({pin, pin.get(), pin->slice().capacity, {}});
    }
    shared += pin->slice().capacity;
  }
  return shared;
}

std::size_t PoolShare::bytes_held() const {
  if (range_) return range_->stats().mapped;
  std::lock_guard lock(mutex_);
  std::size_t held = 0;
  for (const Entry& entry : entries_) {
    if (!entry.memory.expired()) held += entry.capacity;
  }
  return held;
}

std::size_t PoolShare::intermediates() const {
  if (range_) return range_->stats().pieces;
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count_if(
      entries_.begin(), entries_.end(), [](const Entry& e) { return !e.memory.expired(); }));
}

// ---- PoolShare: virtual memory ----------------------------------------------------------------

std::size_t PoolShare::place_locked(std::size_t from, std::size_t bytes) {
  std::erase_if(lent_, [](const Lent& lent) { return lent.buffer.expired(); });
  std::size_t at = from;
  for (bool moved = true; moved;) {
    moved = false;
    for (const Lent& lent : lent_) {
      if (at < lent.end && lent.begin < at + bytes) {
        at = lent.end;
        moved = true;
      }
    }
  }
  return at;
}

// ---- PoolWindow -------------------------------------------------------------------------------

PoolWindow::~PoolWindow() {
  if (holding_) share_->range()->hold(0);
}

void PoolWindow::allocated(const std::shared_ptr<memory::Allocation>& memory, bool warm_up) {
  allocated_.push_back(memory.get());
  if (warm_up && virtual_memory() && memory->slice().kind == memory::SliceKind::device) {
    plan_.push_back(memory::exact_size(memory->slice().capacity));
  }
}

Result<void> PoolWindow::lay_out() {
  if (!virtual_memory()) return {};
  const std::shared_ptr<memory::VirtualRange>& range = share_->range();
  {
    std::lock_guard lock(share_->mutex_);
    std::size_t end = 0;
    for (std::size_t bytes : plan_) end = share_->place_locked(end, bytes) + bytes;
    planned_ = end;
  }
  cursor_ = 0;
  // Held first: a graph that goes meanwhile gives back nothing of what this window lays out.
  range->hold(planned_);
  holding_ = true;
  if (Result<void> grown = range->grow_to(planned_); !grown) {
    return std::move(grown).error().context(
        "laying out the graph pool's recording (" + std::to_string(planned_) +
        " bytes of intermediates, as the warm-up allocated them)");
  }
  return {};
}

std::shared_ptr<memory::BufferState> PoolWindow::lend_view(
    std::size_t bytes, const std::shared_ptr<memory::SliceOwner>& owner) {
  const std::size_t size = memory::exact_size(bytes);
  if (size == 0 || !holding_) return nullptr;
  std::lock_guard lock(share_->mutex_);
  const std::size_t at = share_->place_locked(cursor_, size);
  // Within the warm-up's plan, the window holds it mapped. Beyond it, only what is mapped now
  // (earlier graphs' memory, the rest of a granule): the pool may not grow inside the recording,
  // so past that the stream's pools decide (and refuse it).
  std::shared_ptr<memory::Allocation> view =
      at + size <= planned_ ? share_->range()->view(owner, at, size)
                            : share_->range()->view_if_mapped(owner, at, size);
  if (!view) return nullptr;
  auto buffer = std::make_shared<memory::BufferState>(std::move(view), bytes);
  share_->lent_.push_back({buffer, at, at + size});
  cursor_ = at + size;
  return buffer;
}

std::shared_ptr<memory::BufferState> PoolWindow::lend(
    std::size_t bytes, const std::shared_ptr<memory::SliceOwner>& owner) {
  std::shared_ptr<memory::BufferState> buffer;
  if (virtual_memory()) {
    buffer = lend_view(bytes, owner);
  } else if (std::shared_ptr<memory::Allocation> memory = share_->take(bytes, lent_memory_)) {
    buffer = std::make_shared<memory::BufferState>(memory, bytes);
    share_->borrowed(memory.get(), buffer);
    lent_memory_.push_back(std::move(memory));
  }
  if (!buffer) return nullptr;
  std::erase_if(lent_, [](const auto& weak) { return weak.expired(); });
  lent_.push_back(buffer);
  return buffer;
}

std::optional<Error> PoolWindow::outlived() const {
  for (const auto& weak : lent_) {
    if (weak.expired()) continue;
    return Error(Errc::graph_state,
                 "end_capture: a buffer allocated inside a graph pool's recording from the pool's "
                 "shared intermediate memory outlived the recording; other graphs of the pool use "
                 "that memory for their intermediates, so it can't hold a result (allocate "
                 "buffers that outlive the recording before prepare_capture, or in the warm-up)");
  }
  return std::nullopt;
}

std::size_t PoolWindow::adopt(const std::vector<std::shared_ptr<memory::Allocation>>& pins) {
  return share_->adopt(pins, allocated_);
}

void PoolWindow::poison_survivors() const {
  for (const auto& weak : lent_) {
    auto buffer = weak.lock();
    if (!buffer) continue;
    buffer->fail_for_good(Error(
        Errc::graph_state,
        "the buffer was allocated inside a graph pool's recording from the pool's shared "
        "intermediate memory, and the window closed without a graph (abort_capture, or a "
        "refusal): the pool's graphs use that memory as scratch, so it can't hold data "
        "(allocate buffers that outlive a window before prepare_capture, or in the warm-up)"));
  }
}

}  // namespace graphcap::capture
