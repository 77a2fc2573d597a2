// Streams: creation and destruction, the NULL and per-thread streams, host waits on a stream, and
// cross-stream waits (which, outside capture, the single global queue already satisfies).
#include <graphcap/fake/internal/fake_state.h>

#include <algorithm>
#include <variant>

namespace graphcap::fake {

FakeState::Stream* FakeState::stream_by_id(std::uint64_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

CUresult FakeState::resolve_stream(CUstream handle, Context& context, Stream** stream) {
  if (handle == nullptr || handle == stream_legacy()) {
    *stream = stream_by_id(context.default_stream);
    return CUDA_SUCCESS;
  }
  if (handle == stream_per_thread()) {
    const auto key = std::make_pair(std::this_thread::get_id(), context.device);
    auto it = per_thread_streams_.find(key);
    if (it == per_thread_streams_.end()) {
      const std::uint64_t id = new_stream(context.device, nullptr, CU_STREAM_DEFAULT, false).id;
      it = per_thread_streams_.emplace(key, id).first;
    }
    *stream = stream_by_id(it->second);
    return CUDA_SUCCESS;
  }
  auto it = user_streams_.find(handle);
  if (it == user_streams_.end()) return CUDA_ERROR_INVALID_HANDLE;
  *stream = stream_by_id(it->second);
  return CUDA_SUCCESS;
}

FakeState::Stream* FakeState::find_stream(CUstream handle) {
  Context* context = nullptr;
  if (handle == nullptr || handle == stream_legacy() || handle == stream_per_thread()) {
    if (need_context(&context) != CUDA_SUCCESS) return nullptr;
    if (handle == stream_per_thread()) {
      auto it =
          per_thread_streams_.find(std::make_pair(std::this_thread::get_id(), context->device));
      return it == per_thread_streams_.end() ? nullptr : stream_by_id(it->second);
    }
    return stream_by_id(context->default_stream);
  }
  auto it = user_streams_.find(handle);
  return it == user_streams_.end() ? nullptr : stream_by_id(it->second);
}

CUresult FakeState::cuStreamCreate(CUstream* stream, unsigned flags) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~unsigned{CU_STREAM_NON_BLOCKING}) != 0) return CUDA_ERROR_INVALID_VALUE;
  *stream = new_stream(context->device, new_handle<CUstream>(), flags, false).handle;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuStreamDestroy(CUstream handle) {
  Context* context = nullptr;
  if (CUresult r = need_context_to_release(&context); r != CUDA_SUCCESS) return r;
  auto it = user_streams_.find(handle);
  if (it == user_streams_.end()) return CUDA_ERROR_INVALID_HANDLE;
  Stream& stream = *stream_by_id(it->second);
  // Measured (graphcap-fidelity, 2026-12-04): destroying a stream that joined
  // a capture leaves the capture as it was (its origin goes on capturing). Destroying the stream
  // a capture began on ends that capture as a failed end does (nothing could end it any more):
  // a graph it captured into is destroyed with it (measured, 2026-12-04: 6 generated programs
  // answered 1, or had no nodes to name, for that graph afterwards).
  if (Capture* capture = capture_of(stream)) {
    if (capture->into_body && capture->status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      // Measured (driver 580.159.04, docs/measurements/probes/conditional_probe.cu): destroying a
      // stream whose capture into a conditional body was invalidated crashed the process
      // (SIGSEGV), a GLOBAL body's on the H200 and a RELAXED one's on the H100, even after the
      // enclosing capture ended and the stream was synchronised.
      violation("cuStreamDestroy of a stream whose capture into a conditional body was "
                "invalidated: the driver crashed (SIGSEGV); leave such a stream undestroyed");
    }
    if (capture->origin == stream.id) {
      refuse(*capture, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
      end_failed_capture(*capture);
    } else {
      // Measured (H100, 2026-12-07, 2 programs): work the stream captured and never joined back
      // still makes the end UNJOINED (904).
      capture->destroyed_members_last.insert(capture->destroyed_members_last.end(),
                                             stream.captured_last.begin(),
                                             stream.captured_last.end());
      capture->members.erase(stream.id);
      stream.capture = 0;
    }
  }
  // CUDA lets queued work finish after cuStreamDestroy returns; the fake runs it now.
  run_until(stream.last_seq);
  remove_stream(stream.id);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuStreamSynchronize(CUstream handle) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(handle, *context, &stream); r != CUDA_SUCCESS) return r;
  if (Capture* capture = capture_of(*stream)) {
    // Measured on the H200: 900 whether the capture is active (which invalidates it) or already
    // invalidated.
    return capture->status == CU_STREAM_CAPTURE_STATUS_ACTIVE
               ? refuse(*capture, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
               : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  run_until(stream->last_seq);
  if (options_.detect_races) host_waited(*stream);
  return take_error(*stream, stream->last_seq + 1).value_or(CUDA_SUCCESS);
}

CUresult FakeState::cuStreamQuery(CUstream handle) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  if (CUresult none = need_context(&context); none != CUDA_SUCCESS) {
    // Measured (graphcap-fidelity): a stream the user created carries its context; a thread
    // without a current context may query it.
    auto it = user_streams_.find(handle);
    if (it == user_streams_.end()) return none;
    stream = stream_by_id(it->second);
  } else if (CUresult bad = resolve_stream(handle, *context, &stream); bad != CUDA_SUCCESS) {
    return bad;
  }
  if (Capture* capture = capture_of(*stream)) {
    // Measured on the H200: 900 whether the capture is active (which invalidates it) or already
    // invalidated.
    return capture->status == CU_STREAM_CAPTURE_STATUS_ACTIVE
               ? refuse(*capture, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
               : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  // Its own work, or work it waits for (cuStreamWaitEvent), still queued.
  if (!queue_.empty() && queue_.front().seq <= stream->last_seq) {
    if (paused_) return CUDA_ERROR_NOT_READY;
    run_until(stream->last_seq);  // the device catches up
  }
  if (options_.detect_races) host_waited(*stream);
  // A query reports a fault of the stream's finished work too, but leaves it for the next wait
  // to report (CUDA keeps it for every later call: it is sticky for the context).
  return stream->error ? stream->error->code : CUDA_SUCCESS;
}

CUresult FakeState::cuStreamWaitEvent(CUstream handle, CUevent event_handle, unsigned flags) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  bool captured = false;
  if (CUresult r = enter_stream_call(handle, &context, &stream, &captured); r != CUDA_SUCCESS) {
    return r;
  }
  auto it = events_.find(event_handle);
  if (it == events_.end()) return refuse(*stream, CUDA_ERROR_INVALID_HANDLE);
  // Measured on the H200 (graphcap-fidelity, 2026-12-03): unknown flags are 1 and leave a capture
  // as it was; an external wait outside a capture is 401.
  if ((flags & ~unsigned{CU_EVENT_WAIT_EXTERNAL}) != 0) return CUDA_ERROR_INVALID_VALUE;
  Event& event = it->second;
  Capture* event_capture = nullptr;
  if (event.state == Event::State::captured) {
    auto found = captures_.find(event.capture);
    if (found != captures_.end()) event_capture = &found->second;
    // Measured (graphcap-fidelity): an event last recorded in a capture
    // that is invalidated or over is 1, and a capture waiting on it is invalidated.
    if (event_capture == nullptr || event_capture->status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
    }
  }
  if (!captured && (flags & CU_EVENT_WAIT_EXTERNAL) != 0) return CUDA_ERROR_ILLEGAL_STATE;

  if (captured) {
    Capture& capture = *capture_of(*stream);
    // Measured (graphcap-fidelity, 2026-12-04, 5 programs): a capture does not wait on an
    // interprocess event, recorded or not: 900, and the capture is invalidated.
    if ((flags & CU_EVENT_WAIT_EXTERNAL) == 0 && (event.flags & CU_EVENT_INTERPROCESS) != 0) {
      return refuse(capture, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    if ((flags & CU_EVENT_WAIT_EXTERNAL) != 0) {
      add_node(*stream, internal::WaitEventWork{event_handle});
      return CUDA_SUCCESS;
    }
    if (event_capture == &capture) {
      // A join inside one capture: the stream now also depends on the event's nodes.
      for (std::size_t node : event.nodes) {
        bool present = false;
        for (std::size_t mine : stream->frontier) present = present || mine == node;
        if (!present) stream->frontier.push_back(node);
      }
      return CUDA_SUCCESS;
    }
    if (event_capture != nullptr) {
      refuse(*event_capture, CUDA_ERROR_STREAM_CAPTURE_MERGE);
      return refuse(capture, CUDA_ERROR_STREAM_CAPTURE_MERGE);
    }
    if (event.state == Event::State::recorded) {
      return refuse(capture, CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    }
    return CUDA_SUCCESS;  // never recorded: no dependency
  }

  if (event_capture != nullptr) {
    // A fork: the waiting stream joins the event's capture, depending on the event's nodes.
    if (stream->legacy) return refuse(*event_capture, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    fork_into_capture(*stream, *event_capture, event);
    return CUDA_SUCCESS;
  }
  // Outside capture the single global queue already orders everything recorded before; what the
  // stream's own completion means grows to cover the event's work (a sync of this stream waits
  // for it, as on CUDA: the strict fake's checks of returned memory found the gap).
  if (event.state == Event::State::recorded && !event.done) {
    stream->last_seq = std::max(stream->last_seq, event.record_seq);
  }
  if (options_.detect_races && event.state == Event::State::recorded) {
    eager_wait(*stream, event_handle, event);
  }
  return CUDA_SUCCESS;
}

void FakeState::fork_into_capture(Stream& stream, Capture& capture, const Event& event) {
  stream.capture = capture.id;
  stream.frontier = event.nodes;
  stream.captured_last.clear();
  capture.members.insert(stream.id);
}

void FakeState::join_captures_of_wait_nodes(Stream& stream, const internal::ExecBody& body) {
  // Every launch passes here: with no capture in the process there is nothing to join.
  if (stream.legacy || captures_.empty()) return;  // legacy: not measured, left as it was
  for (const internal::NodeData& node : body.nodes) {
    const auto* wait = std::get_if<internal::WaitEventWork>(&node.work);
    if (wait == nullptr) continue;
    auto event = events_.find(wait->event);
    if (event == events_.end() || event->second.state != Event::State::captured) continue;
    auto capture = captures_.find(event->second.capture);
    if (capture == captures_.end() || capture->second.status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      continue;
    }
    fork_into_capture(stream, capture->second, event->second);
    return;  // one capture at most: the stream is capturing now
  }
}

}  // namespace graphcap::fake
