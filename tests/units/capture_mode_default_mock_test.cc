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
#include "kernels/test_kernels.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using ::testing::_;
using ::testing::NiceMock;

class CaptureModeDefaultMockTest : public ::testing::Test {
 protected:
  void open(CUstreamCaptureMode mode) {
    register_test_kernels(mock_.fake());
    DeviceOptions options;
    options.capture_mode = mode;
    Result<std::unique_ptr<Device>> device = Device::open(mock_, options);
    ASSERT_THAT(device, IsOk());
    device_ = std::move(*device);
    Result<Module> module = device_->load_module(mock_.fake().module_image({"fill"}));
    ASSERT_THAT(module, IsOk());
    fill_ = *module->kernel("fill");
    x_ = *device_->alloc(64, device_->stream());
  }
  void TearDown() override {
    device_.reset();
    EXPECT_EQ(mock_.fake().live_handles().total(), 0u);
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

  NiceMock<fake::MockDriver> mock_;
  std::unique_ptr<Device> device_;
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
