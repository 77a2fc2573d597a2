// Graphs and executables as data: nodes (typed work) with dependency edges, the order they run
// in, how exec update compares two graphs, and the DOT rendering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/fake/internal/race_check.h>
#include <graphcap/fake/internal/work.h>

namespace graphcap::fake::internal {

struct NodeData {
  NodeWork work;
  std::vector<std::size_t> deps;  // indices of earlier nodes of the same graph
  // The deps that are programmatic edges (CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC from the kernel
  // predecessor's programmatic port): a subset of deps. Measured: a captured launch with
  // PROGRAMMATIC_STREAM_SERIALIZATION gets one from each kernel it depends on, and an ordinary
  // edge from any other node.
  std::vector<std::size_t> programmatic;
  bool is_programmatic(std::size_t dep) const;
};

struct Graph {
  CUgraph handle = nullptr;
  CUcontext context = nullptr;
  std::vector<NodeData> nodes;            // creation order
  std::vector<CUgraphNode> node_handles;  // parallel to nodes
  bool under_capture = false;             // still owned by a capture sequence
  // Executables instantiated from it while it held memory or conditional nodes, not destroyed.
  std::size_t exclusive_execs = 0;
  std::size_t memory_execs = 0;           // of those, made while it held memory nodes
  std::size_t live_execs = 0;             // every executable instantiated from it, not destroyed
  CUgraphNode owner = nullptr;            // a conditional node's body: that node
  std::vector<CUgraphConditionalHandle> conditions;  // handles created on this graph
  bool has_memory_nodes() const;
  bool has_conditional_nodes() const;
  // The first memory node (MEM_ALLOC or MEM_FREE), in creation order, if any.
  std::optional<std::size_t> first_memory_node() const;
};

// A conditional handle (cuGraphConditionalHandleCreate): the graph it belongs to and the value it
// takes at the start of every launch when `assign_default`.
struct ConditionDef {
  CUgraphConditionalHandle handle = 0;
  CUgraph graph = nullptr;
  unsigned default_value = 0;
  bool assign_default = false;
  CUgraphNode node = nullptr;  // the conditional node it steers, once one was added
};

// What an executable runs: an immutable copy of a graph's nodes, shared with launches still in
// the queue (an exec update replaces it for later launches only).
struct ExecBody {
  // The conditional handles of the graph and of every body graph in it: what a launch resets.
  std::vector<ConditionDef> conditions;
  std::vector<NodeData> nodes;
  std::vector<std::size_t> order;          // a topological order
  std::vector<CUdeviceptr> kept_allocs;    // MEM_ALLOC ranges the graph does not free itself
  std::vector<CUdeviceptr> outside_frees;  // MEM_FREE of memory the graph did not allocate
  // Per node: whether a programmatic edge leaves it (its writes are watched); empty when the
  // graph has no programmatic edge.
  std::vector<bool> feeds_programmatic;
  // The race check's reachability and the races it reported, from the first launch it checked
  // (shared with copies of this body: they differ in parameters only, never in edges).
  mutable std::shared_ptr<RaceCache> races;
};

std::shared_ptr<ExecBody> make_exec_body(const std::vector<NodeData>& nodes);

// Kahn's algorithm, ties broken by creation order.
std::vector<std::size_t> topological_order(const std::vector<NodeData>& nodes);
// Kahn's algorithm, each next node drawn at random from the ready ones by `random` (a value from
// a seeded generator per draw): an order any device could legally run (node_order_seed).
std::vector<std::size_t> random_topological_order(const std::vector<NodeData>& nodes,
                                                  const std::function<std::uint64_t()>& random);

struct UpdateCheck {
  CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  std::optional<std::size_t> error_node;  // index in the new graph
};
// Whether an executable of `current` can take `next`'s parameters (nodes pair up by creation
// order; they are checked from the exit nodes back along the edges, and the first that fails
// is the one named). A conditional node's bodies are compared the same way: `body_nodes` gives
// the nodes of one of `next`'s body graphs (the executable's are instantiated in its ExecBody).
// Measured on the H200: other edges or edge types (a programmatic edge for an ordinary one) are
// TOPOLOGY_CHANGED; a conditional node of another type or size is NOT_SUPPORTED on that node; a
// body of another topology is TOPOLOGY_CHANGED naming no node; a kernel of another priority is
// ATTRIBUTES_CHANGED when `use_node_priority` (the executable's USE_NODE_PRIORITY).
UpdateCheck check_exec_update(
    const std::vector<NodeData>& current, const std::vector<NodeData>& next,
    const std::function<const std::vector<NodeData>*(CUgraph)>& body_nodes,
    bool use_node_priority);

std::string to_dot(const Graph& graph, bool verbose);

}  // namespace graphcap::fake::internal
