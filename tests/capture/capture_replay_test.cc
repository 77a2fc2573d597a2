// Capture and replay on every driver (docs/design.md, "The capture lifecycle"; issue "capture
// window" 1-4).
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using CaptureReplayTest = DeviceFixture;

TEST_F(CaptureReplayTest, RecordedLaunchRunsOnlyWhenReplayed) {
  constexpr std::uint32_t kN = 512;
  Buffer counter = upload_u32(std::vector<std::uint32_t>(kN, 10));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::capture);
  ASSERT_THAT(device_->launch(stream(), add_one_, dims_for(kN),
                              {Arg::inout(counter), Arg::inout(counter), Arg::value(kN)}),
              IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_THAT(read_u32(counter), Each(10u)) << "the recorded launch must not have executed";
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(counter), Each(11u));
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(counter), Each(12u));
  const GraphReport& report = graph->report();
  EXPECT_EQ(report.node_count, 1u);
  EXPECT_EQ(report.nodes(CU_GRAPH_NODE_TYPE_KERNEL), 1u);
  EXPECT_EQ(report.pinned_slices, 1u);
  EXPECT_GE(report.pinned_bytes, kN * sizeof(std::uint32_t));
  EXPECT_TRUE(report.uploaded);
}

TEST_F(CaptureReplayTest, RewritingTheInputChangesTheNextReplay) {
  constexpr std::uint32_t kN = 300;
  Buffer input = upload_u32(iota_u32(kN));
  Result<Buffer> output = device_->alloc(kN * sizeof(std::uint32_t), stream());
  ASSERT_THAT(output, IsOk());
  Graph graph = capture([&] { ASSERT_THAT(add_one(input, *output, kN), IsOk()); });
  ASSERT_TRUE(graph);
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(*output), ElementsAreArray(iota_u32(kN, 1)));
  ASSERT_THAT(device_->write(input, to_bytes(iota_u32(kN, 1000)), stream()), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(*output), ElementsAreArray(iota_u32(kN, 1001)));
}

TEST_F(CaptureReplayTest, PingPongPassReplaysExactlyLikeEagerPasses) {
  constexpr std::uint32_t kN = 777;
  constexpr int kLaunches = 150;
  Buffer a = upload_u32(iota_u32(kN));
  Buffer b = upload_u32(std::vector<std::uint32_t>(kN, 0));
  auto pass = [&] {
    for (int i = 0; i < kLaunches; ++i) {
      const bool forward = i % 2 == 0;
      ASSERT_THAT(add_one(forward ? a : b, forward ? b : a, kN), IsOk());
    }
  };
  Graph graph = capture(pass);  // the warm-up ran the pass once
  ASSERT_TRUE(graph);
  EXPECT_EQ(graph.report().nodes(CU_GRAPH_NODE_TYPE_KERNEL), static_cast<std::size_t>(kLaunches));
  ASSERT_THAT(graph.replay(), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  // Warm-up plus two replays: three passes, each adding 150 to a.
  EXPECT_THAT(read_u32(a), ElementsAreArray(iota_u32(kN, 3 * kLaunches)));
  EXPECT_THAT(read_u32(b), ElementsAreArray(iota_u32(kN, 3 * kLaunches - 1)));
  // Rewrite the input and replay once more: one pass from the new values.
  ASSERT_THAT(device_->write(a, to_bytes(iota_u32(kN, 5000)), stream()), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(a), ElementsAreArray(iota_u32(kN, 5000 + kLaunches)));
}

TEST_F(CaptureReplayTest, PinnedIntermediateIsNeverHandedToSentinels) {
  constexpr std::uint32_t kN = 256;
  constexpr std::size_t kBytes = kN * sizeof(std::uint32_t);
  Buffer input = upload_u32(iota_u32(kN));
  Result<Buffer> output = device_->alloc(kBytes, stream());
  ASSERT_THAT(output, IsOk());
  Buffer kept;  // the recording's intermediate, held past end_capture, then dropped
  Graph graph = capture([&] {
    Result<Buffer> intermediate = device_->alloc(kBytes, stream());
    ASSERT_THAT(intermediate, IsOk());
    ASSERT_THAT(add_one(input, *intermediate, kN), IsOk());
    ASSERT_THAT(add_one(*intermediate, *output, kN), IsOk());
    if (stream().capture_state() == CaptureState::capture) kept = *intermediate;
  });
  ASSERT_TRUE(graph);
  const CUdeviceptr pinned = kept.native_handle();
  kept = Buffer{};
  ASSERT_THAT(device_->sync(stream()), IsOk());
  // Sentinels of the same size, from both pools: plain allocations, and allocations while a new
  // window arms the persistent pool (where the intermediate's slice would return if unpinned).
  std::vector<Buffer> sentinels;
  for (std::uint32_t i = 0; i < 4; ++i) {
    sentinels.push_back(upload_u32(std::vector<std::uint32_t>(kN, 0xC0FFEE00u + i)));
  }
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  for (std::uint32_t i = 4; i < 8; ++i) {
    sentinels.push_back(upload_u32(std::vector<std::uint32_t>(kN, 0xC0FFEE00u + i)));
  }
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  for (const Buffer& sentinel : sentinels) EXPECT_NE(sentinel.native_handle(), pinned);

  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(*output), ElementsAreArray(iota_u32(kN, 2)));
  for (std::uint32_t i = 0; i < 8; ++i) {
    EXPECT_THAT(read_u32(sentinels[i]), Each(0xC0FFEE00u + i)) << "sentinel " << i << " clobbered";
  }
}

TEST_F(CaptureReplayTest, CapturedWriteReplaysTheStagedBytes) {
  constexpr std::uint32_t kN = 64;
  Result<Buffer> target = device_->alloc(kN * sizeof(std::uint32_t), stream());
  ASSERT_THAT(target, IsOk());
  Result<Buffer> out = device_->alloc(kN * sizeof(std::uint32_t), stream());
  ASSERT_THAT(out, IsOk());
  Graph graph = capture([&] {
    ASSERT_THAT(device_->write(*target, to_bytes(iota_u32(kN, 40)), stream()), IsOk());
    ASSERT_THAT(add_one(*target, *out, kN), IsOk());
  });
  ASSERT_TRUE(graph);
  EXPECT_EQ(graph.report().nodes(CU_GRAPH_NODE_TYPE_MEMCPY), 1u);
  ASSERT_THAT(fill(*target, 0, kN), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(*target), ElementsAreArray(iota_u32(kN, 40)));
  EXPECT_THAT(read_u32(*out), ElementsAreArray(iota_u32(kN, 41)));
}

TEST_F(CaptureReplayTest, EmptyRecordingGivesAGraphThatReplays) {
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().node_count, 0u);
  EXPECT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(device_->sync(stream()), IsOk());
}

TEST_F(CaptureReplayTest, StreamCapturesAgainAfterAGraph) {
  Buffer x = upload_u32({1, 2, 3});
  Graph first = capture([&] { ASSERT_THAT(add_one(x, x, 3), IsOk()); });
  Graph second = capture([&] {
    ASSERT_THAT(add_one(x, x, 3), IsOk());
    ASSERT_THAT(add_one(x, x, 3), IsOk());
  });
  ASSERT_TRUE(first);
  ASSERT_TRUE(second);
  // Two warm-ups (+1, +2) on 1,2,3, then one replay of each (+1, +2).
  ASSERT_THAT(first.replay(), IsOk());
  ASSERT_THAT(second.replay(), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray({7u, 8u, 9u}));
}

}  // namespace
}  // namespace graphcap::testing
