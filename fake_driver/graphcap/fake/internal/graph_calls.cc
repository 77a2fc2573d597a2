// Graphs and executables: inspection, instantiation (with the one-executable rule for graphs
// holding memory nodes, and the driver's own memory for the executable), upload, launch (with
// the memory-node relaunch rule), exec update and destruction.
#include <graphcap/fake/internal/fake_state.h>

#include <algorithm>
#include <fstream>

#include <graphcap/fake/internal/kernel_params.h>

namespace graphcap::fake {
namespace {

// What an executable's nodes cost the driver (executable_memory.h), conditional bodies included.
void count_nodes(const internal::ExecBody& body, ExecutableNodes& nodes) {
  for (const internal::NodeData& node : body.nodes) {
    switch (internal::node_type(node.work)) {
      case CU_GRAPH_NODE_TYPE_KERNEL:
      case CU_GRAPH_NODE_TYPE_MEMCPY:
        ++nodes.kernels;
        break;
      case CU_GRAPH_NODE_TYPE_CONDITIONAL:
        ++nodes.conditionals;
        for (const auto& inner : std::get<internal::ConditionalWork>(node.work).exec_bodies) {
          count_nodes(*inner, nodes);
        }
        break;
      case CU_GRAPH_NODE_TYPE_EMPTY:
        break;
      default:
        ++nodes.others;
        break;
    }
  }
}

}  // namespace

using internal::DeviceMemory;

void FakeState::erase_graph(CUgraph handle) {
  auto it = graphs_.find(handle);
  if (it == graphs_.end()) return;
  // A conditional node owns its body graphs, and a graph its conditional handles.
  std::vector<CUgraph> bodies;
  for (const internal::NodeData& node : it->second.nodes) {
    if (const auto* conditional = std::get_if<internal::ConditionalWork>(&node.work)) {
      bodies.insert(bodies.end(), conditional->bodies.begin(), conditional->bodies.end());
    }
  }
  for (CUgraphNode node : it->second.node_handles) {
    nodes_.erase(node);
    node_bodies_.erase(node);
  }
  for (CUgraphConditionalHandle condition : it->second.conditions) conditions_.erase(condition);
  graphs_.erase(it);
  for (CUgraph body : bodies) erase_graph(body);
}

CUresult FakeState::instantiate_body(const internal::Graph& graph,
                                     std::shared_ptr<const internal::ExecBody>* out,
                                     InstantiateReport* report) {
  std::shared_ptr<internal::ExecBody> body = internal::make_exec_body(graph.nodes);
  for (CUgraphConditionalHandle condition : graph.conditions) {
    // Measured on the H200 (ConditionalNodes.AHandleNoNodeUsesMakesInstantiateFail):
    // a handle created on the graph (or a body) that no conditional node uses fails instantiate,
    // CONDITIONAL_HANDLE_UNUSED, naming no node.
    const internal::ConditionDef& def = conditions_.at(condition);
    if (def.node == nullptr) {
      report->result = CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED;
      return CUDA_ERROR_INVALID_VALUE;
    }
    body->conditions.push_back(def);
  }
  for (internal::NodeData& node : body->nodes) {
    auto* conditional = std::get_if<internal::ConditionalWork>(&node.work);
    if (conditional == nullptr) continue;
    conditional->exec_bodies.clear();
    for (CUgraph handle : conditional->bodies) {
      const internal::Graph& inner = graphs_.at(handle);
      // Measured on the H200: memory nodes in a conditional body are accepted by capture
      // and refused here, by the outer graph's instantiate, naming the body's memory node.
      if (std::optional<std::size_t> memory = inner.first_memory_node()) {
        report->result = CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED;
        report->node = inner.node_handles[*memory];
        return CUDA_ERROR_INVALID_VALUE;
      }
      std::shared_ptr<const internal::ExecBody> nested;
      if (CUresult r = instantiate_body(inner, &nested, report); r != CUDA_SUCCESS) return r;
      body->conditions.insert(body->conditions.end(), nested->conditions.begin(),
                              nested->conditions.end());
      conditional->exec_bodies.push_back(std::move(nested));
    }
  }
  *out = std::move(body);
  return CUDA_SUCCESS;
}

CUresult FakeState::instantiate(CUgraphExec* exec, CUgraph handle, unsigned long long flags,
                                CUstream upload, bool with_params, InstantiateReport* report) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (with_params && handle == nullptr) return CUDA_ERROR_INVALID_VALUE;  // measured
  auto it = graphs_.find(handle);
  if (it == graphs_.end()) return CUDA_ERROR_INVALID_HANDLE;
  internal::Graph& graph = it->second;
  // Measured on the H200 (graphcap-fidelity, 2026-12-03): instantiate is a potentially unsafe
  // call (900, invalidating the captures that prohibit it), checked before the flags. Where the
  // rule allows it, a graph a capture is still building (or capturing into) instantiates as it is
  // now: the 900 UnmeasuredRules saw came from this rule (and so did the same answer of
  // cuGraphInstantiateWithParams under a global capture).
  // UPLOAD (2) is only for cuGraphInstantiateWithParams; AUTO_FREE_ON_LAUNCH and DEVICE_LAUNCH
  // exclude each other; unknown bits are refused. Measured (graphcap-fidelity, 2026-12-03 and 04:
  // 119 programs): unknown bits are 1 unless an active capture prohibits the call (900); an
  // invalidated one does not, on any thread. The two excluding flags are checked after the whole
  // rule (22 programs answered 900 for an invalidated capture of another thread).
  const unsigned long long accepted =
      CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
      CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY |
      (with_params ? CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD : 0ULL);
  const bool device_launch = (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0;
  if ((flags & ~accepted) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) == 0) {
    if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  }
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0 && device_launch) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (device_launch) {
    // Measured: a graph for device launch holds kernel, memcpy and memset nodes only (the first
    // other node is named), and is not empty. Measured (graphcap-fidelity, 2026-12-04, 11
    // programs): a copy from or to the host is refused too, the nodes are looked
    // at in order, and the copy is named with NODE_OPERATION_NOT_SUPPORTED when it is the
    // graph's first node and MULTIPLE_CTXS_NOT_SUPPORTED after another node (whether "first"
    // means the first node or a root was not told apart: every such copy was both or neither).
    // Measured (graphcap-fidelity, 2026-12-04, 6 programs): a copy from or to pinned host
    // memory (cuMemAllocHost) is accepted; only pageable host memory is refused (CUDA's device
    // graph rules: "pinned device-mapped host memory" is permitted).
    if (graph.nodes.empty()) return CUDA_ERROR_INVALID_VALUE;
    for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
      const internal::NodeWork& work = graph.nodes[i].work;
      const CUgraphNodeType type = internal::node_type(work);
      const auto* to_device = std::get_if<internal::CopyToDeviceWork>(&work);
      const auto* to_host = std::get_if<internal::CopyToHostWork>(&work);
      const bool host_copy =
          (to_device != nullptr && !to_device->pinned) || (to_host != nullptr && !to_host->pinned);
      if (host_copy) {
        report->result = i == 0 ? CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED
                                : CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED;
        report->node = graph.node_handles[i];
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (type != CU_GRAPH_NODE_TYPE_KERNEL && type != CU_GRAPH_NODE_TYPE_MEMCPY &&
          type != CU_GRAPH_NODE_TYPE_MEMSET) {
        report->result = CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED;
        report->node = graph.node_handles[i];
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
  }
  Stream* upload_stream = nullptr;
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0) {
    // Measured: NULL is the legacy stream; a capturing stream is 900, invalidating
    // its capture, as cuGraphUpload into it is (and as for cuGraphUpload, measured by
    // graphcap-fidelity, 900 also when its capture is already invalidated, not 901: not measured
    // for this entry point). Without the flag the stream is ignored.
    if (CUresult r = resolve_stream(upload, *context, &upload_stream); r != CUDA_SUCCESS) return r;
    if (capture_of(*upload_stream) != nullptr) {
      return refuse(*upload_stream, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    bool captured = false;
    if (CUresult r = route(*upload_stream, &captured); r != CUDA_SUCCESS) return r;
  }
  // One executable at a time for a graph holding memory nodes (measured) or conditional nodes
  // (measured: a second instantiate is NOT_SUPPORTED until the first is destroyed).
  // Measured (graphcap-fidelity, 2026-12-04, 5 programs): only executables made while the
  // graph held such nodes count (a capture's graph instantiated before its first allocation
  // does not), and an upload stream that captures is 900 first.
  // Measured (graphcap-fidelity, 2026-12-04, 4 programs): for conditional nodes every
  // live executable of the graph counts, also one made before its first conditional node.
  const bool exclusive = graph.has_memory_nodes() || graph.has_conditional_nodes();
  if (exclusive && graph.exclusive_execs > 0) return CUDA_ERROR_NOT_SUPPORTED;
  if (graph.has_conditional_nodes() && graph.live_execs > 0) return CUDA_ERROR_NOT_SUPPORTED;
  // Measured (H100, 2026-12-07, 2 programs): a memset node into another graph's allocation that
  // no launch holds now (its graph frees it) is INVALID_VALUE, as an eager memset there is.
  for (const internal::NodeData& node : graph.nodes) {
    const auto* memset = std::get_if<internal::MemsetWork>(&node.work);
    if (memset == nullptr) continue;
    const DeviceMemory::Allocation* a = device_memory_.find_containing(memset->dst);
    if (a == nullptr || a->kind != DeviceMemory::Kind::graph || a->host_allocated) continue;
    const bool own = std::any_of(graph.nodes.begin(), graph.nodes.end(), [&](const auto& other) {
      const auto* alloc = std::get_if<internal::AllocWork>(&other.work);
      return alloc != nullptr && alloc->address == a->base;
    });
    if (!own) return CUDA_ERROR_INVALID_VALUE;
  }
  std::shared_ptr<const internal::ExecBody> body;
  if (CUresult r = instantiate_body(graph, &body, report); r != CUDA_SUCCESS) return r;
  // Instantiate takes the driver's memory for the executable (measured: upload and launch take
  // none), in 2 MiB chunks; without room for them it fails (not measured: a guess). Both entry
  // points take it: cuGraphInstantiateWithParams is the same instantiate.
  ExecutableNodes counted;
  count_nodes(*body, counted);
  const std::size_t driver_bytes = executable_driver_bytes(counted);
  if (!has_room(context->device, executable_arena_.growth(context->device, driver_bytes))) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  executable_arena_.take(context->device, driver_bytes);
  Exec created;
  created.driver_bytes = driver_bytes;
  created.handle = new_handle<CUgraphExec>();
  created.device = context->device;
  created.flags = flags;
  created.source = handle;
  created.body = std::move(body);
  created.uploaded = upload_stream != nullptr;
  created.exclusive = exclusive;
  if (exclusive) ++graph.exclusive_execs;
  created.memory = graph.has_memory_nodes();
  if (created.memory) ++graph.memory_execs;
  ++graph.live_execs;
  *exec = created.handle;
  execs_.emplace(created.handle, std::move(created));
  report->result = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  report->node = nullptr;
  return CUDA_SUCCESS;
}

void FakeState::erase_exec(CUgraphExec handle) {
  auto it = execs_.find(handle);
  if (it == execs_.end()) return;
  for (auto value = condition_values_.begin(); value != condition_values_.end();) {
    value = value->first.first == handle ? condition_values_.erase(value) : std::next(value);
  }
  if (auto graph = graphs_.find(it->second.source); graph != graphs_.end()) {
    if (it->second.exclusive && graph->second.exclusive_execs > 0) {
      --graph->second.exclusive_execs;
    }
    if (it->second.memory && graph->second.memory_execs > 0) --graph->second.memory_execs;
    if (graph->second.live_execs > 0) --graph->second.live_execs;
  }
  // The driver keeps the chunks the executable's memory came from (ExecutableArena).
  executable_arena_.give_back(it->second.device, it->second.driver_bytes);
  execs_.erase(it);  // launches still queued hold their own reference to the body
}

CUresult FakeState::cuGraphGetNodes(CUgraph handle, CUgraphNode* nodes, std::size_t* count) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = graphs_.find(handle);
  if (it == graphs_.end()) return CUDA_ERROR_INVALID_HANDLE;
  const std::vector<CUgraphNode>& handles = it->second.node_handles;
  if (nodes == nullptr) {
    *count = handles.size();
    return CUDA_SUCCESS;
  }
  // cuda.h: fill *count entries, NULL past the last node, and report how many were real.
  for (std::size_t i = 0; i < *count; ++i) nodes[i] = i < handles.size() ? handles[i] : nullptr;
  if (*count > handles.size()) *count = handles.size();
  return CUDA_SUCCESS;
}

CUresult FakeState::cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return CUDA_ERROR_INVALID_HANDLE;
  *type = internal::node_type(graphs_.at(it->second.first).nodes[it->second.second].work);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph handle,
                                                unsigned long long flags) {
  InstantiateReport report;
  return instantiate(exec, handle, flags, nullptr, false, &report);
}

