// RecordedTopology: dependencies as a lane's frontier, and the room a replaced recording's node
// list gives the next recording (recycle), so a re-recording loop allocates no node list a step.
#include <graphcap/capture/recorded_topology.h>

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace graphcap::capture {
namespace {

OperationLabel text_label(const std::string& text) { return OperationLabel::of_text(text); }

// n nodes on lane 0, each labelled, as a recording of n launches makes them.
void record(RecordedTopology& topology, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    RecordedNode& node = topology.add(0);
    topology.set_label(node, text_label("node " + std::to_string(i)));
  }
}

TEST(RecordedTopologyTest, ANodeDependsOnItsLaneLastNode) {
  RecordedTopology topology;
  topology.clear(4);
  record(topology, 3);
  EXPECT_EQ(topology.at(0).after, RecordedNode::kNone);
  EXPECT_EQ(topology.at(1).after, 0u);
  EXPECT_EQ(topology.at(2).after, 1u);
  EXPECT_EQ(topology.label(2).text(), "node 2");
}

TEST(RecordedTopologyTest, AJoinKeepsItsFurtherDependenciesInTheStore) {
  RecordedTopology topology;
  topology.clear(4);
  topology.add(0);                    // node 0
  topology.add(1);                    // node 1, on a side lane
  EXPECT_TRUE(topology.unjoined(0).has_value()) << "lane 1's node is not joined yet";
  topology.add_dependencies(0, {1});  // lane 0 waits for an event marking node 1
  topology.add(0);                    // node 2: after 0 and 1
  std::vector<std::size_t> dependencies;
  topology.at(2).for_each_dependency(topology.store(),
                                     [&](std::size_t node) { dependencies.push_back(node); });
  EXPECT_EQ(dependencies, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(topology.at(2).joins_count, 1u);
  EXPECT_FALSE(topology.unjoined(0).has_value());
  // Handed over with the nodes: the recording's store resolves the same dependencies.
  const std::vector<RecordedNode> nodes = topology.take();
  const NodeStore store = topology.take_store();
  dependencies.clear();
  nodes[2].for_each_dependency(store, [&](std::size_t node) { dependencies.push_back(node); });
  EXPECT_EQ(dependencies, (std::vector<std::size_t>{0, 1}));
}

TEST(RecordedTopologyTest, TheNextRecordingTakesTheRoomOfTheOneItsGraphReplaced) {
  RecordedTopology topology;
  topology.clear(100);
  record(topology, 100);
  std::vector<RecordedNode> first = topology.take();
  NodeStore first_store = topology.take_store();
  const RecordedNode* first_room = first.data();

  topology.clear(100);  // the second recording: no spare yet, its own room
  record(topology, 100);
  std::vector<RecordedNode> second = topology.take();
  NodeStore second_store = topology.take_store();
  EXPECT_NE(second.data(), first_room);

  // The second replaced the first (an update in place): the first's room is recycled, emptied.
  topology.recycle(std::move(first), std::move(first_store));
  topology.clear(100);
  record(topology, 100);
  std::vector<RecordedNode> third = topology.take();
  NodeStore third_store = topology.take_store();
  EXPECT_EQ(third.data(), first_room) << "the third recording reuses the first's node list";
  ASSERT_EQ(third.size(), 100u);
  EXPECT_EQ(third[99].after, 98u);
  EXPECT_EQ(third[42].label.expand(third_store).text(), "node 42");
  // The graph still holding the second recording is untouched by it.
  EXPECT_EQ(second[42].label.expand(second_store).text(), "node 42");
}

TEST(RecordedTopologyTest, ASmallerReplacedListDoesNotDisplaceALargerSpare) {
  RecordedTopology topology;
  std::vector<RecordedNode> large;
  large.reserve(1000);
  const RecordedNode* large_room = large.data();
  std::vector<RecordedNode> small;
  small.reserve(10);
  topology.recycle(std::move(large), NodeStore{});
  topology.recycle(std::move(small), NodeStore{});
  topology.clear(500);
  record(topology, 500);
  EXPECT_EQ(topology.take().data(), large_room);
}

}  // namespace
}  // namespace graphcap::capture
