#include <graphcap/capture/capture_state.h>

namespace graphcap {

const char* to_string(CaptureState state) noexcept {
  switch (state) {
    case CaptureState::no_capture: return "no_capture";
    case CaptureState::prepare: return "prepare";
    case CaptureState::capture: return "capture";
  }
  return "unknown";
}

}  // namespace graphcap
