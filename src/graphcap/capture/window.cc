#include <graphcap/capture/window.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include <graphcap/log.h>

namespace graphcap::capture {
namespace {

const char* mode_name(CUstreamCaptureMode mode) {
  switch (mode) {
    case CU_STREAM_CAPTURE_MODE_GLOBAL: return "global";
    case CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: return "thread_local";
    case CU_STREAM_CAPTURE_MODE_RELAXED: return "relaxed";
  }
  return "unknown";
}

// What usually invalidates a recording in `mode`, for the message that refuses it.
// The driver's own account of the invalidation (the fake names the offending call and thread
// from its call log), appended to graphcap's; nothing where the driver keeps none (libcuda).
std::string driver_account(GraphDriver& graphs, CUstream stream) {
  std::string account = graphs.invalidation_account(stream);
  return account.empty() ? account : "; the driver's account: " + account;
}

std::string likely_causes(CUstreamCaptureMode mode) {
  switch (mode) {
    case CU_STREAM_CAPTURE_MODE_GLOBAL:
      return "in global mode, an unsafe call (an allocation, a synchronization, an event query) "
             "made outside graphcap, on this thread or any other, invalidates it; if other threads "
             "must go on allocating or syncing meanwhile, record in thread_local mode "
             "(CaptureOptions::mode)";
    case CU_STREAM_CAPTURE_MODE_THREAD_LOCAL:
      return "in thread_local mode, an unsafe call (an allocation, a synchronization, an event "
             "query) made outside graphcap on the recording thread invalidates it";
    default:
      return "a call made outside graphcap on the recording stream (a synchronization or query "
             "of it, or a failed captured call) invalidates it";
  }
}

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
  static std::atomic<std::uint64_t> next_id{1};
  id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard book(book_);
    nodes_.clear();
    // The graph took the last recording's node list: a re-recording of the same step records as
    // many nodes, so reserve them once instead of growing (and moving every node) 8 times.
    nodes_.reserve(node_hint_);
    frontiers_.clear();
    last_node_.clear();
    sides_.clear();
    loops_.clear();
  }
  unended_bodies_.clear();
  loop_target_.store(nullptr, std::memory_order_release);
  begun_ = std::chrono::steady_clock::now();
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id_) + " begins on stream " +
                             std::to_string(stream_index_) + " (" + mode_name(mode_) + " mode)");
  }
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
  if (is_side()) return refuse_on_side("end_capture").error();
  if (Result<void> owner = check_owner_thread("end_capture"); !owner) return owner.error();
  if (std::optional<Error> open = open_loop_refusal()) return *open;
  std::optional<Error> doomed;
  {
    std::lock_guard book(book_);
    doomed = std::exchange(doomed_, std::nullopt);
  }
  return close(upload, std::move(doomed), false);
}

