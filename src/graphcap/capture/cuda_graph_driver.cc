#include <graphcap/capture/cuda_graph_driver.h>

#include <chrono>
#include <string>
#include <vector>

#include <graphcap/log.h>

namespace graphcap::capture {
namespace {

using Clock = std::chrono::steady_clock;

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
  if (count == recorded.node_count) {
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

Result<Instantiated> CudaGraphDriver::instantiate(const CapturedGraph& graph,
                                                  const GraphReport& recorded) {
  Instantiated out;
  out.report.end_time = graph.end_time;
  const auto start = Clock::now();
  if (Result<void> counted = count_nodes(graph.get(), recorded, out.report); !counted) {
    return counted.error();
  }

  const std::size_t allocs = out.report.nodes(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  const std::size_t frees = out.report.nodes(CU_GRAPH_NODE_TYPE_MEM_FREE);
  if (allocs + frees > 0) {
    return Error(Errc::graph_state,
                 "end_capture: the recording holds " + std::to_string(allocs + frees) +
                     " memory node(s) (" + std::to_string(allocs) + " MEM_ALLOC, " +
                     std::to_string(frees) +
                     " MEM_FREE): CUDA relaunches such a graph once, then fails every replay "
                     "with CUDA_ERROR_INVALID_VALUE; something allocated through the driver "
                     "(e.g. cuMemAllocAsync) on the capturing stream instead of through the "
                     "device's pools, which the warm-up primes");
  }

  CUgraphExec exec = nullptr;
  const CUresult instantiated = driver_->cuGraphInstantiateWithFlags(&exec, graph.get(), 0);
  out.report.instantiate_time = Clock::now() - start;
  if (instantiated != CUDA_SUCCESS) {
    if (exec != nullptr) (void)driver_->cuGraphExecDestroy(exec);
    return Error::from_driver("cuGraphInstantiateWithFlags", instantiated).context("end_capture");
  }
  out.executable = Executable(*driver_, exec);
  return out;
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

}  // namespace graphcap::capture
