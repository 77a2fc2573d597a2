// Device: IF/ELSE and SWITCH branches recorded into a graph (the window inserts the nodes and
// tracks their bodies; the stream issues its work into the innermost open body).
#include <graphcap/detail/call_site.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/try.h>

namespace graphcap {

using capture::OpenRecording;
using detail::StreamCore;

namespace {

// A Condition the call may use: not empty, of the recording `s` records into now (if any).
Result<void> check_condition(StreamCore& stream, const Condition& c, const char* operation) {
  if (!c) {
    return Error(Errc::graph_state,
                 std::string(operation) + ": an empty Condition (Device::condition gives one)");
  }
  // Outside a recording the window's own check says so.
  const std::uint64_t recording = stream.window().recording_id();
  if (recording != 0 && c.recording() != recording) {
    return Error(Errc::graph_state,
                 std::string(operation) +
                     ": the condition was made in another recording (of this stream or another)");
  }
  return {};
}

}  // namespace

Result<Condition> Device::condition(Stream& s, unsigned first, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<Condition> {
        GRAPHCAP_TRY(check_stream(s, "condition"));
        GRAPHCAP_TRY(core_->bind_thread());
        StreamCore& stream = HandleAccess::core(s);
        std::lock_guard lock(stream.mutex());
        GRAPHCAP_ASSIGN_OR_RETURN(OpenRecording::ConditionInfo made,
                                  stream.window().make_condition(first, where));
        return HandleAccess::condition(made.id, stream.window().recording_id(), made.handle, first);
      }(),
      where);
}

Result<void> Device::begin_if(Stream& s, Condition& c, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "begin_if"));
        GRAPHCAP_TRY(core_->bind_thread());
        StreamCore& stream = HandleAccess::core(s);
        std::lock_guard lock(stream.mutex());
        GRAPHCAP_TRY(check_condition(stream, c, "begin_if"));
        capture::Window& window = stream.window();
        GRAPHCAP_ASSIGN_OR_RETURN(std::size_t depth, window.check_loop_begin("begin_if"));
        GRAPHCAP_ASSIGN_OR_RETURN(CUstream body, stream.loop_stream(depth, "begin_if"));
        return window.begin_branch(body, OpenRecording::BranchKind::if_else, HandleAccess::id(c), 2,
                                   where);
      }(),
      where);
}

Result<void> Device::begin_else(Stream& s, Condition& c, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "begin_else"));
        GRAPHCAP_TRY(core_->bind_thread());
        StreamCore& stream = HandleAccess::core(s);
        std::lock_guard lock(stream.mutex());
        GRAPHCAP_TRY(check_condition(stream, c, "begin_else"));
        return stream.window().begin_else(HandleAccess::id(c));
      }(),
      where);
}

Result<void> Device::end_if(Stream& s, Condition& c, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "end_if"));
        GRAPHCAP_TRY(core_->bind_thread());
        StreamCore& stream = HandleAccess::core(s);
        std::lock_guard lock(stream.mutex());
        GRAPHCAP_TRY(check_condition(stream, c, "end_if"));
        return stream.window().end_branch(OpenRecording::BranchKind::if_else, HandleAccess::id(c));
      }(),
      where);
}

Result<void> Device::begin_switch(Stream& s, Condition& c, unsigned cases,
                                  std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "begin_switch"));
        if (cases == 0) {
          // The driver refuses a SWITCH of no case (measured: CUDA_ERROR_INVALID_VALUE).
          return Error(Errc::invalid_argument, "begin_switch: a SWITCH of 0 cases (at least 1)");
        }
        GRAPHCAP_TRY(core_->bind_thread());
        StreamCore& stream = HandleAccess::core(s);
        std::lock_guard lock(stream.mutex());
        GRAPHCAP_TRY(check_condition(stream, c, "begin_switch"));
        capture::Window& window = stream.window();
        GRAPHCAP_ASSIGN_OR_RETURN(std::size_t depth, window.check_loop_begin("begin_switch"));
        GRAPHCAP_ASSIGN_OR_RETURN(CUstream body, stream.loop_stream(depth, "begin_switch"));
        return window.begin_branch(body, OpenRecording::BranchKind::switch_cases,
                                   HandleAccess::id(c), cases, where);
      }(),
      where);
}

Result<void> Device::begin_case(Stream& s, Condition& c, unsigned index,
                                std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "begin_case"));
        GRAPHCAP_TRY(core_->bind_thread());
        StreamCore& stream = HandleAccess::core(s);
        std::lock_guard lock(stream.mutex());
        GRAPHCAP_TRY(check_condition(stream, c, "begin_case"));
        return stream.window().begin_case(HandleAccess::id(c), index);
      }(),
      where);
}

Result<void> Device::end_switch(Stream& s, Condition& c, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "end_switch"));
        GRAPHCAP_TRY(core_->bind_thread());
        StreamCore& stream = HandleAccess::core(s);
        std::lock_guard lock(stream.mutex());
        GRAPHCAP_TRY(check_condition(stream, c, "end_switch"));
        return stream.window().end_branch(OpenRecording::BranchKind::switch_cases,
                                          HandleAccess::id(c));
      }(),
      where);
}

}  // namespace graphcap
