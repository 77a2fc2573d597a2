// Device: IF/ELSE and SWITCH branches recorded into a graph (the recording's conditional frames
// insert the nodes and track their bodies; the stream issues its work into the innermost open
// body). Each call checks its arguments and enters its stream's core as one conditional step.
#include <graphcap/detail/call_site.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/try.h>

namespace graphcap {

using Step = capture::ConditionalStep;

namespace {

// A step on Condition `c` on stream `s` (the step's checks: its stream's window and frames').
Result<void> branch_step(Stream& s, const Condition& c, Step::Kind kind, unsigned value,
                         std::source_location where) {
  Step step{kind, HandleAccess::id(c), c.recording(), value, where};
  if (!c) {
    return Error(Errc::graph_state,
                 std::string(step.name()) + ": an empty Condition (Device::condition gives one)");
  }
  Result<detail::StreamCore::Conditional> done = HandleAccess::core(s).conditional(step);
  if (!done) return std::move(done).error();
  return {};
}

}  // namespace

Result<Condition> Device::condition(Stream& s, unsigned first, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<Condition> {
        GRAPHCAP_TRY(check_stream(s, "condition"));
        GRAPHCAP_ASSIGN_OR_RETURN(
            detail::StreamCore::Conditional made,
            HandleAccess::core(s).conditional({Step::Kind::condition, 0, 0, first, where}));
        return HandleAccess::condition(made.made.id, made.recording, made.made.handle, first);
      }(),
      where);
}

Result<void> Device::begin_if(Stream& s, Condition& c, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "begin_if"));
        return branch_step(s, c, Step::Kind::begin_if, 0, where);
      }(),
      where);
}

Result<void> Device::begin_else(Stream& s, Condition& c, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "begin_else"));
        return branch_step(s, c, Step::Kind::begin_else, 0, where);
      }(),
      where);
}

Result<void> Device::end_if(Stream& s, Condition& c, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "end_if"));
        return branch_step(s, c, Step::Kind::end_if, 0, where);
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
        return branch_step(s, c, Step::Kind::begin_switch, cases, where);
      }(),
      where);
}

Result<void> Device::begin_case(Stream& s, Condition& c, unsigned index,
                                std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "begin_case"));
        return branch_step(s, c, Step::Kind::begin_case, index, where);
      }(),
      where);
}

Result<void> Device::end_switch(Stream& s, Condition& c, std::source_location where) {
  return detail::at_call(
      [&]() -> Result<void> {
        GRAPHCAP_TRY(check_stream(s, "end_switch"));
        return branch_step(s, c, Step::Kind::end_switch, 0, where);
      }(),
      where);
}

}  // namespace graphcap
