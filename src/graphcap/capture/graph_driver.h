// GraphDriver: the CUDA half of graph capture, the four driver operations around a recording:
// open it, close it, instantiate what it captured into an executable, stage that executable
// (replay is Executable::launch). It makes the driver calls and knows nothing of pools, buffers
// or windows; the Window drives it.
#pragma once

#include <vector>

#include <graphcap/capture/captured_graph.h>
#include <graphcap/capture/executable.h>
#include <graphcap/capture/graph_report.h>
#include <graphcap/driver/cuda_types.h>
#include <graphcap/result.h>

#include <string>

namespace graphcap::capture {

// A WHILE node inserted into a recording (GraphDriver::begin_loop): its conditional handle, the
// node, and its body graph (owned by the node).
struct LoopNode {
  CUgraphConditionalHandle handle = 0;
  CUgraphNode node = nullptr;
  CUgraph body = nullptr;
};

struct Instantiated {
  Executable executable;
  GraphReport report;  // node counts and timings; pinning is filled in by the window
};

class GraphDriver {
 public:
  virtual ~GraphDriver() = default;

  // Open the driver's recording on `stream`.
  virtual Result<void> begin(CUstream stream, CUstreamCaptureMode mode) = 0;

  // Close the driver's recording on `stream` (always: a stream left capturing records every
  // launch that follows). The captured graph, or the driver's error (the graph it may still have
  // handed back is freed).
  virtual Result<CapturedGraph> end(CUstream stream) = 0;

  // Instantiate a captured graph. Refuses a graph that holds memory nodes (CUDA relaunches such
  // a graph once, then fails every replay). `recorded` counts the nodes the window's own
  // operations added, by type: when the graph holds exactly that many nodes, every node is one
  // of them (each adds one node, and anything else on the stream would add more), so the
  // memory-node check needs no per-node query.
  virtual Result<Instantiated> instantiate(const CapturedGraph& graph,
                                           const GraphReport& recorded) = 0;

  // The two halves of instantiate(): inspect() counts the nodes and refuses memory nodes (the
  // report it returns has the counts and end_time); instantiate_inspected() instantiates a graph
  // inspect() accepted, adding its timing to `report`.
  virtual Result<GraphReport> inspect(const CapturedGraph& graph, const GraphReport& recorded) = 0;
  virtual Result<Executable> instantiate_inspected(const CapturedGraph& graph,
                                                   GraphReport& report) = 0;

  // Apply an inspected graph to an existing executable in place (cuGraphExecUpdate). True when
  // the executable took it; false when the driver refused (report's update fields say why: the
  // CUgraphExecUpdateResult by name, the driver's error, the node), leaving the executable as it
  // was.
  virtual bool update(const Executable& into, const CapturedGraph& graph, GraphReport& report) = 0;

  // The node the last operation issued on capturing `stream` added: the capture's one dependency
  // right after it (docs/cuda-driver-facts.md, cuStreamGetCaptureInfo). An error when the capture
  // is not active or has another number of dependencies.
  virtual Result<CUgraphNode> last_node(CUstream stream) = 0;

  // The graph's nodes, as cuGraphGetNodes lists them.
  virtual Result<std::vector<CUgraphNode>> nodes(const CapturedGraph& graph) = 0;

  // Stage the executable on the device ahead of the first replay. A failure is only a warning
  // (the first replay uploads on demand); returns whether it succeeded.
  virtual bool upload(const Executable& executable, CUstream stream, GraphReport& report) = 0;

  // A WHILE loop inside the recording on `stream` (docs/cuda-driver-facts.md, "Conditional
  // nodes"): a conditional handle on the graph being recorded, assigned `first` at the start of
  // every launch; a WHILE node after the stream's current dependencies, on which its later work
  // depends; and the capture of the node's body opened on `body_stream` (in `mode`). Every step
  // the driver refuses is an error (what was done before it stays in the recording, which the
  // caller must refuse).
  virtual Result<LoopNode> begin_loop(CUstream stream, CUstream body_stream, unsigned first,
                                      CUstreamCaptureMode mode) = 0;
  // Whether `body_stream`'s capture is still active (not invalidated).
  virtual bool loop_active(CUstream body_stream) = 0;
  // Close the body's capture on `body_stream`.
  virtual Result<void> end_loop(CUstream body_stream) = 0;
  // The body graph's node counts; refused when it holds memory nodes (the driver accepts them in
  // a body and refuses the whole graph at instantiate). `recorded` as for inspect().
  virtual Result<GraphReport> inspect_loop_body(CUgraph body, const GraphReport& recorded) = 0;

  // The driver's own DOT dump of a captured graph (cuGraphDebugDotPrint, verbose) into `path`,
  // for CUDA-level detail; a failure is only a warning.
  virtual void dump_dot(const CapturedGraph& graph, const std::string& path) = 0;

  // The driver's own account of what invalidated the recording last begun on `stream`
  // (DriverApi::capture_invalidation), or empty when it keeps none. For refusal messages only.
  virtual std::string invalidation_account(CUstream stream) {
    (void)stream;
    return {};
  }
};

}  // namespace graphcap::capture
