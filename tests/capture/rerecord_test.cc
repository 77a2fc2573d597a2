// Re-recording into an existing graph on every driver: Device::end_capture(s,
// into) updates into's executable in place when the driver accepts the new recording
// (docs/cuda-driver-facts.md, "Exec update": same topology, other parameters, pointers, grids or
// functions) and re-instantiates otherwise; into.report() says which and why; into is unchanged
// when the recording is refused; misuse changes nothing.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class RerecordTest : public DeviceFixture {
 protected:
  static constexpr std::uint32_t kN = 300;
  static constexpr std::size_t kBytes = kN * sizeof(std::uint32_t);
  // Warm-up then recording of `body`, closed into a new graph.
  template <class Body>
  Graph capture(Body&& body) {
    Result<Graph> graph = device_->record(stream(), body);
    EXPECT_THAT(graph, IsOk());
    return graph ? std::move(*graph) : Graph{};
  }
  // The same, closed into `into`.
  template <class Body>
  Result<void> rerecord(Graph& into, Body&& body) {
    CaptureSequence sequence(*device_, stream());
    return sequence.run(CaptureOptions{}, body, [&] { return sequence.end(into); });
  }
  Buffer alloc() {
    Result<Buffer> buffer = device_->alloc(kBytes, stream());
    EXPECT_THAT(buffer, IsOk());
    return buffer ? *buffer : Buffer{};
  }
};

TEST_F(RerecordTest, OtherPointersAreAnUpdateInPlace) {
  Buffer a = upload_u32(iota_u32(kN, 0));
  Buffer b = upload_u32(iota_u32(kN, 1000));
  Buffer out_a = alloc();
  Buffer out_b = alloc();
  Graph graph = capture([&] { ASSERT_THAT(add_one(a, out_a, kN), IsOk()); });
  ASSERT_TRUE(graph);
  const CUgraphExec exec = graph.native_handle();
  EXPECT_FALSE(graph.report().rerecorded);
  ASSERT_THAT(rerecord(graph, [&] { ASSERT_THAT(add_one(b, out_b, kN), IsOk()); }), IsOk());
  const GraphReport& report = graph.report();
  EXPECT_TRUE(report.rerecorded);
  EXPECT_TRUE(report.updated);
  EXPECT_EQ(report.update_result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  EXPECT_EQ(report.update_refusal, "");
  EXPECT_EQ(report.node_count, 1u);
  EXPECT_EQ(graph.native_handle(), exec) << "updated in place: the same executable";
  ASSERT_THAT(device_->write(out_a, to_bytes(std::vector<std::uint32_t>(kN, 7)), stream()), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out_b), ElementsAreArray(iota_u32(kN, 1001)));
  EXPECT_THAT(read_u32(out_a), Each(7u)) << "the old recording's output is no longer written";
}

TEST_F(RerecordTest, AnotherGridIsAnUpdateInPlace) {
  Buffer out = upload_u32(std::vector<std::uint32_t>(kN, 0));
  Graph graph = capture([&] { ASSERT_THAT(fill(out, 5, 100), IsOk()); });
  ASSERT_TRUE(graph);
  ASSERT_THAT(rerecord(graph, [&] { ASSERT_THAT(fill(out, 9, kN), IsOk()); }), IsOk());
  EXPECT_TRUE(graph.report().updated);
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), Each(9u));
}

TEST_F(RerecordTest, AnotherFunctionOfTheSameContextIsAnUpdateInPlace) {
  Buffer in = upload_u32(iota_u32(kN, 50));
  Buffer out = alloc();
  Graph graph = capture([&] { ASSERT_THAT(add_one(in, out, kN), IsOk()); });
  ASSERT_TRUE(graph);
  ASSERT_THAT(rerecord(graph,
                       [&] {
                         ASSERT_THAT(device_->launch(stream(), copy_, dims_for(kN),
                                                     {Arg::in(in), Arg::out(out), Arg::value(kN)}),
                                     IsOk());
                       }),
              IsOk());
  EXPECT_TRUE(graph.report().updated);
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), ElementsAreArray(iota_u32(kN, 50)));
}

TEST_F(RerecordTest, AnotherNodeCountIsReinstantiatedAsTopologyChanged) {
  Buffer a = upload_u32(iota_u32(kN, 0));
  Buffer b = alloc();
  Buffer c = alloc();
  Graph graph = capture([&] { ASSERT_THAT(add_one(a, b, kN), IsOk()); });
  ASSERT_TRUE(graph);
  const CUgraphExec exec = graph.native_handle();
  ASSERT_THAT(rerecord(graph,
                       [&] {
                         ASSERT_THAT(add_one(a, b, kN), IsOk());
                         ASSERT_THAT(add_one(b, c, kN), IsOk());
                       }),
              IsOk());
  const GraphReport& report = graph.report();
  EXPECT_TRUE(report.rerecorded);
  EXPECT_FALSE(report.updated);
  EXPECT_EQ(report.update_result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  EXPECT_THAT(report.update_refusal, HasSubstr("CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED"));
  EXPECT_THAT(report.update_refusal, HasSubstr("CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"));
  EXPECT_FALSE(report.update_error_node.has_value()) << "a node count differs: no node named";
  EXPECT_EQ(report.node_count, 2u);
  EXPECT_NE(graph.native_handle(), exec) << "a new executable was swapped in";
  EXPECT_NE(graph.native_handle(), nullptr);
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(c), ElementsAreArray(iota_u32(kN, 2)));
}

