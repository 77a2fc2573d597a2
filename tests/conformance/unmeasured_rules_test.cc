// Rules the fake implements that the original H200 probes did not measure (docs/fake-driver.md
// marked them "not measured: a guess"). Each test asserts the fake's answer; run on the H200 in the
// gpu preset, a disagreement shows where the guess was wrong, and the fake is fixed to the GPU's
// answer. What the H200 answered is recorded in docs/cuda-driver-facts.md, tagged with its run.
// Only rules graphcap relies on, or a user of DriverApi would: sizes of zero, bad frees, launch
// limits, calls on an invalidated capture, copies to and from pageable memory.
#include <cstdint>
#include <cstring>
#include <vector>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

using UnmeasuredRules = KernelsTest;

TEST_F(UnmeasuredRules, ZeroSizedDeviceAllocationIsInvalidValueButPinnedHostSucceeds) {
  CUdeviceptr pointer = 0;
  EXPECT_EQ(api().cuMemAlloc(&pointer, 0), CUDA_ERROR_INVALID_VALUE);
  void* host = nullptr;
  EXPECT_EQ(api().cuMemAllocHost(&host, 0), CUDA_SUCCESS);  // the H200 said so
  EXPECT_EQ(api().cuMemFreeHost(host), CUDA_SUCCESS);
}

TEST_F(UnmeasuredRules, FreeingNullSucceedsAndFreeingTwiceIsInvalidValue) {
  EXPECT_EQ(api().cuMemFree(0), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemFreeHost(nullptr), CUDA_SUCCESS);
  DeviceMemory memory = alloc(4096);
  const CUdeviceptr address = memory.get();
  EXPECT_EQ(api().cuMemFree(address + 256), CUDA_ERROR_INVALID_VALUE) << "interior address";
  ASSERT_EQ(memory.reset(), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemFree(address), CUDA_ERROR_INVALID_VALUE) << "already freed";
}

