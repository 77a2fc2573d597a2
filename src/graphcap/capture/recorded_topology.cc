#include <graphcap/capture/recorded_topology.h>

#include <algorithm>

namespace graphcap::capture {

void RecordedTopology::clear(std::size_t expected) {
  nodes_.clear();
  if (nodes_.capacity() < expected && spare_nodes_.capacity() >= expected) {
    nodes_.swap(spare_nodes_);
  }
  nodes_.reserve(expected);
  store_.clear();
  if (store_.args.capacity() < label_args_hint_ && spare_args_.capacity() >= label_args_hint_) {
    store_.args.swap(spare_args_);
  }
  store_.args.reserve(label_args_hint_);
  lanes_.clear();
}

void RecordedTopology::recycle(std::vector<RecordedNode>&& nodes, NodeStore&& store) noexcept {
  // Kept when it has more room than the spare already kept. Emptying a node list touches no
  // node (RecordedNode is trivially destructible).
  if (nodes.capacity() > spare_nodes_.capacity()) {
    nodes.clear();
    spare_nodes_.swap(nodes);
  }
  if (store.args.capacity() > spare_args_.capacity()) {
    store.args.clear();
    spare_args_.swap(store.args);
  }
}

RecordedTopology::Lane& RecordedTopology::lane(int id) {
  for (Lane& lane : lanes_) {
    if (lane.id == id) return lane;
  }
  lanes_.push_back(Lane{id, {}, RecordedNode::kNone});
  return lanes_.back();
}

const RecordedTopology::Lane* RecordedTopology::find(int id) const noexcept {
  for (const Lane& lane : lanes_) {
    if (lane.id == id) return &lane;
  }
  return nullptr;
}

RecordedNode& RecordedTopology::add(int id) {
  Lane& on = lane(id);
  const std::size_t index = nodes_.size();
  RecordedNode& node = nodes_.emplace_back();
  if (!on.frontier.empty()) {
    node.after = on.frontier.front();
    if (on.frontier.size() > 1) {  // a join: the rest in the store
      node.joins_first = static_cast<std::uint32_t>(store_.joins.size());
      node.joins_count = static_cast<std::uint32_t>(on.frontier.size() - 1);
      store_.joins.insert(store_.joins.end(), on.frontier.begin() + 1, on.frontier.end());
    }
  }
  on.frontier.clear();  // keeps its room: the next node allocates nothing
  on.frontier.push_back(index);
  on.last = index;
  return node;
}

std::vector<std::size_t> RecordedTopology::frontier(int id) const {
  const Lane* found = find(id);
  return found == nullptr ? std::vector<std::size_t>{} : found->frontier;
}

void RecordedTopology::add_dependencies(int id, const std::vector<std::size_t>& nodes) {
  std::vector<std::size_t>& frontier = lane(id).frontier;
  for (std::size_t node : nodes) {
    if (std::find(frontier.begin(), frontier.end(), node) == frontier.end()) {
      frontier.push_back(node);
    }
  }
}

void RecordedTopology::drop_lane(int id) {
  std::erase_if(lanes_, [&](const Lane& lane) { return lane.id == id; });
}

std::optional<std::pair<int, std::size_t>> RecordedTopology::unjoined(int origin) const {
  // One lane (no side stream forked in): nothing to join, no walk (a close of 1000 nodes would
  // spend ~50k instructions on it).
  if (std::none_of(lanes_.begin(), lanes_.end(), [&](const Lane& lane) {
        return lane.id != origin && lane.last != RecordedNode::kNone;
      })) {
    return std::nullopt;
  }
  // Every node the origin's next node would depend on, transitively.
  std::vector<bool> joined(nodes_.size(), false);
  std::vector<std::size_t> stack = frontier(origin);
  while (!stack.empty()) {
    const std::size_t node = stack.back();
    stack.pop_back();
    if (node >= joined.size() || joined[node]) continue;
    joined[node] = true;
    nodes_[node].for_each_dependency(store_, [&](std::size_t before) { stack.push_back(before); });
  }
  for (const Lane& lane : lanes_) {
    if (lane.id == origin || lane.last == RecordedNode::kNone || joined[lane.last]) continue;
    return std::pair{lane.id, lane.last};
  }
  return std::nullopt;
}

std::vector<RecordedNode> RecordedTopology::take() {
  lanes_.clear();
  return std::exchange(nodes_, {});
}

NodeStore RecordedTopology::take_store() {
  label_args_hint_ = store_.args.size();
  return std::exchange(store_, {});
}

}  // namespace graphcap::capture
