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

TEST(RecordedTopologyTest, TheNextRecordingTakesTheRoomOfTheOneItsGraphReplaced) {
  RecordedTopology topology;
  topology.clear(100);
  record(topology, 100);
  std::vector<RecordedNode> first = topology.take();
  LabelStore first_labels = topology.take_labels();
  const RecordedNode* first_room = first.data();

  topology.clear(100);  // the second recording: no spare yet, its own room
  record(topology, 100);
  std::vector<RecordedNode> second = topology.take();
  LabelStore second_labels = topology.take_labels();
  EXPECT_NE(second.data(), first_room);

  // The second replaced the first (an update in place): the first's room is recycled, emptied.
  topology.recycle(std::move(first), std::move(first_labels));
  topology.clear(100);
  record(topology, 100);
  std::vector<RecordedNode> third = topology.take();
  LabelStore third_labels = topology.take_labels();
  EXPECT_EQ(third.data(), first_room) << "the third recording reuses the first's node list";
  ASSERT_EQ(third.size(), 100u);
  EXPECT_EQ(third[99].after, 98u);
  EXPECT_EQ(third[42].label.expand(third_labels).text(), "node 42");
  // The graph still holding the second recording is untouched by it.
  EXPECT_EQ(second[42].label.expand(second_labels).text(), "node 42");
}

TEST(RecordedTopologyTest, ASmallerReplacedListDoesNotDisplaceALargerSpare) {
  RecordedTopology topology;
  std::vector<RecordedNode> large;
  large.reserve(1000);
  const RecordedNode* large_room = large.data();
  std::vector<RecordedNode> small;
  small.reserve(10);
  topology.recycle(std::move(large), LabelStore{});
  topology.recycle(std::move(small), LabelStore{});
  topology.clear(500);
  record(topology, 500);
  EXPECT_EQ(topology.take().data(), large_room);
}

}  // namespace
}  // namespace graphcap::capture
