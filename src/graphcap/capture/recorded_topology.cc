#include <graphcap/capture/recorded_topology.h>

#include <algorithm>

namespace graphcap::capture {

void RecordedTopology::clear(std::size_t expected) {
  nodes_.clear();
  nodes_.reserve(expected);
  frontiers_.clear();
  last_node_.clear();
}

std::size_t RecordedTopology::add(RecordedNode node, int lane) {
  const std::size_t index = nodes_.size();
  std::vector<std::size_t>& frontier = frontiers_[lane];
  node.depends_on = std::move(frontier);
  frontier.assign(1, index);
  last_node_[lane] = index;
  nodes_.push_back(std::move(node));
  return index;
}

std::vector<std::size_t> RecordedTopology::frontier(int lane) const {
  auto found = frontiers_.find(lane);
  return found == frontiers_.end() ? std::vector<std::size_t>{} : found->second;
}

void RecordedTopology::add_dependencies(int lane, const std::vector<std::size_t>& nodes) {
  std::vector<std::size_t>& frontier = frontiers_[lane];
  for (std::size_t node : nodes) {
    if (std::find(frontier.begin(), frontier.end(), node) == frontier.end()) {
      frontier.push_back(node);
    }
  }
}

void RecordedTopology::drop_lane(int lane) {
  frontiers_.erase(lane);
  last_node_.erase(lane);
}

std::optional<std::pair<int, std::size_t>> RecordedTopology::unjoined(int origin) const {
  // Every node the origin's next node would depend on, transitively.
  std::vector<bool> joined(nodes_.size(), false);
  std::vector<std::size_t> stack = frontier(origin);
  while (!stack.empty()) {
    const std::size_t node = stack.back();
    stack.pop_back();
    if (node >= joined.size() || joined[node]) continue;
    joined[node] = true;
    for (std::size_t before : nodes_[node].depends_on) stack.push_back(before);
  }
  for (const auto& [lane, last] : last_node_) {
    if (lane == origin || joined[last]) continue;
    return std::pair{lane, last};
  }
  return std::nullopt;
}

std::vector<RecordedNode> RecordedTopology::take() {
  frontiers_.clear();
  last_node_.clear();
  return std::exchange(nodes_, {});
}

}  // namespace graphcap::capture
