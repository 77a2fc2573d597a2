// Per-replay parameters under injected driver failures, on the fake: naming a recorded node fails
// (the recording is doomed), setting a node fails (the graph is left as it was).
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class ParamFaultsTest : public FaultFixture {
 protected:
  static constexpr std::uint32_t kN = 64;

  void SetUp() override {
    FaultFixture::SetUp();
    value_ = device_->param<std::uint32_t>(5);
    a_ = upload_u32(std::vector<std::uint32_t>(kN, 0));
    b_ = upload_u32(std::vector<std::uint32_t>(kN, 0));
  }
  Result<void> fill_both() {
    for (const Buffer* out : {&a_, &b_}) {
      if (Result<void> r = device_->launch(stream(), fill_, dims_for(kN),
                                           {Arg::out(*out), Arg::param(value_), Arg::value(kN)});
          !r) {
        return r;
      }
    }
    return {};
  }
  Result<Graph> capture() {
    EXPECT_THAT(device_->prepare_capture(stream()), IsOk());
    EXPECT_THAT(fill_both(), IsOk());
    EXPECT_THAT(device_->begin_capture(stream()), IsOk());
    (void)fill_both();
    return device_->end_capture(stream());
  }

  Param<std::uint32_t> value_;
  Buffer a_, b_;
};

TEST_F(ParamFaultsTest, NamingTheRecordedNodeFailingDoomsTheRecording) {
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(fill_both(), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  faults().fail_call("cuStreamGetCaptureInfo", CUDA_ERROR_UNKNOWN);
  EXPECT_THAT(fill_both(), StatusIs(Errc::driver, CUDA_ERROR_UNKNOWN,
                                    HasSubstr("cuStreamGetCaptureInfo")));
  EXPECT_THAT(device_->end_capture(stream()), StatusIs(Errc::doomed, CUDA_ERROR_UNKNOWN));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

TEST_F(ParamFaultsTest, ASetFailingOnTheSecondNodeSetsTheFirstBack) {
  Result<Graph> graph = capture();
  ASSERT_THAT(graph, IsOk());
  faults().fail_call("cuGraphExecKernelNodeSetParams", CUDA_ERROR_INVALID_VALUE, 2);
  EXPECT_THAT(graph->set(value_, 9u),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE,
                       HasSubstr("cuGraphExecKernelNodeSetParams")));
  EXPECT_EQ(faults().call_count("cuGraphExecKernelNodeSetParams"), 3u)
      << "first node set, second failed, first set back";
  ASSERT_THAT(device_->write(a_, to_bytes(std::vector<std::uint32_t>(kN, 0)), stream()), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(a_), Each(5u));
  EXPECT_THAT(read_u32(b_), Each(5u));
  ASSERT_THAT(graph->set(value_, 9u), IsOk());  // and a later set works
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(a_), Each(9u));
  EXPECT_THAT(read_u32(b_), Each(9u));
}

TEST_F(ParamFaultsTest, ASetOnAGraphOfAClosedDeviceIsGraphState) {
  Result<Graph> graph = capture();
  ASSERT_THAT(graph, IsOk());
  Graph kept = std::move(*graph);
  a_ = Buffer{};
  b_ = Buffer{};
  device_.reset();
  EXPECT_THAT(kept.set(value_, 1u), StatusIs(Errc::graph_state));
}

}  // namespace
}  // namespace graphcap::testing