TEST_F(RerecordTest, AnotherNodeTypeIsReinstantiatedNamingTheNode) {
  Buffer out = upload_u32(std::vector<std::uint32_t>(kN, 0));
  const std::vector<std::byte> threes = to_bytes(std::vector<std::uint32_t>(kN, 3));
  Graph graph = capture([&] { ASSERT_THAT(fill(out, 5, kN), IsOk()); });
  ASSERT_TRUE(graph);
  ASSERT_THAT(rerecord(graph, [&] { ASSERT_THAT(device_->write(out, threes, stream()), IsOk()); }),
              IsOk());
  const GraphReport& report = graph.report();
  EXPECT_FALSE(report.updated);
  EXPECT_EQ(report.update_result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
  EXPECT_THAT(report.update_refusal, HasSubstr("CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED"));
  EXPECT_THAT(report.update_refusal, HasSubstr("node 0 (MEMCPY)"));
  ASSERT_TRUE(report.update_error_node.has_value());
  EXPECT_EQ(*report.update_error_node, 0u);
  EXPECT_EQ(report.update_error_node_type, CU_GRAPH_NODE_TYPE_MEMCPY);
  EXPECT_EQ(report.nodes(CU_GRAPH_NODE_TYPE_MEMCPY), 1u);
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), Each(3u));
}

TEST_F(RerecordTest, UpdatesCanRepeatAndGoBackAndForth) {
  Buffer a = upload_u32(iota_u32(kN, 0));
  Buffer b = upload_u32(iota_u32(kN, 500));
  Buffer out = alloc();
  Graph graph = capture([&] { ASSERT_THAT(add_one(a, out, kN), IsOk()); });
  ASSERT_TRUE(graph);
  for (int round = 0; round < 4; ++round) {
    const Buffer& in = round % 2 == 0 ? b : a;
    ASSERT_THAT(rerecord(graph, [&] { ASSERT_THAT(add_one(in, out, kN), IsOk()); }), IsOk());
    EXPECT_TRUE(graph.report().updated) << "round " << round;
    ASSERT_THAT(graph.replay(), IsOk());
    EXPECT_THAT(read_u32(out), ElementsAreArray(iota_u32(kN, round % 2 == 0 ? 501 : 1)));
  }
}

TEST_F(RerecordTest, TheNewRecordingsBuffersArePinnedAfterTheUserDropsThem) {
  Buffer a = upload_u32(iota_u32(kN, 0));
  Buffer out = alloc();
  Graph graph = capture([&] { ASSERT_THAT(add_one(a, out, kN), IsOk()); });
  ASSERT_TRUE(graph);
  {
    Buffer b = upload_u32(iota_u32(kN, 40));
    ASSERT_THAT(rerecord(graph, [&] { ASSERT_THAT(add_one(b, out, kN), IsOk()); }), IsOk());
    EXPECT_TRUE(graph.report().updated);
  }  // b's last handle goes: the graph's pin keeps its memory
  // Allocations of b's size now must not get b's memory.
  std::vector<Buffer> others;
  for (int i = 0; i < 4; ++i) {
    others.push_back(upload_u32(std::vector<std::uint32_t>(kN, 0xdead)));
  }
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), ElementsAreArray(iota_u32(kN, 41)));
}

TEST_F(RerecordTest, OnlyTheOldRecordingsMemoryIsUnpinned) {
  Buffer out = alloc();
  Graph graph;
  std::size_t old_pinned_bytes = 0;
  {
    Buffer a = upload_u32(iota_u32(kN, 0));
    Buffer scratch = alloc();
    graph = capture([&] {
      ASSERT_THAT(add_one(a, scratch, kN), IsOk());
      ASSERT_THAT(add_one(scratch, out, kN), IsOk());
    });
    ASSERT_TRUE(graph);
    old_pinned_bytes = graph.report().pinned_bytes;
    EXPECT_EQ(graph.report().pinned_slices, 3u);
  }  // a and scratch are held only by the graph now
  Buffer b = upload_u32(iota_u32(kN, 10));
  Buffer scratch2 = alloc();
  ASSERT_THAT(rerecord(graph,
                       [&] {
                         ASSERT_THAT(add_one(b, scratch2, kN), IsOk());
                         ASSERT_THAT(add_one(scratch2, out, kN), IsOk());
                       }),
              IsOk());
  EXPECT_TRUE(graph.report().updated);
  EXPECT_EQ(graph.report().pinned_slices, 3u) << "b, scratch2 and out; not a or scratch";
  EXPECT_EQ(graph.report().pinned_bytes, old_pinned_bytes);
  ASSERT_THAT(device_->sync(stream()), IsOk());
  // a's and scratch's slices went back to the pool: the device pool holds no more than before.
  const MemoryStats stats = device_->memory_stats(stream());
  EXPECT_EQ(stats.pending_drops, 0u);
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), ElementsAreArray(iota_u32(kN, 12)));
}

