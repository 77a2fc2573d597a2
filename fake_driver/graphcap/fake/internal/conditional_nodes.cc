// Conditional nodes: handles (cuGraphConditionalHandleCreate), the node and its body graphs
// (cuGraphAddNode), and how a launch runs them: defaults assigned at the start of every launch,
// bodies run while (WHILE), if (IF) or as selected by (SWITCH) the value kernels set through
// KernelContext::set_condition. Each rule is a row of docs/cuda-driver-facts.md ("Conditional
// nodes"), measured on the H200, unless marked.
#include <graphcap/fake/internal/fake_state.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace graphcap::fake {

CUresult FakeState::cuGraphConditionalHandleCreate(CUgraphConditionalHandle* handle, CUgraph graph,
                                                   CUcontext context, unsigned default_value,
                                                   unsigned flags) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (context == nullptr || find_context(context) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  // Flags: CU_GRAPH_COND_ASSIGN_DEFAULT or 0; 2 is CUDA_ERROR_INVALID_VALUE.
  if (handle == nullptr || (flags & ~kGraphCondAssignDefault) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto it = graphs_.find(graph);
  if (it == graphs_.end()) return CUDA_ERROR_INVALID_VALUE;  // not measured
  internal::ConditionDef condition;
  condition.handle = next_condition_++;
  condition.graph = graph;
  condition.default_value = default_value;  // any value (5 is accepted), not only 0 and 1
  condition.assign_default = (flags & kGraphCondAssignDefault) != 0;
  it->second.conditions.push_back(condition.handle);
  conditions_.emplace(condition.handle, condition);
  *handle = condition.handle;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuGraphAddNode(CUgraphNode* node, CUgraph graph,
                                   const CUgraphNode* dependencies,
                                   const CUgraphEdgeData* edge_data, std::size_t dependency_count,
                                   CUgraphNodeParams* params) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (node == nullptr || params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dependency_count > 0 && dependencies == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = graphs_.find(graph);
  if (it == graphs_.end()) return CUDA_ERROR_INVALID_VALUE;
  // Not modelled: edges other than default ones, and node types other than conditional nodes
  // (graphcap adds only those; its other nodes come from stream capture).
  for (std::size_t i = 0; edge_data != nullptr && i < dependency_count; ++i) {
    if (edge_data[i].type != 0 || edge_data[i].from_port != 0 || edge_data[i].to_port != 0) {
      return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  if (params->type != CU_GRAPH_NODE_TYPE_CONDITIONAL) return CUDA_ERROR_NOT_SUPPORTED;
  std::vector<std::size_t> deps;
  for (std::size_t i = 0; i < dependency_count; ++i) {
    auto found = nodes_.find(dependencies[i]);
    if (found == nodes_.end() || found->second.first != graph) return CUDA_ERROR_INVALID_VALUE;
    deps.push_back(found->second.second);
  }
  return add_conditional_node(it->second, std::move(deps), params->conditional, node);
}

bool FakeState::handle_usable(const internal::Graph& graph,
                              CUgraphConditionalHandle handle) const {
  auto condition = conditions_.find(handle);
  if (condition == conditions_.end() || condition->second.node != nullptr) return false;
  // This graph, or a graph whose conditional node's body holds it, at any depth.
  for (const internal::Graph* at = &graph; at != nullptr;) {
    if (at->handle == condition->second.graph) return true;
    if (at->owner == nullptr) return false;
    auto owner = nodes_.find(at->owner);
    if (owner == nodes_.end()) return false;
    auto parent = graphs_.find(owner->second.first);
    at = parent == graphs_.end() ? nullptr : &parent->second;
  }
  return false;
}

CUresult FakeState::add_conditional_node(internal::Graph& graph, std::vector<std::size_t> deps,
                                         CUDA_CONDITIONAL_NODE_PARAMS& params, CUgraphNode* node) {
  // The handle must be one created on this graph or on a graph holding it (measured: a handle of
  // the outer graph steers an IF inside an IF body), not yet associated with another node
  // (cuda.h: "a conditional node"; measured: a WHILE body's node on the WHILE's own handle is
  // INVALID_VALUE, ConditionalNodes.AWhileNodeTakesOneBodyAndOnlyAHandleOfItsOwnGraph); a
  // handle of an unrelated graph is INVALID_VALUE.
  if (!handle_usable(graph, params.handle)) return CUDA_ERROR_INVALID_VALUE;
  // Sizes as cuda.h allows them (measured: WHILE 1, IF 1 or 2, SWITCH 1 up to at least 10000;
  // size 0 of any type and IF 3 are INVALID_VALUE).
  switch (params.type) {
    case CU_GRAPH_COND_TYPE_WHILE:
      if (params.size != 1) return CUDA_ERROR_INVALID_VALUE;
      break;
    case CU_GRAPH_COND_TYPE_IF:
      if (params.size != 1 && params.size != 2) return CUDA_ERROR_INVALID_VALUE;
      break;
    case CU_GRAPH_COND_TYPE_SWITCH:
      if (params.size == 0) return CUDA_ERROR_INVALID_VALUE;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  // Not measured: the node's context must be the graph's.
  if (params.ctx == nullptr || find_context(params.ctx) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  internal::ConditionalWork work;
  work.handle = params.handle;
  work.assign_default = conditions_.at(params.handle).assign_default;
  work.type = params.type;
  const CUgraph parent = graph.handle;
  const CUcontext context = params.ctx;
  const auto handle = new_handle<CUgraphNode>();
  for (unsigned i = 0; i < params.size; ++i) {
    internal::Graph body;
    body.handle = new_handle<CUgraph>();
    body.context = context;
    body.owner = handle;
    work.bodies.push_back(body.handle);
    graphs_.emplace(body.handle, std::move(body));
  }
  conditions_.at(params.handle).node = handle;
  internal::Graph& owner = graphs_.at(parent);  // emplace may not move it, but look it up again
  const std::size_t index = owner.nodes.size();
  owner.nodes.push_back(internal::NodeData{internal::NodeWork{work}, std::move(deps), {}});
  owner.node_handles.push_back(handle);
  nodes_.emplace(handle, std::make_pair(parent, index));
  std::vector<CUgraph>& bodies = node_bodies_[handle];
  bodies = work.bodies;
  params.phGraph_out = bodies.data();  // owned by the node, valid for its lifetime
  *node = handle;
  return CUDA_SUCCESS;
}

bool FakeState::run_graph(const internal::ExecBody& body, CUgraphExec exec, int depth,
                          internal::AccessLog* into) {
  std::map<std::size_t, PredecessorWrites> writes;  // by node: kept for its programmatic edges
  // The race check: what each node touched (a conditional node: what its bodies' nodes did).
  std::vector<internal::AccessLog> logs(into != nullptr ? body.nodes.size() : 0);
  struct Restore {
    internal::AccessLog*& accesses;
    ~Restore() { accesses = nullptr; }
  } restore{accesses_};
  std::vector<std::size_t> storage;
  const std::vector<std::size_t>& order = launch_order(body, storage);
  for (std::size_t index : order) {
    tick();
    const internal::NodeWork& work = body.nodes[index].work;
    internal::AccessLog* log = into != nullptr ? &logs[index] : nullptr;
    accesses_ = log;
    const std::string where = "cuGraphLaunch of exec " +
                              internal::hex(reinterpret_cast<std::uintptr_t>(exec)) + " (node " +
                              std::to_string(index) +
                              (depth > 0 ? " of a conditional body, depth " + std::to_string(depth)
                                         : std::string()) +
                              ")";
    if (const auto* conditional = std::get_if<internal::ConditionalWork>(&work)) {
      if (!run_conditional(*conditional, exec, where, depth, log)) return false;
      continue;
    }
    // Programmatic edges: what a kernel feeding one writes is kept for the kernels it feeds.
    const internal::NodeData& node = body.nodes[index];
    const bool feeds = !body.feeds_programmatic.empty() && body.feeds_programmatic[index];
    if (!feeds && node.programmatic.empty()) {
      if (!execute_node(work, where)) return false;  // a faulted graph runs no other node
      continue;
    }
    PdlWatch watch;
    watch.record_writes = feeds;
    for (std::size_t source : node.programmatic) {
      if (auto found = writes.find(source); found != writes.end()) {
        watch.before_wait.push_back(&found->second);
      }
    }
    if (!execute_node(work, where, &watch)) return false;
    if (feeds) writes[index] = std::move(watch.written);
  }
  accesses_ = nullptr;
  if (into == nullptr) return true;
  if (!check_graph_races(body, logs, order, exec, depth)) return false;
  for (const internal::AccessLog& log : logs) into->append(log);
  return true;
}

bool FakeState::run_conditional(const internal::ConditionalWork& node, CUgraphExec exec,
                                const std::string& where, int depth, internal::AccessLog* into) {
  const auto value = [&] { return condition_values_[{exec, node.handle}]; };
  switch (node.type) {
    case CU_GRAPH_COND_TYPE_WHILE: {
      // The condition is checked before every iteration, the first included (default 0: the
      // body never runs).
      std::size_t iterations = 0;
      while (value() != 0) {
        if (iterations == options_.max_loop_iterations) {
          std::string text = where + ": " + internal::describe(internal::NodeWork{node}) +
                             " ran its body " + std::to_string(iterations) +
                             " times without the condition becoming 0: on a GPU this loop would "
                             "not end (FakeDriverOptions::max_loop_iterations)";
          fault(CUDA_ERROR_LAUNCH_TIMEOUT, text);
          violation(std::move(text));
          return false;
        }
        ++iterations;
        if (!run_graph(*node.exec_bodies[0], exec, depth + 1, into)) return false;
      }
      return true;
    }
    case CU_GRAPH_COND_TYPE_IF:
      // Measured on the H200: any nonzero value runs body 0; zero runs the ELSE body, if any.
      if (value() != 0) return run_graph(*node.exec_bodies[0], exec, depth + 1, into);
      if (node.exec_bodies.size() == 2) {
        return run_graph(*node.exec_bodies[1], exec, depth + 1, into);
      }
      return true;
    case CU_GRAPH_COND_TYPE_SWITCH: {
      // Measured on the H200: value i runs body i; a value past the last case runs nothing (no
      // error: the graph goes on).
      const unsigned selected = value();
      if (selected < node.exec_bodies.size()) {
        return run_graph(*node.exec_bodies[selected], exec, depth + 1, into);
      }
      return true;
    }
  }
  return true;
}

std::shared_ptr<const internal::ExecBody> FakeState::with_kernel(
    const std::shared_ptr<const internal::ExecBody>& body, CUgraph graph, CUgraph target,
    std::size_t index, const internal::KernelWork& work) {
  // Copy on write: a body a queued launch still holds (or another body shares) is copied, one
  // only this executable holds is changed in place, so n sets over n nodes cost O(n), not O(n^2).
  auto writable = [&]() -> std::shared_ptr<internal::ExecBody> {
    if (body.use_count() == 1) return std::const_pointer_cast<internal::ExecBody>(body);
    return std::make_shared<internal::ExecBody>(*body);
  };
  if (graph == target) {
    if (index >= body->nodes.size() ||
        !std::holds_alternative<internal::KernelWork>(body->nodes[index].work)) {
      return nullptr;
    }
    std::shared_ptr<internal::ExecBody> changed = writable();
    // New parameters, not new launch attributes: the node keeps its priority (cuda.h: set-params
    // takes CUDA_KERNEL_NODE_PARAMS, which has none).
    internal::KernelWork replaced = work;
    const auto& was = std::get<internal::KernelWork>(changed->nodes[index].work);
    replaced.priority = was.priority;
    replaced.priority_given = was.priority_given;
    replaced.programmatic = was.programmatic;
    changed->nodes[index].work = internal::NodeWork{std::move(replaced)};
    return changed;
  }
  for (std::size_t i = 0; i < body->nodes.size(); ++i) {
    const auto* conditional = std::get_if<internal::ConditionalWork>(&body->nodes[i].work);
    if (conditional == nullptr) continue;
    for (std::size_t b = 0; b < conditional->bodies.size(); ++b) {
      auto nested =
          with_kernel(conditional->exec_bodies[b], conditional->bodies[b], target, index, work);
      if (!nested) continue;
      std::shared_ptr<internal::ExecBody> changed = writable();
      std::get<internal::ConditionalWork>(changed->nodes[i].work).exec_bodies[b] =
          std::move(nested);
      return changed;
    }
  }
  return nullptr;
}

void FakeState::kernel_set_condition(const KernelContext& context, std::size_t param,
                                     unsigned value) {
  const std::byte* raw = kernel_param(context, param, sizeof(CUgraphConditionalHandle));
  if (raw == nullptr) return;  // kernel_param recorded the violation
  CUgraphConditionalHandle handle = 0;
  std::memcpy(&handle, raw, sizeof handle);
  kernel_set_condition_handle(context, handle, value);
}

void FakeState::kernel_set_condition_handle(const KernelContext& context,
                                            CUgraphConditionalHandle handle, unsigned value) {
  const std::string who = running_.where + ": kernel '" + std::string(context.name_) + "'";
  if (running_exec_ == nullptr || running_conditions_ == nullptr) {
    violation(who + " sets conditional handle " + std::to_string(handle) +
              " outside a graph launch (cudaGraphSetConditional is for kernels of the graph "
              "that created the handle)");
    return;
  }
  const bool known = std::any_of(running_conditions_->begin(), running_conditions_->end(),
                                 [&](const internal::ConditionDef& c) { return c.handle == handle; });
  if (!known) {
    violation(who + " sets conditional handle " + std::to_string(handle) +
              ", which the running graph did not create");
    return;
  }
  condition_values_[{running_exec_, handle}] = value;
}

}  // namespace graphcap::fake
