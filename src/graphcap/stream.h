// Stream: one CUDA stream of a Device, with its own memory pools, drop queue, error queue and
// capture window. Owned by its Device; use it from one thread at a time.
#pragma once

#include <memory>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

namespace detail {
class StreamCore;
}

// Where a stream is in the capture lifecycle: no_capture -> prepare -> capture -> no_capture.
enum class CaptureState { no_capture, prepare, capture };
const char* to_string(CaptureState state) noexcept;

class Stream {
 public:
  explicit Stream(std::shared_ptr<detail::StreamCore> core) : core_(std::move(core)) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // The driver's stream, for interop with code that launches on it directly.
  CUstream handle() const noexcept;
  CaptureState capture_state() const noexcept;

  detail::StreamCore& core() const noexcept { return *core_; }

 private:
  std::shared_ptr<detail::StreamCore> core_;
};

}  // namespace graphcap
