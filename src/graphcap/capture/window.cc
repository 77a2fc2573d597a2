#include <graphcap/capture/window.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>

#include <graphcap/log.h>

namespace graphcap::capture {
namespace {

Error out_of_order(const char* operation, CaptureState state, const char* hint) {
  return Error(Errc::graph_state, std::string(operation) + ": the stream is in " +
                                      to_string(state) + " state; " + hint);
}

// One entry per buffer (a buffer used by 150 launches is listed once).
void dedupe(std::vector<std::weak_ptr<detail::BufferState>>& list) {
  std::owner_less<std::weak_ptr<detail::BufferState>> less;
  std::sort(list.begin(), list.end(), less);
  list.erase(std::unique(list.begin(), list.end(),
                         [&](const auto& a, const auto& b) { return !less(a, b) && !less(b, a); }),
             list.end());
}

}  // namespace

void Window::set_state(CaptureState state) noexcept {
  // Replays check the gate, not the state: keep the two in step.
  if (state == CaptureState::capture) {
    gate_->set(detail::ReplayGate::kRecording);
  } else {
    gate_->clear(detail::ReplayGate::kRecording);
  }
  state_.store(state, std::memory_order_release);
}

Result<void> Window::prepare() {
  if (CaptureState now = state(); now != CaptureState::no_capture) {
    return out_of_order("prepare_capture", now,
                        now == CaptureState::prepare
                            ? "prepare_capture was already called (run the warm-up, then begin_capture)"
                            : "a recording is open (end_capture or abort_capture it first)");
  }
  device_pool_->arm();
  staging_pool_->arm();
  set_state(CaptureState::prepare);
  return {};
}

Result<void> Window::begin() {
  if (CaptureState now = state(); now != CaptureState::prepare) {
    return out_of_order("begin_capture", now,
                        now == CaptureState::no_capture
                            ? "call prepare_capture and run the warm-up first"
                            : "a recording is already open (two recordings never overlap)");
  }
  // Checked before anything that touches the driver: draining waits on the stream, which an open
  // recording (this thread's, or any thread's in global mode) forbids.
  if (tracker_->unsafe_calls_forbidden()) {
    return Error(Errc::graph_state,
                 "begin_capture: another recording is open in global mode or on this thread; "
                 "draining the drop queue now would invalidate it (begin after it ends)");
  }
  if (Result<void> drained = drops_->drain(); !drained) {
    return std::move(drained).error().context("begin_capture");
  }
  device_pool_->end_priming();
  staging_pool_->end_priming();
  device_pool_->set_recording(true);
  staging_pool_->set_recording(true);
  tracker_->recording_started(mode_);
  if (Result<void> opened = graphs_->begin(stream_, mode_); !opened) {
    // Undo all of it: the stream stays usable and can capture again.
    tracker_->recording_ended(mode_);
    device_pool_->disarm();
    staging_pool_->disarm();
    set_state(CaptureState::no_capture);
    return opened;
  }
  recording_thread_ = std::this_thread::get_id();
  doomed_.reset();
  recorded_ = GraphReport{};
  touched_.clear();
  roles_ = BufferRoles{};
  set_state(CaptureState::capture);
  return {};
}

Result<void> Window::check_owner_thread(const char* operation) const {
  if (mode_ == CU_STREAM_CAPTURE_MODE_RELAXED) return {};
  if (recording_thread_ == std::this_thread::get_id()) return {};
  std::ostringstream message;
  message << operation << ": the recording was begun on thread " << recording_thread_
          << "; in this capture mode only that thread may end it (the driver would terminate the "
             "recording with CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)";
  return Error(Errc::graph_state, message.str());
}

void Window::leave_recording() noexcept {
  // First, before anything can fail: a stream must never be left in capture state.
  set_state(CaptureState::no_capture);
  device_pool_->disarm();
  staging_pool_->disarm();
  tracker_->recording_ended(mode_);
}

Result<Closed> Window::end(bool upload) {
  if (CaptureState now = state(); now != CaptureState::capture) {
    return out_of_order("end_capture", now,
                        now == CaptureState::prepare ? "begin_capture first"
                                                     : "prepare_capture and begin_capture first");
  }
  if (Result<void> owner = check_owner_thread("end_capture"); !owner) return owner.error();
  leave_recording();
  return close_recording(upload, std::exchange(doomed_, std::nullopt));
}

Result<Closed> Window::close_recording(bool upload, std::optional<Error> doomed) {
  std::vector<std::shared_ptr<detail::Allocation>> touched = std::move(touched_);
  BufferRoles roles = std::exchange(roles_, BufferRoles{});
  touched_.clear();
  const bool may_query = !tracker_->unsafe_calls_forbidden();

  const GraphReport recorded = std::exchange(recorded_, GraphReport{});
  Result<Instantiated> instantiated = graphs_->instantiate(stream_, doomed, recorded);
  if (!instantiated) {
    // The buffers the recording would have written hold bytes no operation produced.
    for (const auto& weak : roles.writes) {
      if (auto buffer = weak.lock()) buffer->fail(instantiated.error());
    }
    touched.clear();  // unpin: these slices go back through the drop queue
    drops_->flush(may_query);
    return instantiated.error();
  }

  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (auto* list : {&roles.reads, &roles.writes, &roles.produces}) dedupe(*list);
  Closed closed{std::move(*instantiated), std::move(touched), std::move(roles)};
  closed.graph.report.pinned_slices = closed.pins.size();
  for (const auto& allocation : closed.pins) {
    closed.graph.report.pinned_bytes += allocation->slice().capacity;
  }
  if (upload) graphs_->upload(closed.graph.executable, stream_, closed.graph.report);
  // The deferred drops: fence them now, and release what is already behind the stream.
  drops_->flush(may_query);
  drops_->flush(may_query);
  return closed;
}

Result<void> Window::abort() {
  switch (state()) {
    case CaptureState::no_capture:
      return out_of_order("abort_capture", CaptureState::no_capture, "there is nothing to abort");
    case CaptureState::prepare:
      device_pool_->disarm();
      staging_pool_->disarm();
      set_state(CaptureState::no_capture);
      return {};
    case CaptureState::capture:
      break;
  }
  if (Result<void> owner = check_owner_thread("abort_capture"); !owner) return owner;
  leave_recording();
  Result<Closed> closed =
      close_recording(false, Error(Errc::doomed, "abort_capture: the recording was abandoned"));
  return {};
}

void Window::force_close() noexcept {
  try {
    if (state() == CaptureState::prepare) {
      (void)abort();
    } else if (state() == CaptureState::capture) {
      leave_recording();
      Result<Closed> closed = close_recording(
          false, Error(Errc::doomed, "device closed while the recording was open"));
    }
  } catch (...) {
    log(LogLevel::error, "closing a capture window failed unexpectedly");
  }
}

void Window::touch(const std::shared_ptr<detail::Allocation>& allocation) {
  touched_.push_back(allocation);
}

void Window::claim(const std::shared_ptr<detail::BufferState>& buffer) {
  roles_.writes.push_back(buffer);
}

void Window::read(const std::shared_ptr<detail::BufferState>& buffer) {
  roles_.reads.push_back(buffer);
}

void Window::produce(const std::shared_ptr<detail::BufferState>& buffer) {
  roles_.produces.push_back(buffer);
}

void Window::doom(const Error& error) {
  if (!doomed_) doomed_ = error;
}

}  // namespace graphcap::capture
