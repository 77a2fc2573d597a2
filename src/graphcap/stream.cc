#include <graphcap/stream.h>

#include <graphcap/detail/stream_core.h>

namespace graphcap {

CUstream Stream::native_handle() const noexcept { return core_->target(); }
CaptureState Stream::capture_state() const noexcept { return core_->capture_state(); }

}  // namespace graphcap
