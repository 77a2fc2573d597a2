// The fake's initialization, devices and primary contexts: cuInit first, H200 attributes, the
// per-thread current context, reference counting, and what releasing the last reference reclaims.
#include <cstring>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

TEST(FakeInit, EverythingButVersionAndErrorNamesNeedsCuInit) {
  FakeDriver fake;
  int value = 0;
  EXPECT_EQ(fake.cuDeviceGetCount(&value), CUDA_ERROR_NOT_INITIALIZED);
  CUdevice device = -1;
  EXPECT_EQ(fake.cuDeviceGet(&device, 0), CUDA_ERROR_NOT_INITIALIZED);
  CUcontext context = nullptr;
  EXPECT_EQ(fake.cuDevicePrimaryCtxRetain(&context, 0), CUDA_ERROR_NOT_INITIALIZED);
  CUdeviceptr pointer = 0;
  EXPECT_EQ(fake.cuMemAlloc(&pointer, 16), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(fake.cuDriverGetVersion(&value), CUDA_SUCCESS);
  EXPECT_EQ(value, 13000);
  const char* name = nullptr;
  EXPECT_EQ(fake.cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_INVALID_VALUE");

  EXPECT_EQ(fake.cuInit(1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(fake.cuDeviceGetCount(&value), CUDA_SUCCESS);
  EXPECT_EQ(value, 1);
}

TEST(FakeInit, OptionsSetDevicesAndVersion) {
  FakeDriverOptions options;
  options.device_count = 2;
  options.driver_version = 12040;
  FakeDriver fake(options);
  ASSERT_EQ(fake.cuInit(0), CUDA_SUCCESS);
  int value = 0;
  EXPECT_EQ(fake.cuDeviceGetCount(&value), CUDA_SUCCESS);
  EXPECT_EQ(value, 2);
  EXPECT_EQ(fake.cuDriverGetVersion(&value), CUDA_SUCCESS);
  EXPECT_EQ(value, 12040);
  CUdevice device = -1;
  EXPECT_EQ(fake.cuDeviceGet(&device, 1), CUDA_SUCCESS);
  EXPECT_EQ(device, 1);
  EXPECT_EQ(fake.cuDeviceGet(&device, 2), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(fake.cuDeviceGet(&device, -1), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(fake.cuDeviceGet(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST(FakeDevice, ReportsTheH200sLimitsAndAName) {
  FakeDriver fake;
  ASSERT_EQ(fake.cuInit(0), CUDA_SUCCESS);
  const std::pair<CUdevice_attribute, int> expected[] = {
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
  };
  for (const auto& [attribute, value] : expected) {
    int got = -1;
    EXPECT_EQ(fake.cuDeviceGetAttribute(&got, attribute, 0), CUDA_SUCCESS) << attribute;
    EXPECT_EQ(got, value) << attribute;
  }
  int got = -1;
  EXPECT_EQ(fake.cuDeviceGetAttribute(&got, static_cast<CUdevice_attribute>(100000), 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.cuDeviceGetAttribute(&got, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1),
            CUDA_ERROR_INVALID_DEVICE);

  char name[64] = {};
  EXPECT_EQ(fake.cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
  EXPECT_STREQ(name, "graphcap fake device");
  char small[5] = {'x', 'x', 'x', 'x', 'x'};
  EXPECT_EQ(fake.cuDeviceGetName(small, sizeof small, 0), CUDA_SUCCESS);
  EXPECT_STREQ(small, "grap");  // truncated, always NUL-terminated
  EXPECT_EQ(fake.cuDeviceGetName(nullptr, 10, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.cuDeviceGetName(name, 0, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST(FakeContext, CallsNeedACurrentContextOnTheCallingThread) {
  FakeDriver fake;
  ASSERT_EQ(fake.cuInit(0), CUDA_SUCCESS);
  CUstream stream = nullptr;
  EXPECT_EQ(fake.cuStreamCreate(&stream, 0), CUDA_ERROR_INVALID_CONTEXT);
  CUdeviceptr pointer = 0;
  EXPECT_EQ(fake.cuMemAlloc(&pointer, 16), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(fake.cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);

  CUcontext context = nullptr;
  ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
  ASSERT_NE(context, nullptr);
  // Retained is not current.
  EXPECT_EQ(fake.cuMemAlloc(&pointer, 16), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(fake.cuCtxSetCurrent(context), CUDA_SUCCESS);
  CUcontext current = nullptr;
  EXPECT_EQ(fake.cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, context);
  ASSERT_EQ(fake.cuMemAlloc(&pointer, 16), CUDA_SUCCESS);

  // Another thread starts with no current context.
  std::thread other([&] {
    CUcontext seen = context;
    EXPECT_EQ(fake.cuCtxGetCurrent(&seen), CUDA_SUCCESS);
    EXPECT_EQ(seen, nullptr);
    CUdeviceptr mine = 0;
    EXPECT_EQ(fake.cuMemAlloc(&mine, 16), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(fake.cuCtxSetCurrent(context), CUDA_SUCCESS);
    EXPECT_EQ(fake.cuMemAlloc(&mine, 16), CUDA_SUCCESS);
    EXPECT_EQ(fake.cuMemFree(mine), CUDA_SUCCESS);
  });
  other.join();

  EXPECT_EQ(fake.cuMemFree(pointer), CUDA_SUCCESS);
  EXPECT_EQ(fake.cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fake.cuMemAlloc(&pointer, 16), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(fake.cuCtxSetCurrent(reinterpret_cast<CUcontext>(std::uintptr_t{0x1234})),
            CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(fake.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  EXPECT_EQ(fake.reclaimed_handles(), 0u);
}

TEST(FakeContext, PrimaryContextIsReferenceCounted) {
  FakeDriver fake;
  ASSERT_EQ(fake.cuInit(0), CUDA_SUCCESS);
  CUcontext first = nullptr;
  CUcontext second = nullptr;
  ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&first, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&second, 0), CUDA_SUCCESS);
  EXPECT_EQ(first, second);  // one primary context per device
  EXPECT_EQ(fake.live_handles().contexts, 2u);
  ASSERT_EQ(fake.cuCtxSetCurrent(first), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(fake.cuStreamCreate(&stream, 0), CUDA_SUCCESS);

  EXPECT_EQ(fake.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  EXPECT_EQ(fake.live_handles().contexts, 1u);
  EXPECT_EQ(fake.live_handles().streams, 1u);  // still alive: one reference remains
  EXPECT_EQ(fake.cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(fake.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  EXPECT_EQ(fake.live_handles().contexts, 0u);
  EXPECT_EQ(fake.cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(fake.cuDevicePrimaryCtxRelease(3), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(fake.reclaimed_handles(), 0u);
}

TEST(FakeContext, LastReleaseReclaimsEveryLiveHandleAndCountsIt) {
  FakeDriver fake;
  graphcap::testing::register_test_kernels(fake);
  ASSERT_EQ(fake.cuInit(0), CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuCtxSetCurrent(context), CUDA_SUCCESS);

  CUstream stream = nullptr;
  CUevent event = nullptr;
  CUdeviceptr device = 0;
  void* host = nullptr;
  CUmodule module = nullptr;
  const auto image = fake.module_image({"fill"});
  ASSERT_EQ(fake.cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuEventCreate(&event, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuMemAlloc(&device, 64), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuMemAllocHost(&host, 64), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(fake.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuMemsetD8Async(device, 1, 64, stream), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(fake.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuGraphLaunch(exec, stream), CUDA_SUCCESS);

  const LiveHandles live = fake.live_handles();
  EXPECT_EQ(live.total() - live.contexts, 7u);
  ASSERT_EQ(fake.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  EXPECT_EQ(fake.reclaimed_handles(), 7u);
  EXPECT_EQ(fake.live_handles().total(), 0u);
  EXPECT_THAT(fake.violations(), ::testing::IsEmpty());  // the queued launch ran first
  EXPECT_EQ(fake.pending_operations(), 0u);

  // The thread's current context is destroyed now.
  CUdeviceptr again = 0;
  EXPECT_EQ(fake.cuMemAlloc(&again, 16), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  // A reclaimed handle is gone.
  ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
  EXPECT_EQ(fake.cuStreamDestroy(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fake.cuGraphExecDestroy(exec), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fake.cuMemFree(device), CUDA_ERROR_INVALID_VALUE);
  // The NULL stream still works in the new context.
  EXPECT_EQ(fake.cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  EXPECT_EQ(fake.reclaimed_handles(), 7u);
}

}  // namespace
}  // namespace graphcap::fake::unit
