// ReplayGate: the one word of a stream that Graph::replay reads before it launches: zero when a
// replay may go to the driver with no further check. Kept on its own cache line and written only
// by lifecycle transitions and by buffers starting or stopping to carry a failure, so the replay
// hot path touches the graph's own line, this one, and nothing else.
#pragma once

#include <atomic>

namespace graphcap::capture {

class ReplayGate {
 public:
  static constexpr unsigned kClosed = 1;         // the device closed
  static constexpr unsigned kRecording = 2;      // a capture records on the stream
  static constexpr unsigned kFailedBuffers = 4;  // some buffer of the stream carries a failure

  bool open() const noexcept { return bits_.load(std::memory_order_acquire) == 0; }
  unsigned bits() const noexcept { return bits_.load(std::memory_order_acquire); }
  void set(unsigned bit) noexcept { bits_.fetch_or(bit, std::memory_order_release); }
  void clear(unsigned bit) noexcept { bits_.fetch_and(~bit, std::memory_order_release); }

 private:
  alignas(64) std::atomic<unsigned> bits_{0};
};

}  // namespace graphcap::capture
