// ReplayGate: the one word of a stream that Graph::replay reads before it launches: zero when a
// replay may go to the driver with no further check of the stream (what concerns one graph alone,
// such as its buffers carrying a failure, is in the graph's own replay word). Kept on its own
// cache line and written only by lifecycle transitions.
#pragma once

#include <atomic>

namespace graphcap::capture {

class ReplayGate {
 public:
  static constexpr unsigned kClosed = 1;         // the device closed
  static constexpr unsigned kRecording = 2;      // a capture records on the stream

  bool open() const noexcept { return bits_.load(std::memory_order_acquire) == 0; }
  unsigned bits() const noexcept { return bits_.load(std::memory_order_acquire); }
  void set(unsigned bit) noexcept { bits_.fetch_or(bit, std::memory_order_release); }
  void clear(unsigned bit) noexcept { bits_.fetch_and(~bit, std::memory_order_release); }

 private:
  alignas(64) std::atomic<unsigned> bits_{0};
};

}  // namespace graphcap::capture
