#include <graphcap/stream.h>

#include <graphcap/detail/stream_core.h>

namespace graphcap {

const char* to_string(CaptureState state) noexcept {
  switch (state) {
    case CaptureState::no_capture: return "no_capture";
    case CaptureState::prepare: return "prepare";
    case CaptureState::capture: return "capture";
  }
  return "unknown";
}

CUstream Stream::handle() const noexcept { return core_->handle(); }
CaptureState Stream::capture_state() const noexcept { return core_->window().state(); }

}  // namespace graphcap
