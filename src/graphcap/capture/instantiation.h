// Instantiation: the last half of closing a recording, the executable made from the graph the
// capture handed back (inspected: its census taken, memory nodes refused), with a refusal naming
// the node the driver named in graphcap's terms. RecordingClose runs it inside the close; a
// recording closed with its instantiate deferred (CloseRequest::defer_instantiate) runs it later
// through instantiate_deferred, on any thread: it touches only the recording it is given and the
// driver (cuGraphInstantiateWithParams of distinct graphs may run on several threads at once).
#pragma once

#include <string>
#include <vector>

#include <graphcap/capture/captured_graph.h>
#include <graphcap/capture/graph_driver.h>
#include <graphcap/capture/graph_report.h>
#include <graphcap/capture/recording.h>
#include <graphcap/result.h>

namespace graphcap::capture {

// Instantiate `captured`, which GraphDriver::inspect accepted into `report`, into `recording`:
// its executable and report and, where param nodes name nodes of it, the graph and its `nodes`
// (as cuGraphGetNodes lists them: given when the recording has param nodes); `report` and
// `nodes` are moved from. `bodies`: the recording's conditional bodies, to name a failed node.
// `measure_memory`: cuMemGetInfo around the instantiate where the device measures driver memory
// (GraphDriver::instantiate_inspected). Refused: the error, the node named; `recording` keeps
// no executable.
Result<void> instantiate_into(GraphDriver& graphs, CapturedGraph& captured, GraphReport& report,
                              std::vector<CUgraphNode>& nodes,
                              const std::vector<BodyGraph>& bodies, bool measure_memory,
                              Recording& recording);

// A recording closed with its instantiate deferred (OpenRecording::defer_instantiate: no
// executable, its graph in `source`, its census in `report`), instantiated now; `bodies` are its
// conditional bodies' graphs (ConditionalFrames::body_graphs at its close). Its driver bytes are
// the model's: other instantiates may be running at once, so the drop of free memory across this
// one can't be told apart from theirs. A recording with an executable already: nothing to do.
Result<void> instantiate_deferred(GraphDriver& graphs, Recording& recording,
                                  const std::vector<BodyGraph>& bodies);

// The node a refused instantiate named (`failure`), in graphcap's terms: its position among the
// graph's nodes or a body's, and graphcap's recorded node there when the counts agree.
std::string name_failed_node(GraphDriver& graphs, CapturedGraph& captured,
                             const Recording& recording, const std::vector<BodyGraph>& bodies,
                             const InstantiateFailure& failure);

}  // namespace graphcap::capture
