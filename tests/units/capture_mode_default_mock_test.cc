// CaptureOptions::mode defaults to the device's DeviceOptions::capture_mode: before,
// prepare_capture(s) and prepare_capture(s, {}) opened different modes on a THREAD_LOCAL device.
// The mode the driver is asked for is watched through a MockDriver.
#include <cstdint>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/mock_driver.h>
#include <graphcap/graphcap.h>

#include "device_fixture.h"
#include "matchers.h"
#include "mock_device_fixture.h"

namespace graphcap::testing {
namespace {

using ::testing::_;

class CaptureModeDefaultMockTest : public MockDeviceTest {
 protected:
  void open(CUstreamCaptureMode mode) {
    DeviceOptions options;
    options.capture_mode = mode;
    ASSERT_NO_FATAL_FAILURE(MockDeviceTest::open(options));
    fill_ = kernel("fill");
    x_ = *device_->alloc(64, device_->stream());
  }
  Result<Graph> record(const CaptureOptions& options) {
    return device_->record(
        device_->stream(),
        [&] {
          return device_->launch(device_->stream(), fill_, dims_for(16),
                                 {Arg::out(x_), Arg::value(1u), Arg::value(16u)});
        },
        options);
  }

  Kernel fill_;
  Buffer x_;
};

TEST_F(CaptureModeDefaultMockTest, DefaultOptionsOpenTheDevicesMode) {
  open(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  EXPECT_CALL(mock_, cuStreamBeginCapture(_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)).Times(3);
  EXPECT_CALL(mock_, cuStreamBeginCapture(_, CU_STREAM_CAPTURE_MODE_GLOBAL)).Times(0);
  // prepare_capture(s), prepare_capture(s, {}) and record(s, step): the same mode.
  Stream& s = device_->stream();
  ASSERT_THAT(device_->prepare_capture(s), IsOk());
  ASSERT_THAT(device_->begin_capture(s), IsOk());
  ASSERT_THAT(device_->end_capture(s), IsOk());
  ASSERT_THAT(device_->prepare_capture(s, {}), IsOk());
  ASSERT_THAT(device_->begin_capture(s), IsOk());
  ASSERT_THAT(device_->end_capture(s), IsOk());
  ASSERT_THAT(record({}), IsOk());
}

TEST_F(CaptureModeDefaultMockTest, AModeNamedInTheOptionsIsTheOneOpened) {
  open(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  EXPECT_CALL(mock_, cuStreamBeginCapture(_, CU_STREAM_CAPTURE_MODE_RELAXED)).Times(1);
  CaptureOptions options;
  options.mode = CU_STREAM_CAPTURE_MODE_RELAXED;  // still compiles as before
  ASSERT_THAT(record(options), IsOk());
}

TEST_F(CaptureModeDefaultMockTest, AGlobalDeviceStillOpensGlobal) {
  open(CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_CALL(mock_, cuStreamBeginCapture(_, CU_STREAM_CAPTURE_MODE_GLOBAL)).Times(1);
  ASSERT_THAT(record({}), IsOk());
}

}  // namespace
}  // namespace graphcap::testing
