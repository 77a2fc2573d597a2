// Events: a recorded event marks a position in the device queue (and gets a simulated timestamp
// when that position executes); an event recorded on a capturing stream marks the capture's
// frontier instead, which is what forks and joins between streams are made of.
#include <graphcap/fake/internal/fake_state.h>

#include <algorithm>

namespace graphcap::fake {

CUresult FakeState::cuEventCreate(CUevent* event, unsigned flags) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr unsigned kKnown =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  // cuda.h: an interprocess event must also disable timing.
  if ((flags & CU_EVENT_INTERPROCESS) != 0 && (flags & CU_EVENT_DISABLE_TIMING) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Event created;
  created.handle = new_handle<CUevent>();
  created.device = context->device;
  created.flags = flags;
  events_.emplace(created.handle, created);
  *event = created.handle;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuEventDestroy(CUevent event) {
  Context* context = nullptr;
  if (CUresult r = need_context_to_release(&context); r != CUDA_SUCCESS) return r;
  // A queued record of a destroyed event still runs; it just marks nothing.
  event_clocks_.erase(event);
  return events_.erase(event) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult FakeState::cuEventRecord(CUevent event_handle, CUstream handle) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  bool captured = false;
  if (CUresult r = enter_stream_call(handle, &context, &stream, &captured); r != CUDA_SUCCESS) {
    return r;
  }
  auto it = events_.find(event_handle);
  if (it == events_.end()) return refuse(*stream, CUDA_ERROR_INVALID_HANDLE);
  Event& event = it->second;
  if (captured) {
    // Measured on the H200 (graphcap-fidelity, 2026-12-04): an interprocess
    // event is not recorded into a capture: 900, and the capture stays active.
    if ((event.flags & CU_EVENT_INTERPROCESS) != 0) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    // No node: the event now names the capturing stream's frontier.
    event.state = Event::State::captured;
    event.capture = stream->capture;
    event.nodes = stream->frontier;
    return CUDA_SUCCESS;
  }
  event.state = Event::State::recorded;
  event.done = false;
  event.stream = stream->id;
  event.record_seq = next_seq_;  // the position enqueue() is about to take
  enqueue(*stream, "cuEventRecord", EventRecordWork{event_handle});
  return CUDA_SUCCESS;
}

// An event last recorded inside a capture: 907 while that capture is active (and it is
// invalidated); once the capture is invalidated or over, 1 (measured on the H200 by
// graphcap-fidelity, where the fake had answered 907, 900 or 0). Before the unsafe-call rule.
CUresult FakeState::captured_event(const Event& event) {
  auto found = captures_.find(event.capture);
  if (found != captures_.end() && found->second.status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    return refuse(found->second, CUDA_ERROR_CAPTURED_EVENT);
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult FakeState::cuEventQuery(CUevent event_handle) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  auto it = events_.find(event_handle);
  if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  Event& event = it->second;
  if (event.state == Event::State::captured) return captured_event(event);
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  if (event.state != Event::State::recorded) return CUDA_SUCCESS;
  if (!event.done) {
    if (paused_) return CUDA_ERROR_NOT_READY;
    run_until(event.record_seq);
  }
  if (options_.detect_races) host_waited(event_handle);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuEventSynchronize(CUevent event_handle) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  auto it = events_.find(event_handle);
  if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (it->second.state == Event::State::captured) return captured_event(it->second);
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  if (it->second.state != Event::State::recorded) return CUDA_SUCCESS;
  const std::uint64_t seq = it->second.record_seq;
  const std::uint64_t stream_id = it->second.stream;
  run_until(seq);
  if (options_.detect_races) host_waited(event_handle);
  Stream* stream = stream_by_id(stream_id);
  if (stream == nullptr) return CUDA_SUCCESS;
  return take_error(*stream, seq).value_or(CUDA_SUCCESS);
}

CUresult FakeState::cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (milliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto first = events_.find(start);
  auto last = events_.find(end);
  if (first == events_.end() || last == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  // Measured (graphcap-fidelity): the start event is looked at in full before the end event
  // (a start never recorded or without timing is 400 whatever the end is, 24 programs); for each,
  // its capture comes first: recorded in a capture still active is 907 even without timing (8
  // programs), in one invalidated or over is 1; then no timing, or never recorded, is 400.
  for (const Event* event : {&first->second, &last->second}) {
    if (event->state == Event::State::captured) {
      auto found = captures_.find(event->capture);
      return found == captures_.end() || found->second.status != CU_STREAM_CAPTURE_STATUS_ACTIVE
                 ? CUDA_ERROR_INVALID_VALUE
                 : CUDA_ERROR_CAPTURED_EVENT;
    }
    if ((event->flags & CU_EVENT_DISABLE_TIMING) != 0) return CUDA_ERROR_INVALID_HANDLE;
    if (event->state == Event::State::never) return CUDA_ERROR_INVALID_HANDLE;
  }
  if (!first->second.done || !last->second.done) {
    if (paused_) return CUDA_ERROR_NOT_READY;
    run_until(std::max(first->second.record_seq, last->second.record_seq));
  }
  const double nanoseconds =
      static_cast<double>(last->second.time_ns) - static_cast<double>(first->second.time_ns);
  *milliseconds = static_cast<float>(nanoseconds / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace graphcap::fake
