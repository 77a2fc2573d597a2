#include <graphcap/capture/window.h>

#include <string>
#include <utility>

#include <graphcap/log.h>

namespace graphcap::capture {
namespace {

Error out_of_order(const char* operation, CaptureState state, const char* hint) {
  return Error(Errc::graph_state, std::string(operation) + ": the stream is in " +
                                      to_string(state) + " state; " + hint);
}

}  // namespace

void Window::set_state(CaptureState state) noexcept {
  // Replays check the gate, not the state: keep the two in step.
  if (state == CaptureState::capture) {
    gate_->set(ReplayGate::kRecording);
  } else {
    gate_->clear(ReplayGate::kRecording);
  }
  state_.store(state, std::memory_order_release);
}

void Window::disarm() noexcept {
  device_pool_->disarm();
  staging_pool_->disarm();
}

Result<void> Window::prepare(CUstreamCaptureMode mode, bool claim_on_refusal,
                             std::shared_ptr<PoolShare> pool) {
  if (CaptureState now = state(); now != CaptureState::no_capture) {
    return out_of_order("prepare_capture", now,
                        now == CaptureState::prepare
                            ? "prepare_capture was already called (run the warm-up, then begin_capture)"
                            : "a recording is open (end_capture or abort_capture it first)");
  }
  recording_.prepare(mode, claim_on_refusal, std::move(pool));
  device_pool_->arm();
  staging_pool_->arm();
  set_state(CaptureState::prepare);
  return {};
}

void Window::flush_drops() {
  if (drops_->pending() == 0) return;  // nothing to fence or release (the usual close)
  CaptureTracker::UnsafeCall call = tracker_->enter_unsafe_call();
  drops_->flush(static_cast<bool>(call));
}

Result<void> Window::begin() {
  if (CaptureState now = state(); now != CaptureState::prepare) {
    return out_of_order("begin_capture", now,
                        now == CaptureState::no_capture
                            ? "call prepare_capture and run the warm-up first"
                            : "a recording is already open (two recordings never overlap)");
  }
  {
    // Draining waits on the stream, which an open recording (this thread's, or any thread's in
    // global mode) forbids: checked before anything touches the driver.
    CaptureTracker::UnsafeCall call = tracker_->enter_unsafe_call();
    if (!call) {
      return Error(Errc::graph_state,
                   "begin_capture: another recording is open in global mode or on this thread; "
                   "draining the drop queue now would invalidate it (begin after it ends)");
    }
    if (Result<void> drained = drops_->drain(); !drained) {
      return std::move(drained).error().context("begin_capture");
    }
    device_pool_->end_priming();
    if (recording_.pool_on_virtual_memory()) {
      // The recording lays its intermediates out in the pool's range: what the warm-up's
      // allocations left free in the stream's persistent pool would only stay cached.
      device_pool_->trim_persistent();
    }
  }
  staging_pool_->end_priming();
  device_pool_->set_recording(true);
  staging_pool_->set_recording(true);
  if (Result<void> laid_out = recording_.lay_out_pool(); !laid_out) {
    disarm();
    recording_.unprepare();  // lets go of what the layout held: nothing more stays mapped
    set_state(CaptureState::no_capture);
    return std::move(laid_out).error().context("begin_capture");
  }
  if (Result<void> opened = recording_.open(stream_index_); !opened) {
    // Undo all of it: the stream stays usable and can capture again.
    disarm();
    recording_.unprepare();
    set_state(CaptureState::no_capture);
    return opened;
  }
  set_state(CaptureState::capture);
  return {};
}

Result<std::unique_ptr<Recording>> Window::end(bool upload, const IntoGraph* into) {
  if (CaptureState now = state(); now != CaptureState::capture) {
    return out_of_order("end_capture", now,
                        now == CaptureState::prepare ? "begin_capture first"
                                                     : "prepare_capture and begin_capture first");
  }
  if (is_side()) return refuse_on_side("end_capture").error();
  if (Result<void> owner = recording_.check_thread("end_capture"); !owner) return owner.error();
  if (std::optional<Error> open = recording_.frames().open_refusal()) return *open;
  // Instantiating (and updating, uploading) while another recording is open in global mode,
  // or another of this thread's, would invalidate that one (docs/cuda-driver-facts.md): refused
  // before anything closes. Held to the end of the close, so no global recording opens meanwhile.
  CaptureTracker::UnsafeCall allowed =
      tracker_->enter_unsafe_call_beside(recording_.registration());
  if (!allowed) {
    return Error(Errc::graph_state,
                 "end_capture: another recording is open in global mode (on another thread), "
                 "or another recording of this thread is; instantiating the graph now would "
                 "invalidate it: end this one once that one has ended, or record both in "
                 "thread_local mode (this recording stays open)");
  }
  // First, before anything can fail: a stream must never be left in capture state.
  set_state(CaptureState::no_capture);
  disarm();
  ClosedRecording closed =
      recording_.close({upload, into, false, std::nullopt, drops_->last_enqueued()});
  allowed.end();
  // Unpinning may take other streams' mutexes: only outside the unsafe-call scope.
  if (closed.refusal) {
    closed.recording.reset();  // back through the drop queue
    flush_drops();
    return *closed.refusal;
  }
  // The deferred drops: fence them now, and release what is already behind the stream.
  flush_drops();
  flush_drops();
  return std::move(closed.recording);
}

Result<void> Window::abort() {
  if (is_side()) return refuse_on_side("abort_capture");
  switch (state()) {
    case CaptureState::no_capture:
      return out_of_order("abort_capture", CaptureState::no_capture, "there is nothing to abort");
    case CaptureState::prepare:
      disarm();
      recording_.unprepare();
      set_state(CaptureState::no_capture);
      return {};
    case CaptureState::capture:
      break;
  }
  abandon("abort_capture: the recording was abandoned");
  flush_drops();
  return {};
}

void Window::abandon(const char* why) {
  set_state(CaptureState::no_capture);
  disarm();
  ClosedRecording closed = recording_.close(
      {false, nullptr, recording_.on_other_thread(), Error(Errc::doomed, why),
       drops_->last_enqueued()});
  closed.recording.reset();  // unpinned: back through the drop queue
}

void Window::force_close() noexcept {
  try {
    if (is_side()) {
      leave();  // the origin's window closes the recording
    } else if (state() == CaptureState::prepare) {
      (void)abort();
    } else if (state() == CaptureState::capture) {
      abandon("device closed while the recording was open");
    }
  } catch (...) {
    log(LogLevel::error, "closing a capture window failed unexpectedly");
  }
}

Result<void> Window::join(Window& origin, std::uint64_t id, const std::vector<std::size_t>& after) {
  if (CaptureState now = state(); now != CaptureState::no_capture) {
    return out_of_order("wait", now, "only a stream outside any window can be forked into a "
                                     "recording");
  }
  if (Result<void> joined = origin.recording_.forks().join(*this, stream_index_, id, after);
      !joined) {
    return joined;
  }
  joined_.store(&origin, std::memory_order_release);
  set_state(CaptureState::capture);
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id) + ": stream " +
                             std::to_string(stream_index_) + " forks from stream " +
                             std::to_string(origin.stream_index_));
  }
  return {};
}

