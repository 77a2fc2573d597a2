#include <graphcap/capture/open_recording.h>

#include <graphcap/driver/error_names.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <utility>

#include <graphcap/capture/window.h>
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

// The driver's own account of the invalidation (the fake names the offending call and thread
// from its call log), appended to graphcap's; nothing where the driver keeps none (libcuda).
std::string driver_account(GraphDriver& graphs, CUstream stream) {
  std::string account = graphs.invalidation_account(stream);
  return account.empty() ? account : "; the driver's account: " + account;
}

template <class T>
void dedupe(std::vector<std::shared_ptr<T>>& list) {
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
}

}  // namespace

// ---- The lifecycle --------------------------------------------------------------------------

void OpenRecording::prepare(CUstreamCaptureMode mode, bool claim_on_refusal,
                            std::shared_ptr<PoolShare> pool) {
  mode_ = mode;
  claim_on_refusal_ = claim_on_refusal;
  pool_ = pool ? std::make_unique<PoolWindow>(std::move(pool)) : nullptr;
}

void OpenRecording::unprepare() noexcept {
  claim_on_refusal_ = true;
  pool_.reset();
}

Result<void> OpenRecording::open(int stream_index) {
  stream_index_ = stream_index;
  registration_ = tracker_->register_recording(mode_);
  if (Result<void> opened = graphs_->begin(stream_, mode_); !opened) {
    registration_.release();  // undo all of it: the stream stays usable
    return opened;
  }
  static std::atomic<std::uint64_t> next_id{1};
  {
    std::lock_guard book(book_);
    id_ = next_id.fetch_add(1, std::memory_order_relaxed);
    open_ = true;
    doomed_.reset();
    recorded_ = GraphReport{};
    pins_.clear();
    roles_ = BufferRoles{};
    keep_alive_.clear();
    param_nodes_.clear();
    // A re-recording of the same step records as many nodes: reserve them once instead of
    // growing (and moving every node) 8 times.
    topology_.clear(node_hint_);
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
  return {};
}

std::uint64_t OpenRecording::id() const {
  std::lock_guard book(book_);
  return open_ ? id_ : 0;
}

bool OpenRecording::on_other_thread() const noexcept {
  return mode_ != CU_STREAM_CAPTURE_MODE_RELAXED &&
         registration_.thread() != std::this_thread::get_id();
}

Result<void> OpenRecording::check_thread(const char* operation) const {
  if (!on_other_thread()) return {};
  std::ostringstream message;
  message << operation << ": the recording was begun on thread " << registration_.thread()
          << "; in this capture mode only that thread may end it (the driver would terminate the "
             "recording with CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD); abort_capture from this "
             "thread terminates it";
  return Error(Errc::graph_state, message.str());
}

ClosedRecording OpenRecording::close(CloseRequest request) {
  ClosedRecording out;
  Recording& recording = out.recording;
  GraphReport recorded;
  std::optional<Error> doomed;
  std::optional<Error> unjoined;
  std::vector<Window*> sides;
  std::vector<CUstream> bodies = std::exchange(unended_bodies_, {});
  {
    std::lock_guard book(book_);
    open_ = false;
    doomed = request.abandon ? std::move(request.abandon) : std::exchange(doomed_, std::nullopt);
    doomed_.reset();
    // Side streams' work the origin never waited for: refused by name, before the driver
    // answers with a bare CUDA_ERROR_STREAM_CAPTURE_UNJOINED.
    if (!doomed) unjoined = unjoined_locked();
    recording.pins = std::exchange(pins_, {});
    recording.buffers = std::exchange(roles_, BufferRoles{});
    recording.keep_alive = std::exchange(keep_alive_, {});
    recording.param_nodes = std::exchange(param_nodes_, {});
    node_hint_ = topology_.size();
    recording.nodes = topology_.take();
    sides = std::exchange(sides_, {});
    recorded = std::exchange(recorded_, GraphReport{});
    // Loops left open (an abort, a closing device) end after the recording's own capture,
    // innermost first, while its graph (which owns their bodies) is still alive.
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
  // The driver's recording is closed, and with it every side stream's part in it; only now may
  // other threads' unsafe calls go ahead.
  for (Window* side : sides) side->leave();
  registration_.release();

  // The refusal is decided before anything is changed: `into`, the pool, the claims.
  std::optional<Error>& refusal = out.refusal;
  if (doomed) {
    // Terminating another thread's recording is answered with 908: that is the expected outcome.
    const bool expected = request.other_thread && !captured &&
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
  } else if (std::optional<Error> outlived = pool_ ? pool_->outlived() : std::nullopt) {
    refusal = std::move(outlived);
  } else {
    // On request, the driver's own view of the graph, for CUDA-level detail.
    if (const char* dir = std::getenv("GRAPHCAP_DRIVER_DOT_DIR"); dir != nullptr && *dir != 0) {
      graphs_->dump_dot(*captured, std::string(dir) + "/graphcap-recording-" +
                                       std::to_string(id_) + ".dot");
    }
    if (Result<void> made = make_executable(*captured, recorded, request.into, recording); !made) {
      refusal = made.error();
    }
  }
  log_close(recorded, refusal);

  // The side streams' uses were recorded, not run: a graph's nodes run on the origin's stream (a
  // refused recording's never run), so the uses become the origin's.
  if (!sides.empty() && self_ != nullptr) {
    std::vector<const memory::SliceOwner*> side_streams;
    for (const Window* side : sides) side_streams.push_back(side->stream());
    recording.buffers.forget_uses_by(side_streams, *self_, request.sequence);
  }
  if (refusal) {
    // The buffers the recording would have written hold bytes no operation produced (unless
    // the caller's warm-up produced them: claim_on_refusal false).
    if (claim_on_refusal_) recording.buffers.fail_writes(*refusal);
    if (pool_) pool_->poison_survivors();
  } else {
    dedupe(recording.pins);
    dedupe(recording.keep_alive);
    recording.buffers.dedupe();
    recording.report.pinned_slices = recording.pins.size();
    GraphMemory& memory = recording.report.memory;
    std::size_t device_pinned = 0;
    for (const auto& allocation : recording.pins) {
      recording.report.pinned_bytes += allocation->slice().capacity;
      if (allocation->slice().kind == memory::SliceKind::device) {
        device_pinned += allocation->slice().capacity;
      } else {
        memory.host_bytes += allocation->slice().capacity;
      }
    }
    if (pool_) recording.report.pool_shared_bytes = pool_->adopt(recording.pins);
    memory.pool_bytes = recording.report.pool_shared_bytes;
    memory.own_bytes = device_pinned - memory.pool_bytes;
    // An updated executable needs no upload (the facts file: its first launch costs the same as
    // an uploaded one's).
    if (request.upload && recording.executable) {
      graphs_->upload(recording.executable, stream_, recording.report);
    }
  }
  unprepare();
  return out;
}

Result<void> OpenRecording::make_executable(CapturedGraph& captured, const GraphReport& recorded,
                                            const IntoGraph* into, Recording& recording) {
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
                             (into->source_nodes.size() == nodes.size() && !in_bodies);
    if (in_bodies) {
      report.update_refusal =
          "not updated: per-replay parameters were recorded in a loop body, whose nodes the "
          "graph's own node list does not name; re-instantiated";
    } else if (!addressable) {
      report.update_refusal =
          "not updated: the graph's executable was instantiated from a recording without "
          "per-replay parameters (or with another node count), so the new recording's "
          "parameter nodes could not be named in it; re-instantiated";
    } else if (graphs_->update(into->executable, captured, report)) {
      for (ParamNode& param : recording.param_nodes) {
        const auto at = std::find(nodes.begin(), nodes.end(), param.node);
        param.node = at == nodes.end()
                         ? nullptr
                         : into->source_nodes[static_cast<std::size_t>(at - nodes.begin())];
      }
      recording.report = report;  // `into` keeps its executable and its source graph
      return {};
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
  return {};
}

void OpenRecording::log_close(const GraphReport& recorded,
                              const std::optional<Error>& refusal) const {
  if (!log_enabled(LogLevel::debug)) return;
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
          (counts.empty() ? "" : " (" + counts + ")") + " after " + std::to_string(took.count()) +
          " us; " + (refusal ? "refused: " + refusal->message() : std::string("instantiated")));
}

// ---- Operations entering the recording --------------------------------------------------------

Result<void> OpenRecording::record(Operation& op, int stream, const Error* failure,
                                   CUstream issued_on) {
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
                     (topology_.empty() ? std::string("none: the recording had just begun")
                                        : topology_.back().label.first_line()) +
                     "; " + likely_causes(mode_) + driver_account(*graphs_, stream_) + ")",
                 failure->driver_code()));
    } else {
      doom_locked(*failure);
    }
    if (log_enabled(LogLevel::debug)) {
      log(LogLevel::debug, "recording " + std::to_string(id_) + ": " + op.label.first_line() +
                               " failed: " + failure->message());
    }
    return {};
  }
  if (op.params != nullptr) {
    // The node just recorded is the capture's one dependency now (docs/cuda-driver-facts.md,
    // cuStreamGetCaptureInfo): the node Graph::set names.
    Result<CUgraphNode> node = graphs_->last_node(issued_on);
    if (!node) {
      Error error = std::move(node).error().context(
          "finding the recorded node of a launch that takes a Param");
      doom_locked(error);
      return error;
    }
    op.params->node = *node;
    param_nodes_.push_back(std::move(*op.params));
  }
  // The origin stream's operations go into the innermost open loop's body (side streams' never
  // do: loops are the origin's): its own counts and lane.
  LoopFrame* loop = stream == stream_index_ && !loops_.empty() ? &loops_.back() : nullptr;
  if (op.condition != 0) {
    for (LoopFrame& frame : loops_) {
      if (frame.handle == op.condition) frame.condition_taken = true;
    }
  }
  GraphReport& counts = loop != nullptr ? loop->recorded : recorded_;
  if (op.external) {
    counts.external_work = true;  // the instantiate check reads the graph's nodes instead
  } else {
    ++counts.nodes_by_type[op.node];
    ++counts.node_count;
  }
  RecordedNode& node = topology_.add(loop != nullptr ? loop->lane : stream);
  node.type = op.node;
  node.label = op.external && op.label.empty()
                   ? OperationLabel::of_text("external work (record_external)")
                   : std::move(op.label);
  node.stream = stream;
  node.loop = loop != nullptr ? loop->id : 0;
  const std::size_t added = topology_.size() - 1;
  if (log_enabled(LogLevel::debug)) {
    std::string text = topology_.back().label.text();
    for (char& c : text) {
      if (c == '\n') c = ' ';
    }
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": node " + std::to_string(added) +
                             " " + node_type_name(op.node) + ": " + text);
  }
  return {};
}

