#include <graphcap/capture_scope.h>

#include <graphcap/log.h>

namespace graphcap {

CaptureScope::CaptureScope(Device& device, Stream& s)
    : device_(&device), stream_(&s), began_(device.begin_capture(s)) {
  open_ = static_cast<bool>(began_);
}

CaptureScope::~CaptureScope() {
  if (!open_) return;
  open_ = false;
  try {
    if (Result<void> aborted = device_->abort_capture(*stream_); !aborted) {
      log(LogLevel::warn, aborted.error().context("CaptureScope: aborting the recording").message());
    }
  } catch (...) {
    log(LogLevel::error, "CaptureScope: aborting the recording failed unexpectedly");
  }
}

Result<Graph> CaptureScope::end() {
  if (!began_) return began_.error();
  if (!open_) {
    return Error(Errc::graph_state, "CaptureScope::end: the recording was already ended or aborted");
  }
  Result<Graph> graph = device_->end_capture(*stream_);
  // Refused with the recording still open (a loop left open, ended from another thread): the
  // scope still owns it, and aborts it when it goes unless end() is called again.
  open_ = !graph && stream_->capture_state() == CaptureState::capture;
  return graph;
}

Result<void> CaptureScope::abort() {
  if (!began_) return began_.error();
  if (!open_) {
    return Error(Errc::graph_state,
                 "CaptureScope::abort: the recording was already ended or aborted");
  }
  open_ = false;
  return device_->abort_capture(*stream_);
}

}  // namespace graphcap
