// Device: events, and the order they establish between streams (docs/capture-lifecycle.md,
// "Buffers on several streams" and "Several streams in one recording").
#include <string>

#include <graphcap/detail/call_site.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/event_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/try.h>

namespace graphcap {

using detail::EventState;
using detail::StreamCore;

Result<Event> Device::create_event() {
  GRAPHCAP_TRY(core_->check_open("create_event"));
  GRAPHCAP_TRY(core_->bind_thread());
  CUevent handle = nullptr;
  // Timing is not what these events are for; without it recording and waiting are cheaper.
  if (CUresult result = core_->driver().cuEventCreate(&handle, CU_EVENT_DISABLE_TIMING);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuEventCreate", result).context("create_event");
  }
  auto state = std::make_shared<EventState>(core_, handle);
  core_->add_event(state);
  return HandleAccess::event(std::move(state));
}

namespace {

// `other_device`: an event of another device (on the same driver) is accepted (wait: CUDA lets a
// stream wait for an event of another device).
Result<EventState*> check_event(const Event& e, const detail::DeviceCore& device,
                                const char* operation, bool other_device = false) {
  if (!e) return Error(Errc::invalid_argument, std::string(operation) + ": an empty Event");
  EventState* state = HandleAccess::state(e).get();
  if (&state->device() != &device) {
    const bool peer = other_device && &state->device().driver() == &device.driver() &&
                      state->device().options().ordinal != device.options().ordinal;
    if (!peer) {
      return Error(Errc::invalid_argument, std::string(operation) + ": the event belongs to " +
                                               device.another_device(state->device()));
    }
    if (!state->device().is_open()) {
      return Error(Errc::graph_state, std::string(operation) + ": the event's device (" +
                                          state->device().name() + ") is closed");
    }
  }
  return state;
}

}  // namespace

Result<void> Device::record_event(Event& e, Stream& s, std::source_location where) {
  return detail::at_call([&]() -> Result<void> {
    GRAPHCAP_TRY(check_stream(s, "record_event"));
    GRAPHCAP_ASSIGN_OR_RETURN(EventState* event, check_event(e, *core_, "record_event"));
    GRAPHCAP_TRY(core_->bind_thread());
    StreamCore& stream = HandleAccess::core(s);
    std::lock_guard lock(stream.mutex());
    return stream.record_event(*event);
  }(), where);
}

Result<void> Device::wait(Stream& s, const Event& e, std::source_location where) {
  return detail::at_call([&]() -> Result<void> {
    GRAPHCAP_TRY(check_stream(s, "wait"));
    GRAPHCAP_ASSIGN_OR_RETURN(EventState* event, check_event(e, *core_, "wait", true));
    GRAPHCAP_TRY(core_->bind_thread());
    StreamCore& stream = HandleAccess::core(s);
    std::lock_guard lock(stream.mutex());
    return stream.wait_event(*event, &event->device() != core_.get());
  }(), where);
}

}  // namespace graphcap
