#include <graphcap/capture/open_recording.h>

#include <graphcap/driver/error_names.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <unordered_map>
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

// The recorded nodes of the graph itself (not of a conditional body), in recording order: the
// order cuGraphGetNodes lists a captured graph's nodes in, when no external work added any.
std::vector<std::size_t> top_level_nodes(const Recording& recording) {
  std::vector<std::size_t> top;
  for (std::size_t i = 0; i < recording.nodes.size(); ++i) {
    if (recording.nodes[i].loop == 0) top.push_back(i);
  }
  return top;
}

// "; graphcap's node i: <its label's first line>" for the driver's node `position` of the graph,
// nothing when graphcap's record can't say which (external work added nodes it did not record).
std::string graphcap_node(const Recording& recording, std::size_t position, bool external_work) {
  const std::vector<std::size_t> top = top_level_nodes(recording);
  if (external_work || position >= top.size()) return {};
  const std::size_t node = top[position];
  const RecordedNode& recorded = recording.nodes[node];
  return "; graphcap's node " + std::to_string(node) + ": " +
         (recorded.label.empty() ? std::string(node_type_name(recorded.type))
                                 : recording.label(node).first_line());
}

// A refused census (memory nodes: only external work makes them) names the recording's external
// work, where it was declared.
Error with_external_sites(const Error& error, const Recording& recording) {
  std::string sites;
  for (std::size_t i = 0; i < recording.nodes.size(); ++i) {
    if (recording.nodes[i].type != CU_GRAPH_NODE_TYPE_EMPTY) continue;
    sites += std::string(sites.empty() ? "" : ", ") + "node " + std::to_string(i) + " (" +
             recording.label(i).first_line() + ")";
  }
  if (sites.empty()) return error;
  return Error(error.code(), error.message() + " (the recording's external work: " + sites + ")",
               error.driver_code());
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
  kept_at_close_ = false;
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
    frames_.clear();
    conditions_.clear();
    body_graphs_.clear();
    node_priorities_ = false;
    programmatic_edges_ = 0;
  }
  unended_bodies_.clear();
  loop_target_.store(nullptr, std::memory_order_release);
  between_cases_.store(false, std::memory_order_release);
  begun_ = std::chrono::steady_clock::now();
  // Read once a recording, as it begins, not at every close (a getenv was the largest single
  // part of graphcap's own work in an update close on the fake; docs/performance.md).
  const char* dot_dir = std::getenv("GRAPHCAP_DRIVER_DOT_DIR");
  driver_dot_dir_ = dot_dir != nullptr ? dot_dir : "";
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

void OpenRecording::recycle(Recording& replaced) noexcept {
  std::lock_guard book(book_);
  topology_.recycle(std::move(replaced.nodes), std::move(replaced.store));
}

