#include <graphcap/fake/internal/graph_model.h>

#include <algorithm>
#include <queue>
#include <set>

namespace graphcap::fake::internal {

bool NodeData::is_programmatic(std::size_t dep) const {
  return std::find(programmatic.begin(), programmatic.end(), dep) != programmatic.end();
}

bool Graph::has_memory_nodes() const { return first_memory_node().has_value(); }

std::optional<std::size_t> Graph::first_memory_node() const {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const CUgraphNodeType type = node_type(nodes[i].work);
    if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || type == CU_GRAPH_NODE_TYPE_MEM_FREE) return i;
  }
  return std::nullopt;
}

bool Graph::has_conditional_nodes() const {
  return std::any_of(nodes.begin(), nodes.end(), [](const NodeData& node) {
    return std::holds_alternative<ConditionalWork>(node.work);
  });
}

namespace {

// Per node, how many nodes it waits for and which nodes wait for it: what Kahn's algorithm
// starts from.
struct Dependencies {
  std::vector<std::size_t> waiting;
  std::vector<std::vector<std::size_t>> dependents;
};
Dependencies dependencies_of(const std::vector<NodeData>& nodes) {
  Dependencies out{std::vector<std::size_t>(nodes.size(), 0), std::vector<std::vector<std::size_t>>(nodes.size())};
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (std::size_t dep : nodes[i].deps) {
      ++out.waiting[i];
      out.dependents[dep].push_back(i);
    }
  }
  return out;
}

}  // namespace

std::vector<std::size_t> topological_order(const std::vector<NodeData>& nodes) {
  auto [waiting, dependents] = dependencies_of(nodes);
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<std::size_t> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    const std::size_t next = ready.top();
    ready.pop();
    order.push_back(next);
    for (std::size_t dependent : dependents[next]) {
      if (--waiting[dependent] == 0) ready.push(dependent);
    }
  }
  return order;
}

std::vector<std::size_t> random_topological_order(const std::vector<NodeData>& nodes,
                                                  const std::function<std::uint64_t()>& random) {
  auto [waiting, dependents] = dependencies_of(nodes);
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (waiting[i] == 0) ready.push_back(i);
  }
  std::vector<std::size_t> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    const std::size_t pick = static_cast<std::size_t>(random() % ready.size());
    const std::size_t next = ready[pick];
    ready[pick] = ready.back();
    ready.pop_back();
    order.push_back(next);
    for (std::size_t dependent : dependents[next]) {
      if (--waiting[dependent] == 0) ready.push_back(dependent);
    }
  }
  return order;
}

std::shared_ptr<ExecBody> make_exec_body(const std::vector<NodeData>& nodes) {
  auto body = std::make_shared<ExecBody>();
  body->nodes = nodes;
  body->order = topological_order(nodes);
  std::set<CUdeviceptr> allocated;
  std::set<CUdeviceptr> freed;
  for (const NodeData& node : nodes) {
    if (const auto* alloc = std::get_if<AllocWork>(&node.work)) allocated.insert(alloc->address);
    if (const auto* free = std::get_if<FreeWork>(&node.work)) freed.insert(free->address);
  }
  for (CUdeviceptr address : allocated) {
    if (!freed.count(address)) body->kept_allocs.push_back(address);
  }
  for (CUdeviceptr address : freed) {
    if (!allocated.count(address)) body->outside_frees.push_back(address);
  }
  for (const NodeData& node : nodes) {
    for (std::size_t source : node.programmatic) {
      if (body->feeds_programmatic.empty()) body->feeds_programmatic.assign(nodes.size(), false);
      body->feeds_programmatic[source] = true;
    }
  }
  return body;
}

