// Graph: a recording closed into an executable, replayable many times. Move-only.
// replay() enqueues one cuGraphLaunch and returns at once. An error in it (the driver refusing
// the launch, or the replay skipped because an input carries a failure) is returned and also
// queued on the stream, so it surfaces on the next sync too. Destroying a Graph waits for its
// in-flight replays, then destroys the executable and unpins the memory it replays against.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <string>

#include <graphcap/capture/graph_report.h>
#include <graphcap/driver/cuda_types.h>
#include <graphcap/error.h>
#include <graphcap/param.h>
#include <graphcap/result.h>

namespace graphcap {

namespace detail {
class GraphState;
}
struct HandleAccess;

class Graph {
 public:
  Graph() noexcept;  // empty: replay() is Errc::graph_state
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  explicit operator bool() const noexcept { return state_ != nullptr; }

  // One cuGraphLaunch on the stream the graph was captured on. Errc::graph_state for an empty or
  // destroyed graph, a closed device, or a stream that is recording now; Errc::failed_buffer
  // when a buffer the graph reads carries a failure (the replay is skipped, its outputs carry it).
  Result<void> replay();

  // The replay as a diagnosis, as CUDA_LAUNCH_BLOCKING is for eager work (docs/debugging.md):
  // the recording's operations are issued again one by one, eagerly, on the graph's stream, in
  // the order they were recorded (a topological order of the graph), each with the values a
  // replay would use now (the arguments as recorded, params as Graph::set gave them) and each
  // followed by a wait for the stream. The first that fails is the error: "replay_checked: node
  // <i> of <n> failed: <kernel name, copy, fill or write> at <file:line> (<its launch shape and
  // buffers>): <the driver's error>", with the driver's code and, on a checking driver (the
  // fake), its account of the fault; what the graph writes then carries it, as after a failed
  // replay. Nothing else changes: no node of the executable, no param, no buffer's state beyond
  // what a replay does. Work enqueued on the stream before it is waited for first (a fault there
  // is named as before the graph's first node).
  // Refused before anything runs (Errc::graph_state): a graph holding a conditional node (WHILE,
  // IF, SWITCH: a kernel decides on the device which bodies run, which graphcap can't know) or
  // external work (record_external: graphcap did not issue it); an empty or destroyed graph; a
  // stream that is recording, or a recording that forbids waiting now. As replay(), a buffer the
  // graph reads carrying a failure skips it (Errc::failed_buffer). Slow by design (a wait per
  // node): for finding a fault, not for serving. Not concurrently with set() or a re-recording
  // into the graph.
  Result<void> replay_checked();

  // Wait for in-flight replays, destroy the executable, unpin. A failed wait means the stream
  // already faulted: the graph is destroyed anyway and the error queued on the stream. An empty
  // or destroyed graph is a no-op.
  Result<void> destroy();

  // The executable, for interop (e.g. launching it from code that calls CUDA directly); nullptr
  // for an empty or released graph. graphcap still owns it.
  CUgraphExec native_handle() const noexcept;

  // Per-replay parameters: every node of this graph that took `param` (Arg::param while
  // recording) computes with `value` from the next replay on (cuGraphExecKernelNodeSetParams per
  // node). Replays already enqueued, even ones still waiting to run, keep the value they were
  // enqueued with: CUDA applies a set to later launches only. `value` is a T, or of a type that
  // converts to T without narrowing (param_value_for): anything else does not compile, so
  // set(p, 0.1) on a Param<float> asks for 0.1f and set(p, 7) on a Param<std::uint32_t> for 7u,
  // and no value is refused at run time for its type. Errc::invalid_argument when the graph never
  // took `param`; Errc::graph_state for an empty or destroyed graph. On a driver failure no node
  // changes (the ones already set are set back). Param::value() (what eager launches use) is not
  // changed.
  template <class T, class U>
    requires param_value_for<U, T>
  Result<void> set(const Param<T>& param, U value) {
    if (!param) return Error(Errc::invalid_argument, "Graph::set: an empty Param");
    const T converted{value};
    return set_param(param.slot_.get(), &converted, sizeof(T));
  }

  // Whether a node of this graph took `param` (Arg::param while recording); false for an empty
  // param, or an empty or destroyed graph.
  template <class T>
  bool took(const Param<T>& param) const {
    return param && took_param(param.slot_.get());
  }

  // Node counts, pinned memory and capture timings; an empty report for an empty graph.
  const GraphReport& report() const noexcept;

  // The recorded graph in Graphviz DOT, from graphcap's own record of the recording (so the same
  // on every driver): one node per recorded operation in recording order (n0, n1, ...), labelled
  // with its node type and what it is (a kernel's name, grid and block, and each argument: a
  // buffer's access, size and label (Buffer::set_label), a value's size and value, a param's
  // value when recorded; a copy's or fill's bytes and ranges), grouped by the stream that
  // recorded it, and an edge per dependency. The recording keeps only a compact record; the text
  // is built here, when asked. Empty for an empty graph.
  std::string dot() const;

 private:
  friend struct HandleAccess;
  explicit Graph(std::shared_ptr<detail::GraphState> state) noexcept;
  Result<void> set_param(const void* param, const void* bytes, std::size_t size);
  bool took_param(const void* param) const;

  std::shared_ptr<detail::GraphState> state_;
};

}  // namespace graphcap