void OpenRecording::doom(const Error& error) {
  std::lock_guard book(book_);
  doom_locked(error);
}

void OpenRecording::doom_locked(const Error& error) {
  if (!doomed_) doomed_ = error;
}

std::vector<std::size_t> OpenRecording::marks(int stream) const {
  std::lock_guard book(book_);
  return topology_.frontier(stream);
}

void OpenRecording::waited(int stream, const std::vector<std::size_t>& nodes) {
  std::lock_guard book(book_);
  topology_.add_dependencies(stream, nodes);
}

Result<void> OpenRecording::join(Window& side, int stream, std::uint64_t id,
                                 const std::vector<std::size_t>& after) {
  std::lock_guard book(book_);
  if (!open_ || id_ != id) {
    return Error(Errc::graph_state,
                 "wait: the event was recorded in a recording that has ended; record it again");
  }
  sides_.push_back(&side);
  topology_.add_dependencies(stream, after);
  return {};
}

std::shared_ptr<memory::BufferState> OpenRecording::lend(
    std::size_t bytes, const std::shared_ptr<memory::SliceOwner>& owner) {
  return pool_ ? pool_->lend(bytes, owner) : nullptr;
}

void OpenRecording::allocated(const std::shared_ptr<memory::Allocation>& memory, bool warm_up) {
  if (pool_) pool_->allocated(memory, warm_up);
}