Result<Recording> Window::end(bool upload, const Executable& into,
                              const std::vector<CUgraphNode>& into_source_nodes) {
  if (CaptureState now = state(); now != CaptureState::capture) {
    return out_of_order("end_capture", now,
                        now == CaptureState::prepare ? "begin_capture first"
                                                     : "prepare_capture and begin_capture first");
  }
  if (Result<void> owner = check_owner_thread("end_capture"); !owner) return owner.error();
  if (std::optional<Error> open = open_loop_refusal()) return *open;
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
  GraphReport recorded;
  std::optional<Error> unjoined;
  std::vector<Window*> sides;
  {
    std::lock_guard book(book_);
    // Side streams' work the origin never waited for: refused by name, before the driver
    // answers with a bare CUDA_ERROR_STREAM_CAPTURE_UNJOINED.
    if (!doomed) unjoined = unjoined_locked();
    if (doomed_ && !doomed) doomed = std::exchange(doomed_, std::nullopt);  // doomed by a side
    recording.pins = std::move(pins_);
    recording.buffers = std::exchange(roles_, BufferRoles{});
    recording.keep_alive = std::move(keep_alive_);
    node_hint_ = nodes_.size();
    recording.nodes = std::move(nodes_);
    recording.param_nodes = std::move(param_nodes_);
    pins_.clear();
    keep_alive_.clear();
    nodes_.clear();
    param_nodes_.clear();
    frontiers_.clear();
    last_node_.clear();
    sides = std::exchange(sides_, {});
    recorded = std::exchange(recorded_, GraphReport{});
  }
  // Loops left open (an abort, a closing device) and invalidated bodies: their captures end
  // after the recording's own, innermost first, while its graph (which owns their bodies) is
  // still alive.
  std::vector<CUstream> bodies = std::exchange(unended_bodies_, {});
  {
    std::lock_guard book(book_);
    for (auto frame = loops_.rbegin(); frame != loops_.rend(); ++frame) {
      bodies.push_back(frame->body_stream);
    }
    loops_.clear();
  }
  loop_target_.store(nullptr, std::memory_order_release);

  // Which bodies are still valid must be asked before the recording's capture ends.
  std::vector<bool> active;
  for (CUstream body : bodies) active.push_back(graphs_->loop_active(body));
  Result<CapturedGraph> captured = graphs_->end(stream_);
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    if (!active[i]) {
      // An invalidated body's capture is never ended: on the H200 the process crashed (SIGSEGV)
      // in whichever of the two cuStreamEndCapture calls came second. Its stream is abandoned
      // (never used or destroyed again); the next loop gets a new one.
      abandoned_bodies_.push_back(bodies[i]);
      log(LogLevel::warn, "recording " + std::to_string(id_) + ": a loop body's capture was "
                          "invalidated; its stream is abandoned, not ended (ending it crashes "
                          "the driver)");
      continue;
    }
    if (Result<void> ended = graphs_->end_loop(bodies[i]); !ended && log_enabled(LogLevel::debug)) {
      log(LogLevel::debug, "recording " + std::to_string(id_) + ": closing a loop body: " +
                               ended.error().message());
    }
  }
  // The driver's recording is closed, and with it every side stream's part in it.
  for (Window* side : sides) side->leave();
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
  } else if (unjoined) {
    if (captured || captured.error().driver_code() != CUDA_ERROR_STREAM_CAPTURE_UNJOINED) {
      log(LogLevel::warn, "end_capture: the driver did not answer unjoined side-stream work with "
                          "CUDA_ERROR_STREAM_CAPTURE_UNJOINED as expected");
    }
    refusal = *unjoined;
  } else if (!captured) {
    refusal = captured.error();
    if (refusal->driver_code() == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
      // No graphcap operation saw it: something outside graphcap invalidated the recording.
      refusal = Error(refusal->code(),
                      refusal->message() + " (no graphcap operation saw the invalidation; the "
                      "last one recorded was " +
                          (recording.nodes.empty() ? std::string("none")
                                                   : recording.nodes.back().label.first_line()) +
                          "; " + likely_causes(mode_) + driver_account(*graphs_, stream_) + ")",
                      refusal->driver_code());
    }
  } else {
    // On request, the driver's own view of the graph, for CUDA-level detail.
    if (const char* dir = std::getenv("GRAPHCAP_DRIVER_DOT_DIR"); dir != nullptr && *dir != 0) {
      graphs_->dump_dot(*captured, std::string(dir) + "/graphcap-recording-" +
                                       std::to_string(id_) + ".dot");
    }
    if (Result<Recording> made = make_executable(*captured, recorded, into, recording); !made) {
      refusal = made.error();
    } else {
      recording = std::move(*made);
    }
  }
  if (log_enabled(LogLevel::debug)) {
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - begun_);
    std::string counts;
    for (std::size_t type = 0; type < recorded.nodes_by_type.size(); ++type) {
      if (recorded.nodes_by_type[type] == 0) continue;
      counts += std::string(counts.empty() ? "" : ", ") +
                node_type_name(static_cast<CUgraphNodeType>(type)) + " " +
                std::to_string(recorded.nodes_by_type[type]);
    }
    log(LogLevel::debug,
        "recording " + std::to_string(id_) + " ends on stream " + std::to_string(stream_index_) +
            ": " + std::to_string(recorded.node_count) + " nodes" +
            (counts.empty() ? "" : " (" + counts + ")") + " after " +
            std::to_string(took.count()) + " us; " +
            (refusal ? "refused: " + refusal->message() : std::string("instantiated")));
  }
  if (refusal) {
    // The buffers the recording would have written hold bytes no operation produced (unless
    // the caller's warm-up produced them: claim_on_refusal_ false).
    if (claim_on_refusal_) {
      for (const auto& weak : recording.buffers.writes) {
        if (auto buffer = weak.lock()) buffer->fail(*refusal);
      }
    }
    if (!sides.empty() && self_ != nullptr) {
      std::vector<const memory::SliceOwner*> side_streams;
      for (const Window* side : sides) side_streams.push_back(side->self_);
      for (auto* list : {&recording.buffers.reads, &recording.buffers.writes}) {
        for (const auto& weak : *list) {
          if (auto buffer = weak.lock()) buffer->forget_uses_by(side_streams, *self_);
        }
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
    // A param node in a loop body is a node of the body graph, not among the graph's own.
    const bool in_bodies = std::any_of(
        recording.param_nodes.begin(), recording.param_nodes.end(), [&](const ParamNode& param) {
          return std::find(nodes.begin(), nodes.end(), param.node) == nodes.end();
        });
    const bool addressable = recording.param_nodes.empty() ||
                             (into_source_nodes_ != nullptr &&
                              into_source_nodes_->size() == nodes.size() && !in_bodies);
    if (in_bodies) {
      report.update_refusal =
          "not updated: per-replay parameters were recorded in a loop body, whose nodes the "
          "graph's own node list does not name; re-instantiated";
    } else if (!addressable) {
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
  if (is_side()) return refuse_on_side("abort_capture");
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
  {
    std::lock_guard book(book_);
    doomed_.reset();
  }
  (void)close(false, Error(Errc::doomed, "abort_capture: the recording was abandoned"),
              other_thread);
  return {};
}

void Window::force_close() noexcept {
  try {
    if (is_side()) {
      leave();  // the origin's window closes the recording
    } else if (state() == CaptureState::prepare) {
      (void)abort();
    } else if (state() == CaptureState::capture) {
      const bool other_thread = mode_ != CU_STREAM_CAPTURE_MODE_RELAXED &&
                                recording_thread_ != std::this_thread::get_id();
      {
        std::lock_guard book(book_);
        doomed_.reset();
      }
      (void)close(false, Error(Errc::doomed, "device closed while the recording was open"),
                  other_thread);
    }
  } catch (...) {
    log(LogLevel::error, "closing a capture window failed unexpectedly");
  }
}

void Window::record(Operation& op, const Error* failure) {
  Window* origin = joined_.load(std::memory_order_acquire);
  (origin != nullptr ? origin : this)->record_from(op, failure, stream_index_);
}

void Window::record_from(Operation& op, const Error* failure, int stream) {
  std::lock_guard book(book_);
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
    if (!doomed_ && failure->driver_code() == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
      // Say which graphcap operation first saw the invalidation, and what came before it.
      doom_locked(Error(failure->code(),
                 failure->message() + " (the first graphcap operation to see the recording "
                 "invalidated; the one before it was " +
                     (nodes_.empty() ? std::string("none: the recording had just begun")
                                     : nodes_.back().label.first_line()) +
                     "; " + likely_causes(mode_) + driver_account(*graphs_, stream_) + ")",
                 failure->driver_code()));
    } else {
      doom_locked(*failure);
    }
    if (log_enabled(LogLevel::debug)) {
      log(LogLevel::debug, "recording " + std::to_string(id_) + ": " + op.label.first_line() +
                               " failed: " + failure->message());
    }
    return;
  }
  if (op.params != nullptr) param_nodes_.push_back(*op.params);
  // The recording stream's operations go into the innermost open loop's body (side streams'
  // never do: loops are the recording stream's): its own counts and frontier.
  LoopFrame* loop = stream == stream_index_ && !loops_.empty() ? &loops_.back() : nullptr;
  GraphReport& counts = loop != nullptr ? loop->recorded : recorded_;
  if (op.external) {
    counts.external_work = true;  // the instantiate check reads the graph's nodes instead
  } else {
    ++counts.nodes_by_type[op.node];
    ++counts.node_count;
  }
  RecordedNode node;
  node.type = op.node;
  node.label = op.external && op.label.empty()
                   ? OperationLabel::of_text("external work (record_external)")
                   : std::move(op.label);
  node.stream = stream;
  node.loop = loop != nullptr ? loop->id : 0;
  const int lane = loop != nullptr ? loop->lane : stream;
  std::vector<std::size_t>& frontier = frontiers_[lane];
  node.depends_on = std::move(frontier);
  frontier.assign(1, nodes_.size());
  last_node_[lane] = nodes_.size();
  nodes_.push_back(std::move(node));
  if (log_enabled(LogLevel::debug)) {
    std::string text = nodes_.back().label.text();
    for (char& c : text) {
      if (c == '\n') c = ' ';
    }
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": node " +
                             std::to_string(nodes_.size() - 1) + " " + node_type_name(op.node) +
                             ": " + text);
  }
}

void Window::doom(const Error& error) {
  Window* origin = joined_.load(std::memory_order_acquire);
  Window& target = origin != nullptr ? *origin : *this;
  std::lock_guard book(target.book_);
  target.doom_locked(error);
}

void Window::doom_locked(const Error& error) {
  if (!doomed_) doomed_ = error;
}

std::optional<Error> Window::open_loop_refusal() const {
  std::lock_guard book(book_);
  if (loops_.empty()) return std::nullopt;
  return Error(Errc::graph_state,
               "end_capture: " + std::to_string(loops_.size()) + " WHILE loop(s) still open (the "
               "innermost begun at node " + std::to_string(loops_.back().node) + "); end_while "
               "each first, innermost first (the recording stays open)");
}

Result<std::size_t> Window::check_loop_begin() const {
  if (CaptureState now = state(); now != CaptureState::capture) {
    return out_of_order("begin_while", now, "a loop is recorded inside a recording "
                                            "(begin_capture first)");
  }
  if (is_side()) return refuse_on_side("begin_while").error();
  if (Result<void> owner = check_owner_thread("begin_while"); !owner) return owner.error();
  std::lock_guard book(book_);
  if (loops_.size() >= kMaxLoopDepth) {
    return Error(Errc::graph_state, "begin_while: " + std::to_string(loops_.size()) +
                                        " loops are open already (at most " +
                                        std::to_string(kMaxLoopDepth) + " nest)");
  }
  return loops_.size();
}

Result<Window::LoopInfo> Window::begin_loop(CUstream body_stream, unsigned first) {
  Result<std::size_t> depth = check_loop_begin();
  if (!depth) return depth.error();
  const CUstream outer = loops_.empty() ? stream_ : loops_.back().body_stream;
  // The body is captured in RELAXED mode whatever the recording's mode: an unsafe call
  // invalidates only the recording's own capture then, never the body's. Once a body's capture
  // was invalidated, every way out of it crashed the H200's driver (docs/cuda-driver-facts.md,
  // "Conditional nodes"); graphcap's own checks of unsafe calls follow the recording's mode.
  Result<LoopNode> inserted =
      graphs_->begin_loop(outer, body_stream, first, CU_STREAM_CAPTURE_MODE_RELAXED);
  if (!inserted) {
    // Whatever of it the driver did stays in the recording (perhaps a WHILE node without a
    // body, which must never replay): refuse the recording.
    doom(inserted.error());
    return inserted.error();
  }
  static std::atomic<std::uint64_t> next_loop{1};
  LoopFrame frame;
  frame.id = next_loop.fetch_add(1, std::memory_order_relaxed);
  frame.body_stream = body_stream;
  frame.body = inserted->body;
  frame.lane = -1 - static_cast<int>(*depth);
  {
    std::lock_guard book(book_);
    // The WHILE node, recorded where the stream's work goes now (the graph, or the enclosing
    // body), depending on what the stream recorded last; later work there depends on it.
    LoopFrame* enclosing = loops_.empty() ? nullptr : &loops_.back();
    GraphReport& counts = enclosing != nullptr ? enclosing->recorded : recorded_;
    ++counts.nodes_by_type[CU_GRAPH_NODE_TYPE_CONDITIONAL];
    ++counts.node_count;
    const int lane = enclosing != nullptr ? enclosing->lane : stream_index_;
    RecordedNode node;
    node.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    node.label = OperationLabel::of_text("while loop " + std::to_string(frame.id) + " (first " +
                                         std::to_string(first) + ")");
    node.stream = stream_index_;
    node.loop = enclosing != nullptr ? enclosing->id : 0;
    node.body = frame.id;
    std::vector<std::size_t>& frontier = frontiers_[lane];
    node.depends_on = std::move(frontier);
    frontier.assign(1, nodes_.size());
    last_node_[lane] = nodes_.size();
    frame.node = nodes_.size();
    nodes_.push_back(std::move(node));
    loops_.push_back(frame);
  }
  loop_target_.store(body_stream, std::memory_order_release);
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": node " +
                             std::to_string(frame.node) + " CONDITIONAL: while loop " +
                             std::to_string(frame.id) + " begins (depth " +
                             std::to_string(*depth + 1) + ")");
  }
  return LoopInfo{frame.id, inserted->handle};
}