ClosedRecording OpenRecording::close(CloseRequest request) {
  ClosedRecording out;
  out.recording = std::make_unique<Recording>();
  Recording& recording = *out.recording;
  GraphReport recorded;
  std::optional<Error> doomed;
  std::optional<Error> unjoined;
  std::vector<Window*> sides;
  std::vector<std::weak_ptr<memory::BufferState>> allocated;
  std::vector<CUstream> bodies = std::exchange(unended_bodies_, {});
  {
    std::lock_guard book(book_);
    open_ = false;
    doomed = request.abandon ? std::move(request.abandon) : std::exchange(doomed_, std::nullopt);
    doomed_.reset();
    // Side streams' work the origin never waited for: refused by name, before the driver
    // answers with a bare CUDA_ERROR_STREAM_CAPTURE_UNJOINED.
    if (!doomed) unjoined = unjoined_locked();
    // (The recording is new: its lists are empty, so a swap hands them over.)
    recording.pins.swap(pins_);
    recording.buffers = std::exchange(roles_, BufferRoles{});
    recording.keep_alive.swap(keep_alive_);
    recording.param_nodes.swap(param_nodes_);
    allocated = std::exchange(allocated_inside_, {});
    node_hint_ = topology_.size();
    recording.nodes = topology_.take();
    recording.store = topology_.take_store();
    sides = std::exchange(sides_, {});
    recorded = std::exchange(recorded_, GraphReport{});
    recorded.node_priorities = node_priorities_;
    recorded.programmatic_edges = programmatic_edges_;
    // Bodies left open (an abort, a closing device) end after the recording's own capture,
    // innermost first, while its graph (which owns them) is still alive.
    for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame) {
      if (frame->body_open && !frame->stuck) bodies.push_back(frame->body_stream);
    }
    frames_.clear();
  }
  loop_target_.store(nullptr, std::memory_order_release);
  between_cases_.store(false, std::memory_order_release);

  // Which bodies are still valid must be asked before the recording's capture ends; they are
  // ended after it (out of line: most recordings have none).
  std::vector<bool> active;
  if (!bodies.empty()) [[unlikely]] active = bodies_active(bodies);
  Result<CapturedGraph> captured = graphs_->end(stream_);
  if (!bodies.empty()) [[unlikely]] end_bodies(bodies, active);
  // The driver's recording is closed, and with it every side stream's part in it; only now may
  // other threads' unsafe calls go ahead.
  for (Window* side : sides) side->leave();
  registration_.release();

  // The refusal is decided before anything is changed: `into`, the pool, the claims.
  std::optional<Error>& refusal = out.refusal;
  std::optional<Error> outlived;
  kept_at_close_ = std::any_of(allocated.begin(), allocated.end(),
                               [](const auto& weak) { return !weak.expired(); });
  if (doomed || unjoined || !captured) [[unlikely]] {
    refusal = close_refusal(request, captured, doomed, unjoined, recording);
  } else if (pool_ && (outlived = pool_->outlived())) [[unlikely]] {
    refusal = std::move(outlived);
  } else if (kept_at_close_ && !claim_on_refusal_) [[unlikely]] {
    refusal = Error(Errc::graph_state,
                    "end_capture: a buffer allocated inside the recording outlived it, and the "
                    "window's warm-up was the step's one execution (claim_on_refusal false): "
                    "only the graph's replays would write that buffer, so it holds no data now "
                    "(allocate buffers that outlive the recording before prepare_capture, or in "
                    "the warm-up)");
  } else {
    // On request, the driver's own view of the graph, for CUDA-level detail.
    if (!driver_dot_dir_.empty()) [[unlikely]] {
      graphs_->dump_dot(*captured, driver_dot_dir_ + "/graphcap-recording-" +
                                       std::to_string(id_) + ".dot");
    }
    if (Result<void> made = make_executable(*captured, recorded, request.into, recording); !made)
        [[unlikely]] {
      refusal = made.error();
    }
  }
  log_close(recorded, refusal);

  // The recording's uses were recorded, not run: a refused recording's never run, so each
  // buffer is left with the users it had without them; a graph's nodes run on the origin's
  // stream, so its side streams' uses become the origin's.
  std::vector<const memory::SliceOwner*> side_streams;
  for (const Window* side : sides) side_streams.push_back(side->stream());
  auto close_uses = [&] {
    if (self_ != nullptr) {
      recording.buffers.recording_closed(id_, !refusal, side_streams, *self_, request.sequence);
    }
  };
  if (refusal) [[unlikely]] {
    close_uses();
    // The buffers the recording would have written hold bytes no operation produced (unless
    // the caller's warm-up produced them: claim_on_refusal false).
    if (claim_on_refusal_) recording.buffers.fail_writes(*refusal);
    if (pool_) pool_->poison_survivors();
  } else {
    dedupe(recording.pins);
    dedupe(recording.keep_alive);
    recording.buffers.dedupe();
    close_uses();
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

std::vector<bool> OpenRecording::bodies_active(const std::vector<CUstream>& bodies) const {
  std::vector<bool> active;
  for (CUstream body : bodies) {
    Result<bool> valid = graphs_->body_active(body);
    if (!valid) {
      // Not known to be valid: left open and abandoned (destroying its stream ends a valid
      // capture as well).
      log(LogLevel::warn, std::move(valid).error()
                              .context("recording " + std::to_string(id_) +
                                       ": asking whether a conditional body's capture is valid")
                              .message());
    }
    active.push_back(valid && *valid);
  }
  return active;
}

void OpenRecording::end_bodies(const std::vector<CUstream>& bodies,
                               const std::vector<bool>& active) {
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    if (!active[i]) {
      // An invalidated body's capture is never ended: on the H200 the process crashed (SIGSEGV)
      // in whichever of the two cuStreamEndCapture calls came second. Its stream is abandoned
      // (never used or destroyed again); the next loop gets a new one.
      abandoned_bodies_.push_back(bodies[i]);
      log(LogLevel::warn, "recording " + std::to_string(id_) + ": a conditional body's "
                          "capture was invalidated; its stream is abandoned, not ended (ending it "
                          "crashes the driver)");
      continue;
    }
    if (Result<void> ended = graphs_->end_body(bodies[i]); !ended && log_enabled(LogLevel::debug)) {
      log(LogLevel::debug, "recording " + std::to_string(id_) + ": closing a conditional body: " +
                               ended.error().message());
    }
  }
}

Error OpenRecording::close_refusal(const CloseRequest& request,
                                   const Result<CapturedGraph>& captured,
                                   const std::optional<Error>& doomed,
                                   const std::optional<Error>& unjoined,
                                   const Recording& recording) const {
  if (doomed) {
    // Terminating another thread's recording is answered with 908: that is the expected outcome.
    const bool expected = request.other_thread && !captured &&
                          captured.error().driver_code() == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    // The driver's close failing too is not lost: a refusal returned to its caller says it in
    // its message (so the log says it at info only); an abort, which answers success, warns.
    std::string closing;
    if (!captured && !expected) {
      const Error failed = captured.error().context("closing a refused recording");
      log(request.abandon ? LogLevel::warn : LogLevel::info, failed.message());
      if (!request.abandon) closing = " (" + failed.message() + ")";
    }
    return Error(Errc::doomed, "end_capture: recording refused: " + doomed->message() + closing,
                 doomed->driver_code());
  }
  if (unjoined) {
    if (captured || captured.error().driver_code() != CUDA_ERROR_STREAM_CAPTURE_UNJOINED) {
      log(LogLevel::warn, "end_capture: the driver did not answer unjoined side-stream work with "
                          "CUDA_ERROR_STREAM_CAPTURE_UNJOINED as expected");
    }
    return *unjoined;
  }
  const Error& error = captured.error();
  if (error.driver_code() != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) return error;
  // No graphcap operation saw it: something outside graphcap invalidated the recording.
  return Error(error.code(),
               error.message() + " (no graphcap operation saw the invalidation; the "
               "last one recorded was " +
                   (recording.nodes.empty() ? std::string("none")
                                            : recording.label(recording.nodes.size() - 1)
                                                  .first_line()) +
                   "; " + likely_causes(mode_) + driver_account(*graphs_, stream_) + ")",
               error.driver_code());
}

