// MockDriver: every DriverApi method delegates to the owned FakeDriver by default, so expectations
// can be set on just the calls a test cares about, and overridden to inject behaviour.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/mock_driver.h>

#include "kernels/test_kernels.h"

namespace graphcap::fake::unit {
namespace {

using ::testing::_;
using ::testing::NiceMock;
using ::testing::Return;

// Capture one memset and instantiate it, through the DriverApi interface only.
void capture_and_instantiate(DriverApi& api, CUstream stream, CUdeviceptr buffer, CUgraph* graph,
                             CUgraphExec* exec) {
  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD8Async(buffer, 7, 16, stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamEndCapture(stream, graph), CUDA_SUCCESS);
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(exec, *graph, 0), CUDA_SUCCESS);
}

class MockDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DriverApi& api = mock_;
    ASSERT_EQ(api.cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuCtxSetCurrent(context_), CUDA_SUCCESS);
    ASSERT_EQ(api.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(api.cuMemAlloc(&buffer_, 16), CUDA_SUCCESS);
  }
  void TearDown() override {
    DriverApi& api = mock_;
    EXPECT_EQ(api.cuMemFree(buffer_), CUDA_SUCCESS);
    EXPECT_EQ(api.cuStreamDestroy(stream_), CUDA_SUCCESS);
    EXPECT_EQ(api.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    EXPECT_EQ(mock_.fake().live_handles().total(), 0u);
    EXPECT_EQ(mock_.fake().reclaimed_handles(), 0u);
  }
  NiceMock<MockDriver> mock_;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUdeviceptr buffer_ = 0;
};

TEST_F(MockDriverTest, DelegatesEveryCallToTheFake) {
  DriverApi& api = mock_;
  EXPECT_STREQ(api.name(), "fake");
  EXPECT_CALL(mock_, cuGraphDestroy(_)).Times(1);
  EXPECT_CALL(mock_, cuGraphExecDestroy(_)).Times(1);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  capture_and_instantiate(api, stream_, buffer_, &graph, &exec);
  EXPECT_EQ(mock_.fake().live_handles().graphs, 1u);
  EXPECT_EQ(api.cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  std::uint8_t bytes[16] = {};
  EXPECT_TRUE(mock_.fake().read_device(buffer_, std::as_writable_bytes(std::span(bytes))));
  EXPECT_THAT(bytes, ::testing::Each(7));
  EXPECT_EQ(api.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(api.cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(mock_.fake().call_count("cuGraphDestroy"), 1u);  // it reached the fake
  EXPECT_EQ(mock_.fake().live_handles().graphs, 0u);
}

TEST_F(MockDriverTest, AnExpectationCanOverrideTheFake) {
  DriverApi& api = mock_;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  capture_and_instantiate(api, stream_, buffer_, &graph, &exec);
  EXPECT_CALL(mock_, cuGraphLaunch(exec, stream_))
      .WillOnce(Return(CUDA_ERROR_LAUNCH_FAILED))
      .WillRepeatedly(
          [this](CUgraphExec e, CUstream s) { return mock_.fake().cuGraphLaunch(e, s); });
  EXPECT_EQ(api.cuGraphLaunch(exec, stream_), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(mock_.fake().call_count("cuGraphLaunch"), 0u);  // the fake never saw it
  EXPECT_EQ(api.cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(api.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(api.cuGraphDestroy(graph), CUDA_SUCCESS);
}

TEST_F(MockDriverTest, KernelsRegisteredOnTheFakeLaunchThroughTheMock) {
  graphcap::testing::register_test_kernels(mock_.fake());
  DriverApi& api = mock_;
  const auto image = mock_.fake().module_image({"fill"});
  CUmodule module = nullptr;
  ASSERT_EQ(api.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  CUfunction fill = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&fill, module, "fill"), CUDA_SUCCESS);
  CUdeviceptr buffer = 0;
  ASSERT_EQ(api.cuMemAlloc(&buffer, 16), CUDA_SUCCESS);
  std::uint32_t value = 4;
  std::uint32_t n = 4;
  void* params[] = {&buffer, &value, &n};
  EXPECT_CALL(mock_, cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, stream_, _, nullptr)).Times(1);
  ASSERT_EQ(api.cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, stream_, params, nullptr), CUDA_SUCCESS);
  std::uint32_t out[4] = {};
  ASSERT_EQ(api.cuMemcpyDtoHAsync(out, buffer, sizeof out, stream_), CUDA_SUCCESS);
  EXPECT_THAT(out, ::testing::Each(4u));
  EXPECT_EQ(api.cuMemFree(buffer), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleUnload(module), CUDA_SUCCESS);
}

}  // namespace
}  // namespace graphcap::fake::unit