TEST_F(RerecordTest, ARefusedRecordingLeavesTheGraphUnchanged) {
  Buffer a = upload_u32(iota_u32(kN, 0));
  Buffer out = alloc();
  Graph graph = capture([&] { ASSERT_THAT(add_one(a, out, kN), IsOk()); });
  ASSERT_TRUE(graph);
  const CUgraphExec exec = graph.native_handle();
  const std::size_t pinned = graph.report().pinned_slices;
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(add_one(a, out, kN), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  // An allocation the warm-up did not prime: the pool can't serve it while recording, which
  // dooms the recording.
  Result<Buffer> unprimed = device_->alloc(64 << 20, stream());
  EXPECT_THAT(unprimed, StatusIs(Errc::out_of_memory));
  Result<void> closed = device_->end_capture(stream(), graph);
  EXPECT_THAT(closed, StatusIs(Errc::doomed));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(graph.native_handle(), exec);
  EXPECT_FALSE(graph.report().rerecorded);
  EXPECT_EQ(graph.report().pinned_slices, pinned);
  ASSERT_THAT(device_->write(a, to_bytes(iota_u32(kN, 70)), stream()), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), ElementsAreArray(iota_u32(kN, 71)));
}

TEST_F(RerecordTest, IntoAGraphOfAnotherStreamIsInvalidArgumentAndLeavesTheRecordingOpen) {
  Result<Stream*> other = device_->create_stream();
  ASSERT_THAT(other, IsOk());
  Buffer a = upload_u32(iota_u32(kN, 0), **other);
  Result<Buffer> out = device_->alloc(kBytes, **other);
  ASSERT_THAT(out, IsOk());
  ASSERT_THAT(device_->prepare_capture(**other), IsOk());
  ASSERT_THAT(add_one(a, *out, kN, **other), IsOk());
  ASSERT_THAT(device_->begin_capture(**other), IsOk());
  ASSERT_THAT(add_one(a, *out, kN, **other), IsOk());
  Result<Graph> foreign = device_->end_capture(**other);
  ASSERT_THAT(foreign, IsOk());

  Buffer b = upload_u32(iota_u32(kN, 0));
  Buffer out2 = alloc();
  Graph mine = capture([&] { ASSERT_THAT(add_one(b, out2, kN), IsOk()); });
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(b, out2, kN), IsOk());
  EXPECT_THAT(device_->end_capture(stream(), *foreign), StatusIs(Errc::invalid_argument));
  EXPECT_EQ(stream().capture_state(), CaptureState::capture) << "nothing was closed";
  ASSERT_THAT(device_->end_capture(stream(), mine), IsOk());
  EXPECT_TRUE(mine.report().updated);
  ASSERT_THAT(foreign->replay(), IsOk());
  ASSERT_THAT(device_->sync(**other), IsOk());
}

TEST_F(RerecordTest, IntoAnEmptyOrDestroyedGraphIsGraphStateAndLeavesTheRecordingOpen) {
  Buffer a = upload_u32(iota_u32(kN, 0));
  Buffer out = alloc();
  Graph destroyed = capture([&] { ASSERT_THAT(add_one(a, out, kN), IsOk()); });
  ASSERT_THAT(destroyed.destroy(), IsOk());
  Graph empty;
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(a, out, kN), IsOk());
  EXPECT_THAT(device_->end_capture(stream(), empty), StatusIs(Errc::graph_state));
  EXPECT_THAT(device_->end_capture(stream(), destroyed), StatusIs(Errc::graph_state));
  EXPECT_EQ(stream().capture_state(), CaptureState::capture);
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(out), ElementsAreArray(iota_u32(kN, 1)));
}

TEST_F(RerecordTest, IntoAGraphOfAClosedDeviceIsGraphState) {
  Result<std::unique_ptr<Device>> second = Device::open(device_->driver());
  ASSERT_THAT(second, IsOk());
  Graph orphan;
  {
    Device& d2 = **second;
    Result<Buffer> out = d2.alloc(kBytes, d2.stream());
    ASSERT_THAT(out, IsOk());
    const std::vector<std::byte> ones = to_bytes(std::vector<std::uint32_t>(kN, 1));
    ASSERT_THAT(d2.prepare_capture(d2.stream()), IsOk());
    ASSERT_THAT(d2.write(*out, ones, d2.stream()), IsOk());
    ASSERT_THAT(d2.begin_capture(d2.stream()), IsOk());
    ASSERT_THAT(d2.write(*out, ones, d2.stream()), IsOk());
    Result<Graph> graph = d2.end_capture(d2.stream());
    ASSERT_THAT(graph, IsOk());
    orphan = std::move(*graph);
  }
  second->reset();  // closes the device: its graphs turn inert
  Buffer out = alloc();
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(out, 1, kN), IsOk());
  EXPECT_THAT(device_->end_capture(stream(), orphan), StatusIs(Errc::graph_state));
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

}  // namespace
}  // namespace graphcap::testing
