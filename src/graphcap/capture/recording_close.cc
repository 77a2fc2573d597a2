#include <graphcap/capture/recording_close.h>

#include <graphcap/driver/error_names.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include <graphcap/capture/instantiation.h>
#include <graphcap/capture/invalidation.h>
#include <graphcap/capture/open_recording.h>
#include <graphcap/capture/window.h>
#include <graphcap/log.h>
#include <graphcap/memory/drop_queue.h>

namespace graphcap::capture {
namespace {

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
void dedupe_shared(std::vector<std::shared_ptr<T>>& list) {
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
}

}  // namespace

ClosedRecording RecordingClose::close(CloseRequest request) {
  ClosedRecording out;
  out.recording = std::make_unique<Recording>();
  Recording& recording = *out.recording;
  OpenRecording& open = *recording_;
  RecordingBook& book = open.book_;
  std::optional<Error> unjoined;
  std::vector<Window*> sides;
  std::vector<CUstream> bodies;
  // (Made in place: the report and the doom are moved once, from the book.)
  RecordingBook::Taken taken = [&] {
    std::lock_guard lock(book.mutex());
    // Side streams' work the origin never waited for: refused by name, before the driver
    // answers with a bare CUDA_ERROR_STREAM_CAPTURE_UNJOINED.
    if (!request.abandon && !book.doomed_locked()) unjoined = open.forks_.unjoined_locked();
    RecordingBook::Taken from_book = book.take_locked(recording);
    sides = open.forks_.take_sides_locked();
    bodies = open.frames_.close_locked();
    return from_book;
  }();
  if (request.abandon) [[unlikely]] taken.doomed = std::move(request.abandon);
  open.kept_at_close_ = taken.kept_allocation;
  const GraphReport& recorded = taken.recorded;
  const std::optional<Error>& doomed = taken.doomed;

  // Which bodies are still valid must be asked before the recording's capture ends; they are
  // ended after it (out of line: most recordings have none).
  std::vector<bool> active;
  if (!bodies.empty()) [[unlikely]] active = bodies_active(bodies);
  Result<CapturedGraph> captured = open.graphs_->end(open.stream_);
  if (!bodies.empty()) [[unlikely]] end_bodies(bodies, active);
  // The driver's recording is closed, and with it every side stream's part in it; only now may
  // other threads' unsafe calls go ahead.
  for (Window* side : sides) side->leave();
  open.registration_.release();

  // The refusal is decided before anything is changed: `into`, the pool, the claims.
  PoolWindow* const pool = open.pool_.get();
  std::optional<Error>& refusal = out.refusal;
  std::optional<Error> outlived;
  if (doomed || unjoined || !captured) [[unlikely]] {
    refusal = close_refusal(request, captured, doomed, unjoined, recording);
  } else if (pool != nullptr && (outlived = pool->outlived())) [[unlikely]] {
    refusal = std::move(outlived);
  } else if (taken.kept_allocation && !open.claim_on_refusal_) [[unlikely]] {
    refusal = Error(Errc::graph_state,
                    "end_capture: a buffer allocated inside the recording outlived it, and the "
                    "window's warm-up was the step's one execution (claim_on_refusal false): "
                    "only the graph's replays would write that buffer, so it holds no data now "
                    "(allocate buffers that outlive the recording before prepare_capture, or in "
                    "the warm-up)");
  } else {
    // On request, the driver's own view of the graph, for CUDA-level detail.
    if (!open.driver_dot_dir_.empty()) [[unlikely]] {
      open.graphs_->dump_dot(*captured, open.driver_dot_dir_ + "/graphcap-recording-" +
                                            std::to_string(book.id_locked()) + ".dot");
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
    if (open.self_ != nullptr) {
      recording.buffers.recording_closed(book.id_locked(), !refusal, side_streams, *open.self_,
                                         request.sequence);
    }
  };
  if (refusal) [[unlikely]] {
    close_uses();
    // The buffers the recording would have written hold bytes no operation produced (unless
    // the caller's warm-up produced them: claim_on_refusal false).
    if (open.claim_on_refusal_) recording.buffers.fail_writes(*refusal);
    if (pool != nullptr) pool->poison_survivors();
  } else {
    dedupe_shared(recording.pins);
    dedupe_shared(recording.keep_alive);
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
    if (pool != nullptr) recording.report.pool_shared_bytes = pool->adopt(recording.pins);
    memory.pool_bytes = recording.report.pool_shared_bytes;
    memory.own_bytes = device_pinned - memory.pool_bytes;
    // An updated executable needs no upload (the facts file: its first launch costs the same as
    // an uploaded one's).
    if (request.upload && recording.executable) {
      open.graphs_->upload(recording.executable, open.stream_, recording.report);
    }
  }
  return out;
}

std::vector<bool> RecordingClose::bodies_active(const std::vector<CUstream>& bodies) const {
  const OpenRecording& open = *recording_;
  std::vector<bool> active;
  for (CUstream body : bodies) {
    Result<bool> valid = open.graphs_->body_active(body);
    if (!valid) {
      // Not known to be valid: left open and abandoned (destroying its stream ends a valid
      // capture as well).
      log(LogLevel::warn, std::move(valid).error()
                              .context("recording " + std::to_string(open.book_.id_locked()) +
                                       ": asking whether a conditional body's capture is valid")
                              .message());
    }
    active.push_back(valid && *valid);
  }
  return active;
}

void RecordingClose::end_bodies(const std::vector<CUstream>& bodies,
                                const std::vector<bool>& active) {
  OpenRecording& open = *recording_;
  const std::string recording = "recording " + std::to_string(open.book_.id_locked());
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    if (!active[i]) {
      // An invalidated body's capture is never ended: on the H200 the process crashed (SIGSEGV)
      // in whichever of the two cuStreamEndCapture calls came second, and a destroy of its stream
      // crashed too. Its stream is abandoned (never used or destroyed again: left to the driver,
      // StreamCore::forget_abandoned_loop_streams); the next loop gets a new one.
      open.frames_.abandon(bodies[i]);
      log(LogLevel::warn, recording + ": a conditional body's capture was invalidated; its "
                          "stream is left to the driver, neither ended nor destroyed (either "
                          "crashes the driver)");
      continue;
    }
    if (Result<void> ended = open.graphs_->end_body(bodies[i]);
        !ended && log_enabled(LogLevel::debug)) {
      log(LogLevel::debug, recording + ": closing a conditional body: " + ended.error().message());
    }
  }
}

void RecordingClose::retire_replaced(RecordingBook& book, Recording& replaced,
                                     memory::DropQueue& drops) {
  book.recycle(replaced);
  if (replaced.executable) return;
  const std::uint64_t use = drops.next_use();
  for (const auto& pin : replaced.pins) pin->used_at(use);
  replaced.pins.clear();
}

Error RecordingClose::close_refusal(const CloseRequest& request,
                                    const Result<CapturedGraph>& captured,
                                    const std::optional<Error>& doomed,
                                    const std::optional<Error>& unjoined,
                                    const Recording& recording) const {
  const OpenRecording& open = *recording_;
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
                   "; " + likely_causes(open.book_.mode()) +
                   driver_account(*open.graphs_, open.stream_) + ")",
               error.driver_code());
}