// Measured on the H200 (docs/measurements/probes/instantiate_params_probe.cu): the same
// checks as cuGraphInstantiateWithFlags, and result_out and hErrNode_out written on every call that
// has params (CUDA_GRAPH_INSTANTIATE_ERROR and NULL unless a rule says otherwise).
CUresult FakeState::cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph handle,
                                                 CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  if (params == nullptr) {
    Context* context = nullptr;
    if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
    return CUDA_ERROR_INVALID_VALUE;
  }
  InstantiateReport report;
  const CUresult result =
      instantiate(exec, handle, params->flags, params->hUploadStream, true, &report);
  params->result_out = report.result;
  params->hErrNode_out = report.node;
  return result;
}

CUresult FakeState::cuGraphGetEdges(CUgraph handle, CUgraphNode* from, CUgraphNode* to,
                                    CUgraphEdgeData* edge_data, std::size_t* count) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = graphs_.find(handle);
  if (it == graphs_.end()) return CUDA_ERROR_INVALID_VALUE;
  const internal::Graph& graph = it->second;
  // cuda.h: edge data needs from and to; from and to both NULL only count.
  if ((from == nullptr) != (to == nullptr) || (edge_data != nullptr && from == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::size_t edges = 0;
  bool non_default = false;
  for (const internal::NodeData& node : graph.nodes) {
    edges += node.deps.size();
    non_default = non_default || !node.programmatic.empty();
  }
  if (from == nullptr) {
    *count = edges;
    return CUDA_SUCCESS;
  }
  // cuda.h: without edge data every edge must be a default one.
  if (edge_data == nullptr && non_default) return CUDA_ERROR_LOSSY_QUERY;
  std::size_t i = 0;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    for (std::size_t dep : graph.nodes[n].deps) {
      if (i < *count) {
        from[i] = graph.node_handles[dep];
        to[i] = graph.node_handles[n];
        if (edge_data != nullptr) {
          edge_data[i] = CUgraphEdgeData{};
          if (graph.nodes[n].is_programmatic(dep)) {
            edge_data[i].type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
            edge_data[i].from_port = kGraphKernelNodePortProgrammatic;
          }
        }
      }
      ++i;
    }
  }
  // cuda.h: entries past the last edge are NULL, and the count is the edges returned.
  for (std::size_t j = edges; j < *count; ++j) from[j] = to[j] = nullptr;
  if (*count > edges) *count = edges;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuGraphKernelNodeGetAttribute(CUgraphNode node, CUlaunchAttributeID attribute,
                                                  CUlaunchAttributeValue* value) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return CUDA_ERROR_INVALID_VALUE;
  const auto* kernel = std::get_if<internal::KernelWork>(
      &graphs_.at(it->second.first).nodes[it->second.second].work);
  if (kernel == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      // Measured: the launch's priority, clamped to the context's range; 0 without one.
      *value = CUlaunchAttributeValue{};
      value->priority = kernel->priority;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;  // not modelled (docs/fake-driver.md)
  }
}