Result<void> Window::end_loop(std::uint64_t id) {
  if (CaptureState now = state(); now != CaptureState::capture) {
    return out_of_order("end_while", now, "the loop's recording has ended");
  }
  if (is_side()) return refuse_on_side("end_while");
  if (Result<void> owner = check_owner_thread("end_while"); !owner) return owner;
  LoopFrame frame;
  {
    std::lock_guard book(book_);
    if (loops_.empty() || loops_.back().id != id) {
      const bool open = std::any_of(loops_.begin(), loops_.end(),
                                    [&](const LoopFrame& f) { return f.id == id; });
      return Error(Errc::graph_state,
                   open ? "end_while: the loop is not the innermost open one (end the loops "
                          "begun inside it first)"
                        : "end_while: the loop is not open in this stream's recording (ended "
                          "already, or begun in another recording)");
    }
    frame = loops_.back();
  }
  std::optional<Error> failure;
  if (!graphs_->loop_active(frame.body_stream)) {
    // Invalidated (by an unsafe call elsewhere, say): don't end the body's capture before the
    // recording's own, which the driver does not survive; close() ends it after.
    unended_bodies_.push_back(frame.body_stream);
    failure = Error(Errc::driver,
                    "end_while: the loop body's capture was invalidated (" + likely_causes(mode_) +
                        ")",
                    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  } else if (Result<void> ended = graphs_->end_loop(frame.body_stream); !ended) {
    failure = ended.error();
  } else if (Result<GraphReport> body = graphs_->inspect_loop_body(frame.body, frame.recorded);
             !body) {
    failure = body.error();
  }
  {
    std::lock_guard book(book_);
    loops_.pop_back();
    // The body is closed: its work is joined by construction (the WHILE node runs it).
    frontiers_.erase(frame.lane);
    last_node_.erase(frame.lane);
    if (failure) doom_locked(*failure);
  }
  loop_target_.store(loops_.empty() ? nullptr : loops_.back().body_stream,
                     std::memory_order_release);
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": while loop " +
                             std::to_string(frame.id) + " ends (" +
                             std::to_string(frame.recorded.node_count) + " nodes in its body)" +
                             (failure ? ": " + failure->message() : std::string()));
  }
  if (failure) return *failure;
  return {};
}

