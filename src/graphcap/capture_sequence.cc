#include <graphcap/capture_sequence.h>

#include <string>

#include <graphcap/detail/pending_graph_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/log.h>

namespace graphcap {

CaptureSequence::~CaptureSequence() {
  if (!owns()) return;
  try {
    if (Result<void> aborted = abort(); !aborted) {
      log(LogLevel::warn,
          aborted.error().context("aborting the window a capture left open").message());
    }
  } catch (...) {
    log(LogLevel::error, "aborting the window a capture left open failed unexpectedly");
  }
}

Result<void> CaptureSequence::prepare(const CaptureOptions& options) {
  Result<void> prepared = device_->prepare_capture(*stream_, options);
  owned_ = static_cast<bool>(prepared);  // refused: the stream is as it was, and not ours
  return prepared;
}

void CaptureSequence::adopt_prepared() noexcept {
  owned_ = stream_->capture_state() == CaptureState::prepare;
}

Result<void> CaptureSequence::begin() {
  Result<void> begun = device_->begin_capture(*stream_);
  // Refused up front the window is still prepared; a failed driver begin undid it already.
  if (!begun) (void)abort();
  return begun;
}

Result<Graph> CaptureSequence::end() {
  Result<Graph> graph = device_->end_capture(*stream_);
  owned_ = owns();
  // A refusal before anything closed keeps the recording open, and owned.
  kept_ = HandleAccess::core(*stream_).kept_allocation_at_close();
  return graph;
}

Result<PendingGraph> CaptureSequence::end_deferred() {
  Result<std::shared_ptr<detail::PendingGraphState>> pending =
      HandleAccess::core(*stream_).end_capture_deferred();
  owned_ = owns();
  kept_ = HandleAccess::core(*stream_).kept_allocation_at_close();
  if (!pending) return pending.error();
  return HandleAccess::pending(std::move(*pending));
}

Result<void> CaptureSequence::end(Graph& into) {
  Result<void> ended = device_->end_capture(*stream_, into);
  owned_ = owns();
  kept_ = HandleAccess::core(*stream_).kept_allocation_at_close();
  return ended;
}

Error CaptureSequence::recorded_run_failed(const Error& failure) {
  // end_capture refuses a doomed recording before anything is instantiated, saying what doomed
  // it; abort_capture would close it without saying. A recording the failure did not doom
  // closes into a graph nobody replays, dropped here.
  Result<Graph> closed = end();
  (void)abort();  // refused with the recording still open (a loop, a condition steering nothing)
  if (closed || closed.error().code() != Errc::doomed) return failure;
  const Error& doom = closed.error();
  if (doom.message().find(failure.message()) != std::string::npos) return doom;
  return doom.context("the step failed (" + failure.message() + ") in a recording doomed before");
}

Result<void> CaptureSequence::abort() {
  if (!owns()) {
    owned_ = false;
    return {};
  }
  owned_ = false;
  Result<void> aborted = device_->abort_capture(*stream_);
  kept_ = HandleAccess::core(*stream_).kept_allocation_at_close();
  return aborted;
}

bool CaptureSequence::owns() const noexcept {
  return owned_ && stream_->capture_state() != CaptureState::no_capture;
}

}  // namespace graphcap