Result<void> OpenRecording::make_executable(CapturedGraph& captured, const GraphReport& recorded,
                                            const IntoGraph* into, Recording& recording) {
  // Param nodes are named by position among the graph's nodes: the new graph's, and, after an
  // update, the nodes of the graph `into` was instantiated from at the same positions.
  std::vector<CUgraphNode> nodes;
  if (!recording.param_nodes.empty()) {
    Result<std::vector<CUgraphNode>> listed = graphs_->nodes(captured);
    if (!listed) return listed.error();
    nodes = std::move(*listed);
  }
  // A re-recording is offered to `into`'s executable first. The memory-node rule needs no query
  // of the new graph then: cuGraphExecUpdate takes only a graph of the same topology with the same
  // node type at every position (otherwise TOPOLOGY_CHANGED or NODE_TYPE_CHANGED, and the
  // executable is untouched), and `into`'s graph was checked for memory nodes when it was
  // instantiated; so an update that succeeds proves the new graph holds none, and its node
  // counts are `into`'s. Only a refused update (or a first recording) pays the census below
  // (one cuGraphGetNodes; a walk of cuGraphNodeGetType where external work made the counts
  // unknown). This was a driver query on every update close (issue 24).
  GraphReport update_report;
  if (into != nullptr) {
    update_report.rerecorded = true;
    // Each param node's position among the graph's nodes (kNone: not among them). One pass over
    // the nodes, one probe per param node: a std::find per param node was O(n^2) for a
    // re-recording whose n nodes all take params (issue 24).
    constexpr std::size_t kNone = ~std::size_t{0};
    std::vector<std::size_t> positions(recording.param_nodes.size(), kNone);
    if (!recording.param_nodes.empty()) {
      std::unordered_map<CUgraphNode, std::size_t> position;
      position.reserve(nodes.size());
      for (std::size_t i = 0; i < nodes.size(); ++i) position.emplace(nodes[i], i);
      for (std::size_t p = 0; p < recording.param_nodes.size(); ++p) {
        if (auto at = position.find(recording.param_nodes[p].node); at != position.end()) {
          positions[p] = at->second;
        }
      }
    }
    // A param node in a loop body is a node of the body graph, not among the graph's own.
    const bool in_bodies =
        std::find(positions.begin(), positions.end(), kNone) != positions.end();
    const bool addressable = recording.param_nodes.empty() ||
                             (into->source_nodes.size() == nodes.size() && !in_bodies);
    if (in_bodies) {
      update_report.update_refusal =
          "not updated: per-replay parameters were recorded in a loop body, whose nodes the "
          "graph's own node list does not name; re-instantiated";
    } else if (!addressable) {
      update_report.update_refusal =
          "not updated: the graph's executable was instantiated from a recording without "
          "per-replay parameters (or with another node count), so the new recording's "
          "parameter nodes could not be named in it; re-instantiated";
    } else {
      GraphReport report;
      report.end_time = captured.end_time;
      report.nodes_by_type = into->report.nodes_by_type;  // proven above
      report.node_count = into->report.node_count;
      report.external_work = recorded.external_work;
      report.node_priorities = recorded.node_priorities;
      report.programmatic_edges = recorded.programmatic_edges;
      if (graphs_->update(into->executable, captured, report)) {
        for (std::size_t p = 0; p < recording.param_nodes.size(); ++p) {
          recording.param_nodes[p].node =
              positions[p] == kNone ? nullptr : into->source_nodes[positions[p]];
        }
        recording.report = std::move(report);  // `into` keeps its executable and source graph
        return {};
      }
      update_report = std::move(report);
      if (update_report.update_error_node) {
        // Named in graphcap's terms too, before the "; re-instantiated" that ends the refusal.
        std::string& why = update_report.update_refusal;
        const std::string named =
            graphcap_node(recording, *update_report.update_error_node, recorded.external_work);
        const std::size_t end = why.rfind("; re-instantiated");
        why.insert(end == std::string::npos ? why.size() : end, named);
      }
    }
  }
  Result<GraphReport> inspected = graphs_->inspect(captured, recorded);
  if (!inspected) return with_external_sites(inspected.error(), recording);
  GraphReport& report = *inspected;
  report.node_priorities = recorded.node_priorities;
  report.programmatic_edges = recorded.programmatic_edges;
  if (into != nullptr) {
    // What the refused (or untried) update says, beside the census of the new graph.
    report.rerecorded = true;
    report.updated = false;
    report.update_result = update_report.update_result;
    report.update_refusal = std::move(update_report.update_refusal);
    report.update_error_node = update_report.update_error_node;
    report.update_error_node_type = update_report.update_error_node_type;
    report.update_time = update_report.update_time;
  }
  InstantiateFailure failure;
  Result<Executable> fresh = graphs_->instantiate_inspected(captured, report, &failure);
  if (!fresh) {
    if (failure.node == nullptr) return fresh.error();
    const Error& error = fresh.error();
    return Error(error.code(), error.message() + ": " +
                                   name_failed_node(captured, recording, failure),
                 error.driver_code());
  }
  recording.executable = std::move(*fresh);
  recording.report = std::move(report);
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
  if (op.keep_alive && (keep_alive_.empty() || keep_alive_.back().get() != op.keep_alive.id)) {
    keep_alive_.push_back(op.keep_alive.share(op.keep_alive.owner));
  }
  if (failure != nullptr) [[unlikely]] {
    record_failure_locked(op, *failure);
    return {};
  }
  if (op.params != nullptr) {
    if (Result<void> named = record_param_node_locked(op, issued_on); !named) return named;
  }
  // The origin stream's operations go into the innermost open body (side streams' never do:
  // conditional nodes are the origin's): its lane; the graph's own counts are the graph's nodes.
  Frame* frame = stream == stream_index_ && !frames_.empty() ? &frames_.back() : nullptr;
  if (op.condition != 0) [[unlikely]] record_condition_locked(op.condition);
  if (frame != nullptr) {
    ++frame->body_nodes;
  } else if (op.external) {
    recorded_.external_work = true;  // the instantiate check reads the graph's nodes instead
  } else {
    ++recorded_.nodes_by_type[op.node];
    ++recorded_.node_count;
  }
  node_priorities_ = node_priorities_ || op.priority;
  RecordedNode& node = topology_.add(frame != nullptr ? frame->lane : stream);
  node.type = op.node;
  // (Not a conditional expression: that would move the label into a temporary first.)
  if (op.external && op.label.empty()) {
    OperationLabel external = OperationLabel::of_text("external work (record_external)");
    external.where = op.label.where;
    topology_.set_label(node, std::move(external));
  } else {
    topology_.set_label(node, std::move(op.label));
  }
  node.stream = stream;
  node.loop = frame != nullptr ? frame->id : 0;
  node.branch_body = frame != nullptr ? frame->body : 0;
  if (op.programmatic) [[unlikely]] {
    // As the driver makes them (P01): programmatic edges from kernels, ordinary ones otherwise.
    node.programmatic = true;
    node.for_each_dependency(topology_.store(), [&](std::size_t before) {
      if (topology_.at(before).type == CU_GRAPH_NODE_TYPE_KERNEL) ++programmatic_edges_;
    });
  }
  if (log_enabled(LogLevel::debug)) [[unlikely]] log_recorded_locked(topology_.size() - 1, op.node);
  return {};
}