TEST_F(UnmeasuredRules, LaunchShapesPastTheLimitsAreInvalidValue) {
  auto launch_shape = [&](unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                          unsigned bz, unsigned shared) {
    return api().cuLaunchKernel(empty_, gx, gy, gz, bx, by, bz, shared, s_.get(), nullptr, nullptr);
  };
  EXPECT_EQ(launch_shape(0, 1, 1, 32, 1, 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch_shape(1, 1, 1, 0, 1, 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch_shape(1, 1, 1, 1025, 1, 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch_shape(1, 1, 1, 32, 32, 2, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch_shape(1, 1, 1, 1, 1, 65, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch_shape(1, 65536, 1, 1, 1, 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch_shape(1, 1, 1, 32, 1, 1, 49152 + 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch_shape(1, 1, 1, 32, 1, 1, 49152), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
}

TEST_F(UnmeasuredRules, SameKernelNameGivesTheSameFunction) {
  RawModule module = load_test_kernels();
  EXPECT_EQ(kernel(module, "add_one"), kernel(module, "add_one"));
  EXPECT_NE(kernel(module, "add_one"), kernel(module, "fill"));
}

TEST_F(UnmeasuredRules, SyncOfAnInvalidatedCapturingStreamIsStillUnsupported) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamQuery(s_.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);  // invalidates
  // Once invalidated, still 900 (not 901): the H200 said so.
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(api().cuStreamQuery(s_.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  expect_invalidated(s_.get(), empty_);
}

TEST_F(UnmeasuredRules, CtxSynchronizeInvalidatesACaptureOnAnotherStream) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  expect_invalidated(s_.get(), empty_);
}

TEST_F(UnmeasuredRules, FreeHostDuringAGlobalCaptureIsUnsafe) {
  void* host = nullptr;
  ASSERT_EQ(api().cuMemAllocHost(&host, 4096), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  const CUresult freed = api().cuMemFreeHost(host);
  EXPECT_EQ(freed, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  expect_invalidated(s_.get(), empty_);
  if (freed != CUDA_SUCCESS) {
    EXPECT_EQ(api().cuMemFreeHost(host), CUDA_SUCCESS);
  }
}

TEST_F(UnmeasuredRules, UploadIntoACapturingStreamIsUnsupportedAndInvalidates) {
  RawStream other = new_stream();
  RawGraph graph = capture(other.get(), [&] {
    ASSERT_EQ(launch(empty_, other.get(), 1, 1), CUDA_SUCCESS);
  });
  Exec exec = instantiate(graph.get());
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuGraphUpload(exec.get(), s_.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  expect_invalidated(s_.get(), empty_);
}

TEST_F(UnmeasuredRules, ACapturedLaunchWithABadShapeInvalidatesTheCapture) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuLaunchKernel(empty_, 0, 1, 1, 32, 1, 1, 0, s_.get(), nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  expect_invalidated(s_.get(), empty_);
}

TEST_F(UnmeasuredRules, WaitingOnANeverRecordedEventAddsNothing) {
  RawEvent never = new_event();
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamWaitEvent(s_.get(), never.get(), 0), CUDA_SUCCESS);
  expect_still_active(s_.get(), 1);
}

TEST_F(UnmeasuredRules, TheGraphUnderConstructionCannotBeDestroyedAndInstantiatingItInvalidates) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph building = nullptr;
  ASSERT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, &id, &building, nullptr, nullptr,
                                         nullptr),
            CUDA_SUCCESS);
  ASSERT_NE(building, nullptr);
  std::size_t count = 0;
  EXPECT_EQ(api().cuGraphGetNodes(building, nullptr, &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(api().cuGraphDestroy(building), CUDA_ERROR_ILLEGAL_STATE);
  expect_still_active(s_.get(), 1);

  // Instantiating it is an unsafe call: 900, and the capture is invalidated (the H200).
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, &id, &building, nullptr, nullptr,
                                         nullptr),
            CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, building, 0),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  expect_invalidated(s_.get(), empty_);
}

TEST_F(UnmeasuredRules, GetNodesFillsAtMostTheArrayAndReportsTheRealCount) {
  RawGraph graph = capture(s_.get(), [&] {
    for (int i = 0; i < 3; ++i) ASSERT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
  });
  std::vector<CUgraphNode> nodes(5, reinterpret_cast<CUgraphNode>(std::uintptr_t{1}));
  std::size_t count = 2;
  ASSERT_EQ(api().cuGraphGetNodes(graph.get(), nodes.data(), &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2u) << "a smaller array: filled, and the count stays what was asked";
  EXPECT_NE(nodes[1], nullptr);
  EXPECT_EQ(nodes[2], reinterpret_cast<CUgraphNode>(std::uintptr_t{1})) << "nothing past it";
  count = 5;
  ASSERT_EQ(api().cuGraphGetNodes(graph.get(), nodes.data(), &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(nodes[3], nullptr);
  EXPECT_EQ(nodes[4], nullptr);
}

TEST_F(UnmeasuredRules, DestroyingAnExecutableWithAQueuedLaunchLetsItFinish) {
  DeviceMemory memory = alloc(1024 * sizeof(std::uint32_t));
  upload(memory.get(), std::vector<std::uint32_t>(1024, 0), s_.get());
  RawGraph graph = capture(s_.get(), [&] {
    ASSERT_EQ(launch(fill_, s_.get(), kGrid, kBlock, memory.get(), std::uint32_t{77},
                     std::uint32_t{1024}),
              CUDA_SUCCESS);
  });
  Exec exec = instantiate(graph.get());
  ASSERT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  ASSERT_EQ(exec.reset(), CUDA_SUCCESS);
  EXPECT_EQ(download(memory.get(), 1024, s_.get()), std::vector<std::uint32_t>(1024, 77));
}

TEST_F(UnmeasuredRules, PageableCopiesSnapshotOnTheWayInAndCompleteOnTheWayOut) {
  DeviceMemory memory = alloc(256 * sizeof(std::uint32_t));
  // In: the pageable source is staged when the call returns; changing it afterwards changes nothing.
  std::vector<std::uint32_t> source(256, 5);
  ASSERT_EQ(api().cuMemcpyHtoDAsync(memory.get(), source.data(), source.size() * 4, s_.get()),
            CUDA_SUCCESS);
  std::fill(source.begin(), source.end(), 9u);
  EXPECT_EQ(download(memory.get(), 256, s_.get()), std::vector<std::uint32_t>(256, 5));
  // Out: into pageable memory the copy is complete when the call returns, no sync needed.
  ASSERT_EQ(launch(fill_, s_.get(), kGrid, kBlock, memory.get(), std::uint32_t{3}, std::uint32_t{256}),
            CUDA_SUCCESS);
  std::vector<std::uint32_t> out(256, 0);
  ASSERT_EQ(api().cuMemcpyDtoHAsync(out.data(), memory.get(), out.size() * 4, s_.get()),
            CUDA_SUCCESS);
  EXPECT_EQ(out, std::vector<std::uint32_t>(256, 3));
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
}

TEST_F(UnmeasuredRules, DestroyingACapturingStreamLeavesNoCaptureBehind) {
  RawStream s = new_stream();
  CUstream handle = s.get();
  ASSERT_EQ(api().cuStreamBeginCapture(handle, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  const CUresult destroyed = api().cuStreamDestroy(handle);
  if (destroyed == CUDA_SUCCESS) {
    s.release();
  }
  EXPECT_EQ(destroyed, CUDA_SUCCESS);
  // A new capture elsewhere works: nothing global was left open.
  RawStream t = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(t.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(t.get(), &graph), CUDA_SUCCESS);
  if (graph != nullptr) {
    EXPECT_EQ(api().cuGraphDestroy(graph), CUDA_SUCCESS);
  }
}

}  // namespace
}  // namespace graphcap::testing
