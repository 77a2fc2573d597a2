// Device: events, and the order they establish between streams (docs/capture-lifecycle.md,
// "Buffers on several streams" and "Several streams in one recording").
#include <string>

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

// Events inside a WHILE body: a wait on an event recorded outside the body invalidates the
// recording (CUDA_ERROR_STREAM_CAPTURE_MERGE), after which ending it crashed the H200's driver;
// fork/join inside a body is not supported by graphcap (the driver accepts it).
Result<void> refuse_in_loop_body(const StreamCore& stream, const char* operation) {
  if (stream.window().loop_target() == nullptr) return {};
  return Error(Errc::graph_state,
               std::string(operation) + ": " + stream.name() + " is recording the body of a "
               "WHILE loop, and a loop body records no events (a wait on an event recorded "
               "outside the body would invalidate the recording: "
               "CUDA_ERROR_STREAM_CAPTURE_MERGE); order other streams before begin_while or "
               "after end_while");
}

}  // namespace

Result<void> Device::record(Event& e, Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "record"));
  GRAPHCAP_ASSIGN_OR_RETURN(EventState* event, check_event(e, *core_, "record"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  std::lock_guard lock(stream.mutex());
  GRAPHCAP_TRY(refuse_in_loop_body(stream, "record"));
  if (CUresult result = core_->driver().cuEventRecord(event->handle(), stream.handle());
      result != CUDA_SUCCESS) {
    Error error = Error::from_driver("cuEventRecord", result).context("record");
    // A captured call that fails invalidates the recording: it is doomed.
    if (stream.window().recording()) stream.window().doom(error);
    return error;
  }
  EventState::Record record;
  record.point = stream.order_point();
  record.recording = stream.window().recording_id();
  record.stream_name = stream.name();
  if (record.recording != 0) {
    record.origin = stream.window().origin();
    record.nodes = record.origin->frontier_of(stream.index());
  }
  event->set_record(std::move(record));
  return {};
}

Result<void> Device::wait(Stream& s, const Event& e) {
  GRAPHCAP_TRY(check_stream(s, "wait"));
  GRAPHCAP_ASSIGN_OR_RETURN(EventState* event, check_event(e, *core_, "wait", true));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  const EventState::Record record = event->last_record();
  std::lock_guard lock(stream.mutex());
  GRAPHCAP_TRY(refuse_in_loop_body(stream, "wait"));
  const std::uint64_t recording = stream.window().recording_id();
  if (&event->device() != core_.get() && (recording != 0 || record.recording != 0)) {
    // A recording is a graph of one device: it neither waits for nor forks into another's.
    return Error(Errc::invalid_argument,
                 "wait: the event belongs to " + event->device().name() + " and " +
                     (recording != 0 ? stream.name() + " of " + core_->name() + " is recording"
                                     : std::string("it was recorded inside a recording")) +
                     "; a recording can't span devices (order the devices' streams outside "
                     "recordings)");
  }
  // Checked before the driver sees the wait: each of these would invalidate a recording.
  if (record.point.stream != nullptr) {
    if (recording != 0 && record.recording == 0) {
      return Error(Errc::invalid_argument,
                   "wait: " + stream.name() + " is recording and the event was recorded outside "
                   "the recording (on " + record.stream_name + "); waiting on it would invalidate "
                   "the recording (CUDA_ERROR_STREAM_CAPTURE_ISOLATION): order the streams "
                   "before begin_capture, or record the event inside the recording");
    }
    if (recording != 0 && record.recording != recording) {
      return Error(Errc::invalid_argument,
                   "wait: the event was recorded into another recording (on " +
                       record.stream_name + "); waiting on it would merge two recordings "
                       "(CUDA_ERROR_STREAM_CAPTURE_MERGE)");
    }
    if (recording == 0 && record.recording != 0) {
      // A fork: checked before the driver pulls this stream into the recording.
      if (stream.window().state() != CaptureState::no_capture) {
        return Error(Errc::graph_state,
                     "wait: " + stream.name() + " has a capture window of its own open (" +
                         to_string(stream.window().state()) + "); it can't be forked into the "
                         "recording of " + record.stream_name);
      }
      if (record.origin->recording_id() != record.recording) {
        return Error(Errc::invalid_argument,
                     "wait: the event was last recorded inside a recording that has ended (on " +
                         record.stream_name + "); record it again");
      }
    }
  }
  if (CUresult result = core_->driver().cuStreamWaitEvent(stream.handle(), event->handle(), 0);
      result != CUDA_SUCCESS) {
    Error error = Error::from_driver("cuStreamWaitEvent", result).context("wait");
    if (stream.window().recording()) stream.window().doom(error);
    return error;
  }
  if (record.point.stream == nullptr) return {};  // never recorded: CUDA adds no dependency
  stream.order_after(record.point);
  if (recording == 0 && record.recording != 0) {
    // The driver pulled the stream into the recording: from now on it records into it.
    if (Result<void> joined = stream.window().join(*record.origin, record.recording, record.nodes);
        !joined) {
      return joined.error();
    }
  } else if (recording != 0) {
    stream.window().origin()->add_dependencies(stream.index(), record.nodes);
  }
  return {};
}

}  // namespace graphcap
