// Facts file, "Allocations, copies, modules and launches" (device-to-device copies and 32-bit
// memsets): cuMemcpyDtoDAsync moves bytes between device allocations and, captured, is a MEMCPY
// node; cuMemsetD32Async writes 32-bit words and, captured, is a MEMSET node.
//
// Needs H200 confirmation (implemented in the fake as CUDA documents it, not yet measured):
//   DeviceCopies.OverlappingDeviceToDeviceRangesAreAccepted (CUDA: the areas "may not overlap",
//     no error named; the fake accepts the call and copies as memmove would; the bytes are not
//     asserted),
//   DeviceCopies.UnalignedMemsetD32IsInvalidValue (cuda.h: "The dstDevice pointer must be four
//     byte aligned"): measured on the H200 (2026-12-03): 1, and a capture stays active.
#include <cstdint>
#include <vector>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

using DeviceCopies = ConformanceTest;

TEST_F(DeviceCopies, DeviceToDeviceCopyMovesTheBytes) {
  DeviceMemory src = alloc(64 * sizeof(std::uint32_t));
  DeviceMemory dst = alloc(64 * sizeof(std::uint32_t));
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  upload(src.get(), iota(64, 100), s.get());
  upload(dst.get(), std::vector<std::uint32_t>(64, 0), s.get());
  // 16 words from word 8 of src to word 40 of dst.
  ASSERT_EQ(api().cuMemcpyDtoDAsync(dst.get() + 40 * 4, src.get() + 8 * 4, 16 * 4, s.get()),
            CUDA_SUCCESS);
  std::vector<std::uint32_t> expected(64, 0);
  for (std::uint32_t i = 0; i < 16; ++i) expected[40 + i] = 108 + i;
  EXPECT_THAT(download(dst.get(), 64, s.get()), ElementsAreArray(expected));
}

TEST_F(DeviceCopies, CapturedDeviceToDeviceCopyIsAMemcpyNodeThatCopiesOnLaunch) {
  DeviceMemory src = alloc(256);
  DeviceMemory dst = alloc(256);
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  upload(dst.get(), std::vector<std::uint32_t>(64, 0), s.get());
  RawGraph graph = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemcpyDtoDAsync(dst.get(), src.get(), 256, s.get()), CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(graph.get()), ElementsAre(CU_GRAPH_NODE_TYPE_MEMCPY));
  // Captured, not run: the source's bytes at launch time are the ones copied.
  upload(src.get(), iota(64, 7), s.get());
  Exec exec = instantiate(graph.get());
  ASSERT_EQ(api().cuGraphLaunch(exec.get(), s.get()), CUDA_SUCCESS);
  EXPECT_THAT(download(dst.get(), 64, s.get()), ElementsAreArray(iota(64, 7)));
}

TEST_F(DeviceCopies, MemsetD32WritesWords) {
  DeviceMemory buffer = alloc(64 * sizeof(std::uint32_t));
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  upload(buffer.get(), std::vector<std::uint32_t>(64, 0), s.get());
  ASSERT_EQ(api().cuMemsetD32Async(buffer.get() + 4 * 4, 0xdeadbeefu, 8, s.get()), CUDA_SUCCESS);
  std::vector<std::uint32_t> expected(64, 0);
  for (int i = 4; i < 12; ++i) expected[i] = 0xdeadbeefu;
  EXPECT_THAT(download(buffer.get(), 64, s.get()), ElementsAreArray(expected));
}

TEST_F(DeviceCopies, CapturedMemsetD32IsAMemsetNode) {
  DeviceMemory buffer = alloc(256);
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  RawGraph graph = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemsetD32Async(buffer.get(), 0x3f800000u, 64, s.get()), CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(graph.get()), ElementsAre(CU_GRAPH_NODE_TYPE_MEMSET));
  Exec exec = instantiate(graph.get());
  ASSERT_EQ(api().cuGraphLaunch(exec.get(), s.get()), CUDA_SUCCESS);
  EXPECT_THAT(download(buffer.get(), 64, s.get()), Each(0x3f800000u));
}

// Needs H200 confirmation.
TEST_F(DeviceCopies, OverlappingDeviceToDeviceRangesAreAccepted) {
  DeviceMemory buffer = alloc(256);
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  upload(buffer.get(), iota(64), s.get());
  EXPECT_EQ(api().cuMemcpyDtoDAsync(buffer.get() + 16, buffer.get(), 128, s.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s.get()), CUDA_SUCCESS);
}

// Needs H200 confirmation.
TEST_F(DeviceCopies, UnalignedMemsetD32IsInvalidValueAndLeavesACaptureActive) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  DeviceMemory buffer = alloc(256);
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(api().cuMemsetD32Async(buffer.get() + 2, 1u, 4, s.get()), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().cuStreamSynchronize(s.get()), CUDA_SUCCESS);
  // Captured, the refusal leaves the capture active (measured on the H200; a bad launch shape,
  // by contrast, invalidates it): what follows is captured and the capture ends with a graph.
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemsetD32Async(buffer.get() + 2, 1u, 4, s.get()), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(api().cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, s.get(), nullptr, nullptr),
            CUDA_SUCCESS);
  CUgraph raw = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(s.get(), &raw), CUDA_SUCCESS);
  ASSERT_NE(raw, nullptr);
  RawGraph graph(api(), raw);
}

}  // namespace
}  // namespace graphcap::testing