void OpenRecording::record_failure_locked(const Operation& op, const Error& failure) {
  if (!doomed_ && failure.driver_code() == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
    // Say which graphcap operation first saw the invalidation, and what came before it.
    doom_locked(Error(failure.code(),
               failure.message() + " (the first graphcap operation to see the recording "
               "invalidated; the one before it was " +
                   (topology_.empty() ? std::string("none: the recording had just begun")
                                      : topology_.label(topology_.size() - 1).first_line()) +
                   "; " + likely_causes(mode_) + driver_account(*graphs_, stream_) + ")",
               failure.driver_code()));
  } else {
    doom_locked(failure);
  }
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": " + op.label.first_line() +
                             " failed: " + failure.message());
  }
}

Result<void> OpenRecording::record_param_node_locked(Operation& op, CUstream issued_on) {
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
  op.params->recorded = topology_.size();  // record() adds its node next
  param_nodes_.push_back(std::move(*op.params));
  return {};
}

void OpenRecording::record_condition_locked(std::uint64_t condition) {
  for (Frame& open : frames_) {
    if (open.kind == FrameKind::loop && open.id == condition) open.condition_taken = true;
  }
  if (ConditionState* state = find_condition_locked(condition)) state->taken = true;
}

void OpenRecording::log_recorded_locked(std::size_t added, CUgraphNodeType type) const {
  std::string text = topology_.label(added).text();
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  log(LogLevel::debug, "recording " + std::to_string(id_) + ": node " + std::to_string(added) +
                           " " + node_type_name(type) + ": " + text);
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

void OpenRecording::allocated_inside(const std::shared_ptr<memory::BufferState>& buffer) {
  std::lock_guard book(book_);
  std::erase_if(allocated_inside_, [](const auto& weak) { return weak.expired(); });
  allocated_inside_.push_back(buffer);
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
                   topology_.label(last).first_line() + " (node " + std::to_string(last) +
                   "); record an event on stream " + std::to_string(stream) +
                   " after it and wait for it on stream " + std::to_string(stream_index_) +
                   " before end_capture (the driver would refuse the recording with "
                   "CUDA_ERROR_STREAM_CAPTURE_UNJOINED)");
}

// ---- Conditional nodes ------------------------------------------------------------------------

namespace {

std::atomic<std::uint64_t> next_frame_id{1};  // loops' and conditions' ids, unique in the process

// " (begun at file:line)" for a conditional node (" (made at file:line)" for a condition), empty
// when unknown.
std::string located_begun(const std::source_location& where, const char* verb = "begun") {
  const std::string site = call_site(where);
  return site.empty() ? site : std::string(" (") + verb + " at " + site + ")";
}

}  // namespace

OpenRecording::Frame* OpenRecording::find_frame_locked(std::uint64_t id) {
  for (Frame& frame : frames_) {
    if (frame.id == id) return &frame;
  }
  return nullptr;
}

OpenRecording::ConditionState* OpenRecording::find_condition_locked(std::uint64_t id) {
  for (ConditionState& condition : conditions_) {
    if (condition.id == id) return &condition;
  }
  return nullptr;
}

bool OpenRecording::body_open_locked(std::uint64_t frame, unsigned body) const {
  if (frame == 0) return true;
  return std::any_of(frames_.begin(), frames_.end(), [&](const Frame& open) {
    return open.id == frame && open.body_open && open.body == body;
  });
}

std::string OpenRecording::frame_name(const Frame& frame) const {
  // Where it was begun, when the topology holds its node (it does while the frame is open).
  const std::string begun = located_begun(frame.where);
  switch (frame.kind) {
    case FrameKind::loop: return "the while loop at node " + std::to_string(frame.node) + begun;
    case FrameKind::if_else: return "the IF at node " + std::to_string(frame.node) + begun;
    case FrameKind::switch_cases:
      return "the SWITCH at node " + std::to_string(frame.node) + begun;
  }
  return "the conditional node at node " + std::to_string(frame.node) + begun;
}

