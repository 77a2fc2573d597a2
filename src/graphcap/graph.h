// Graph: a recording closed into an executable, replayable many times. Move-only.
// replay() enqueues one cuGraphLaunch and returns at once; an error in it is also queued on the
// stream and surfaces on the next sync. Destroying a Graph waits for its in-flight replays, then
// destroys the executable and unpins the memory it replays against.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/result.h>

namespace graphcap {

namespace detail {
class GraphState;
}

struct GraphReport {
  std::array<std::size_t, kGraphNodeTypeCount> nodes_by_type{};  // indexed by CUgraphNodeType
  std::size_t node_count = 0;
  std::size_t pinned_slices = 0;  // device and staging slices held for the graph's lifetime
  std::size_t pinned_bytes = 0;
  std::chrono::nanoseconds end_time{};          // cuStreamEndCapture
  std::chrono::nanoseconds instantiate_time{};  // node checks + cuGraphInstantiateWithFlags
  std::chrono::nanoseconds upload_time{};       // cuGraphUpload
  bool uploaded = false;                        // false when the pre-upload failed (warned)

  std::size_t nodes(CUgraphNodeType type) const noexcept {
    return static_cast<std::size_t>(type) < nodes_by_type.size() ? nodes_by_type[type] : 0;
  }
};

class Graph {
 public:
  Graph() noexcept;  // empty: replay() is Errc::graph_state
  explicit Graph(std::shared_ptr<detail::GraphState> state) noexcept;
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  explicit operator bool() const noexcept { return state_ != nullptr; }

  // One cuGraphLaunch on the stream the graph was captured on. Errc::graph_state for an empty or
  // destroyed graph, a closed device, or a stream that is recording now.
  Result<void> replay();

  // Wait for in-flight replays, destroy the executable, unpin. A failed wait means the stream
  // already faulted: the graph is destroyed anyway and the error queued on the stream. An empty
  // or destroyed graph is a no-op.
  Result<void> destroy();

  // The executable, for interop (e.g. launching it from code that calls CUDA directly); nullptr
  // for an empty or released graph. graphcap still owns it.
  CUgraphExec native_handle() const noexcept;

  // Node counts, pinned memory and capture timings; an empty report for an empty graph.
  const GraphReport& report() const noexcept;

 private:
  std::shared_ptr<detail::GraphState> state_;
};

}  // namespace graphcap
