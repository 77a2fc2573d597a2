// Device: WHILE loops recorded into a graph (the window inserts the node and tracks the body; the
// stream issues its work into the innermost body from then on).
#include <graphcap/detail/call_site.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/try.h>

namespace graphcap {

using detail::StreamCore;

Result<Loop> Device::begin_while(Stream& s, bool first, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<Loop> {
        GRAPHCAP_TRY(check_stream(s, "begin_while"));
        GRAPHCAP_TRY(core_->bind_thread());
        StreamCore& stream = HandleAccess::core(s);
        std::lock_guard lock(stream.mutex());
        capture::Window& window = stream.window();
        GRAPHCAP_ASSIGN_OR_RETURN(std::size_t depth, window.check_loop_begin());
        GRAPHCAP_ASSIGN_OR_RETURN(CUstream body, stream.loop_stream(depth));
        GRAPHCAP_ASSIGN_OR_RETURN(capture::OpenRecording::LoopInfo loop,
                                  window.begin_loop(body, first ? 1u : 0u, where));
        return HandleAccess::loop(loop.id, window.recording_id(), loop.handle);
      }(),
      where);
}

Result<void> Device::end_while(Stream& s, Loop& loop, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "end_while"));
        if (!loop)
          return Error(Errc::graph_state, "end_while: an empty Loop (begin_while gives one)");
        GRAPHCAP_TRY(core_->bind_thread());
        StreamCore& stream = HandleAccess::core(s);
        std::lock_guard lock(stream.mutex());
        if (loop.recording() != stream.window().recording_id()) {
          return Error(
              Errc::graph_state,
              "end_while: the loop was begun in another recording (of this stream or another)");
        }
        Result<void> ended = stream.window().end_loop(HandleAccess::id(loop));
        // Closed (even when its body dooms the recording) unless end_loop refused it untouched.
        if (!stream.window().loop_open(HandleAccess::id(loop))) HandleAccess::close(loop);
        return ended;
      }(),
      where);
}

}  // namespace graphcap