CUresult FakeState::cuGraphUpload(CUgraphExec exec, CUstream handle) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  auto it = execs_.find(exec);
  if (it == execs_.end()) return CUDA_ERROR_INVALID_HANDLE;
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(handle, *context, &stream); r != CUDA_SUCCESS) return r;
  // Measured (graphcap-fidelity): 900 into a capturing stream, also when its capture is already
  // invalidated (as cuStreamSynchronize), not 901.
  if (capture_of(*stream) != nullptr) return refuse(*stream, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  bool captured = false;
  if (CUresult r = route(*stream, &captured); r != CUDA_SUCCESS) return r;
  it->second.uploaded = true;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuGraphLaunch(CUgraphExec exec, CUstream handle) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  auto it = execs_.find(exec);
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(handle, *context, &stream); r != CUDA_SUCCESS) return r;
  // Measured (graphcap-fidelity): 900 into a capturing stream whether its capture is active
  // (which invalidates it) or already invalidated.
  if (capture_of(*stream) != nullptr) return refuse(*stream, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  bool captured = false;
  if (CUresult r = route(*stream, &captured); r != CUDA_SUCCESS) return r;
  if (it == execs_.end()) return CUDA_ERROR_INVALID_HANDLE;
  Exec& launched = it->second;
  const internal::ExecBody& body = *launched.body;
  const bool auto_free = (launched.flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0;

  // The relaunch rule: an allocation the graph made and does not free must have been freed by
  // the host before the graph runs again (unless AUTO_FREE_ON_LAUNCH frees it).
  for (CUdeviceptr address : body.kept_allocs) {
    const DeviceMemory::Allocation* allocation = device_memory_.find_base(address);
    if (allocation != nullptr && allocation->host_allocated && !auto_free) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (CUdeviceptr address : body.outside_frees) {
    const DeviceMemory::Allocation* allocation = device_memory_.find_base(address);
    if (allocation == nullptr || !allocation->host_allocated) return CUDA_ERROR_INVALID_VALUE;
  }
  for (CUdeviceptr address : body.kept_allocs) {
    DeviceMemory::Allocation* allocation = device_memory_.find_base(address);
    if (allocation == nullptr) continue;
    if (allocation->host_allocated) {  // AUTO_FREE_ON_LAUNCH: freed in order, before the graph
      allocation->host_allocated = false;
      enqueue(*stream, "cuGraphLaunch", internal::NodeWork{internal::FreeWork{address}});
    }
    allocation->host_allocated = true;  // the host owns what this launch allocates
  }
  for (CUdeviceptr address : body.outside_frees) {
    device_memory_.find_base(address)->host_allocated = false;
  }
  launched.uploaded = true;
  enqueue(*stream, "cuGraphLaunch", GraphLaunchWork{launched.body, exec});
  // Measured (H100, 2026-12-07): a graph whose external wait node waits on an event last recorded
  // in an active capture pulls the stream it is launched on into that capture; the launch is 0.
  join_captures_of_wait_nodes(*stream, *launched.body);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuGraphExecUpdate(CUgraphExec exec, CUgraph handle,
                                      CUgraphExecUpdateResultInfo* info) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (info == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto updated = execs_.find(exec);
  auto graph = graphs_.find(handle);
  if (updated == execs_.end() || graph == graphs_.end()) return CUDA_ERROR_INVALID_HANDLE;
  // Measured (graphcap-fidelity, 2026-12-04, 4 programs, against 24 that updated or compared): a
  // graph holding memory nodes that already has another live executable made while it held them is
  // not taken (the one-executable rule of instantiate), before its topology is compared:
  // NOT_SUPPORTED, the result SUCCESS and no node named. Its own executable, or one made before its
  // first memory node, is compared as any other. Measured (H100, 2026-12-07, 4 programs): an
  // executable made while the graph held a conditional node but no memory node yet does not count.
  const bool own = updated->second.memory && updated->second.source == handle;
  if (graph->second.has_memory_nodes() && graph->second.memory_execs > (own ? 1u : 0u)) {
    info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    info->errorNode = nullptr;
    info->errorFromNode = nullptr;
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const internal::UpdateCheck check = internal::check_exec_update(
      updated->second.body->nodes, graph->second.nodes,
      [&](CUgraph body) -> const std::vector<internal::NodeData>* {
        auto found = graphs_.find(body);
        return found == graphs_.end() ? nullptr : &found->second.nodes;
      },
      (updated->second.flags & CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY) != 0);
  info->result = check.result;
  info->errorNode = check.error_node ? graph->second.node_handles[*check.error_node] : nullptr;
  info->errorFromNode = nullptr;
  if (check.result != CU_GRAPH_EXEC_UPDATE_SUCCESS) return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  // Launches already queued keep the body they were launched with.
  std::shared_ptr<const internal::ExecBody> body;
  InstantiateReport report;
  if (CUresult r = instantiate_body(graph->second, &body, &report); r != CUDA_SUCCESS) return r;
  updated->second.body = std::move(body);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                   const CUDA_KERNEL_NODE_PARAMS* params) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto updated = execs_.find(exec);
  if (updated == execs_.end()) return CUDA_ERROR_INVALID_HANDLE;
  // The node is named by its handle in the graph the executable was instantiated from (cuda.h);
  // nodes pair with the executable's by creation order, as exec update pairs them. A node of any
  // other graph, or of a source graph already destroyed, is not one of this executable's.
  // Measured on the H200: a kernel node of a conditional node's body graph is named the same way
  // (its handle in that body graph) and takes the new parameters too.
  auto source = graphs_.find(updated->second.source);
  if (source == graphs_.end()) return CUDA_ERROR_INVALID_VALUE;
  auto named = nodes_.find(node);
  if (node == nullptr || named == nodes_.end()) return CUDA_ERROR_INVALID_VALUE;
  const auto [node_graph, index] = named->second;
  std::shared_ptr<const internal::ExecBody>& body = updated->second.body;
  if (node_graph == updated->second.source &&
      (index >= body->nodes.size() ||
       !std::holds_alternative<internal::KernelWork>(body->nodes[index].work))) {
    return CUDA_ERROR_INVALID_VALUE;  // not a kernel node
  }
  // Not measured: the fake takes a function (not a CUkernel) of a loaded module, with a valid
  // shape, as cuLaunchKernel does.
  auto function = functions_.find(params->func);
  if (function == functions_.end()) return CUDA_ERROR_INVALID_VALUE;
  const LaunchDims dims{{params->gridDimX, params->gridDimY, params->gridDimZ},
                        {params->blockDimX, params->blockDimY, params->blockDimZ},
                        params->sharedMemBytes};
  if (dims.grid.x == 0 || dims.grid.y == 0 || dims.grid.z == 0 || dims.block.x == 0 ||
      dims.block.y == 0 || dims.block.z == 0 ||
      dims.shared_bytes > static_cast<unsigned>(function->second.max_dynamic_shared)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  internal::KernelWork work;
  work.kernel = function->second.kernel;
  work.module = function->second.module;
  work.function = params->func;
  work.dims = dims;
  if (!work.kernel->declared) {
    violation(internal::undeclared_layout_message(*work.kernel));
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult r = internal::copy_launch_params(*work.kernel, params->kernelParams, params->extra,
                                                &work.params);
      r != CUDA_SUCCESS) {
    return r;
  }
  // The Buffers its pointers were recorded with stay the node's (memory bounds).
  if (auto graph = graphs_.find(node_graph);
      graph != graphs_.end() && index < graph->second.nodes.size()) {
    if (const auto* recorded = std::get_if<internal::KernelWork>(&graph->second.nodes[index].work)) {
      work.extents = recorded->extents;
    }
  }
  work.held = held_addresses(work);  // what a replay passes from now on
  // Only later launches see it: launches already queued keep the body they were launched with.
  std::shared_ptr<const internal::ExecBody> changed =
      with_kernel(body, updated->second.source, node_graph, index, work);
  if (!changed) return CUDA_ERROR_INVALID_VALUE;  // not a kernel node of this executable
  body = std::move(changed);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuGraphDestroy(CUgraph handle) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  auto it = graphs_.find(handle);
  if (it == graphs_.end()) return CUDA_ERROR_INVALID_HANDLE;
  // Not measured: the graph a capture is still building belongs to the capture, and a
  // conditional node's body graph to the node.
  // Measured: the graph a capture builds is 401, and so is a graph a capture captures into
  // (cuStreamBeginCaptureToGraph; graphcap-fidelity).
  if (it->second.under_capture) return CUDA_ERROR_ILLEGAL_STATE;
  if (it->second.owner != nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Graph allocations a launch made stay allocated: destroying the graph does not free them.
  erase_graph(handle);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuGraphExecDestroy(CUgraphExec exec) {
  Context* context = nullptr;
  if (CUresult r = need_context_to_release(&context); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  if (execs_.find(exec) == execs_.end()) return CUDA_ERROR_INVALID_HANDLE;
  erase_exec(exec);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuGraphDebugDotPrint(CUgraph handle, const char* path, unsigned flags) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = graphs_.find(handle);
  if (it == graphs_.end()) return CUDA_ERROR_INVALID_HANDLE;
  std::ofstream file(path, std::ios::out | std::ios::trunc);
  if (!file) return CUDA_ERROR_OPERATING_SYSTEM;
  file << internal::to_dot(it->second, (flags & CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE) != 0);
  file.close();
  return file ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
}

}  // namespace graphcap::fake
