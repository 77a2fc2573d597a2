// Stream capture: capture sequences (id, mode, beginning thread, status, member streams with their
// dependency frontiers), the rules that refuse calls and invalidate captures, and how a capture
// ends. Every rule here is a row of docs/cuda-driver-facts.md unless marked.
#include <graphcap/fake/internal/fake_state.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include <graphcap/driver/error_names.h>

namespace graphcap::fake {

FakeState::Capture* FakeState::capture_of(const Stream& stream) {
  if (stream.capture == 0) return nullptr;
  auto it = captures_.find(stream.capture);
  return it == captures_.end() ? nullptr : &it->second;
}

CUresult FakeState::refuse(Capture& capture, CUresult code) {
  if (capture.status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    capture.status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    note_invalidation(capture, code);
  }
  return code;
}

// Not a CUDA rule: the fake's account of an invalidation, from its call log (the call in
// progress is the one that invalidates; it is logged right after, with this number). Threads are
// numbered in the order they first appear in the log.
void FakeState::note_invalidation(const Capture& capture, CUresult code) {
  if (current_entry_.empty()) return;
  const std::thread::id me = std::this_thread::get_id();
  std::vector<std::thread::id> seen;
  for (const CallRecord& record : log_.records()) {
    if (std::find(seen.begin(), seen.end(), record.thread) == seen.end()) {
      seen.push_back(record.thread);
    }
  }
  auto number = [&](std::thread::id id) -> std::size_t {
    auto at = std::find(seen.begin(), seen.end(), id);
    if (at != seen.end()) return static_cast<std::size_t>(at - seen.begin()) + 1;
    if (id == me) return seen.size() + 1;  // its first call is this one
    return 0;
  };
  const std::size_t caller = number(me);
  const std::size_t recorder = number(capture.thread);
  std::string text = "the fake's call log: call " + std::to_string(log_.total() + 1) + " (" +
                     std::string(current_entry_) + ", from ";
  if (me == capture.thread) {
    text += "the recording's own thread " + std::to_string(caller);
  } else {
    text += "thread " + std::to_string(caller) + "; the recording began on " +
            (recorder != 0 ? "thread " + std::to_string(recorder)
                           : std::string("a thread not in the log"));
  }
  text += ") returned " + std::string(cu_result_name(code)) + " and invalidated the capture";
  invalidations_[capture.origin] = std::move(text);
}

std::string FakeState::capture_invalidation(CUstream handle) {
  std::lock_guard<std::mutex> guard(mutex_);
  const Stream* stream = find_stream(handle);
  if (stream == nullptr) return {};
  auto found = invalidations_.find(stream->id);
  return found == invalidations_.end() ? std::string() : found->second;
}

CUresult FakeState::refuse(Stream& stream, CUresult code) {
  if (Capture* capture = capture_of(stream)) refuse(*capture, code);
  return code;
}

CUresult FakeState::enter_stream_call(CUstream handle, Context** context, Stream** stream,
                                      bool* captured) {
  if (CUresult r = need_context(context); r != CUDA_SUCCESS) return r;
  if (CUresult r = resolve_stream(handle, **context, stream); r != CUDA_SUCCESS) return r;
  return route(**stream, captured);
}

CUresult FakeState::route(Stream& stream, bool* captured) {
  *captured = false;
  if (stream.legacy) {
    // Not measured (cuda.h): work on the legacy NULL stream would wait for every blocking stream
    // of its context, so a capturing blocking stream makes it 906, invalidating that capture.
    bool implicit = false;
    for (auto& [id, capture] : captures_) {
      if (capture.device != stream.device) continue;
      for (std::uint64_t member : capture.members) {
        const Stream* other = stream_by_id(member);
        if (other != nullptr && other->handle != nullptr &&
            (other->flags & CU_STREAM_NON_BLOCKING) == 0) {
          refuse(capture, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
          implicit = true;
          break;
        }
      }
    }
    if (implicit) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  if (Capture* capture = capture_of(stream)) {
    if (capture->status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *captured = true;
  }
  return CUDA_SUCCESS;
}

// CUDA's rule for potentially unsafe calls: a thread whose mode is RELAXED may always make them;
// otherwise they are prohibited while the thread has its own capture not begun in RELAXED mode,
// or (for a thread in GLOBAL mode) while another thread has a GLOBAL capture. A prohibited call
// returns 900 and invalidates the captures that prohibited it.
CUresult FakeState::check_unsafe_call(bool only_active) {
  const CUstreamCaptureMode mine = this_thread().mode;
  if (mine == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  const std::thread::id me = std::this_thread::get_id();
  bool prohibited = false;
  bool for_another_thread = false;
  bool body_left = false;
  for (auto& [id, capture] : captures_) {
    body_left |= capture.into_body && capture.status != CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (only_active && capture.status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      continue;
    }
    const bool blocks = capture.thread == me ? capture.mode != CU_STREAM_CAPTURE_MODE_RELAXED
                                             : mine == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                                                   capture.mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (blocks) {
      refuse(capture, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
      prohibited = true;
      for_another_thread |= capture.thread != me;
    }
  }
  if (for_another_thread && body_left) {
    // Measured on the H100 (580.159.04, docs/measurements/2026-12-07-h100-gpu-run-4.md): with
    // invalidated bodies' captures left in the process, another thread's cuMemAlloc refused for a
    // GLOBAL capture crashed inside the driver; the same call with none left answered 900.
    violation("a potentially unsafe call refused for another thread's GLOBAL capture while an "
              "invalidated capture into a conditional body is left: the driver crashed "
              "(SIGSEGV); such a process is not whole");
  }
  return prohibited ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

// Measured on the H200 (graphcap-fidelity's generated programs, 2026-12-03 and 04): a capture into
// an existing graph that ends in failure (invalidated, unjoined, or ended on the wrong thread)
// destroys that graph (cuGraphGetNodes and instantiate of it then answer 1, as for a destroyed
// graph).
void FakeState::end_failed_capture(Capture& capture) {
  const bool destroys = capture.to_graph && graphs_.count(capture.graph) != 0;
  const CUgraph graph = capture.graph;
  finish_capture(capture, false);
  if (destroys) erase_graph(graph);
}

void FakeState::finish_capture(Capture& capture, bool keep_graph) {
  for (std::uint64_t member : capture.members) {
    if (Stream* stream = stream_by_id(member); stream != nullptr && stream->capture == capture.id) {
      stream->capture = 0;
      stream->frontier.clear();
      stream->frontier_handles.clear();
      stream->captured_last.clear();
    }
  }
  if (keep_graph || capture.to_graph) {
    // A graph captured into (cuStreamBeginCaptureToGraph) was the caller's before the capture
    // and stays theirs, whatever the capture's end.
    if (auto graph = graphs_.find(capture.graph); graph != graphs_.end()) {
      graph->second.under_capture = false;
    }
  } else {
    erase_graph(capture.graph);
  }
  captures_.erase(capture.id);
}

void FakeState::add_node(Stream& stream, internal::NodeWork work, bool programmatic) {
  Capture& capture = *capture_of(stream);
  internal::Graph& graph = graphs_.at(capture.graph);
  const std::size_t index = graph.nodes.size();
  internal::NodeData node{std::move(work), stream.frontier, {}};
  if (programmatic) {
    // Measured on the H200: an edge from a kernel becomes programmatic (type 1, from port 1),
    // also across an event hop; an edge from any other node (a memset) stays ordinary.
    for (std::size_t dep : node.deps) {
      if (std::holds_alternative<internal::KernelWork>(graph.nodes[dep].work)) {
        node.programmatic.push_back(dep);
      }
    }
  }
  graph.nodes.push_back(std::move(node));
  const auto handle = new_handle<CUgraphNode>();
  graph.node_handles.push_back(handle);
  nodes_.emplace(handle, std::make_pair(capture.graph, index));
  stream.frontier.assign(1, index);
  stream.captured_last.assign(1, index);
}

void FakeState::refresh_frontier_handles(Stream& stream) {
  stream.frontier_handles.clear();
  const Capture* capture = capture_of(stream);
  if (capture == nullptr) return;
  const internal::Graph& graph = graphs_.at(capture->graph);
  for (std::size_t node : stream.frontier)
    stream.frontier_handles.push_back(graph.node_handles[node]);
}

CUresult FakeState::capture_entry(CUstream handle, CUstreamCaptureMode mode, Context** context,
                                  Stream** stream) {
  if (CUresult r = need_context(context); r != CUDA_SUCCESS) return r;
  if (CUresult r = resolve_stream(handle, **context, stream); r != CUDA_SUCCESS) return r;
  if ((*stream)->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Measured: a stream already capturing (also into a graph) is 401, and its capture stays valid.
  if ((*stream)->capture != 0) return CUDA_ERROR_ILLEGAL_STATE;
  return CUDA_SUCCESS;
}

void FakeState::open_capture(Stream& stream, const Context& context, CUstreamCaptureMode mode,
                             CUgraph graph, bool to_graph, std::vector<std::size_t> frontier) {
  Capture capture;
  capture.id = next_capture_id_++;
  capture.mode = mode;
  capture.thread = std::this_thread::get_id();
  capture.graph = graph;
  capture.origin = stream.id;
  capture.members.insert(stream.id);
  capture.device = context.device;
  capture.to_graph = to_graph;
  capture.into_body = graphs_.at(graph).owner != nullptr;
  graphs_.at(graph).under_capture = true;
  stream.capture = capture.id;
  stream.frontier = std::move(frontier);
  stream.captured_last.clear();
  invalidations_.erase(stream.id);  // the account is of the capture last begun
  captures_.emplace(capture.id, std::move(capture));
}

CUresult FakeState::cuStreamBeginCapture(CUstream handle, CUstreamCaptureMode mode) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  if (CUresult r = capture_entry(handle, mode, &context, &stream); r != CUDA_SUCCESS) return r;
  internal::Graph graph;
  graph.handle = new_handle<CUgraph>();
  graph.context = context->handle;
  const CUgraph created = graph.handle;
  graphs_.emplace(created, std::move(graph));
  open_capture(*stream, *context, mode, created, false, {});
  return CUDA_SUCCESS;
}

CUresult FakeState::cuStreamBeginCaptureToGraph(CUstream handle, CUgraph graph,
                                                const CUgraphNode* dependencies,
                                                const CUgraphEdgeData* edge_data,
                                                std::size_t dependency_count,
                                                CUstreamCaptureMode mode) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  if (CUresult r = capture_entry(handle, mode, &context, &stream); r != CUDA_SUCCESS) return r;
  auto target = graphs_.find(graph);
  if (target == graphs_.end()) return CUDA_ERROR_INVALID_VALUE;       // not measured
  if (target->second.under_capture) return CUDA_ERROR_ILLEGAL_STATE;  // not measured
  if (dependency_count > 0 && dependencies == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<std::size_t> frontier;
  for (std::size_t i = 0; i < dependency_count; ++i) {
    auto found = nodes_.find(dependencies[i]);
    if (found == nodes_.end() || found->second.first != graph) return CUDA_ERROR_INVALID_VALUE;
    if (edge_data != nullptr && edge_data[i].type != 0) return CUDA_ERROR_NOT_SUPPORTED;
    frontier.push_back(found->second.second);
  }
  open_capture(*stream, *context, mode, graph, true, std::move(frontier));
  return CUDA_SUCCESS;
}

CUresult FakeState::cuStreamUpdateCaptureDependencies(CUstream handle, CUgraphNode* dependencies,
                                                      const CUgraphEdgeData* edge_data,
                                                      std::size_t dependency_count,
                                                      unsigned flags) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(handle, *context, &stream); r != CUDA_SUCCESS) return r;
  // Measured (graphcap-fidelity): a stream that is not capturing is 401 before the flags are
  // looked at.
  Capture* capture = capture_of(*stream);
  if (capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  if (capture->status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  if (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (dependency_count > 0 && dependencies == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // The nodes must be in the capture's graph (not measured: cuda.h says so).
  std::vector<std::size_t> nodes;
  for (std::size_t i = 0; i < dependency_count; ++i) {
    auto found = nodes_.find(dependencies[i]);
    if (found == nodes_.end() || found->second.first != capture->graph) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (edge_data != nullptr && edge_data[i].type != 0) return CUDA_ERROR_NOT_SUPPORTED;
    nodes.push_back(found->second.second);
  }
  if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) {
    stream->frontier.clear();
    // Measured (H100, 2026-12-07, 4 programs): the stream has nothing left to join, neither what
    // it captured before nor the nodes set (the end of its capture's origin takes it unjoined).
    stream->captured_last.clear();
  }
  for (std::size_t node : nodes) {
    if (std::find(stream->frontier.begin(), stream->frontier.end(), node) ==
        stream->frontier.end()) {
      stream->frontier.push_back(node);
    }
  }
  return CUDA_SUCCESS;
}

CUresult FakeState::cuStreamEndCapture(CUstream handle, CUgraph* graph_out) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (graph_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(handle, *context, &stream); r != CUDA_SUCCESS) return r;
  *graph_out = nullptr;
  Capture* capture = capture_of(*stream);
  if (capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;

  // Measured (graphcap-fidelity): on a forked stream 903 comes first, also once the capture is
  // invalidated; then an invalidated capture is 901 on any thread.
  if (capture->origin != stream->id) {
    capture->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;  // both streams stay, INVALIDATED
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  }
  // Every other member stream must have been joined back: the last node it captured lies in the
  // history of the origin's frontier. Measured (graphcap-fidelity, 2026-12-04, 5 programs):
  // checked before the thread, so an unjoined capture ended on another thread is 904, not 908.
  // Measured (H100, 2026-12-07, 4 programs): a stream that set its dependencies since it last
  // captured (cuStreamUpdateCaptureDependencies, SET) has nothing to join.
  if (capture->status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    const internal::Graph& graph = graphs_.at(capture->graph);
    std::vector<bool> joined(graph.nodes.size(), false);
    std::vector<std::size_t> todo = stream->frontier;
    while (!todo.empty()) {
      const std::size_t node = todo.back();
      todo.pop_back();
      if (joined[node]) continue;
      joined[node] = true;
      for (std::size_t dep : graph.nodes[node].deps) todo.push_back(dep);
    }
    std::vector<std::size_t> others = capture->destroyed_members_last;
    for (std::uint64_t member : capture->members) {
      const Stream* other = stream_by_id(member);
      if (other == nullptr || other == stream) continue;
      others.insert(others.end(), other->captured_last.begin(), other->captured_last.end());
    }
    for (std::size_t node : others) {
      if (!joined[node]) {
        end_failed_capture(*capture);
        return CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
      }
    }
  }
  if (capture->status == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
      capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
      capture->thread != std::this_thread::get_id()) {
    end_failed_capture(*capture);  // terminated: the owner's own end then gives 401
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  if (capture->status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    if (capture->into_body) {
      // Measured on the H200 (docs/measurements/probes/conditional_probe.cu): once a
      // body's capture is invalidated, the process crashed in whichever of cuStreamEndCapture of
      // the body and of the graph holding it came second. The fake answers, and says so instead.
      violation("cuStreamEndCapture of an invalidated capture into a conditional body: the "
                "H200's driver crashed (SIGSEGV) when this and the end of the enclosing capture "
                "both ran; end only the enclosing capture and abandon this stream");
      finish_capture(*capture, false);
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    end_failed_capture(*capture);
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  const CUgraph result = capture->graph;
  finish_capture(*capture, true);
  *graph_out = result;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuStreamIsCapturing(CUstream handle, CUstreamCaptureStatus* status) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(handle, *context, &stream); r != CUDA_SUCCESS) return r;
  if (stream->legacy) {
    // Not measured (cuda.h): asking about the legacy stream while a blocking stream of its
    // context captures is 906; the capture is not invalidated.
    for (auto& [id, capture] : captures_) {
      for (std::uint64_t member : capture.members) {
        const Stream* other = stream_by_id(member);
        if (capture.device == stream->device && other != nullptr && other->handle != nullptr &&
            (other->flags & CU_STREAM_NON_BLOCKING) == 0) {
          return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        }
      }
    }
  }
  const Capture* capture = capture_of(*stream);
  *status = capture == nullptr ? CU_STREAM_CAPTURE_STATUS_NONE : capture->status;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuStreamGetCaptureInfo(CUstream handle, CUstreamCaptureStatus* status,
                                           cuuint64_t* id, CUgraph* graph,
                                           const CUgraphNode** dependencies,
                                           const CUgraphEdgeData** edge_data,
                                           std::size_t* dependency_count) {
  if (CUresult r = cuStreamIsCapturing(handle, status); r != CUDA_SUCCESS) return r;
  Context* context = nullptr;
  (void)need_context(&context);
  Stream* stream = nullptr;
  (void)resolve_stream(handle, *context, &stream);
  const Capture* capture = capture_of(*stream);
  if (capture == nullptr) return CUDA_SUCCESS;  // NONE: nothing else is written
  refresh_frontier_handles(*stream);
  if (id != nullptr) *id = capture->id;
  if (graph != nullptr) *graph = capture->graph;
  if (dependencies != nullptr) {
    *dependencies = stream->frontier_handles.empty() ? nullptr : stream->frontier_handles.data();
  }
  if (edge_data != nullptr) *edge_data = nullptr;  // every edge is a default edge
  if (dependency_count != nullptr) *dependency_count = stream->frontier_handles.size();
  return CUDA_SUCCESS;
}

CUresult FakeState::cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Measured (graphcap-fidelity): a value that is no mode (3) is taken, 0; what a thread in that
  // mode is then allowed is not measured (the generator does not make it; cuda-driver-facts.md).
  ThreadState& thread = this_thread();
  std::swap(thread.mode, *mode);
  return CUDA_SUCCESS;
}

void FakeState::injected_captured_operation(CUstream handle) {
  if (Stream* stream = find_stream(handle)) refuse(*stream, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

void FakeState::injected_end_capture(CUstream handle, CUgraph* graph) {
  if (graph != nullptr) *graph = nullptr;
  Stream* stream = find_stream(handle);
  if (stream == nullptr) return;
  if (Capture* capture = capture_of(*stream)) finish_capture(*capture, false);
}

}  // namespace graphcap::fake
