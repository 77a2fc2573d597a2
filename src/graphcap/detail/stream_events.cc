// StreamCore: events on a stream, and the order they establish (docs/capture-lifecycle.md,
// "Buffers on several streams" and "Several streams in one recording"). Outside recordings an
// event orders eager work between streams; inside one, a wait forks a stream into the recording
// or joins it back, and the order it makes is the graph's, never eager work's.
#include <string>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/event_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/try.h>

namespace graphcap::detail {
namespace {

// Events inside a WHILE body: a wait on an event recorded outside the body invalidates the
// recording (CUDA_ERROR_STREAM_CAPTURE_MERGE), after which ending it crashed the H200's driver;
// fork/join inside a body is not supported by graphcap (the driver accepts it).
Result<void> refuse_in_loop_body(const StreamCore& stream, const char* operation) {
  if (!stream.in_conditional_body()) return {};
  return Error(Errc::graph_state,
               std::string(operation) + ": " + stream.name() + " is recording the body of a "
               "WHILE loop, and a loop body records no events (a wait on an event recorded "
               "outside the body would invalidate the recording: "
               "CUDA_ERROR_STREAM_CAPTURE_MERGE); order other streams before begin_while or "
               "after end_while");
}

}  // namespace

Result<void> StreamCore::record_event(EventState& event) {
  if (Result<void> ok = refuse_in_loop_body(*this, "record"); !ok) return ok;
  capture::OpenRecording* recording = window_.recording_into();
  if (CUresult result = device_->driver().cuEventRecord(event.handle(), handle_);
      result != CUDA_SUCCESS) {
    Error error = Error::from_driver("cuEventRecord", result).context("record");
    // A captured call that fails invalidates the recording: it is doomed.
    if (recording != nullptr) recording->doom(error);
    return error;
  }
  EventState::Record record;
  record.point = order_point();
  record.stream_name = name();
  if (recording != nullptr) {
    record.recording = recording->id();
    record.origin = window_.origin();
    record.nodes = recording->forks().marks(index_);
  }
  event.set_record(std::move(record));
  return {};
}

Result<void> StreamCore::check_wait(const EventState& event, bool peer,
                                    capture::OpenRecording* recording) {
  const EventState::Record record = event.last_record();
  const std::uint64_t id = recording != nullptr ? recording->id() : 0;
  if (peer && (id != 0 || record.recording != 0)) {
    // A recording is a graph of one device: it neither waits for nor forks into another's.
    return Error(Errc::invalid_argument,
                 "wait: the event belongs to " + event.device().name() + " and " +
                     (id != 0 ? name() + " of " + device_->name() + " is recording"
                              : std::string("it was recorded inside a recording")) +
                     "; a recording can't span devices (order the devices' streams outside "
                     "recordings)");
  }
  if (record.point.stream == nullptr) return {};  // never recorded: CUDA adds no dependency
  if (id != 0 && record.recording == 0) {
    return Error(Errc::invalid_argument,
                 "wait: " + name() + " is recording and the event was recorded outside the "
                 "recording (on " + record.stream_name + "); waiting on it would invalidate the "
                 "recording (CUDA_ERROR_STREAM_CAPTURE_ISOLATION): order the streams before "
                 "begin_capture, or record the event inside the recording");
  }
  if (id != 0 && record.recording != id) {
    return Error(Errc::invalid_argument,
                 "wait: the event was recorded into another recording (on " + record.stream_name +
                     "); waiting on it would merge two recordings "
                     "(CUDA_ERROR_STREAM_CAPTURE_MERGE)");
  }
  if (id == 0 && record.recording != 0) {
    // A fork: checked before the driver pulls this stream into the recording.
    if (window_.state() != CaptureState::no_capture) {
      return Error(Errc::graph_state,
                   "wait: " + name() + " has a capture window of its own open (" +
                       to_string(window_.state()) + "); it can't be forked into the recording of " +
                       record.stream_name);
    }
    if (record.origin->recording_id() != record.recording) {
      return Error(Errc::invalid_argument,
                   "wait: the event was last recorded inside a recording that has ended (on " +
                       record.stream_name + "); record it again");
    }
  }
  return {};
}

Result<void> StreamCore::wait_event(const EventState& event, bool peer) {
  if (Result<void> ok = refuse_in_loop_body(*this, "wait"); !ok) return ok;
  capture::OpenRecording* recording = window_.recording_into();
  if (Result<void> ok = check_wait(event, peer, recording); !ok) return ok;
  const EventState::Record record = event.last_record();
  if (CUresult result = device_->driver().cuStreamWaitEvent(handle_, event.handle(), 0);
      result != CUDA_SUCCESS) {
    Error error = Error::from_driver("cuStreamWaitEvent", result).context("wait");
    if (recording != nullptr) recording->doom(error);
    return error;
  }
  if (record.point.stream == nullptr) return {};  // never recorded: CUDA adds no dependency
  if (recording != nullptr) {
    // Recorded: the graph's nodes are ordered, not the streams' eager work.
    recording->forks().waited(index_, record.nodes);
    order_.after_in(record.recording, record.point);
    return {};
  }
  if (record.recording != 0) {
    // The driver pulled the stream into the recording: from now on it records into it (the
    // order is the graph's, not eager work's).
    GRAPHCAP_TRY(window_.join(*record.origin, record.recording, record.nodes));
    // A fresh position: everything enqueued here so far (a replay placed after the last
    // operation too) is eager work, which the graph does not come after.
    order_.fork(record.recording, drops_.next_use(), record.point);
    return {};
  }
  order_.after(record.point);  // eager: what follows here comes after the record
  return {};
}

}  // namespace graphcap::detail
