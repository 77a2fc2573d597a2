// The lifecycle's rules on every driver: out-of-order calls are refused and change nothing,
// reads and syncs inside the window are refused without touching the driver's recording, graphs
// are destroyed exactly once, and graphs outliving their device turn inert.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class CaptureLifecycleTest : public DeviceFixture {
 protected:
  CUstreamCaptureStatus driver_capture_status() {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    EXPECT_EQ(driver_->api().cuStreamIsCapturing(stream().native_handle(), &status), CUDA_SUCCESS);
    return status;
  }
};

TEST_F(CaptureLifecycleTest, OutOfOrderCallsAreGraphStateAndChangeNothing) {
  // begin without prepare
  EXPECT_THAT(device_->begin_capture(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("prepare_capture")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  // end without begin
  EXPECT_THAT(device_->end_capture(stream()), StatusIs(Errc::graph_state));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  // prepare twice
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  EXPECT_THAT(device_->prepare_capture(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("already")));
  EXPECT_EQ(stream().capture_state(), CaptureState::prepare);
  // end in prepare
  EXPECT_THAT(device_->end_capture(stream()), StatusIs(Errc::graph_state));
  EXPECT_EQ(stream().capture_state(), CaptureState::prepare);
  // begin twice
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  EXPECT_THAT(device_->begin_capture(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("already open")));
  EXPECT_EQ(stream().capture_state(), CaptureState::capture);
  EXPECT_EQ(driver_capture_status(), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_THAT(device_->prepare_capture(stream()), StatusIs(Errc::graph_state));
  EXPECT_EQ(stream().capture_state(), CaptureState::capture);
  // and the recording still closes into a working graph
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(device_->sync(stream()), IsOk());
}

TEST_F(CaptureLifecycleTest, ReadAndSyncInsideTheWindowAreRefusedWithoutInvalidating) {
  Buffer x = upload_u32({5, 6, 7});
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray({5u, 6u, 7u}));  // legal during the warm-up
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 3), IsOk());
  EXPECT_THAT(device_->read(x, stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("recording")));
  EXPECT_THAT(device_->sync(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("recording")));
  EXPECT_EQ(driver_capture_status(), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk()) << "refused reads must not have doomed the recording";
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray({6u, 7u, 8u}));
}

TEST_F(CaptureLifecycleTest, AbortLeavesEitherStateForNoCapture) {
  EXPECT_THAT(device_->abort_capture(stream()), StatusIs(Errc::graph_state));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);

  Buffer x = upload_u32({1});
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 1), IsOk());
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(driver_capture_status(), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_THAT(device_->read(x, stream()), StatusIs(Errc::doomed, CUDA_SUCCESS,
                                                   HasSubstr("abandoned")));
}

TEST_F(CaptureLifecycleTest, DestroyIsIdempotentAndEmptyGraphsRefuseReplay) {
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  Graph moved = std::move(*graph);
  EXPECT_FALSE(*graph);
  EXPECT_THAT(graph->replay(), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("empty")));
  EXPECT_THAT(graph->destroy(), IsOk());
  EXPECT_THAT(moved.replay(), IsOk());
  EXPECT_THAT(moved.destroy(), IsOk());
  EXPECT_THAT(moved.destroy(), IsOk());
  EXPECT_THAT(moved.replay(), StatusIs(Errc::graph_state));
  EXPECT_THAT(Graph{}.replay(), StatusIs(Errc::graph_state));
  EXPECT_EQ(Graph{}.report().node_count, 0u);
}

TEST_F(CaptureLifecycleTest, ReplayOnARecordingStreamIsRefused) {
  Buffer x = upload_u32({1});
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 1), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());

  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  EXPECT_THAT(graph->replay(), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("recording")));
  // Destroying a graph while a recording is open is deferred (its wait would invalidate it).
  ASSERT_THAT(graph->destroy(), IsOk());
  EXPECT_EQ(driver_capture_status(), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  Result<Graph> second = device_->end_capture(stream());
  ASSERT_THAT(second, IsOk());
  EXPECT_THAT(device_->sync(stream()), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray({1u}));
}

TEST_F(CaptureLifecycleTest, GraphOutlivingItsDeviceTurnsInert) {
  Buffer x = upload_u32({1});
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 1), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  Module module = module_;
  device_.reset();  // closes: destroys the executable, frees the memory
  EXPECT_THAT(graph->replay(), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("closed")));
  EXPECT_THAT(graph->destroy(), IsOk());
  EXPECT_THAT(module.kernel("add_one"), StatusIs(Errc::graph_state));
  EXPECT_FALSE(x.failure().has_value());
}

TEST_F(CaptureLifecycleTest, ClosingTheDeviceMidRecordingClosesTheDriverCapture) {
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  // Watch the driver's own view of the stream: the device is about to destroy it, so keep one of
  // ours beside it, capturing too, to tell "closed by the device" from "destroyed mid-capture".
  DriverApi& api = driver_->api();
  CUstream handle = stream().native_handle();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  ASSERT_EQ(api.cuStreamIsCapturing(handle, &status), CUDA_SUCCESS);
  ASSERT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  if (on_fake()) fake()->clear_calls();
  device_.reset();
  if (on_fake()) {
    // The capture was ended before its stream went: cuStreamEndCapture precedes cuStreamDestroy.
    std::vector<std::string> calls;
    for (const auto& call : fake()->calls()) calls.emplace_back(call.entry_point);
    const auto end = std::find(calls.begin(), calls.end(), "cuStreamEndCapture");
    const auto destroy = std::find(calls.begin(), calls.end(), "cuStreamDestroy");
    ASSERT_NE(end, calls.end()) << "the driver capture was never ended";
    EXPECT_LT(end - calls.begin(), destroy - calls.begin());
  }
  // On both drivers: this thread may make unsafe calls again (no capture is left open in GLOBAL
  // mode, which would refuse a fresh allocation with 900).
  Result<std::unique_ptr<Device>> again = Device::open(api);
  ASSERT_THAT(again, IsOk());
  Result<Buffer> fresh = (*again)->upload(to_bytes(std::vector<std::uint32_t>{7}), (*again)->stream());
  ASSERT_THAT(fresh, IsOk());
  Result<std::vector<std::byte>> back = (*again)->read(*fresh, (*again)->stream());
  ASSERT_THAT(back, IsOk());
  EXPECT_THAT(to_u32(*back), ElementsAreArray({7u}));
}

}  // namespace
}  // namespace graphcap::testing
