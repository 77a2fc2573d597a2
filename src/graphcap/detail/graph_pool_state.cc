#include <graphcap/detail/graph_pool_state.h>

#include <algorithm>

namespace graphcap::detail {

std::shared_ptr<memory::Allocation> GraphPoolState::lend(
    std::size_t bytes, const std::shared_ptr<memory::BufferState>&) {
  std::lock_guard lock(mutex_);
  std::shared_ptr<memory::Allocation> best;
  for (Entry& entry : entries_) {
    if (entry.capacity < bytes || !entry.borrower.expired()) continue;
    std::shared_ptr<memory::Allocation> memory = entry.memory.lock();
    if (!memory) continue;
    if (!best || entry.capacity < best->slice().capacity) best = std::move(memory);
  }
  return best;
}

void GraphPoolState::lent(const std::shared_ptr<memory::Allocation>& memory,
                          const std::shared_ptr<memory::BufferState>& borrower) {
  std::lock_guard lock(mutex_);
  for (Entry& entry : entries_) {
    if (entry.address == memory.get() && !entry.memory.expired()) entry.borrower = borrower;
  }
}

std::optional<Error> GraphPoolState::check_borrowers() const {
  std::lock_guard lock(mutex_);
  for (const Entry& entry : entries_) {
    if (!entry.borrower.expired() && !entry.memory.expired()) {
      return Error(Errc::graph_state,
                   "end_capture: a buffer allocated inside a graph pool's window from the pool's "
                   "shared intermediate memory outlived the recording; other graphs of the pool "
                   "use that memory for their intermediates, so it can't hold a result (allocate "
                   "buffers that outlive the recording before prepare_capture)");
    }
  }
  return std::nullopt;
}

std::size_t GraphPoolState::adopt(const std::vector<std::shared_ptr<memory::Allocation>>& pins) {
  std::lock_guard lock(mutex_);
  // Forget entries whose memory is gone (every graph pinning it went).
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const Entry& e) { return e.memory.expired(); }),
                 entries_.end());
  std::size_t shared = 0;
  for (const auto& pin : pins) {
    if (pin->slice().kind != memory::SliceKind::device) continue;
    const bool known = std::any_of(entries_.begin(), entries_.end(),
                                   [&](const Entry& e) { return e.address == pin.get(); });
    // Only the recording's pin holds it: no buffer outlived the recording.
    if (!known && pin.use_count() != 1) continue;
    if (!known) entries_.push_back({pin, pin.get(), pin->slice().capacity, {}});
    shared += pin->slice().capacity;
  }
  return shared;
}

void GraphPoolState::window_closed() {
  std::lock_guard lock(mutex_);
  for (Entry& entry : entries_) entry.borrower.reset();
}

std::size_t GraphPoolState::bytes_held() const {
  std::lock_guard lock(mutex_);
  std::size_t held = 0;
  for (const Entry& entry : entries_) {
    if (!entry.memory.expired()) held += entry.capacity;
  }
  return held;
}

std::size_t GraphPoolState::intermediates() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count_if(
      entries_.begin(), entries_.end(), [](const Entry& e) { return !e.memory.expired(); }));
}

}  // namespace graphcap::detail