std::optional<Error> OpenRecording::unjoined_locked() const {
  const std::optional<std::pair<int, std::size_t>> side = topology_.unjoined(stream_index_);
  if (!side) return std::nullopt;
  const auto [stream, last] = *side;
  return Error(Errc::graph_state,
               "end_capture: stream " + std::to_string(stream) + " was forked into the "
               "recording and its work is not joined back into stream " +
                   std::to_string(stream_index_) + ": its last unjoined operation is " +
                   topology_.at(last).label.first_line() + " (node " + std::to_string(last) +
                   "); record an event on stream " + std::to_string(stream) +
                   " after it and wait for it on stream " + std::to_string(stream_index_) +
                   " before end_capture (the driver would refuse the recording with "
                   "CUDA_ERROR_STREAM_CAPTURE_UNJOINED)");
}

// ---- WHILE loops ------------------------------------------------------------------------------

Result<std::size_t> OpenRecording::next_loop_depth() const {
  std::lock_guard book(book_);
  if (loops_.size() >= kMaxLoopDepth) {
    return Error(Errc::graph_state, "begin_while: " + std::to_string(loops_.size()) +
                                        " loops are open already (at most " +
                                        std::to_string(kMaxLoopDepth) + " nest)");
  }
  return loops_.size();
}

Result<OpenRecording::LoopInfo> OpenRecording::begin_loop(CUstream body_stream, unsigned first) {
  Result<std::size_t> depth = next_loop_depth();
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
  frame.handle = inserted->handle;
  frame.first = first;
  frame.lane = -1 - static_cast<int>(*depth);
  {
    std::lock_guard book(book_);
    // The WHILE node, recorded where the stream's work goes now (the graph, or the enclosing
    // body), depending on what the stream recorded last; later work there depends on it.
    LoopFrame* enclosing = loops_.empty() ? nullptr : &loops_.back();
    GraphReport& counts = enclosing != nullptr ? enclosing->recorded : recorded_;
    ++counts.nodes_by_type[CU_GRAPH_NODE_TYPE_CONDITIONAL];
    ++counts.node_count;
    RecordedNode& node = topology_.add(enclosing != nullptr ? enclosing->lane : stream_index_);
    node.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    node.label = OperationLabel::of_text("while loop " + std::to_string(frame.id) + " (first " +
                                         std::to_string(first) + ")");
    node.stream = stream_index_;
    node.loop = enclosing != nullptr ? enclosing->id : 0;
    node.body = frame.id;
    frame.node = topology_.size() - 1;
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

Result<void> OpenRecording::end_loop(std::uint64_t id) {
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
  if (frame.first != 0 && !frame.condition_taken) {
    // Its condition starts true every replay and nothing can set it to 0: on a GPU the replay
    // would never end. Refused before the body closes, so a kernel can still be recorded.
    return Error(Errc::graph_state,
                 "end_while: the loop's condition starts true (begin_while's `first`) and no "
                 "kernel recorded since begin_while takes it (Arg::condition(loop)), so nothing "
                 "could end the loop: every replay would run forever; record the kernel that "
                 "sets it first (the loop stays open)");
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
    topology_.drop_lane(frame.lane);
    if (failure) doom_locked(*failure);
    loop_target_.store(loops_.empty() ? nullptr : loops_.back().body_stream,
                       std::memory_order_release);
  }
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": while loop " +
                             std::to_string(frame.id) + " ends (" +
                             std::to_string(frame.recorded.node_count) + " nodes in its body)" +
                             (failure ? ": " + failure->message() : std::string()));
  }
  if (failure) return *failure;
  return {};
}

bool OpenRecording::loop_open(std::uint64_t id) const {
  std::lock_guard book(book_);
  return std::any_of(loops_.begin(), loops_.end(), [&](const LoopFrame& f) { return f.id == id; });
}

std::optional<Error> OpenRecording::open_loop_refusal() const {
  std::lock_guard book(book_);
  if (loops_.empty()) return std::nullopt;
  return Error(Errc::graph_state,
               "end_capture: " + std::to_string(loops_.size()) + " WHILE loop(s) still open (the "
               "innermost begun at node " + std::to_string(loops_.back().node) + "); end_while "
               "each first, innermost first (the recording stays open)");
}

}  // namespace graphcap::capture
