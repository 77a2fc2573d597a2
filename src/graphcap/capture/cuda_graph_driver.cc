#include <graphcap/capture/cuda_graph_driver.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <graphcap/driver/driver_hooks.h>
#include <graphcap/driver/error_names.h>
#include <graphcap/driver/executable_memory.h>
#include <graphcap/driver/node_params.h>
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

// The device's free memory, or nothing (warned: the driver's bytes then come from the model).
std::optional<std::size_t> free_memory(DriverApi& driver, const char* when) {
  std::size_t free = 0;
  std::size_t total = 0;
  if (CUresult result = driver.cuMemGetInfo(&free, &total); result != CUDA_SUCCESS) {
    log(LogLevel::warn, Error::from_driver("cuMemGetInfo", result)
                            .context(std::string("end_capture: measuring the executable's driver "
                                                 "memory ") + when)
                            .message() +
                            "; its driver bytes come from the measured model instead");
    return std::nullopt;
  }
  return free;
}

// The model's figure for the report's nodes (executable_memory.h).
std::size_t model_driver_bytes(const GraphReport& report) {
  ExecutableNodes nodes;
  nodes.kernels = report.nodes(CU_GRAPH_NODE_TYPE_KERNEL) + report.nodes(CU_GRAPH_NODE_TYPE_MEMCPY);
  nodes.conditionals = report.nodes(CU_GRAPH_NODE_TYPE_CONDITIONAL);
  const std::size_t empty = report.nodes(CU_GRAPH_NODE_TYPE_EMPTY);
  const std::size_t counted = nodes.kernels + nodes.conditionals + empty;
  nodes.others = report.node_count > counted ? report.node_count - counted : 0;
  return executable_driver_bytes(nodes);
}

// The driver's own bytes for the executable just instantiated: what cuMemGetInfo saw
// instantiate take where that can be this executable's (the model's figure is at least one of the
// driver's 2 MiB chunks, and the drop is within reach of it: nothing else allocated meanwhile and
// the driver had no kept memory to reuse), else the measured model's figure.
void account_driver_bytes(GraphReport& report, std::size_t model,
                          std::optional<std::size_t> taken) {
  GraphMemory& memory = report.memory;
  memory.driver_model_bytes = model;
  memory.driver_taken_known = taken.has_value();
  memory.driver_taken_bytes = taken.value_or(0);
  const bool measurable = taken && *taken > 0 && model >= kDriverMemoryChunk &&
                          *taken >= model / 2 && *taken <= 2 * model + kDriverMemoryChunk;
  memory.driver_bytes = measurable ? *taken : model;
  memory.driver_source = measurable ? DriverBytesSource::measured : DriverBytesSource::model;
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
                                                          GraphReport& report,
                                                          InstantiateFailure* failure,
                                                          bool measure_memory) {
  // Through cuGraphInstantiateWithParams for its report of what failed (measured: it names the
  // node, also one inside a conditional body). Not with CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD: that
  // saved 0.8-3% (9-19 us at 100-1000 kernels, docs/cuda-driver-facts.md,
  // "cuGraphInstantiateWithParams") but would make a failed upload a failed instantiate, where the
  // lifecycle makes it a warning (the first replay uploads).
  CUDA_GRAPH_INSTANTIATE_PARAMS params{};
  params.flags =
      report.node_priorities ? cuuint64_t{CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY} : 0;
  params.result_out = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  // The driver takes its memory for the executable at instantiate (measured on the H200: none at
  // upload or launch), so free memory is asked around it; not for an executable smaller than one
  // of the driver's 2 MiB chunks, which the drop can't tell from its neighbours' (the model's
  // figure stands for it).
  const std::size_t model = model_driver_bytes(report);
  const bool measure = measure_memory && measure_driver_memory_ && model >= kDriverMemoryChunk;
  const std::optional<std::size_t> free_before =
      measure ? free_memory(*driver_, "before instantiating") : std::nullopt;
  const auto start = Clock::now();
  CUgraphExec exec = nullptr;
  const CUresult instantiated = driver_->cuGraphInstantiateWithParams(&exec, graph.get(), &params);
  report.instantiate_time += Clock::now() - start;
  if (instantiated == CUDA_SUCCESS) {
    std::optional<std::size_t> taken;
    if (free_before.has_value()) {
      const std::size_t before = free_before.value();  // .value(): GCC 12 sees it uninitialised
      if (const std::optional<std::size_t> free_after =
              free_memory(*driver_, "after instantiating")) {
        taken = *free_after < before ? before - *free_after : 0;
      }
    }
    account_driver_bytes(report, model, taken);
    return Executable(*driver_, exec);
  }
  if (exec != nullptr) (void)driver_->cuGraphExecDestroy(exec);
  InstantiateFailure named;
  named.result = params.result_out;
  named.node = params.hErrNode_out;
  std::string why;
  if (named.result != CUDA_GRAPH_INSTANTIATE_SUCCESS) {
    why = "; the driver's result: " + instantiate_result_name(named.result);
  }
  if (named.node != nullptr) {
    if (driver_->cuGraphNodeGetType(named.node, &named.type) == CUDA_SUCCESS) {
      why += std::string(", naming a ") + node_type_name(named.type) + " node";
    } else {
      why += ", naming a node it could not type";
    }
  } else if (named.result != CUDA_GRAPH_INSTANTIATE_SUCCESS) {
    why += ", naming no node";
  }
  if (failure != nullptr) *failure = named;
  Error error = Error::from_driver("cuGraphInstantiateWithParams", instantiated);
  return Error(error.code(), "end_capture: " + error.message() + why, error.driver_code());
}

