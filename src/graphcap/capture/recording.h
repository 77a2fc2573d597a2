// What a recording is made of: the operations recorded into it (each with the buffers it reads
// and writes), and, once closed, everything a graph of it replays against.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <graphcap/capture/buffer_roles.h>
#include <graphcap/capture/captured_graph.h>
#include <graphcap/capture/executable.h>
#include <graphcap/capture/graph_report.h>
#include <graphcap/capture/node_store.h>
#include <graphcap/capture/operation_label.h>
#include <graphcap/capture/recorded_label.h>
#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/launch_dims.h>
#include <graphcap/memory/allocation.h>
#include <graphcap/memory/buffer_state.h>

namespace graphcap::capture {

// How an operation uses a buffer. write_whole replaces every byte (a kernel's `out` binding, a
// full write or copy): it produces the buffer, so a failure it carried is gone once it runs.
enum class Access : std::uint8_t { read, read_write, write_part, write_whole };
constexpr bool reads(Access access) noexcept {
  return access == Access::read || access == Access::read_write;
}
constexpr bool writes(Access access) noexcept { return access != Access::read; }

struct BufferUse {
  const std::shared_ptr<memory::BufferState>* buffer;  // the caller's handle, alive for the call
  Access access;
};

// A recorded kernel launch that took per-replay parameters: its node and everything
// cuGraphExecKernelNodeSetParams needs to set the node again with other values.
struct ParamNode {
  struct Binding {
    std::size_t arg = 0;                 // which argument
    std::shared_ptr<const void> param;   // the param's identity (its slot)
  };
  CUgraphNode node = nullptr;  // in the graph the executable was instantiated from (named by the
                               // recording when the launch is recorded)
  CUfunction function = nullptr;
  LaunchDims dims;
  std::vector<std::byte> bytes;       // every argument's bytes, each at its offset
  std::vector<std::size_t> offsets;   // per argument
  std::vector<std::size_t> sizes;     // per argument
  std::vector<Binding> bindings;
  // Its index among the recording's nodes (Recording::nodes): Graph::replay_checked launches it
  // with these bytes, the values Graph::set gave the graph.
  std::size_t recorded = ~std::size_t{0};
};

// One stream operation: the node it adds when recorded, the buffers it uses, the staging
// memory it reads or writes besides them, and what must stay alive while a graph replays it
// (e.g. the module of a kernel).
// What a recorded operation keeps alive (e.g. its kernel's module), named by reference: the
// recording takes a reference of its own only for one it does not hold yet (a pass of n launches
// of one kernel takes one, not n: no reference count touched per launch).
struct KeepAliveRef {
  const void* id = nullptr;  // the object kept alive; nullptr: nothing
  const void* owner = nullptr;  // the caller's shared_ptr to it, alive for the call
  std::shared_ptr<const void> (*share)(const void* owner) = nullptr;

  template <class T>
  static KeepAliveRef of(const std::shared_ptr<T>& owner) noexcept {
    return {owner.get(), &owner, [](const void* from) -> std::shared_ptr<const void> {
              return *static_cast<const std::shared_ptr<T>*>(from);
            }};
  }
  explicit operator bool() const noexcept { return id != nullptr; }
};

struct Operation {
  CUgraphNodeType node = CU_GRAPH_NODE_TYPE_KERNEL;
  std::span<const BufferUse> uses;
  std::shared_ptr<memory::Allocation> staging;
  KeepAliveRef keep_alive;
  // Work graphcap did not issue (Device::record_external): it adds nodes graphcap can't count.
  bool external = false;
  // A recorded kernel launch that took params: everything but its node, which the recording names
  // (GraphDriver::last_node) as it records the launch.
  ParamNode* params = nullptr;
  // A launch that takes a WHILE loop's or a branch's condition (Arg::condition): its id, so the
  // recording knows the loop can end and the branch is steered (0: none).
  std::uint64_t condition = 0;
  // A launch with LaunchOptions: programmatic (its edges from kernels are programmatic), and
  // with a priority (the graph is instantiated with node priorities).
  bool programmatic = false;
  bool priority = false;
  // Set by StreamCore::run when an eager operation used buffers of other streams: an event
  // recorded right after it, which their owners are then made to wait for (return_borrowed).
  CUevent borrowed_fence = nullptr;
  std::uint64_t borrowed_at = 0;  // the operation's sequence number on its stream
  // For diagnostics (debug log, Graph::dot, refusals): what the operation is, e.g. the kernel's
  // name and launch shape, as a compact record rendered to text only when asked. Empty when not
  // asked for (eager operations).
  OperationLabel label;

