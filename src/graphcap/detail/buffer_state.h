// BufferState: what a Buffer handle shares: its memory, its size, and the failure it may carry.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>

#include <graphcap/detail/allocation.h>
#include <graphcap/error.h>

namespace graphcap::detail {

class BufferState {
 public:
  BufferState(std::shared_ptr<Allocation> memory, std::size_t size) noexcept
      : memory_(std::move(memory)), size_(size) {}
  BufferState(const BufferState&) = delete;
  BufferState& operator=(const BufferState&) = delete;
  ~BufferState();

  const std::shared_ptr<Allocation>& memory() const noexcept { return memory_; }
  std::size_t size() const noexcept { return size_; }
  StreamCore& owner() const noexcept { return memory_->owner(); }

  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  std::optional<Error> failure() const {
    if (!failed()) return std::nullopt;
    std::lock_guard lock(mutex_);
    return failure_;
  }
  // Carry `error` instead of data. The owner stream counts its failed buffers, so replays on it
  // check their inputs only while some buffer there carries a failure.
  void fail(const Error& error);
  void clear_failure();

 private:
  std::shared_ptr<Allocation> memory_;
  std::size_t size_;
  mutable std::mutex mutex_;
  std::optional<Error> failure_;
  std::atomic<bool> failed_{false};
};

}  // namespace graphcap::detail