Result<void> RecordingClose::make_executable(CapturedGraph& captured, const GraphReport& recorded,
                                             const IntoGraph* into, Recording& recording) {
  const OpenRecording& open = *recording_;
  // Param nodes are named by position among the graph's nodes: the new graph's, and, after an
  // update, the nodes of the graph `into` was instantiated from at the same positions.
  std::vector<CUgraphNode> nodes;
  if (!recording.param_nodes.empty()) {
    Result<std::vector<CUgraphNode>> listed = open.graphs_->nodes(captured);
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
  // unknown). This was a driver query on every update close.
  GraphReport update_report;
  if (into != nullptr) {
    update_report.rerecorded = true;
    // Each param node's position among the graph's nodes (kNone: not among them). One pass over
    // the nodes, one probe per param node: a std::find per param node was O(n^2) for a
    // re-recording whose n nodes all take params.
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
      if (open.graphs_->update(into->executable, captured, report)) {
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
  Result<GraphReport> inspected = open.graphs_->inspect(captured, recorded);
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
  if (open.defer_instantiate_ && into == nullptr) {
    // Accepted but for the instantiate, which runs later (instantiate_deferred): the graph and
    // its census go with the recording.
    recording.report = std::move(report);
    recording.source = std::move(captured);
    recording.source_nodes = std::move(nodes);
    return {};
  }
  return instantiate_into(*open.graphs_, captured, report, nodes, open.frames_.body_graphs(), true,
                          recording);
}

void RecordingClose::log_close(const GraphReport& recorded,
                               const std::optional<Error>& refusal) const {
  const OpenRecording& open = *recording_;
  if (!log_enabled(LogLevel::debug)) return;
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - open.begun_);
  std::string counts;
  for (std::size_t type = 0; type < recorded.nodes_by_type.size(); ++type) {
    if (recorded.nodes_by_type[type] == 0) continue;
    counts += std::string(counts.empty() ? "" : ", ") +
              node_type_name(static_cast<CUgraphNodeType>(type)) + " " +
              std::to_string(recorded.nodes_by_type[type]);
  }
  log(LogLevel::debug,
      "recording " + std::to_string(open.book_.id_locked()) + " ends on stream " +
          std::to_string(open.book_.stream_index()) +
          ": " + std::to_string(recorded.node_count) + " nodes" +
          (counts.empty() ? "" : " (" + counts + ")") + " after " + std::to_string(took.count()) +
          " us; " + (refusal ? "refused: " + refusal->message() : std::string("instantiated")));
}

}  // namespace graphcap::capture
