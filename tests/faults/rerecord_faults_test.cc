// Re-recording into an existing graph (Device::end_capture(s, into)) under injected driver
// failures, on the fake: every driver call of closing a re-recording fails in turn, and `into`
// is either the new recording or unchanged and replayable, each handle released once.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class RerecordFaultsTest : public FaultFixture {
 protected:
  static constexpr std::uint32_t kN = 64;

  void SetUp() override {
    FaultFixture::SetUp();
    a_ = upload_u32(iota_u32(kN, 0));
    b_ = upload_u32(iota_u32(kN, 100));
    out_ = upload_u32(std::vector<std::uint32_t>(kN, 0));
    Result<Graph> graph = device_->record(stream(), [&] { return add_one(a_, out_, kN); });
    ASSERT_THAT(graph, IsOk());
    graph_ = std::move(*graph);
  }
  void TearDown() override {
    graph_ = Graph{};
    DeviceFixture::TearDown();
  }

  // Re-record reading b_ (an update) or, with `grow`, two launches (a re-instantiation).
  Result<void> rerecord(bool grow) {
    auto step = [&] {
      EXPECT_THAT(add_one(b_, out_, kN), IsOk());
      if (grow) {
        EXPECT_THAT(add_one(out_, out_, kN), IsOk());
      }
    };
    CaptureSequence sequence(*device_, stream());
    return sequence.run(CaptureOptions{}, step, [&] { return sequence.end(graph_); });
  }

  // The graph still computes the first recording: out = a + 1.
  void expect_old_recording() {
    ASSERT_THAT(graph_.replay(), IsOk());
    EXPECT_THAT(read_u32(out_), ElementsAreArray(iota_u32(kN, 1)));
  }

  Buffer a_, b_, out_;
  Graph graph_;
};

TEST_F(RerecordFaultsTest, AFailingExecUpdateFallsBackToANewExecutable) {
  const CUgraphExec exec = graph_.native_handle();
  faults().fail_call("cuGraphExecUpdate", CUDA_ERROR_UNKNOWN);
  ASSERT_THAT(rerecord(false), IsOk());
  EXPECT_FALSE(graph_.report().updated);
  EXPECT_THAT(graph_.report().update_refusal, HasSubstr("CUDA_ERROR_UNKNOWN"));
  EXPECT_NE(graph_.native_handle(), exec);
  ASSERT_THAT(graph_.replay(), IsOk());
  EXPECT_THAT(read_u32(out_), ElementsAreArray(iota_u32(kN, 101)));
}

TEST_F(RerecordFaultsTest, AFailingInstantiateAfterARefusedUpdateLeavesIntoUnchanged) {
  const CUgraphExec exec = graph_.native_handle();
  faults().fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(rerecord(true), StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY,
                                       HasSubstr("cuGraphInstantiateWithParams")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(graph_.native_handle(), exec);
  EXPECT_FALSE(graph_.report().rerecorded);
  // The refused recording's outputs carry the refusal until something produces them again.
  EXPECT_THAT(device_->read(out_, stream()), StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY));
  ASSERT_THAT(device_->write(out_, to_bytes(std::vector<std::uint32_t>(kN, 0)), stream()), IsOk());
  expect_old_recording();
}

TEST_F(RerecordFaultsTest, AFailingEndCaptureLeavesIntoUnchanged) {
  const CUgraphExec exec = graph_.native_handle();
  faults().fail_call("cuStreamEndCapture", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_THAT(rerecord(false),
              StatusIs(Errc::driver, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED));
  EXPECT_EQ(graph_.native_handle(), exec);
  ASSERT_THAT(device_->write(out_, to_bytes(std::vector<std::uint32_t>(kN, 0)), stream()), IsOk());
  expect_old_recording();
}

// The node census runs only when the update is refused (an update that succeeds proves
// the new graph's node types are into's): here, a re-recording of another topology.
TEST_F(RerecordFaultsTest, AFailingNodeCountLeavesIntoUnchanged) {
  const CUgraphExec exec = graph_.native_handle();
  faults().fail_call("cuGraphGetNodes", CUDA_ERROR_INVALID_VALUE);
  EXPECT_THAT(rerecord(true), StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE));
  EXPECT_EQ(graph_.native_handle(), exec);
  ASSERT_THAT(device_->write(out_, to_bytes(std::vector<std::uint32_t>(kN, 0)), stream()), IsOk());
  expect_old_recording();
}

TEST_F(RerecordFaultsTest, AnUpdatedReRecordingQueriesNoNodes) {
  const std::size_t listed = faults().call_count("cuGraphGetNodes");
  const std::size_t typed = faults().call_count("cuGraphNodeGetType");
  ASSERT_THAT(rerecord(false), IsOk());
  EXPECT_TRUE(graph_.report().updated);
  EXPECT_EQ(faults().call_count("cuGraphGetNodes"), listed);
  EXPECT_EQ(faults().call_count("cuGraphNodeGetType"), typed);
  // The counts are the executable's graph's, which the update proved the same.
  EXPECT_EQ(graph_.report().node_count, 1u);
  EXPECT_EQ(graph_.report().nodes(CU_GRAPH_NODE_TYPE_KERNEL), 1u);
  ASSERT_THAT(graph_.replay(), IsOk());
  EXPECT_THAT(read_u32(out_), ElementsAreArray(iota_u32(kN, 101)));
}

TEST_F(RerecordFaultsTest, ReplacedExecutableIsDestroyedOnceAfterItsReplays) {
  const CUgraphExec exec = graph_.native_handle();
  if (on_fake()) fake()->set_device_paused(true);
  ASSERT_THAT(graph_.replay(), IsOk());  // in flight while the re-recording closes
  if (on_fake()) fake()->set_device_paused(false);
  ASSERT_THAT(rerecord(true), IsOk());
  EXPECT_NE(graph_.native_handle(), exec);
  EXPECT_EQ(faults().live_handles().execs, 1u);
  ASSERT_THAT(graph_.replay(), IsOk());
  EXPECT_THAT(read_u32(out_), ElementsAreArray(iota_u32(kN, 102)));
}

}  // namespace
}  // namespace graphcap::testing
