// BufferState: what a Buffer handle shares: its memory, its size, and the failure it may carry
// instead of data (when the operation that should have written it failed).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>

#include <graphcap/error.h>
#include <graphcap/memory/allocation.h>

namespace graphcap::memory {

class BufferState {
 public:
  BufferState(std::shared_ptr<Allocation> memory, std::size_t size) noexcept
      : memory_(std::move(memory)), size_(size) {}
  BufferState(const BufferState&) = delete;
  BufferState& operator=(const BufferState&) = delete;
  ~BufferState();

  const std::shared_ptr<Allocation>& memory() const noexcept { return memory_; }
  std::size_t size() const noexcept { return size_; }
  CUdeviceptr device_ptr() const noexcept { return memory_->slice().device_ptr(); }
  SliceOwner& owner() const noexcept { return memory_->owner(); }

  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  std::optional<Error> failure() const {
    if (!failed()) return std::nullopt;
    std::lock_guard lock(mutex_);
    return failure_;
  }
  // Carry `error` instead of data. The owner counts its failed buffers, so replays on its stream
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

}  // namespace graphcap::memory
