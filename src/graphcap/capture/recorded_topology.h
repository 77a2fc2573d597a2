// RecordedTopology: a recording's nodes as graphcap records them (what Graph::dot() draws and
// refusals name), with the dependencies the driver gives them. Each lane (a stream of the
// recording, or the body of an open loop) has a frontier: the nodes its next node depends on. An
// event marks a lane's frontier; a wait adds those marks to the waiting lane's. Recording a node
// allocates nothing but the node's own room (reserved from the last recording's size): lanes are
// a short flat list, and a node's one usual dependency is kept inline. Not locked: the
// recording's lock guards it.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include <graphcap/capture/recording.h>

namespace graphcap::capture {

class RecordedTopology {
 public:
  // Forget everything; room for `expected` nodes (a re-recording makes as many as the last).
  void clear(std::size_t expected);
  std::size_t size() const noexcept { return nodes_.size(); }
  bool empty() const noexcept { return nodes_.empty(); }
  const RecordedNode& back() const { return nodes_.back(); }
  const RecordedNode& at(std::size_t node) const { return nodes_.at(node); }
  const NodeStore& store() const noexcept { return store_; }

  // A new node on `lane`, depending on the lane's frontier, and the lane's frontier from now on;
  // the caller fills in what it is. Its index is size() - 1.
  RecordedNode& add(int lane);
  std::vector<std::size_t> frontier(int lane) const;
  // A wait on `lane` for an event marking `nodes`.
  void add_dependencies(int lane, const std::vector<std::size_t>& nodes);
  // A loop body closed: its lane is joined by construction (the WHILE node runs it).
  void drop_lane(int lane);
  // A lane other than `origin` whose last node the origin's frontier does not reach, with that
  // node: side-stream work the recording never joined back.
  std::optional<std::pair<int, std::size_t>> unjoined(int origin) const;

  // Gives `node` (one of this topology's) its label, its arguments kept with the others'.
  void set_label(RecordedNode& node, OperationLabel&& label) {
    node.label = RecordedLabel(std::move(label), store_);
  }
  // The label of node `node`, expanded (for messages and the debug log).
  OperationLabel label(std::size_t node) const {
    return nodes_.at(node).label.expand(store_);
  }

  // The nodes, and what they share, handed to the recording (Recording::nodes and store).
  std::vector<RecordedNode> take();
  NodeStore take_store();
  // A replaced recording's node list and store, emptied: their room is what clear() gives the
  // next recording, so a re-recording loop allocates and frees no node list per step.
  void recycle(std::vector<RecordedNode>&& nodes, NodeStore&& store) noexcept;

 private:
  struct Lane {
    int id = 0;
    std::vector<std::size_t> frontier;
    std::size_t last = RecordedNode::kNone;  // its last node, kNone before its first
  };
  Lane& lane(int id);
  const Lane* find(int id) const noexcept;

  std::vector<RecordedNode> nodes_;
  NodeStore store_;
  std::vector<RecordedNode> spare_nodes_;  // empty, with room (recycle)
  std::vector<OperationLabel::BufferArg> spare_args_;
  std::size_t label_args_hint_ = 0;  // the last recording's argument count, reserved by clear()
  std::vector<Lane> lanes_;  // a few: the streams of the recording and its open loop bodies
};

}  // namespace graphcap::capture
