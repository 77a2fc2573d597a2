// Every path of end_capture frees the intermediate CUgraph exactly once, and every Graph destroys
// its executable exactly once: counted by gMock over a MockDriver that delegates to the fake.
#include <cstdint>
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
using ::testing::Return;

class CaptureHandlesMockTest : public MockDeviceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(open());
    add_one_ = kernel("add_one");
    x_ = *device_->upload(to_bytes(iota_u32(16)), device_->stream());
  }

  Result<void> launch() {
    return device_->launch(device_->stream(), add_one_, dims_for(16),
                           {Arg::in(x_), Arg::out(x_), Arg::value(std::uint32_t{16})});
  }

  Result<Graph> capture(bool doom = false) {
    Stream& s = device_->stream();
    return device_->record(s, [&] {
      EXPECT_THAT(launch(), IsOk());
      if (doom && s.capture_state() == CaptureState::capture) {
        EXPECT_FALSE(device_->alloc(4321, s).has_value());
      }
    });
  }

  Kernel add_one_;
  Buffer x_;
};

TEST_F(CaptureHandlesMockTest, SuccessfulCaptureDestroysTheIntermediateGraphOnce) {
  EXPECT_CALL(mock_, cuGraphDestroy(_)).Times(1);
  EXPECT_CALL(mock_, cuGraphExecDestroy(_)).Times(1);
  Result<Graph> graph = capture();
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  ASSERT_THAT(graph->destroy(), IsOk());
  ASSERT_THAT(graph->destroy(), IsOk());
}

TEST_F(CaptureHandlesMockTest, DoomedCaptureDestroysTheIntermediateGraphOnce) {
  EXPECT_CALL(mock_, cuGraphDestroy(_)).Times(1);
  EXPECT_CALL(mock_, cuGraphInstantiateWithParams(_, _, _)).Times(0);
  EXPECT_CALL(mock_, cuGraphExecDestroy(_)).Times(0);
  EXPECT_THAT(capture(/*doom=*/true), StatusIs(Errc::doomed));
}

TEST_F(CaptureHandlesMockTest, InstantiateFailureDestroysTheIntermediateGraphOnce) {
  EXPECT_CALL(mock_, cuGraphDestroy(_)).Times(1);
  EXPECT_CALL(mock_, cuGraphInstantiateWithParams(_, _, _))
      .WillOnce(Return(CUDA_ERROR_INVALID_VALUE));
  EXPECT_CALL(mock_, cuGraphExecDestroy(_)).Times(0);
  EXPECT_THAT(capture(), StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE));
}

TEST_F(CaptureHandlesMockTest, NodeListingFailureDestroysTheIntermediateGraphOnce) {
  EXPECT_CALL(mock_, cuGraphDestroy(_)).Times(1);
  EXPECT_CALL(mock_, cuGraphGetNodes(_, _, _)).WillOnce(Return(CUDA_ERROR_INVALID_HANDLE));
  EXPECT_CALL(mock_, cuGraphInstantiateWithParams(_, _, _)).Times(0);
  EXPECT_THAT(capture(), StatusIs(Errc::driver, CUDA_ERROR_INVALID_HANDLE,
                                  ::testing::HasSubstr("cuGraphGetNodes")));
}

TEST_F(CaptureHandlesMockTest, MemoryNodeRefusalDestroysTheIntermediateGraphOnce) {
  EXPECT_CALL(mock_, cuGraphDestroy(_)).Times(1);
  EXPECT_CALL(mock_, cuGraphInstantiateWithParams(_, _, _)).Times(0);
  Stream& s = device_->stream();
  ASSERT_THAT(device_->prepare_capture(s), IsOk());
  ASSERT_THAT(device_->begin_capture(s), IsOk());
  CUdeviceptr rogue = 0;
  ASSERT_EQ(mock_.cuMemAllocAsync(&rogue, 256, s.native_handle()), CUDA_SUCCESS);
  ASSERT_EQ(mock_.cuMemFreeAsync(rogue, s.native_handle()), CUDA_SUCCESS);
  EXPECT_THAT(device_->end_capture(s), StatusIs(Errc::graph_state));
}

TEST_F(CaptureHandlesMockTest, FailedEndCaptureHasNoGraphToDestroy) {
  EXPECT_CALL(mock_, cuGraphDestroy(_)).Times(0);
  EXPECT_CALL(mock_, cuStreamEndCapture(_, _))
      .WillOnce([this](CUstream stream, CUgraph* graph) {
        // The real failure's effect: the capture ends, no graph comes back.
        CUresult ended = mock_.fake().cuStreamEndCapture(stream, graph);
        if (*graph != nullptr) mock_.fake().cuGraphDestroy(*graph);
        *graph = nullptr;
        (void)ended;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
      });
  EXPECT_THAT(capture(), StatusIs(Errc::driver, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                                  ::testing::HasSubstr("cuStreamEndCapture")));
  EXPECT_EQ(device_->stream().capture_state(), CaptureState::no_capture);
}

TEST_F(CaptureHandlesMockTest, OwnRecordingIsCheckedWithoutQueryingEachNode) {
  // Every node is one graphcap recorded (the count matches): no per-node type query.
  EXPECT_CALL(mock_, cuGraphNodeGetType(_, _)).Times(0);
  Result<Graph> graph = capture();
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().node_count, 1u);
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_KERNEL), 1u);
}

TEST_F(CaptureHandlesMockTest, ForeignNodesAreTypedOneByOne) {
  // A kernel launched on the capturing stream around graphcap: the counts differ, so each node's
  // type is read (and the report shows what the graph really holds).
  EXPECT_CALL(mock_, cuGraphNodeGetType(_, _)).Times(2);
  Stream& s = device_->stream();
  ASSERT_THAT(device_->prepare_capture(s), IsOk());
  ASSERT_THAT(device_->begin_capture(s), IsOk());
  ASSERT_THAT(launch(), IsOk());
  CUdeviceptr pointer = x_.native_handle();
  std::uint32_t n = 16;
  void* params[] = {&pointer, &pointer, &n};
  ASSERT_EQ(mock_.cuLaunchKernel(add_one_.native_handle(), 1, 1, 1, 32, 1, 1, 0,
                                 s.native_handle(), params, nullptr),
            CUDA_SUCCESS);
  Result<Graph> graph = device_->end_capture(s);
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().node_count, 2u);
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_KERNEL), 2u);
}

TEST_F(CaptureHandlesMockTest, EveryGraphDestroysItsExecutableOnce) {
  EXPECT_CALL(mock_, cuGraphExecDestroy(_)).Times(3);
  {
    Result<Graph> a = capture();
    Result<Graph> b = capture();
    Result<Graph> c = capture();
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    ASSERT_THAT(c, IsOk());
    Graph moved = std::move(*a);
    ASSERT_THAT(moved.replay(), IsOk());
    ASSERT_THAT(b->destroy(), IsOk());
  }  // a (moved), c: destroyed by their destructors; b already destroyed
}

TEST_F(CaptureHandlesMockTest, ClosingTheDeviceDestroysLiveExecutablesOnce) {
  EXPECT_CALL(mock_, cuGraphExecDestroy(_)).Times(1);
  Result<Graph> graph = capture();
  ASSERT_THAT(graph, IsOk());
  device_.reset();
  EXPECT_THAT(graph->destroy(), IsOk());  // the device already released it: no second destroy
}

}  // namespace
}  // namespace graphcap::testing
