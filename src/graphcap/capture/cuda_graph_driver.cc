#include <graphcap/capture/cuda_graph_driver.h>

#include <chrono>
#include <string>
#include <vector>

#include <graphcap/driver/error_names.h>
#include <graphcap/log.h>

namespace graphcap::capture {
namespace {

using Clock = std::chrono::steady_clock;

// "n memory node(s) (a MEM_ALLOC, f MEM_FREE)", or nothing when the graph holds none.
std::string memory_nodes(const GraphReport& report) {
  const std::size_t allocs = report.nodes(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  const std::size_t frees = report.nodes(CU_GRAPH_NODE_TYPE_MEM_FREE);
  if (allocs + frees == 0) return {};
  return std::to_string(allocs + frees) + " memory node(s) (" + std::to_string(allocs) +
         " MEM_ALLOC, " + std::to_string(frees) + " MEM_FREE)";
}

}  // namespace

Result<void> CudaGraphDriver::begin(CUstream stream, CUstreamCaptureMode mode) {
  if (CUresult result = driver_->cuStreamBeginCapture(stream, mode); result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamBeginCapture", result).context("begin_capture");
  }
  return {};
}

Result<void> CudaGraphDriver::count_nodes(CUgraph graph, const GraphReport& recorded,
                                          GraphReport& report) {
  std::size_t count = 0;
  if (CUresult result = driver_->cuGraphGetNodes(graph, nullptr, &count); result != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphGetNodes", result).context("end_capture: counting nodes");
  }
  report.external_work = recorded.external_work;
  if (!recorded.external_work && count == recorded.node_count) {
    // Every node is one the window recorded: skip a driver query per node (capture cost).
    report.nodes_by_type = recorded.nodes_by_type;
    report.node_count = recorded.node_count;
    return {};
  }
  std::vector<CUgraphNode> nodes(count);
  std::size_t read = count;
  if (count > 0) {
    if (CUresult result = driver_->cuGraphGetNodes(graph, nodes.data(), &read);
        result != CUDA_SUCCESS) {
      return Error::from_driver("cuGraphGetNodes", result).context("end_capture: listing nodes");
    }
  }
  report.nodes_by_type.fill(0);
  report.node_count = 0;
  for (std::size_t i = 0; i < read && i < nodes.size(); ++i) {
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    if (CUresult result = driver_->cuGraphNodeGetType(nodes[i], &type); result != CUDA_SUCCESS) {
      return Error::from_driver("cuGraphNodeGetType", result).context("end_capture: typing nodes");
    }
    if (static_cast<std::size_t>(type) < report.nodes_by_type.size()) ++report.nodes_by_type[type];
    ++report.node_count;
  }
  return {};
}

Result<CapturedGraph> CudaGraphDriver::end(CUstream stream) {
  const auto start = Clock::now();
  CUgraph graph = nullptr;
  const CUresult ended = driver_->cuStreamEndCapture(stream, &graph);
  CapturedGraph captured(*driver_, graph);  // a failed end may still hand back a graph: freed
  captured.end_time = Clock::now() - start;
  if (ended != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamEndCapture", ended).context("end_capture");
  }
  if (!captured) return Error(Errc::driver, "end_capture: cuStreamEndCapture returned no graph");
  return captured;
}

Result<GraphReport> CudaGraphDriver::inspect(const CapturedGraph& graph,
                                             const GraphReport& recorded) {
  GraphReport report;
  report.end_time = graph.end_time;
  const auto start = Clock::now();
  if (Result<void> counted = count_nodes(graph.get(), recorded, report); !counted) {
    return counted.error();
  }
  if (const std::string held = memory_nodes(report); !held.empty()) {
    return Error(Errc::graph_state,
                 "end_capture: the recording holds " + held +
                     ": CUDA relaunches such a graph once, then fails every replay "
                     "with CUDA_ERROR_INVALID_VALUE; something allocated through the driver "
                     "(e.g. cuMemAllocAsync) on the capturing stream instead of through the "
                     "device's pools, which the warm-up primes");
  }
  report.instantiate_time = Clock::now() - start;  // the checks count as instantiation
  return report;
}

Result<Executable> CudaGraphDriver::instantiate_inspected(const CapturedGraph& graph,
                                                          GraphReport& report) {
  const auto start = Clock::now();
  CUgraphExec exec = nullptr;
  const CUresult instantiated = driver_->cuGraphInstantiateWithFlags(&exec, graph.get(), 0);
  report.instantiate_time += Clock::now() - start;
  if (instantiated != CUDA_SUCCESS) {
    if (exec != nullptr) (void)driver_->cuGraphExecDestroy(exec);
    return Error::from_driver("cuGraphInstantiateWithFlags", instantiated).context("end_capture");
  }
  return Executable(*driver_, exec);
}

Result<Instantiated> CudaGraphDriver::instantiate(const CapturedGraph& graph,
                                                  const GraphReport& recorded) {
  Result<GraphReport> inspected = inspect(graph, recorded);
  if (!inspected) return inspected.error();
  Instantiated out;
  out.report = *inspected;
  Result<Executable> executable = instantiate_inspected(graph, out.report);
  if (!executable) return executable.error();
  out.executable = std::move(*executable);
  return out;
}

bool CudaGraphDriver::update(const Executable& into, const CapturedGraph& graph,
                             GraphReport& report) {
  report.rerecorded = true;
  const auto start = Clock::now();
  CUgraphExecUpdateResultInfo info{};
  const CUresult result = driver_->cuGraphExecUpdate(into.get(), graph.get(), &info);
  report.update_time = Clock::now() - start;
  if (result == CUDA_SUCCESS) {
    report.updated = true;
    report.update_result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    return true;
  }
  report.updated = false;
  report.update_result = info.result;
  std::string why = "cuGraphExecUpdate refused the re-recording (" +
                    exec_update_result_name(info.result) + ", " + describe_cu_result(result) + ")";
  if (info.errorNode != nullptr) {
    // Name the node: its index among the recording's nodes and its type.
    std::size_t count = 0;
    if (driver_->cuGraphGetNodes(graph.get(), nullptr, &count) == CUDA_SUCCESS && count > 0) {
      std::vector<CUgraphNode> nodes(count);
      if (driver_->cuGraphGetNodes(graph.get(), nodes.data(), &count) == CUDA_SUCCESS) {
        for (std::size_t i = 0; i < count && i < nodes.size(); ++i) {
          if (nodes[i] == info.errorNode) report.update_error_node = i;
        }
      }
    }
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    if (driver_->cuGraphNodeGetType(info.errorNode, &type) == CUDA_SUCCESS) {
      report.update_error_node_type = type;
    }
    why += " at node " +
           (report.update_error_node ? std::to_string(*report.update_error_node) : "?") + " (" +
           node_type_name(report.update_error_node_type) + ")";
  }
  report.update_refusal = why + "; re-instantiated";
  if (result != CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
    // 910 is the driver's ordinary "not this topology"; anything else is worth a warning.
    log(LogLevel::warn, "end_capture: " + report.update_refusal);
  }
  return false;
}

Result<CUgraphNode> CudaGraphDriver::last_node(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUgraphNode* dependencies = nullptr;
  std::size_t count = 0;
  if (CUresult result = driver_->cuStreamGetCaptureInfo(stream, &status, nullptr, nullptr,
                                                        &dependencies, nullptr, &count);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamGetCaptureInfo", result);
  }
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || count != 1 || dependencies == nullptr) {
    return Error(Errc::driver,
                 "cuStreamGetCaptureInfo: the recording is not active or the last node is not "
                 "its only dependency (" + std::to_string(count) + " dependencies), so the node "
                 "can't be named");
  }
  return dependencies[0];
}

Result<std::vector<CUgraphNode>> CudaGraphDriver::nodes(const CapturedGraph& graph) {
  std::size_t count = 0;
  if (CUresult result = driver_->cuGraphGetNodes(graph.get(), nullptr, &count);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphGetNodes", result).context("end_capture: listing nodes");
  }
  std::vector<CUgraphNode> nodes(count);
  if (count > 0) {
    if (CUresult result = driver_->cuGraphGetNodes(graph.get(), nodes.data(), &count);
        result != CUDA_SUCCESS) {
      return Error::from_driver("cuGraphGetNodes", result).context("end_capture: listing nodes");
    }
    nodes.resize(count);
  }
  return nodes;
}

bool CudaGraphDriver::upload(const Executable& executable, CUstream stream, GraphReport& report) {
  const auto start = Clock::now();
  const CUresult result = driver_->cuGraphUpload(executable.get(), stream);
  report.upload_time = Clock::now() - start;
  report.uploaded = result == CUDA_SUCCESS;
  if (!report.uploaded) {
    log(LogLevel::warn, "end_capture: pre-uploading the graph failed (" +
                            Error::from_driver("cuGraphUpload", result).message() +
                            "); the first replay uploads it on demand");
  }
  return report.uploaded;
}

void CudaGraphDriver::dump_dot(const CapturedGraph& graph, const std::string& path) {
  if (CUresult result = driver_->cuGraphDebugDotPrint(graph.get(), path.c_str(),
                                                      CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE);
      result != CUDA_SUCCESS) {
    log(LogLevel::warn, Error::from_driver("cuGraphDebugDotPrint", result)
                            .context("GRAPHCAP_DRIVER_DOT_DIR: dumping " + path)
                            .message());
  } else {
    log(LogLevel::info, "the driver's DOT of the recording is in " + path);
  }
}

Result<LoopNode> CudaGraphDriver::begin_loop(CUstream stream, CUstream body_stream,
                                             unsigned first, CUstreamCaptureMode mode) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph graph = nullptr;
  const CUgraphNode* dependencies = nullptr;
  std::size_t count = 0;
  if (CUresult result = driver_->cuStreamGetCaptureInfo(stream, &status, nullptr, &graph,
                                                        &dependencies, nullptr, &count);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamGetCaptureInfo", result).context("begin_while");
  }
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || graph == nullptr) {
    return Error(status == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? Errc::driver : Errc::graph_state,
                 "begin_while: the stream's recording is " +
                     std::string(status == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? "invalidated"
                                                                               : "not active"),
                 status == CU_STREAM_CAPTURE_STATUS_INVALIDATED
                     ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                     : CUDA_SUCCESS);
  }
  // The dependencies array is the driver's, valid until the stream's next call: copied.
  const std::vector<CUgraphNode> after(dependencies, dependencies + count);
  CUcontext context = nullptr;
  if (CUresult result = driver_->cuCtxGetCurrent(&context); result != CUDA_SUCCESS) {
    return Error::from_driver("cuCtxGetCurrent", result).context("begin_while");
  }
  LoopNode loop;
  if (CUresult result = driver_->cuGraphConditionalHandleCreate(&loop.handle, graph, context, first,
                                                                kGraphCondAssignDefault);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphConditionalHandleCreate", result).context("begin_while");
  }
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  params.conditional.handle = loop.handle;
  params.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
  params.conditional.size = 1;
  params.conditional.ctx = context;
  if (CUresult result = driver_->cuGraphAddNode(&loop.node, graph, after.data(), nullptr,
                                                after.size(), &params);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphAddNode", result).context("begin_while: the WHILE node");
  }
  loop.body = params.conditional.phGraph_out[0];
  if (CUresult result = driver_->cuStreamUpdateCaptureDependencies(
          stream, &loop.node, nullptr, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamUpdateCaptureDependencies", result).context("begin_while");
  }
  if (CUresult result = driver_->cuStreamBeginCaptureToGraph(body_stream, loop.body, nullptr,
                                                             nullptr, 0, mode);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamBeginCaptureToGraph", result)
        .context("begin_while: the loop body");
  }
  return loop;
}

