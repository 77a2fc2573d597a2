#include <graphcap/capture/pool_share.h>

#include <algorithm>

namespace graphcap::capture {

std::shared_ptr<memory::Allocation> PoolShare::take(std::size_t bytes) {
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
  std::lock_guard lock(mutex_);
  std::size_t held = 0;
  for (const Entry& entry : entries_) {
    if (!entry.memory.expired()) held += entry.capacity;
  }
  return held;
}

std::size_t PoolShare::intermediates() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count_if(
      entries_.begin(), entries_.end(), [](const Entry& e) { return !e.memory.expired(); }));
}

std::shared_ptr<memory::BufferState> PoolWindow::lend(std::size_t bytes) {
  std::shared_ptr<memory::Allocation> memory = share_->take(bytes);
  if (!memory) return nullptr;
  auto buffer = std::make_shared<memory::BufferState>(memory, bytes);
  share_->borrowed(memory.get(), buffer);
  std::erase_if(lent_, [](const auto& weak) { return weak.expired(); });
  lent_.push_back(buffer);
  return buffer;
}

void PoolWindow::allocated(const std::shared_ptr<memory::Allocation>& memory) {
  allocated_.push_back(memory.get());
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