std::optional<Error> OpenRecording::unused_condition_locked(std::uint64_t frame, unsigned body,
                                                            const std::string& operation) const {
  if (doomed_) return std::nullopt;  // refused anyway: nothing to mend
  for (const ConditionState& condition : conditions_) {
    if (condition.home_frame != frame || condition.home_body != body || condition.used) continue;
    // CUDA refuses to instantiate a graph holding a handle no conditional node uses
    // (CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED, docs/cuda-driver-facts.md I02).
    return Error(Errc::graph_state,
                 operation + ": the condition made after node " +
                     std::to_string(condition.after_node) + located_begun(condition.where, "made") +
                     " (first " + std::to_string(condition.first) + ") " +
                     (frame == 0 ? "in the graph" : "in this body") +
                     " steers no branch: begin_if or begin_switch with it first (CUDA refuses a "
                     "graph holding a conditional handle no node uses: "
                     "CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED); nothing was closed");
  }
  return std::nullopt;
}

Result<std::size_t> OpenRecording::innermost_locked(FrameKind kind, std::uint64_t id,
                                                    const std::string& operation) const {
  const char* what = kind == FrameKind::loop       ? "loop"
                     : kind == FrameKind::if_else ? "IF of the condition"
                                                  : "SWITCH of the condition";
  const auto open = std::find_if(frames_.begin(), frames_.end(), [&](const Frame& frame) {
    return frame.id == id;
  });
  if (open == frames_.end()) {
    return Error(Errc::graph_state,
                 operation + ": the " + what + " is not open in this stream's recording" +
                     (kind == FrameKind::loop
                          ? " (ended already, or begun in another recording)"
                          : (kind == FrameKind::if_else ? " (begin_if first)"
                                                        : " (begin_switch first)")));
  }
  if (open->kind != kind) {
    return Error(Errc::graph_state,
                 operation + ": the condition steers " + frame_name(*open) + ", not " +
                     (kind == FrameKind::if_else ? "an IF (end it with end_switch)"
                                                 : "a SWITCH (end it with end_if)"));
  }
  if (open->id != frames_.back().id) {
    return Error(Errc::graph_state,
                 operation + ": the " + what + " is not the innermost open one (" +
                     frame_name(frames_.back()) + " was begun inside it: end it first)");
  }
  return static_cast<std::size_t>(open - frames_.begin());
}

Error OpenRecording::no_body_refusal(const std::string& operation) const {
  std::lock_guard book(book_);
  return no_body_refusal_locked(operation);
}

Error OpenRecording::no_body_refusal_locked(const std::string& operation) const {
  const std::string prefix = operation.empty() ? std::string() : operation + ": ";
  if (frames_.empty() || frames_.back().body_open) {
    return Error(Errc::graph_state, prefix + "no conditional body is closed now");
  }
  const Frame& inner = frames_.back();
  if (inner.open_failed && doomed_) {
    // The recording is doomed by that failure: say so, not "between cases".
    const std::string body = inner.kind == FrameKind::if_else ? "ELSE body"
                             : inner.kind == FrameKind::switch_cases
                                 ? "case " + std::to_string(inner.body)
                                 : "body";
    return Error(Errc::doomed,
                 prefix + "the " + body + " of " + frame_name(inner) +
                     " could not be opened, so the recording is refused (end_capture or "
                     "abort_capture it): " + doomed_->message(),
                 doomed_->driver_code());
  }
  return Error(Errc::graph_state, prefix + frame_name(inner) +
                                      " has no case open; record a case's work after begin_case");
}

void OpenRecording::retarget_locked() noexcept {
  const Frame* inner = frames_.empty() ? nullptr : &frames_.back();
  loop_target_.store(inner != nullptr ? inner->body_stream : nullptr, std::memory_order_release);
  between_cases_.store(inner != nullptr && !inner->body_open, std::memory_order_release);
}