bool CudaGraphDriver::loop_active(CUstream body_stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return driver_->cuStreamIsCapturing(body_stream, &status) == CUDA_SUCCESS &&
         status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

Result<void> CudaGraphDriver::end_loop(CUstream body_stream) {
  CUgraph body = nullptr;  // the node's own body graph (not the caller's to destroy)
  if (CUresult result = driver_->cuStreamEndCapture(body_stream, &body); result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamEndCapture", result).context("end_while: the loop body");
  }
  return {};
}

Result<GraphReport> CudaGraphDriver::inspect_loop_body(CUgraph body, const GraphReport& recorded) {
  GraphReport report;
  if (Result<void> counted = count_nodes(body, recorded, report); !counted) {
    return std::move(counted).error().context("end_while");
  }
  if (const std::string held = memory_nodes(report); !held.empty()) {
    return Error(Errc::graph_state,
                 "end_while: the loop body holds " + held +
                     ", which a conditional node's body may not hold: the driver "
                     "records them and then refuses the whole graph at instantiate "
                     "(CUDA_ERROR_INVALID_VALUE); allocate through the device's pools, before "
                     "the recording");
  }
  return report;
}

std::string CudaGraphDriver::invalidation_account(CUstream stream) {
  try {
    return driver_->capture_invalidation(stream);
  } catch (...) {
    return {};  // a diagnostic: never a reason to fail the refusal it words
  }
}

}  // namespace graphcap::capture