namespace {

std::vector<std::size_t> sorted(std::vector<std::size_t> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// Whether two dependency lists name the same nodes. Most nodes have at most one dependency:
// compared in place, without the two sorted copies (an allocation each per node of an update).
bool same_nodes(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  if (a.size() <= 1 && b.size() <= 1) return a == b;
  return sorted(a) == sorted(b);
}

// Memory nodes can't take new parameters (their ranges belong to the executable).
bool same_memory_node(const NodeWork& a, const NodeWork& b) {
  if (const auto* x = std::get_if<AllocWork>(&a)) {
    const auto* y = std::get_if<AllocWork>(&b);
    return y != nullptr && x->address == y->address && x->bytes == y->bytes;
  }
  if (const auto* x = std::get_if<FreeWork>(&a)) {
    const auto* y = std::get_if<FreeWork>(&b);
    return y != nullptr && x->address == y->address;
  }
  return true;
}

// Whether two copy nodes' device sides lie in allocations of the same kind (as captured).
bool same_copy_memory(const NodeWork& a, const NodeWork& b) {
  if (const auto* x = std::get_if<CopyToDeviceWork>(&a)) {
    const auto* y = std::get_if<CopyToDeviceWork>(&b);
    return y == nullptr || x->dst_memory == y->dst_memory;
  }
  if (const auto* x = std::get_if<CopyToHostWork>(&a)) {
    const auto* y = std::get_if<CopyToHostWork>(&b);
    return y == nullptr || x->src_memory == y->src_memory;
  }
  if (const auto* x = std::get_if<CopyDeviceWork>(&a)) {
    const auto* y = std::get_if<CopyDeviceWork>(&b);
    return y == nullptr || (x->dst_memory == y->dst_memory && x->src_memory == y->src_memory);
  }
  return true;
}

// The nodes no node of the graph depends on, in creation order.
std::vector<std::size_t> exit_nodes(const std::vector<NodeData>& nodes) {
  std::vector<bool> depended_on(nodes.size(), false);
  for (const NodeData& node : nodes) {
    for (std::size_t dep : node.deps) depended_on[dep] = true;
  }
  std::vector<std::size_t> exits;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!depended_on[i]) exits.push_back(i);
  }
  return exits;
}

}  // namespace