  // The operation failed or was skipped: every buffer it writes carries `error`.
  void fail_writes(const Error& error) const {
    for (const BufferUse& use : uses) {
      if (writes(use.access)) (*use.buffer)->fail(error);
    }
  }
};

// One operation of a recording as graphcap recorded it (what Graph::dot() draws): the node it
// added, its label (Operation::label, kept compact: Recording::label expands it), the stream
// that recorded it (its index on the device), the nodes it depends on (the recording stream's
// frontier when it was recorded), and the loop body it is in.
struct RecordedNode {
  static constexpr std::size_t kNone = ~std::size_t{0};

  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_KERNEL;
  RecordedLabel label;
  int stream = 0;
  // The conditional node (a WHILE loop, or a branch: its condition's id) whose body holds the
  // node (0: the graph itself), and which of its bodies (an IF's 0 or its ELSE 1, a SWITCH's case).
  std::uint64_t loop = 0;
  unsigned branch_body = 0;
  std::uint64_t body = 0;  // a conditional node: the loop or condition it runs (its bodies' `loop`)
  bool programmatic = false;  // launched with LaunchOptions::programmatic
  // The nodes it depends on. Most nodes depend on one (their stream's last), kept inline; a
  // join's further ones are in the recording's NodeStore::joins, [joins_first, + joins_count).
  std::size_t after = kNone;
  std::uint32_t joins_first = 0;
  std::uint32_t joins_count = 0;

  template <class Visit>
  void for_each_dependency(const NodeStore& store, Visit&& visit) const {
    if (after != kNone) visit(after);
    for (std::uint32_t i = 0; i < joins_count; ++i) visit(store.joins[joins_first + i]);
  }
};
// Nothing to release in a node record: a node list is emptied or freed without touching its nodes.
static_assert(std::is_trivially_destructible_v<RecordedNode>);

// A body graph of a recording's conditional node (owned by the node, so by the recording's
// graph), to name a node of it in an instantiate refusal.
struct BodyGraph {
  std::uint64_t frame = 0;
  unsigned body = 0;
  CUgraph graph = nullptr;
  std::size_t node = 0;  // the conditional node (in the topology)
};

// A closed recording: the executable and everything it replays against, handed to the graph
// whole.
struct Recording {
  Executable executable;
  GraphReport report;
  std::vector<std::shared_ptr<memory::Allocation>> pins;  // device and staging slices
  BufferRoles buffers;
  std::vector<std::shared_ptr<const void>> keep_alive;
  std::vector<ParamNode> param_nodes;  // the kernel nodes that took params
  // The graph the executable was instantiated from, with its nodes as cuGraphGetNodes lists
  // them: kept while param nodes need it (cuGraphExecKernelNodeSetParams names a node of it,
  // and a later re-recording updated into the executable is mapped onto it by position).
  CapturedGraph source;
  std::vector<CUgraphNode> source_nodes;
  std::vector<RecordedNode> nodes;
  NodeStore store;  // what the node records share (label arguments, names, joins' dependencies)

  // Node `node`'s label, to render while the recording lives.
  OperationLabel label(std::size_t node) const { return nodes.at(node).label.expand(store); }
};

}  // namespace graphcap::capture
