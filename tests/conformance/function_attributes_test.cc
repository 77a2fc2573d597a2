// Function attributes: dynamic shared memory above the 48 KiB default is opt-in per function
// (docs/cuda-driver-facts.md, "Dynamic shared memory"). graphcap's launches depend on it: a
// launch above the default enables the attribute first (Device::launch).
#include <cstdint>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

class FunctionAttributes : public ConformanceTest {
 protected:
  CUresult launch_empty(CUfunction f, CUstream s, unsigned shared_bytes) {
    return api().cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, shared_bytes, s, nullptr, nullptr);
  }
  int attribute(CUfunction f, CUfunction_attribute which) {
    int value = -12345;
    EXPECT_EQ(api().cuFuncGetAttribute(&value, which, f), CUDA_SUCCESS);
    return value;
  }
  int optin() {
    int value = 0;
    EXPECT_EQ(api().cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                         device()),
              CUDA_SUCCESS);
    return value;
  }
};

TEST_F(FunctionAttributes, DynamicSharedMemoryAboveTheDefaultIsOptInPerFunction) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  CUfunction add_one = kernel(module, "add_one");
  RawStream s = new_stream();
  // The default: 48 KiB (the kernel has no static shared memory).
  EXPECT_EQ(attribute(empty, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 0);
  EXPECT_EQ(attribute(empty, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 49152);
  EXPECT_EQ(launch_empty(empty, s.get(), 49152), CUDA_SUCCESS);
  EXPECT_EQ(launch_empty(empty, s.get(), 65536), CUDA_ERROR_INVALID_VALUE);
  // Raised to 64 KiB: launches up to it run, one byte more does not.
  EXPECT_EQ(api().cuFuncSetAttribute(empty, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536),
            CUDA_SUCCESS);
  EXPECT_EQ(attribute(empty, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 65536);
  EXPECT_EQ(launch_empty(empty, s.get(), 65536), CUDA_SUCCESS);
  EXPECT_EQ(launch_empty(empty, s.get(), 65537), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().cuStreamSynchronize(s.get()), CUDA_SUCCESS);
  // Per function: another kernel of the module keeps the default.
  EXPECT_EQ(attribute(add_one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 49152);
}

TEST_F(FunctionAttributes, TheOptInLimitIsTheDevicesAndNegativeValuesAreInvalid) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  const int limit = optin();
  EXPECT_EQ(limit, 232448) << "an H200's opt-in limit per block";
  EXPECT_EQ(api().cuFuncSetAttribute(empty, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, limit),
            CUDA_SUCCESS);
  EXPECT_EQ(launch_empty(empty, s.get(), static_cast<unsigned>(limit)), CUDA_SUCCESS);
  EXPECT_EQ(api().cuFuncSetAttribute(empty, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     limit + 1),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().cuFuncSetAttribute(empty, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, -1),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(attribute(empty, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), limit)
      << "a refused value leaves the attribute as it was";
  EXPECT_EQ(api().cuStreamSynchronize(s.get()), CUDA_SUCCESS);
}

TEST_F(FunctionAttributes, SettingAnAttributeDuringACaptureLeavesItActive) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuFuncSetAttribute(empty, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 98304),
            CUDA_SUCCESS);
  EXPECT_EQ(launch_empty(empty, s.get(), 98304), CUDA_SUCCESS);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUgraph raw = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(s.get(), &raw), CUDA_SUCCESS);
  RawGraph graph(api(), raw);
  Exec exec = instantiate(graph.get());
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s.get()), CUDA_SUCCESS);
}

}  // namespace
}  // namespace graphcap::testing