std::optional<Error> OpenRecording::switch_body(std::optional<unsigned> next,
                                                const std::string& operation) {
  Frame frame;
  {
    std::lock_guard book(book_);
    frame = frames_.back();
  }
  std::optional<Error> failure;
  bool stuck = frame.stuck;
  if (frame.body_open && !stuck) {
    Result<bool> valid = graphs_->body_active(frame.body_stream);
    if (!valid || !*valid) {
      // Invalidated (by an unsafe call elsewhere, say), or not known to be valid: don't end the
      // body's capture before the recording's own, which the driver does not survive with an
      // invalidated body; close() asks again and ends it after.
      unended_bodies_.push_back(frame.body_stream);
      stuck = true;
      failure = !valid ? std::move(valid).error().context(operation + ": " + frame_name(frame))
                       : Error(Errc::driver,
                               operation + ": the body's capture was invalidated (" +
                                   likely_causes(mode_) + ")",
                               CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    } else if (Result<void> ended = graphs_->end_body(frame.body_stream); !ended) {
      failure = std::move(ended).error().context(operation + ": closing " + frame_name(frame) +
                                                 "'s body");
    }
  }
  bool opened = false;
  if (next && !stuck) {
    if (Result<void> begun = graphs_->begin_body(frame.body_stream, frame.bodies[*next],
                                                 CU_STREAM_CAPTURE_MODE_RELAXED);
        !begun) {
      if (!failure) {
        failure = std::move(begun).error().context(operation + ": opening " + frame_name(frame) +
                                                   "'s body " + std::to_string(*next));
      }
    } else {
      opened = true;
    }
  }
  {
    std::lock_guard book(book_);
    Frame& inner = frames_.back();
    inner.stuck = stuck;
    topology_.drop_lane(inner.lane);  // the next body starts from no dependency
    inner.body_nodes = 0;
    inner.open_failed = next && !opened && !stuck;
    if (next) {
      inner.body = *next;
      inner.begun[*next] = true;
      // A stuck stream still captures (invalidated): what it records fails there, never runs.
      inner.body_open = opened || stuck;
    } else {
      inner.body_open = false;
    }
    if (failure) doom_locked(*failure);
    retarget_locked();
  }
  return failure;
}

std::size_t OpenRecording::add_conditional_locked(std::uint64_t frame, std::string label,
                                                  std::source_location where) {
  // Recorded where the stream's work goes now (the graph, or the enclosing body), depending on
  // what the stream recorded last; later work there depends on it.
  Frame* enclosing = frames_.empty() ? nullptr : &frames_.back();
  if (enclosing != nullptr) {
    ++enclosing->body_nodes;
  } else {
    ++recorded_.nodes_by_type[CU_GRAPH_NODE_TYPE_CONDITIONAL];
    ++recorded_.node_count;
  }
  RecordedNode& node = topology_.add(enclosing != nullptr ? enclosing->lane : stream_index_);
  node.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  OperationLabel text = OperationLabel::of_text(std::move(label));
  text.where = where;
  topology_.set_label(node, std::move(text));
  node.stream = stream_index_;
  node.loop = enclosing != nullptr ? enclosing->id : 0;
  node.branch_body = enclosing != nullptr ? enclosing->body : 0;
  node.body = frame;
  return topology_.size() - 1;
}

Result<std::size_t> OpenRecording::next_loop_depth() const {
  std::lock_guard book(book_);
  if (frames_.size() >= kMaxDepth) {
    return Error(Errc::graph_state, std::to_string(frames_.size()) +
                                        " conditional nodes are open already (at most " +
                                        std::to_string(kMaxDepth) +
                                        " nest, the depth measured on the H200)");
  }
  if (!frames_.empty() && !frames_.back().body_open) return no_body_refusal_locked("");
  return frames_.size();
}

Result<OpenRecording::LoopInfo> OpenRecording::begin_loop(CUstream body_stream, unsigned first,
                                                          std::source_location where) {
  Result<std::size_t> depth = next_loop_depth();
  if (!depth) return std::move(depth).error().context("begin_while");
  const CUstream outer = loop_target() != nullptr ? loop_target() : stream_;
  // The body is captured in RELAXED mode whatever the recording's mode: an unsafe call
  // invalidates only the recording's own capture then, never the body's. Once a body's capture
  // was invalidated, every way out of it crashed the H200's driver (docs/cuda-driver-facts.md,
  // "Conditional nodes"); graphcap's own checks of unsafe calls follow the recording's mode.
  Result<ConditionalNode> inserted = Error(Errc::driver, "not inserted");
  Result<CUgraphConditionalHandle> handle = graphs_->create_condition(outer, first);
  if (handle) inserted = graphs_->add_conditional(outer, *handle, CU_GRAPH_COND_TYPE_WHILE, 1);
  Result<void> body = handle && inserted ? graphs_->begin_body(body_stream, inserted->bodies[0],
                                                               CU_STREAM_CAPTURE_MODE_RELAXED)
                                         : Result<void>{};
  if (!handle || !inserted || !body) {
    // Whatever of it the driver did stays in the recording (perhaps a WHILE node without a
    // body, which must never replay): refuse the recording.
    Error error = (!handle ? handle.error() : !inserted ? inserted.error() : body.error())
                      .context("begin_while");
    doom(error);
    return error;
  }
  Frame frame;
  frame.kind = FrameKind::loop;
  frame.id = next_frame_id.fetch_add(1, std::memory_order_relaxed);
  frame.body_stream = body_stream;
  frame.bodies = inserted->bodies;
  frame.body_open = true;
  frame.begun.assign(1, true);
  frame.handle = *handle;
  frame.first = first;
  frame.lane = -1 - static_cast<int>(*depth);
  frame.where = where;
  {
    std::lock_guard book(book_);
    frame.node = add_conditional_locked(
        frame.id, "while loop " + std::to_string(frame.id) + " (first " + std::to_string(first) +
                      ")",
        where);
    body_graphs_.push_back(BodyGraph{frame.id, 0, frame.bodies[0], frame.node});
    frames_.push_back(frame);
    retarget_locked();
  }
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": node " +
                             std::to_string(frame.node) + " CONDITIONAL: while loop " +
                             std::to_string(frame.id) + " begins (depth " +
                             std::to_string(*depth + 1) + ")");
  }
  return LoopInfo{frame.id, frame.handle};
}

Result<void> OpenRecording::end_loop(std::uint64_t id) {
  {
    std::lock_guard book(book_);
    Result<std::size_t> at = innermost_locked(FrameKind::loop, id, "end_while");
    if (!at) return at.error();
    const Frame& frame = frames_.back();
    // (Not when doomed: the kernel that takes the condition may be the one that failed, and the
    // loop never replays anyway.)
    if (!doomed_ && frame.first != 0 && !frame.condition_taken) {
      // Its condition starts true every replay and nothing can set it to 0: on a GPU the replay
      // would never end. Refused before the body closes, so a kernel can still be recorded.
      return Error(Errc::graph_state,
                   "end_while: the loop's condition starts true (begin_while's `first`) and no "
                   "kernel recorded since begin_while takes it (Arg::condition(loop)), so nothing "
                   "could end the loop: every replay would run forever; record the kernel that "
                   "sets it first (the loop stays open)");
    }
    if (std::optional<Error> unused = unused_condition_locked(frame.id, 0, "end_while")) {
      return *unused;
    }
  }
  const std::size_t nodes = frames_.back().body_nodes;
  std::optional<Error> failure = switch_body(std::nullopt, "end_while");
  {
    std::lock_guard book(book_);
    topology_.drop_lane(frames_.back().lane);
    frames_.pop_back();
    retarget_locked();
  }
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": while loop " +
                             std::to_string(id) + " ends (" + std::to_string(nodes) +
                             " nodes in its body)" +
                             (failure ? ": " + failure->message() : std::string()));
  }
  if (failure) return *failure;
  return {};
}