void Window::leave() noexcept {
  set_state(CaptureState::no_capture);
  joined_.store(nullptr, std::memory_order_release);
}

Result<void> Window::refuse_on_side(const char* operation) const {
  const Window* origin = joined_.load(std::memory_order_acquire);
  return Error(Errc::graph_state,
               std::string(operation) + ": stream " + std::to_string(stream_index_) +
                   " was forked into the recording of stream " +
                   std::to_string(origin != nullptr ? origin->stream_index_ : -1) + "; " +
                   operation + " that stream (after joining this one back)");
}

Result<std::size_t> Window::check_conditional(const ConditionalStep& step) {
  using Kind = ConditionalStep::Kind;
  const char* operation = step.name();
  const std::uint64_t now_recording = recording_id();
  // A loop or condition of another recording: named before any other refusal (a condition's
  // only inside a recording; outside, the state's refusal below says why).
  if (step.kind == Kind::end_while && step.recording != now_recording) {
    return Error(Errc::graph_state,
                 "end_while: the loop was begun in another recording (of this stream or another)");
  }
  if (step.kind != Kind::begin_while && step.kind != Kind::end_while &&
      step.kind != Kind::condition && now_recording != 0 && step.recording != now_recording) {
    return Error(Errc::graph_state,
                 std::string(operation) +
                     ": the condition was made in another recording (of this stream or another)");
  }
  if (CaptureState now = state(); now != CaptureState::capture) {
    const char* hint = "the branch's recording has ended";
    switch (step.kind) {
      case Kind::begin_while:
      case Kind::begin_if:
      case Kind::begin_switch:
        hint = "a conditional node is recorded inside a recording (begin_capture first)";
        break;
      case Kind::condition:
        hint = "a condition is made inside a recording (begin_capture first)";
        break;
      case Kind::end_while: hint = "the loop's recording has ended"; break;
      case Kind::begin_else: hint = "the IF's recording has ended"; break;
      case Kind::begin_case: hint = "the SWITCH's recording has ended"; break;
      case Kind::end_if:
      case Kind::end_switch: break;
    }
    return out_of_order(operation, now, hint);
  }
  if (is_side()) return refuse_on_side(operation).error();
  if (Result<void> owner = recording_.check_thread(operation); !owner) return owner.error();
  if (!step.opens_node()) return std::size_t{0};
  Result<std::size_t> depth = recording_.frames().next_depth();
  if (!depth) return std::move(depth).error().context(operation);
  return depth;
}

}  // namespace graphcap::capture