Result<Instantiated> CudaGraphDriver::instantiate(const CapturedGraph& graph,
                                                  const GraphReport& recorded) {
  Result<GraphReport> inspected = inspect(graph, recorded);
  if (!inspected) return inspected.error();
  Instantiated out;
  out.report = *inspected;
  Result<Executable> executable = instantiate_inspected(graph, out.report, nullptr, true);
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
  return body_nodes(graph.get());
}

Result<std::vector<CUgraphNode>> CudaGraphDriver::body_nodes(CUgraph graph) {
  std::size_t count = 0;
  if (CUresult result = driver_->cuGraphGetNodes(graph, nullptr, &count); result != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphGetNodes", result).context("end_capture: listing nodes");
  }
  std::vector<CUgraphNode> nodes(count);
  if (count > 0) {
    if (CUresult result = driver_->cuGraphGetNodes(graph, nodes.data(), &count);
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

Result<std::pair<CUgraph, std::vector<CUgraphNode>>> CudaGraphDriver::capture_point(
    CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph graph = nullptr;
  const CUgraphNode* dependencies = nullptr;
  std::size_t count = 0;
  if (CUresult result = driver_->cuStreamGetCaptureInfo(stream, &status, nullptr, &graph,
                                                        &dependencies, nullptr, &count);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamGetCaptureInfo", result);
  }
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || graph == nullptr) {
    const bool invalidated = status == CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    return Error(invalidated ? Errc::driver : Errc::graph_state,
                 std::string("the stream's recording is ") +
                     (invalidated ? "invalidated" : "not active"),
                 invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS);
  }
  // The dependencies array is the driver's, valid until the stream's next call: copied.
  return std::pair{graph, std::vector<CUgraphNode>(dependencies, dependencies + count)};
}

Result<CUgraphConditionalHandle> CudaGraphDriver::create_condition(CUstream stream,
                                                                   unsigned first) {
  Result<std::pair<CUgraph, std::vector<CUgraphNode>>> point = capture_point(stream);
  if (!point) return point.error();
  CUcontext context = nullptr;
  if (CUresult result = driver_->cuCtxGetCurrent(&context); result != CUDA_SUCCESS) {
    return Error::from_driver("cuCtxGetCurrent", result);
  }
  CUgraphConditionalHandle handle = 0;
  if (CUresult result = driver_->cuGraphConditionalHandleCreate(&handle, point->first, context,
                                                                first, kGraphCondAssignDefault);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphConditionalHandleCreate", result);
  }
  return handle;
}

Result<ConditionalNode> CudaGraphDriver::add_conditional(CUstream stream,
                                                         CUgraphConditionalHandle handle,
                                                         CUgraphConditionalNodeType type,
                                                         unsigned size) {
  Result<std::pair<CUgraph, std::vector<CUgraphNode>>> point = capture_point(stream);
  if (!point) return point.error();
  CUcontext context = nullptr;
  if (CUresult result = driver_->cuCtxGetCurrent(&context); result != CUDA_SUCCESS) {
    return Error::from_driver("cuCtxGetCurrent", result);
  }
  CUgraphNodeParams params = conditional_node_params(handle, type, size, context);
  const std::vector<CUgraphNode>& after = point->second;
  ConditionalNode added;
  if (CUresult result = driver_->cuGraphAddNode(&added.node, point->first, after.data(), nullptr,
                                                after.size(), &params);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphAddNode", result);
  }
  added.bodies.assign(params.conditional.phGraph_out, params.conditional.phGraph_out + size);
  if (CUresult result = driver_->cuStreamUpdateCaptureDependencies(
          stream, &added.node, nullptr, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamUpdateCaptureDependencies", result);
  }
  return added;
}

Result<void> CudaGraphDriver::begin_body(CUstream body_stream, CUgraph body,
                                         CUstreamCaptureMode mode) {
  if (CUresult result =
          driver_->cuStreamBeginCaptureToGraph(body_stream, body, nullptr, nullptr, 0, mode);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamBeginCaptureToGraph", result);
  }
  return {};
}

Result<bool> CudaGraphDriver::body_active(CUstream body_stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (CUresult result = driver_->cuStreamIsCapturing(body_stream, &status);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamIsCapturing", result);
  }
  return status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

Result<void> CudaGraphDriver::end_body(CUstream body_stream) {
  CUgraph body = nullptr;  // the node's own body graph (not the caller's to destroy)
  if (CUresult result = driver_->cuStreamEndCapture(body_stream, &body); result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamEndCapture", result);
  }
  return {};
}

std::string CudaGraphDriver::invalidation_account(CUstream stream) {
  try {
    return detail::DriverHooks::capture_invalidation(*driver_, stream);
  } catch (...) {
    return {};  // a diagnostic: never a reason to fail the refusal it words
  }
}

}  // namespace graphcap::capture
