// What the fake finds that a GPU only shows as wrong bytes: nodes of a launched graph that race
// (no path of edges orders them, and they touch the same bytes, one writing), the order a launch
// runs its nodes in (node_order_seed: any order the edges allow), and addresses baked into a
// captured kernel's parameters whose memory is gone by the replay.
#include <graphcap/fake/internal/fake_state.h>

#include <cstring>

namespace graphcap::fake {

const std::vector<std::size_t>& FakeState::launch_order(const internal::ExecBody& body,
                                                        std::vector<std::size_t>& storage) {
  if (options_.node_order_seed == 0) return body.order;
  storage = internal::random_topological_order(body.nodes, [this] { return order_random_(); });
  return storage;
}

std::string FakeState::node_label(const internal::NodeData& node, std::size_t index, int depth) {
  return "node " + std::to_string(index) +
         (depth > 0 ? " of a conditional body, depth " + std::to_string(depth) : std::string()) +
         " (" + internal::describe(node.work) + ")";
}

bool FakeState::check_graph_races(const internal::ExecBody& body,
                                  const std::vector<internal::AccessLog>& logs, CUgraphExec exec,
                                  int depth) {
  // Most launches touch memory in several nodes; a graph of one node, or of nodes touching
  // nothing, has nothing to compare.
  std::size_t touching = 0;
  for (const internal::AccessLog& log : logs) touching += log.ranges.empty() ? 0 : 1;
  if (touching < 2) return true;
  if (!body.races) {
    body.races = std::make_shared<internal::RaceCache>(internal::Reachability(body.nodes, body.order));
  }
  bool faulted = false;
  for (const internal::Race& race : internal::find_races(logs, body.races->reach)) {
    if (!body.races->reported.insert({race.first, race.second}).second) continue;
    const auto verb = [](bool write) { return write ? "writes" : "reads"; };
    const std::size_t bytes = race.end - race.begin;
    std::string bytes_text = std::to_string(bytes) + " bytes at " + internal::hex(race.begin);
    if (const internal::DeviceMemory::Allocation* allocation =
            device_memory_.find_containing(race.begin)) {
      const std::size_t offset = race.begin - allocation->base;
      bytes_text += " (bytes " + std::to_string(offset) + "-" + std::to_string(offset + bytes) +
                    " of allocation " + internal::hex(allocation->base) + " of " +
                    std::to_string(allocation->size) + " bytes)";
    }
    std::string text = "cuGraphLaunch of exec " +
                       internal::hex(reinterpret_cast<std::uintptr_t>(exec)) + ": race between " +
                       node_label(body.nodes[race.first], race.first, depth) + " and " +
                       node_label(body.nodes[race.second], race.second, depth) +
                       ", which no path of edges orders: node " + std::to_string(race.first) +
                       " " + verb(race.first_writes) + " and node " +
                       std::to_string(race.second) + " " + verb(race.second_writes) + " the " +
                       bytes_text +
                       " (on a GPU they may run in either order, or at once: add the edge, an "
                       "event wait between their streams, or a join)";
    // Under strict the launch fails as a fault does: no GPU reports a race, so the code is the
    // generic one of a failed launch.
    if (options_.strict) {
      fault(CUDA_ERROR_LAUNCH_FAILED, text);
      faulted = true;
    }
    violations_.push_back(std::move(text));
  }
  return !faulted;
}

std::vector<internal::HeldAddress> FakeState::held_addresses(const internal::KernelWork& work) {
  std::vector<internal::HeldAddress> held;
  const std::vector<KernelParamInfo>& params = work.kernel->params;
  for (std::size_t p = 0; p < params.size(); ++p) {
    const KernelParamInfo& param = params[p];
    // Every 8-byte-aligned word of the parameter: a pointer parameter's one, and the pointers a
    // struct passed by value carries (a tensor map's global address).
    for (std::size_t offset = (8 - param.offset % 8) % 8; offset + 8 <= param.size; offset += 8) {
      CUdeviceptr address = 0;
      std::memcpy(&address, work.params.data() + param.offset + offset, sizeof address);
      if (address == 0) continue;
      internal::DeviceMemory::Extent extent;
      std::string why;
      if (!device_memory_.extent(address, &extent, &why, false)) continue;
      held.push_back({p, offset, address, extent.allocation, extent.allocation_size});
    }
  }
  return held;
}

void FakeState::check_baked(const internal::KernelWork& work, const std::string& where) {
  for (const internal::HeldAddress& held : work.held) {
    internal::DeviceMemory::Extent extent;
    std::string why;
    if (device_memory_.extent(held.address, &extent, &why, false)) continue;
    const std::size_t size = work.kernel->params[held.param].size;
    violation(where + ": kernel '" + work.kernel->name + "' parameter " +
              std::to_string(held.param) +
              (size > 8 ? " (bytes " + std::to_string(held.offset) + "-" +
                              std::to_string(held.offset + 8) + " of its " + std::to_string(size) +
                              ")"
                        : std::string()) +
              " holds " + internal::hex(held.address) +
              ", an address baked at capture: it lay in allocation " +
              internal::hex(held.allocation) + " of " + std::to_string(held.allocation_size) +
              " bytes then, and now it " + why +
              " (the graph does not keep that memory alive: keep it for the graph's lifetime, "
              "or record again)");
  }
}

}  // namespace graphcap::fake
