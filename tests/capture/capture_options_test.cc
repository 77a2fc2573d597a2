// CaptureOptions on every driver: the window's recording opens in the mode named at
// prepare_capture(s, options), whatever DeviceOptions::capture_mode says.
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class CaptureOptionsTest : public DeviceFixture {};

TEST_F(CaptureOptionsTest, ARelaxedWindowMayBeEndedFromAnotherThread) {
  CaptureOptions options;
  options.mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<Graph> graph = Error(Errc::graph_state, "not run");
  std::thread([&] { graph = device_->end_capture(stream()); }).join();
  EXPECT_THAT(graph, IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

TEST_F(CaptureOptionsTest, AGlobalWindowMayNotBeEndedFromAnotherThread) {
  ASSERT_THAT(device_->prepare_capture(stream(), CaptureOptions{}), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<Graph> graph = Error(Errc::driver, "not run");
  std::thread([&] { graph = device_->end_capture(stream()); }).join();
  EXPECT_THAT(graph, StatusIs(Errc::graph_state));
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(CaptureOptionsTest, AModeCudaDoesNotDefineIsInvalidArgumentAndChangesNothing) {
  CaptureOptions options;
  options.mode = static_cast<CUstreamCaptureMode>(7);
  EXPECT_THAT(device_->prepare_capture(stream(), options), StatusIs(Errc::invalid_argument));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

}  // namespace
}  // namespace graphcap::testing
