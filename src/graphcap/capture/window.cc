#include <graphcap/capture/window.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include <graphcap/log.h>

namespace graphcap::capture {
namespace {

Error out_of_order(const char* operation, CaptureState state, const char* hint) {
  return Error(Errc::graph_state, std::string(operation) + ": the stream is in " +
                                      to_string(state) + " state; " + hint);
}

// One entry per buffer (a buffer used by 150 launches is listed once).
void dedupe(std::vector<std::weak_ptr<memory::BufferState>>& list) {
  std::owner_less<std::weak_ptr<memory::BufferState>> less;
  std::sort(list.begin(), list.end(), less);
  list.erase(std::unique(list.begin(), list.end(),
                         [&](const auto& a, const auto& b) { return !less(a, b) && !less(b, a); }),
             list.end());
}

template <class T>
void dedupe(std::vector<std::shared_ptr<T>>& list) {
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
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

Result<void> Window::prepare(CUstreamCaptureMode mode, bool claim_on_refusal) {
  if (CaptureState now = state(); now != CaptureState::no_capture) {
    return out_of_order("prepare_capture", now,
                        now == CaptureState::prepare
                            ? "prepare_capture was already called (run the warm-up, then begin_capture)"
                            : "a recording is open (end_capture or abort_capture it first)");
  }
  mode_ = mode;
  claim_on_refusal_ = claim_on_refusal;
  device_pool_->arm();
  staging_pool_->arm();
  set_state(CaptureState::prepare);
  return {};
}

void Window::flush_drops() {
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
  }
  device_pool_->end_priming();
  staging_pool_->end_priming();
  device_pool_->set_recording(true);
  staging_pool_->set_recording(true);
  const std::thread::id thread = std::this_thread::get_id();
  tracker_->recording_started(mode_, thread);
  if (Result<void> opened = graphs_->begin(stream_, mode_); !opened) {
    // Undo all of it: the stream stays usable and can capture again.
    tracker_->recording_ended(mode_, thread);
    device_pool_->disarm();
    staging_pool_->disarm();
    set_state(CaptureState::no_capture);
    return opened;
  }
  recording_thread_ = thread;
  doomed_.reset();
  recorded_ = GraphReport{};
  pins_.clear();
  roles_ = BufferRoles{};
  keep_alive_.clear();
  param_nodes_.clear();
  set_state(CaptureState::capture);
  return {};
}

Result<void> Window::check_owner_thread(const char* operation) const {
  if (mode_ == CU_STREAM_CAPTURE_MODE_RELAXED) return {};
  if (recording_thread_ == std::this_thread::get_id()) return {};
  std::ostringstream message;
  message << operation << ": the recording was begun on thread " << recording_thread_
          << "; in this capture mode only that thread may end it (the driver would terminate the "
             "recording with CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD); abort_capture from this "
             "thread terminates it";
  return Error(Errc::graph_state, message.str());
}

Result<Recording> Window::end(bool upload) {
  if (CaptureState now = state(); now != CaptureState::capture) {
    return out_of_order("end_capture", now,
                        now == CaptureState::prepare ? "begin_capture first"
                                                     : "prepare_capture and begin_capture first");
  }
  if (Result<void> owner = check_owner_thread("end_capture"); !owner) return owner.error();
  return close(upload, std::exchange(doomed_, std::nullopt), false);
}

Result<Recording> Window::end(bool upload, const Executable& into,
                              const std::vector<CUgraphNode>& into_source_nodes) {
  if (CaptureState now = state(); now != CaptureState::capture) {
    return out_of_order("end_capture", now,
                        now == CaptureState::prepare ? "begin_capture first"
                                                     : "prepare_capture and begin_capture first");
  }
  if (Result<void> owner = check_owner_thread("end_capture"); !owner) return owner.error();
  into_source_nodes_ = &into_source_nodes;
  Result<Recording> closed = close(upload, std::exchange(doomed_, std::nullopt), false, &into);
  into_source_nodes_ = nullptr;
  return closed;
}

Result<Recording> Window::close(bool upload, std::optional<Error> doomed, bool other_thread,
                                const Executable* into) {
  // First, before anything can fail: a stream must never be left in capture state.
  set_state(CaptureState::no_capture);
  device_pool_->disarm();
  staging_pool_->disarm();
  Recording recording;
  recording.pins = std::move(pins_);
  recording.buffers = std::exchange(roles_, BufferRoles{});
  recording.keep_alive = std::move(keep_alive_);
  recording.param_nodes = std::move(param_nodes_);
  pins_.clear();
  keep_alive_.clear();
  param_nodes_.clear();
  const GraphReport recorded = std::exchange(recorded_, GraphReport{});

  Result<CapturedGraph> captured = graphs_->end(stream_);
  // Only now may other threads' unsafe calls go ahead: the driver's recording is closed.
  tracker_->recording_ended(mode_, recording_thread_);

  std::optional<Error> refusal;
  if (doomed) {
    // Terminating another thread's recording is answered with 908: that is the expected outcome.
    const bool expected = other_thread && !captured &&
                          captured.error().driver_code() == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    if (!captured && !expected) {  // the refusal carries the original error; don't lose this one
      log(LogLevel::warn, captured.error().context("closing a refused recording").message());
    }
    refusal = Error(Errc::doomed, "end_capture: recording refused: " + doomed->message(),
                    doomed->driver_code());
  } else if (!captured) {
    refusal = captured.error();
  } else if (Result<Recording> made = make_executable(*captured, recorded, into, recording);
             !made) {
    refusal = made.error();
  } else {
    recording = std::move(*made);
  }
  if (refusal) {
    // The buffers the recording would have written hold bytes no operation produced (unless
    // the caller's warm-up produced them: claim_on_refusal_ false).
    if (claim_on_refusal_) {
      for (const auto& weak : recording.buffers.writes) {
        if (auto buffer = weak.lock()) buffer->fail(*refusal);
      }
    }
    recording = Recording{};  // unpin: these slices go back through the drop queue
    flush_drops();
    return *refusal;
  }

  dedupe(recording.pins);
  dedupe(recording.keep_alive);
  for (auto* list : {&recording.buffers.reads, &recording.buffers.writes,
                     &recording.buffers.produces}) {
    dedupe(*list);
  }
  recording.report.pinned_slices = recording.pins.size();
  for (const auto& allocation : recording.pins) {
    recording.report.pinned_bytes += allocation->slice().capacity;
  }
  // An updated executable needs no upload (the facts file: its first launch costs the same as an
  // uploaded one's).
  if (upload && recording.executable) {
    graphs_->upload(recording.executable, stream_, recording.report);
  }
  // The deferred drops: fence them now, and release what is already behind the stream.
  flush_drops();
  flush_drops();
  return recording;
}

Result<Recording> Window::make_executable(CapturedGraph& captured, const GraphReport& recorded,
                                          const Executable* into, Recording& recording) {
  Result<GraphReport> inspected = graphs_->inspect(captured, recorded);
  if (!inspected) return inspected.error();
  GraphReport& report = *inspected;
  // Param nodes are named by position among the graph's nodes: the new graph's, and, after an
  // update, the nodes of the graph `into` was instantiated from at the same positions.
  std::vector<CUgraphNode> nodes;
  if (!recording.param_nodes.empty()) {
    Result<std::vector<CUgraphNode>> listed = graphs_->nodes(captured);
    if (!listed) return listed.error();
    nodes = std::move(*listed);
  }
  if (into != nullptr) {
    report.rerecorded = true;
    const bool addressable = recording.param_nodes.empty() ||
                             (into_source_nodes_ != nullptr &&
                              into_source_nodes_->size() == nodes.size());
    if (!addressable) {
      report.update_refusal =
          "not updated: the graph's executable was instantiated from a recording without "
          "per-replay parameters (or with another node count), so the new recording's "
          "parameter nodes could not be named in it; re-instantiated";
    } else if (graphs_->update(*into, captured, report)) {
      for (ParamNode& param : recording.param_nodes) {
        const auto at = std::find(nodes.begin(), nodes.end(), param.node);
        param.node = at == nodes.end()
                         ? nullptr
                         : (*into_source_nodes_)[static_cast<std::size_t>(at - nodes.begin())];
      }
      recording.report = report;  // `into` keeps its executable and its source graph
      return std::move(recording);
    }
  }
  Result<Executable> fresh = graphs_->instantiate_inspected(captured, report);
  if (!fresh) return fresh.error();
  recording.executable = std::move(*fresh);
  recording.report = report;
  if (!recording.param_nodes.empty()) {
    recording.source = std::move(captured);  // set-params names nodes of it
    recording.source_nodes = std::move(nodes);
  }
  return std::move(recording);
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
  const bool other_thread = mode_ != CU_STREAM_CAPTURE_MODE_RELAXED &&
                            recording_thread_ != std::this_thread::get_id();
  doomed_.reset();
  (void)close(false, Error(Errc::doomed, "abort_capture: the recording was abandoned"),
              other_thread);
  return {};
}

void Window::force_close() noexcept {
  try {
    if (state() == CaptureState::prepare) {
      (void)abort();
    } else if (state() == CaptureState::capture) {
      const bool other_thread = mode_ != CU_STREAM_CAPTURE_MODE_RELAXED &&
                                recording_thread_ != std::this_thread::get_id();
      doomed_.reset();
      (void)close(false, Error(Errc::doomed, "device closed while the recording was open"),
                  other_thread);
    }
  } catch (...) {
    log(LogLevel::error, "closing a capture window failed unexpectedly");
  }
}

void Window::record(const Operation& op, const Error* failure) {
  for (const BufferUse& use : op.uses) {
    const std::shared_ptr<memory::BufferState>& buffer = *use.buffer;
    // Repeats of the last entry are skipped here (the rest are deduplicated at the close): a pass
    // of n launches of one kernel over the same buffers then holds one entry, not n.
    if (pins_.empty() || pins_.back() != buffer->memory()) pins_.push_back(buffer->memory());
    if (reads(use.access)) roles_.reads.push_back(buffer);
    if (writes(use.access)) roles_.writes.push_back(buffer);
    if (use.access == Access::write_whole && failure == nullptr) roles_.produces.push_back(buffer);
  }
  if (op.staging) pins_.push_back(op.staging);
  if (op.keep_alive && (keep_alive_.empty() || keep_alive_.back() != op.keep_alive)) {
    keep_alive_.push_back(op.keep_alive);
  }
  if (failure != nullptr) {
    doom(*failure);
    return;
  }
  if (op.params != nullptr) param_nodes_.push_back(*op.params);
  if (op.external) {
    recorded_.external_work = true;  // the instantiate check reads the graph's nodes instead
    return;
  }
  ++recorded_.nodes_by_type[op.node];
  ++recorded_.node_count;
}

void Window::doom(const Error& error) {
  if (!doomed_) doomed_ = error;
}

}  // namespace graphcap::capture