std::vector<CUstream> Window::take_abandoned_bodies() {
  return std::exchange(abandoned_bodies_, {});
}

bool Window::loop_open(std::uint64_t id) const {
  std::lock_guard book(book_);
  return std::any_of(loops_.begin(), loops_.end(), [&](const LoopFrame& f) { return f.id == id; });
}

bool Window::marks_failed_writes() noexcept {
  Window* recording_into = origin();
  return recording_into == nullptr || recording_into->claim_on_refusal_;
}

Window* Window::origin() noexcept {
  if (Window* origin = joined_.load(std::memory_order_acquire)) return origin;
  return recording() ? this : nullptr;
}

Result<void> Window::join(Window& origin, std::uint64_t id, const std::vector<std::size_t>& after) {
  if (CaptureState now = state(); now != CaptureState::no_capture) {
    return out_of_order("wait", now, "only a stream outside any window can be forked into a "
                                     "recording");
  }
  {
    std::lock_guard book(origin.book_);
    if (origin.recording_id() != id) {
      return Error(Errc::graph_state,
                   "wait: the event was recorded in a recording that has ended; record it again");
    }
    origin.sides_.push_back(this);
    std::vector<std::size_t>& frontier = origin.frontiers_[stream_index_];
    frontier.insert(frontier.end(), after.begin(), after.end());
    mode_ = origin.mode_;
    id_ = id;
    joined_.store(&origin, std::memory_order_release);
  }
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

std::vector<std::size_t> Window::frontier_of(int stream) {
  std::lock_guard book(book_);
  auto found = frontiers_.find(stream);
  return found == frontiers_.end() ? std::vector<std::size_t>{} : found->second;
}

void Window::add_dependencies(int stream, const std::vector<std::size_t>& nodes) {
  std::lock_guard book(book_);
  std::vector<std::size_t>& frontier = frontiers_[stream];
  for (std::size_t node : nodes) {
    if (std::find(frontier.begin(), frontier.end(), node) == frontier.end()) {
      frontier.push_back(node);
    }
  }
}

std::optional<Error> Window::unjoined_locked() const {
  // Every node the origin's next operation would depend on, transitively.
  std::vector<bool> joined(nodes_.size(), false);
  std::vector<std::size_t> stack;
  if (auto found = frontiers_.find(stream_index_); found != frontiers_.end()) stack = found->second;
  while (!stack.empty()) {
    const std::size_t node = stack.back();
    stack.pop_back();
    if (node >= joined.size() || joined[node]) continue;
    joined[node] = true;
    for (std::size_t before : nodes_[node].depends_on) stack.push_back(before);
  }
  for (const auto& [stream, last] : last_node_) {
    if (stream == stream_index_ || joined[last]) continue;
    return Error(Errc::graph_state,
                 "end_capture: stream " + std::to_string(stream) + " was forked into the "
                 "recording and its work is not joined back into stream " +
                     std::to_string(stream_index_) + ": its last unjoined operation is " +
                     nodes_[last].label.first_line() + " (node " + std::to_string(last) +
                     "); record an event on stream " + std::to_string(stream) +
                     " after it and wait for it on stream " + std::to_string(stream_index_) +
                     " before end_capture (the driver would refuse the recording with "
                     "CUDA_ERROR_STREAM_CAPTURE_UNJOINED)");
  }
  return std::nullopt;
}

Result<void> Window::refuse_on_side(const char* operation) const {
  const Window* origin = joined_.load(std::memory_order_acquire);
  return Error(Errc::graph_state,
               std::string(operation) + ": stream " + std::to_string(stream_index_) +
                   " was forked into the recording of stream " +
                   std::to_string(origin != nullptr ? origin->stream_index_ : -1) + "; " +
                   operation + " that stream (after joining this one back)");
}

const char* node_type_name(CUgraphNodeType type) noexcept {
  static constexpr const char* kNames[] = {
      "KERNEL",       "MEMCPY",       "MEMSET",           "HOST",           "GRAPH",     "EMPTY",
      "WAIT_EVENT",   "EVENT_RECORD", "EXT_SEMAS_SIGNAL", "EXT_SEMAS_WAIT", "MEM_ALLOC", "MEM_FREE",
      "BATCH_MEM_OP", "CONDITIONAL"};
  const auto index = static_cast<std::size_t>(type);
  return index < sizeof kNames / sizeof kNames[0] ? kNames[index] : "UNKNOWN";
}

}  // namespace graphcap::capture