bool OpenRecording::loop_open(std::uint64_t id) const {
  std::lock_guard book(book_);
  return std::any_of(frames_.begin(), frames_.end(), [&](const Frame& f) { return f.id == id; });
}

Result<OpenRecording::ConditionInfo> OpenRecording::make_condition(unsigned first,
                                                                   std::source_location where) {
  ConditionState condition;
  condition.where = where;
  {
    std::lock_guard book(book_);
    if (!frames_.empty() && !frames_.back().body_open) return no_body_refusal_locked("condition");
    if (!frames_.empty()) {
      condition.home_frame = frames_.back().id;
      condition.home_body = frames_.back().body;
    }
    condition.after_node = topology_.size();
  }
  const CUstream target = loop_target() != nullptr ? loop_target() : stream_;
  // A failure changes nothing: no handle exists (the recording stays valid).
  Result<CUgraphConditionalHandle> handle = graphs_->create_condition(target, first);
  if (!handle) return std::move(handle).error().context("condition");
  condition.id = next_frame_id.fetch_add(1, std::memory_order_relaxed);
  condition.handle = *handle;
  condition.first = first;
  {
    std::lock_guard book(book_);
    conditions_.push_back(condition);
  }
  return ConditionInfo{condition.id, condition.handle};
}

Result<void> OpenRecording::begin_branch(CUstream body_stream, BranchKind kind,
                                         std::uint64_t id, unsigned cases,
                                         std::source_location where) {
  const bool is_if = kind == BranchKind::if_else;
  const std::string operation = is_if ? "begin_if" : "begin_switch";
  Result<std::size_t> depth = next_loop_depth();
  if (!depth) return std::move(depth).error().context(operation);
  unsigned first = 0;
  CUgraphConditionalHandle handle = 0;
  {
    std::lock_guard book(book_);
    ConditionState* condition = find_condition_locked(id);
    if (condition == nullptr) {
      return Error(Errc::graph_state,
                   operation + ": the condition is not one of this stream's recording (made in "
                               "another recording, or on another stream)");
    }
    if (condition->used) {
      return Error(Errc::graph_state,
                   operation + ": the condition steers a branch already (each condition steers "
                               "one IF or SWITCH: make another with Device::condition)");
    }
    if (!body_open_locked(condition->home_frame, condition->home_body)) {
      return Error(Errc::graph_state,
                   operation + ": the condition was made in a conditional body that is closed "
                               "(a branch may use a condition of its own body or of one around "
                               "it)");
    }
    if (!condition->taken) {
      return Error(Errc::graph_state,
                   operation + ": no kernel recorded since Device::condition takes the condition "
                               "(Arg::condition(c)), so every replay would take the same branch "
                               "(first " + std::to_string(condition->first) +
                               "): record the kernel that sets it first (nothing changed)");
    }
    first = condition->first;
    handle = condition->handle;
  }
  const CUstream outer = loop_target() != nullptr ? loop_target() : stream_;
  // An IF node always has its ELSE body (size 2; empty bodies are valid, B06): begin_else may
  // follow, and re-recordings with and without it update in place.
  const unsigned size = is_if ? 2u : cases;
  Result<ConditionalNode> inserted = graphs_->add_conditional(
      outer, handle, is_if ? CU_GRAPH_COND_TYPE_IF : CU_GRAPH_COND_TYPE_SWITCH, size);
  Result<void> body = inserted && is_if
                          ? graphs_->begin_body(body_stream, inserted->bodies[0],
                                                CU_STREAM_CAPTURE_MODE_RELAXED)
                          : Result<void>{};
  std::lock_guard book(book_);
  find_condition_locked(id)->used = true;  // the driver may hold its node: never unused now
  if (!inserted || !body) {
    // A conditional node without its body must never replay: the recording is refused.
    Error error = (!inserted ? inserted.error() : body.error()).context(operation);
    doom_locked(error);
    return error;
  }
  Frame frame;
  frame.kind = is_if ? FrameKind::if_else : FrameKind::switch_cases;
  frame.id = id;
  frame.body_stream = body_stream;
  frame.bodies = inserted->bodies;
  frame.begun.assign(size, false);
  frame.body_open = is_if;
  if (is_if) frame.begun[0] = true;
  frame.handle = handle;
  frame.first = first;
  frame.lane = -1 - static_cast<int>(*depth);
  frame.where = where;
  frame.node = add_conditional_locked(
      id, is_if ? "if (condition " + std::to_string(id) + ", first " + std::to_string(first) + ")"
                : "switch of " + std::to_string(cases) + " cases (condition " +
                      std::to_string(id) + ", first " + std::to_string(first) + ")",
      where);
  for (unsigned b = 0; b < size; ++b) {
    body_graphs_.push_back(BodyGraph{id, b, frame.bodies[b], frame.node});
  }
  frames_.push_back(std::move(frame));
  retarget_locked();
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": node " +
                             std::to_string(frames_.back().node) + " CONDITIONAL: " +
                             (is_if ? "IF" : "SWITCH") + " of condition " + std::to_string(id) +
                             " begins (depth " + std::to_string(*depth + 1) + ")");
  }
  return {};
}

Result<void> OpenRecording::begin_else(std::uint64_t id) {
  {
    std::lock_guard book(book_);
    Result<std::size_t> at = innermost_locked(FrameKind::if_else, id, "begin_else");
    if (!at) return at.error();
    if (frames_.back().body != 0) {
      return Error(Errc::graph_state,
                   "begin_else: the IF's ELSE body was begun already (one ELSE per IF)");
    }
    if (std::optional<Error> unused = unused_condition_locked(id, 0, "begin_else")) return *unused;
  }
  if (std::optional<Error> failure = switch_body(1u, "begin_else")) return *failure;
  return {};
}

