// Device: WHILE loops recorded into a graph (the recording's conditional frames insert the node
// and track the body; the stream issues its work into the innermost body from then on). Each
// call checks its arguments and enters its stream's core as one conditional step.
#include <graphcap/detail/call_site.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/try.h>

namespace graphcap {

using Step = capture::ConditionalStep;

Result<Loop> Device::begin_while(Stream& s, bool first, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<Loop> {
        GRAPHCAP_TRY(check_stream(s, "begin_while"));
        GRAPHCAP_ASSIGN_OR_RETURN(detail::StreamCore::Conditional loop,
                                  HandleAccess::core(s).conditional(
                                      {Step::Kind::begin_while, 0, 0, first ? 1u : 0u, where}));
        return HandleAccess::loop(loop.made.id, loop.recording, loop.made.handle);
      }(),
      where);
}

Result<void> Device::end_while(Stream& s, Loop& loop, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "end_while"));
        if (!loop)
          return Error(Errc::graph_state, "end_while: an empty Loop (begin_while gives one)");
        detail::StreamCore& stream = HandleAccess::core(s);
        const std::uint64_t id = HandleAccess::id(loop);
        Result<detail::StreamCore::Conditional> ended =
            stream.conditional({Step::Kind::end_while, id, loop.recording(), 0, where});
        // Closed (even when its body dooms the recording) unless end_while refused it untouched
        // (a loop of another recording, or one still open).
        if (loop.recording() == stream.recording_id() && !stream.conditional_open(id)) {
          HandleAccess::close(loop);
        }
        if (!ended) return std::move(ended).error();
        return {};
      }(),
      where);
}

}  // namespace graphcap
