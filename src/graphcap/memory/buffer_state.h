// BufferState: what a Buffer handle shares: its memory, its size, and the failure it may carry
// instead of data (when the operation that should have written it failed).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
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

  // The stream that used this buffer last and the sequence number of that use on it (the owner
  // with 0 until the first use): another stream may use it only once it is ordered after that
  // use (docs/capture-lifecycle.md, "Buffers on several streams").
  struct LastUse {
    const SliceOwner* stream;
    std::uint64_t sequence;
  };
  LastUse last_use() const noexcept {
    const SliceOwner* stream = last_stream_.load(std::memory_order_acquire);
    return {stream == nullptr ? &owner() : stream, last_sequence_.load(std::memory_order_acquire)};
  }
  void used_by(const SliceOwner& stream, std::uint64_t sequence) noexcept {
    last_sequence_.store(sequence, std::memory_order_release);
    last_stream_.store(&stream, std::memory_order_release);
  }

 private:
  std::shared_ptr<Allocation> memory_;
  std::size_t size_;
  mutable std::mutex mutex_;
  std::optional<Error> failure_;
  std::atomic<bool> failed_{false};
  std::atomic<const SliceOwner*> last_stream_{nullptr};
  std::atomic<std::uint64_t> last_sequence_{0};
};

}  // namespace graphcap::memory
