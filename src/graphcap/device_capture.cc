// Device: the capture lifecycle, per stream (the rules are the capture window's).
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/graph_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/try.h>

#include <string>

namespace graphcap {

using detail::StreamCore;

Result<void> Device::prepare_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "prepare_capture"));
  StreamCore& stream = HandleAccess::core(s);
  std::lock_guard lock(stream.mutex());
  return stream.window().prepare(core_->options().capture_mode);
}

Result<void> Device::prepare_capture(Stream& s, CaptureOptions options) {
  GRAPHCAP_TRY(check_stream(s, "prepare_capture"));
  if (options.mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
      options.mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      options.mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return Error(Errc::invalid_argument,
                 "prepare_capture: CaptureOptions::mode " +
                     std::to_string(static_cast<int>(options.mode)) + " is not a capture mode");
  }
  if (options.pool != nullptr) {
    return Error(Errc::invalid_argument,
                 "prepare_capture: CaptureOptions::pool: graph pools are not part of this build");
  }
  StreamCore& stream = HandleAccess::core(s);
  std::lock_guard lock(stream.mutex());
  return stream.window().prepare(options.mode);
}

Result<void> Device::begin_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "begin_capture"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  std::lock_guard lock(stream.mutex());
  return stream.window().begin();
}

Result<Graph> Device::end_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "end_capture"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  Result<capture::Recording> closed = [&] {
    std::lock_guard lock(stream.mutex());
    return stream.window().end(core_->options().upload_on_capture);
  }();
  core_->collect_deferred();
  if (!closed) return closed.error();
  auto state = std::make_shared<detail::GraphState>(HandleAccess::core_ptr(s), std::move(*closed));
  core_->add_graph(state);
  return HandleAccess::graph(std::move(state));
}

Result<void> Device::abort_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "abort_capture"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  Result<void> aborted = [&] {
    std::lock_guard lock(stream.mutex());
    return stream.window().abort();
  }();
  core_->collect_deferred();
  return aborted;
}

}  // namespace graphcap
