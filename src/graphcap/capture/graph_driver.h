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

// A conditional node inserted into a recording (GraphDriver::add_conditional): the node and its
// body graphs (owned by the node), one per body (WHILE and IF without ELSE: 1, IF/ELSE: 2, SWITCH:
// one per case).
struct ConditionalNode {
  CUgraphNode node = nullptr;
  std::vector<CUgraph> bodies;
};

// Why an instantiate was refused, beside its error: cuGraphInstantiateWithParams' result and the
// node it named (nullptr: none; possibly a node of a conditional body).
struct InstantiateFailure {
  CUgraphInstantiateResult result = CUDA_GRAPH_INSTANTIATE_ERROR;
  CUgraphNode node = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;  // the named node's
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
  // inspect() accepted (cuGraphInstantiateWithParams, with node priorities when
  // report.node_priorities), adding its timing to `report`. A refusal's error names the driver's
  // result and the type of the node it named; `failure`, when given, receives them (the node
  // too, for the caller to name it in its own terms). `measure_memory` false: no cuMemGetInfo
  // around it whatever the device measures (other instantiates run at once: their drops of free
  // memory can't be told apart); the driver bytes are the model's.
  virtual Result<GraphReport> inspect(const CapturedGraph& graph, const GraphReport& recorded) = 0;
  virtual Result<Executable> instantiate_inspected(const CapturedGraph& graph, GraphReport& report,
                                                   InstantiateFailure* failure,
                                                   bool measure_memory) = 0;

  // Apply an inspected graph to an existing executable in place (cuGraphExecUpdate). True when
  // the executable took it; false when the driver refused (report's update fields say why: the
  // CUgraphExecUpdateResult by name, the driver's error, the node), leaving the executable as it
  // was.
  virtual bool update(const Executable& into, const CapturedGraph& graph, GraphReport& report) = 0;

  // The node the last operation issued on capturing `stream` added: the capture's one dependency
  // right after it (docs/cuda-driver-facts.md, cuStreamGetCaptureInfo). An error when the capture
  // is not active or has another number of dependencies.
  virtual Result<CUgraphNode> last_node(CUstream stream) = 0;

  // The graph's nodes, as cuGraphGetNodes lists them (in the order they were created); of a
  // captured graph, or of a conditional node's body graph.
  virtual Result<std::vector<CUgraphNode>> nodes(const CapturedGraph& graph) = 0;
  virtual Result<std::vector<CUgraphNode>> body_nodes(CUgraph body) = 0;

  // Stage the executable on the device ahead of the first replay. A failure is only a warning
  // (the first replay uploads on demand); returns whether it succeeded.
  virtual bool upload(const Executable& executable, CUstream stream, GraphReport& report) = 0;

  // Conditional nodes inside the recording (docs/cuda-driver-facts.md, "Conditional nodes", "IF,
  // IF/ELSE and SWITCH nodes"). A conditional handle on the graph `stream` captures into now (the
  // recording's graph, or the body graph a body stream captures), assigned `first` at the start
  // of every launch (CU_GRAPH_COND_ASSIGN_DEFAULT).
  virtual Result<CUgraphConditionalHandle> create_condition(CUstream stream, unsigned first) = 0;
  // A conditional node of `type` with `size` bodies after `stream`'s current dependencies, on
  // which its later work depends. An error for any step the driver refused (what was done before
  // it stays in the recording, which the caller must refuse).
  virtual Result<ConditionalNode> add_conditional(CUstream stream, CUgraphConditionalHandle handle,
                                                  CUgraphConditionalNodeType type,
                                                  unsigned size) = 0;
  // Capture one body graph on `body_stream` (in `mode`), and close it again.
  virtual Result<void> begin_body(CUstream body_stream, CUgraph body, CUstreamCaptureMode mode) = 0;
  // Whether `body_stream`'s capture is still active (not invalidated), or why that can't be told.
  virtual Result<bool> body_active(CUstream body_stream) = 0;
  virtual Result<void> end_body(CUstream body_stream) = 0;

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