UpdateCheck check_exec_update(
    const std::vector<NodeData>& current, const std::vector<NodeData>& next,
    const std::function<const std::vector<NodeData>*(CUgraph)>& body_nodes,
    bool use_node_priority) {
  if (current.size() != next.size()) return {CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, {}};
  // Measured (graphcap-fidelity on the H100, 2026-12-07): the exit nodes (those no node depends
  // on) are compared first. A graph with fewer than the executable's is TOPOLOGY_CHANGED naming
  // no node; one with more names its exit left over when both lists are paired from their
  // last-created exit backwards (with one exit more: its first).
  const std::vector<std::size_t> exits = exit_nodes(next);
  const std::size_t current_exits = exit_nodes(current).size();
  if (exits.size() < current_exits) return {CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, {}};
  if (exits.size() > current_exits) {
    return {CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, exits[exits.size() - current_exits - 1]};
  }
  // Then the nodes are checked one at a time, from the exits (last-created first) back along
  // the edges: the first node that fails any check is the one named (measured there: a chain of
  // other node types names its last node; a node's type before its edges, its copy direction or
  // launch attributes before any node it depends on).
  std::vector<bool> seen(next.size(), false);
  std::queue<std::size_t> visit;
  for (auto it = exits.rbegin(); it != exits.rend(); ++it) {
    seen[*it] = true;
    visit.push(*it);
  }
  while (!visit.empty()) {
    const std::size_t i = visit.front();
    visit.pop();
    const NodeData& was_node = current[i];
    const NodeData& now_node = next[i];
    if (node_type(was_node.work) != node_type(now_node.work)) {
      return {CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, i};
    }
    // Measured (graphcap-fidelity, 2026-12-04; cuda.h: a memcpy node's source or destination
    // memory type cannot change): a copy node whose direction changed (host to device, device
    // to host, device to device) is PARAMETERS_CHANGED on that node.
    if (node_type(now_node.work) == CU_GRAPH_NODE_TYPE_MEMCPY &&
        was_node.work.index() != now_node.work.index()) {
      return {CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, i};
    }
    // Measured (H100, 2026-12-07, 3 programs): a copy node whose device side lay in memory of
    // cuMemAllocAsync and now lies in cuMemAlloc's is PARAMETERS_CHANGED on that node (cuda.h:
    // the memory must come from the same contexts). The fake takes any other kind of allocation
    // (a graph's, a mapping's) as a change too: not measured.
    if (!same_copy_memory(was_node.work, now_node.work)) {
      return {CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, i};
    }
    if (!same_memory_node(was_node.work, now_node.work)) {
      return {CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED, i};
    }
    // Measured on the H200 (ConditionalNodes.ExecUpdate*): a conditional node whose bodies
    // have the same topology takes the new bodies' parameters (and the handle's new default); a
    // node of another type or size is NOT_SUPPORTED on that node; one kernel more in a body is
    // TOPOLOGY_CHANGED naming no node.
    const auto* was = std::get_if<ConditionalWork>(&was_node.work);
    const auto* now = std::get_if<ConditionalWork>(&now_node.work);
    if (was != nullptr && now != nullptr) {
      if (was->type != now->type || was->exec_bodies.size() != now->bodies.size()) {
        return {CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED, i};
      }
      // Measured (H100, 2026-12-07): the handle's ASSIGN_DEFAULT flag changing is taken too
      // (FidelityRules.AnUpdateToAConditionalHandleThatAssignsItsDefaultIsTaken).
      for (std::size_t b = 0; b < now->bodies.size(); ++b) {
        const std::vector<NodeData>* body = body_nodes(now->bodies[b]);
        if (body == nullptr) return {CU_GRAPH_EXEC_UPDATE_ERROR, i};
        UpdateCheck inner =
            check_exec_update(was->exec_bodies[b]->nodes, *body, body_nodes, use_node_priority);
        if (inner.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED) return {inner.result, {}};
        if (inner.result != CU_GRAPH_EXEC_UPDATE_SUCCESS) return {inner.result, i};
      }
    }
    // Measured: a kernel node whose priority changed needs a new executable, when the
    // executable was instantiated to use node priorities (USE_NODE_PRIORITY); without that
    // flag the priority is not compared (H100, 2026-12-07: -1 to -5, -5 to 0, 0 to -5 updated).
    // Measured there too: a launch given priority 3 (clamped to 0) against one given none is a
    // change. Not measured: whether an attribute of 0 against none is (the fake says it is).
    const auto* was_kernel = std::get_if<KernelWork>(&was_node.work);
    const auto* now_kernel = std::get_if<KernelWork>(&now_node.work);
    if (use_node_priority && was_kernel != nullptr && now_kernel != nullptr &&
        (was_kernel->priority != now_kernel->priority ||
         was_kernel->priority_given != now_kernel->priority_given)) {
      return {CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED, i};
    }
    if (!same_nodes(was_node.deps, now_node.deps) ||
        !same_nodes(was_node.programmatic, now_node.programmatic)) {
      return {CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, i};
    }
    for (std::size_t dep : now_node.deps) {
      if (!seen[dep]) {
        seen[dep] = true;
        visit.push(dep);
      }
    }
  }
  return {};
}

std::string to_dot(const Graph& graph, bool verbose) {
  std::string dot = "digraph graphcap_fake {\n  node [shape=box];\n";
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const NodeData& node = graph.nodes[i];
    std::string label = std::to_string(i) + " " + internal::node_type_name(node_type(node.work));
    if (verbose) label += "\\n" + describe(node.work);
    if (const auto* kernel = std::get_if<KernelWork>(&node.work)) {
      if (!verbose) label += "\\n" + kernel->kernel->name;
      const LaunchDims& d = kernel->dims;
      if (verbose) {
        label += "\\ngrid (" + std::to_string(d.grid.x) + "," + std::to_string(d.grid.y) + "," +
                 std::to_string(d.grid.z) + ") block (" + std::to_string(d.block.x) + "," +
                 std::to_string(d.block.y) + "," + std::to_string(d.block.z) + ")";
      }
    }
    std::string escaped;
    for (char c : label) {
      if (c == '"') escaped += '\\';
      escaped += c;
    }
    dot += "  n" + std::to_string(i) + " [label=\"" + escaped + "\"];\n";
  }
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    for (std::size_t dep : graph.nodes[i].deps) {
      dot += "  n" + std::to_string(dep) + " -> n" + std::to_string(i) +
             (graph.nodes[i].is_programmatic(dep) ? " [style=dashed, label=\"programmatic\"]" : "") +
             ";\n";
    }
  }
  dot += "}\n";
  return dot;
}

}  // namespace graphcap::fake::internal
