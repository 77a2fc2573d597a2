#include <graphcap/detail/stream_order.h>

#include <algorithm>

namespace graphcap::detail {

void OrderList::merge(const memory::SliceOwner* stream, std::uint64_t sequence) {
  for (auto& [known, at] : positions_) {
    if (known == stream) {
      at = std::max(at, sequence);
      return;
    }
  }
  positions_.emplace_back(stream, sequence);
}

void OrderList::merge(const OrderList& other) {
  for (const auto& [stream, sequence] : other.positions_) merge(stream, sequence);
}

bool OrderList::covers(const memory::SliceOwner* stream, std::uint64_t sequence) const noexcept {
  for (const auto& [known, at] : positions_) {
    if (known == stream) return at >= sequence;
  }
  return false;
}

OrderList StreamOrder::now(std::uint64_t recording) const {
  std::lock_guard lock(mutex_);
  return now_locked(recording);
}

void StreamOrder::after(const OrderPoint& point) {
  std::lock_guard lock(mutex_);
  eager_.merge(point.stream, point.sequence);
  eager_.merge(point.after);
}

void StreamOrder::after_in(std::uint64_t recording, const OrderPoint& point) {
  std::lock_guard lock(mutex_);
  if (recorded_of_ != recording) {
    recorded_of_ = recording;
    in_recording_ = eager_;  // what it was ordered after eagerly holds too
  }
  in_recording_.merge(point.stream, point.sequence);
  in_recording_.merge(point.after);
}

bool StreamOrder::covers(std::uint64_t recording, const memory::SliceOwner* stream,
                         std::uint64_t sequence) const {
  std::lock_guard lock(mutex_);
  return now_locked(recording).covers(stream, sequence);
}

void CompletedOrder::completed(const OrderPoint& point) {
  if (point.stream == nullptr) return;
  std::lock_guard lock(mutex_);
  completed_.merge(point.stream, point.sequence);
  completed_.merge(point.after);
  any_.store(true, std::memory_order_release);
}

bool CompletedOrder::covers(const memory::SliceOwner* stream, std::uint64_t sequence) const {
  if (!any_.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(mutex_);
  return completed_.covers(stream, sequence);
}

}  // namespace graphcap::detail