Result<void> OpenRecording::begin_case(std::uint64_t id, unsigned index) {
  {
    std::lock_guard book(book_);
    Result<std::size_t> at = innermost_locked(FrameKind::switch_cases, id, "begin_case");
    if (!at) return at.error();
    const Frame& frame = frames_.back();
    if (index >= frame.bodies.size()) {
      return Error(Errc::graph_state,
                   "begin_case: case " + std::to_string(index) + " of a SWITCH of " +
                       std::to_string(frame.bodies.size()) +
                       " cases (cases are 0 to cases - 1; at replay, a value past the last case "
                       "runs none)");
    }
    if (frame.begun[index]) {
      return Error(Errc::graph_state, "begin_case: case " + std::to_string(index) +
                                          " was begun already (each case once)");
    }
    if (frame.body_open) {
      if (std::optional<Error> unused = unused_condition_locked(id, frame.body, "begin_case")) {
        return *unused;
      }
    }
  }
  if (std::optional<Error> failure = switch_body(index, "begin_case")) return *failure;
  return {};
}

Result<void> OpenRecording::end_branch(BranchKind kind, std::uint64_t id) {
  const bool is_if = kind == BranchKind::if_else;
  const std::string operation = is_if ? "end_if" : "end_switch";
  {
    std::lock_guard book(book_);
    Result<std::size_t> at =
        innermost_locked(is_if ? FrameKind::if_else : FrameKind::switch_cases, id, operation);
    if (!at) return at.error();
    const Frame& frame = frames_.back();
    if (frame.body_open) {
      if (std::optional<Error> unused = unused_condition_locked(id, frame.body, operation)) {
        return *unused;
      }
    }
  }
  std::optional<Error> failure = switch_body(std::nullopt, operation);
  {
    std::lock_guard book(book_);
    topology_.drop_lane(frames_.back().lane);
    frames_.pop_back();
    retarget_locked();
  }
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": " + (is_if ? "IF" : "SWITCH") +
                             " of condition " + std::to_string(id) + " ends" +
                             (failure ? ": " + failure->message() : std::string()));
  }
  if (failure) return *failure;
  return {};
}

std::optional<Error> OpenRecording::open_loop_refusal() const {
  std::lock_guard book(book_);
  // A doomed recording never makes a graph: keeping it open for its frames to be closed would
  // only leave the stream capturing. end_capture closes it (the bodies left open are ended after
  // the recording's capture, an invalidated one abandoned) and refuses it with its doom.
  if (doomed_) return std::nullopt;
  if (!frames_.empty()) {
    const Frame& inner = frames_.back();
    const char* closer = inner.kind == FrameKind::loop      ? "end_while"
                         : inner.kind == FrameKind::if_else ? "end_if"
                                                            : "end_switch";
    return Error(Errc::graph_state,
                 "end_capture: " + std::to_string(frames_.size()) +
                     " conditional node(s) still open (the innermost " + frame_name(inner) +
                     "); " + closer + " it first, and any around it, innermost first (end_while, "
                     "end_if, end_switch; the recording stays open)");
  }
  return unused_condition_locked(0, 0, "end_capture");
}

std::string OpenRecording::name_failed_node(CapturedGraph& captured, const Recording& recording,
                                            const InstantiateFailure& failure) {
  // The driver's node is found among the graph's nodes or a body's; graphcap's recorded node at
  // the same position in the same graph is named when the counts agree (external work may have
  // added nodes graphcap did not record).
  auto recorded_in = [&](std::uint64_t frame, unsigned body) {
    std::vector<std::size_t> in;
    for (std::size_t i = 0; i < recording.nodes.size(); ++i) {
      if (recording.nodes[i].loop == frame && recording.nodes[i].branch_body == body) {
        in.push_back(i);
      }
    }
    return in;
  };
  auto name = [&](const std::vector<CUgraphNode>& nodes, std::uint64_t frame, unsigned body,
                  const std::string& where) -> std::optional<std::string> {
    const auto at = std::find(nodes.begin(), nodes.end(), failure.node);
    if (at == nodes.end()) return std::nullopt;
    const std::size_t position = static_cast<std::size_t>(at - nodes.begin());
    std::string text = "node " + std::to_string(position) + " (" + node_type_name(failure.type) +
                       ") of " + where;
    const std::vector<std::size_t> recorded = recorded_in(frame, body);
    if (recorded.size() == nodes.size()) {
      const RecordedNode& node = recording.nodes[recorded[position]];
      text += ", graphcap's node " + std::to_string(recorded[position]) + ": " +
              (node.label.empty() ? std::string(node_type_name(node.type))
                                  : recording.label(recorded[position]).first_line());
    } else {
      text += " (that graph holds nodes graphcap did not record: external work)";
    }
    return text;
  };
  if (Result<std::vector<CUgraphNode>> top = graphs_->nodes(captured)) {
    if (std::optional<std::string> named = name(*top, 0, 0, "the graph")) return *named;
  }
  for (const BodyGraph& body : body_graphs_) {
    Result<std::vector<CUgraphNode>> nodes = graphs_->body_nodes(body.graph);
    if (!nodes) continue;
    if (std::optional<std::string> named =
            name(*nodes, body.frame, body.body,
                 "body " + std::to_string(body.body) + " of graphcap's node " +
                     std::to_string(body.node) + " (" +
                     recording.label(body.node).first_line() + ")")) {
      return *named;
    }
  }
  return std::string("a node graphcap could not find in the graph or its bodies");
}

}  // namespace graphcap::capture
