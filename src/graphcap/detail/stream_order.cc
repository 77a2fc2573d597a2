#include <graphcap/detail/stream_order.h>

#include <algorithm>

namespace graphcap::detail {

OrderList::Position& OrderList::at(const memory::SliceOwner* stream) {
  for (Position& known : positions_) {
    if (known.stream == stream) return known;
  }
  return positions_.emplace_back(Position{stream});
}

void OrderList::merge(const memory::SliceOwner* stream, std::uint64_t sequence,
                      std::uint64_t above) {
  Position& known = at(stream);
  if (above == 0) {
    known.all = std::max(known.all, sequence);
    return;
  }
  // One recording's lists only: a side stream forks into a recording once, so `above` is the same
  // for every position of it merged here.
  known.above = above;
  known.upto = std::max(known.upto, sequence);
}

void OrderList::merge(const OrderList& other) {
  for (const Position& position : other.positions_) {
    if (position.all != 0) merge(position.stream, position.all);
    if (position.upto != 0) merge(position.stream, position.upto, position.above);
  }
}

bool OrderList::covers(const memory::SliceOwner* stream, std::uint64_t sequence) const noexcept {
  for (const Position& known : positions_) {
    if (known.stream == stream) {
      return sequence <= known.all || (sequence > known.above && sequence <= known.upto);
    }
  }
  return false;
}

OrderList StreamOrder::now(std::uint64_t recording) const {
  std::lock_guard lock(mutex_);
  return now_locked(recording);
}

void StreamOrder::after(const OrderPoint& point) {
  std::lock_guard lock(mutex_);
  eager_.merge(point.stream, point.sequence, point.above);
  eager_.merge(point.after);
}

void StreamOrder::after_in(std::uint64_t recording, const OrderPoint& point) {
  std::lock_guard lock(mutex_);
  if (recorded_of_ != recording) {
    // The origin's first wait inside its recording: what it was ordered after eagerly holds too.
    recorded_of_ = recording;
    joined_at_ = 0;
    in_recording_ = eager_;
  }
  in_recording_.merge(point.stream, point.sequence, point.above);
  in_recording_.merge(point.after);
}

void StreamOrder::fork(std::uint64_t recording, std::uint64_t joined_at, const OrderPoint& point) {
  std::lock_guard lock(mutex_);
  recorded_of_ = recording;
  joined_at_ = joined_at;
  in_recording_ = OrderList{};
  in_recording_.merge(point.stream, point.sequence, point.above);
  in_recording_.merge(point.after);
}

std::uint64_t StreamOrder::joined_at(std::uint64_t recording) const {
  if (recording == 0) return 0;
  std::lock_guard lock(mutex_);
  return recorded_of_ == recording ? joined_at_ : 0;
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
