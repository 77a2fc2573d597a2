// Simulated device memory and pinned host memory: allocation rules, address layout, copies and
// memsets (pinned vs pageable timing), the implicit synchronization of the synchronous frees, and
// the bounds and liveness checks that record violations.
#include <cstdint>
#include <algorithm>
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

class FakeMemory : public FakeDriverTest {
 public:
  explicit FakeMemory(FakeDriverOptions options = {}) : FakeDriverTest(options) {}
};
// Violations studied as records (the work runs on), not as faults of the stream.
class FakeMemoryRecordOnly : public FakeMemory {
 public:
  FakeMemoryRecordOnly() : FakeMemory(record_only()) {}
};

class FakeSmallMemory : public FakeDriverTest {
 protected:
  static FakeDriverOptions small() {
    FakeDriverOptions options;
    options.device_memory_bytes = 1 << 20;
    options.pinned_host_bytes = 4096;
    return options;
  }
  FakeSmallMemory() : FakeDriverTest(small()) {}
};

TEST_F(FakeMemory, ZeroDeviceBytesAndNullPointersAreInvalid) {
  CUdeviceptr pointer = 0;
  EXPECT_EQ(fake_.cuMemAlloc(&pointer, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuMemAlloc(nullptr, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuMemAllocAsync(&pointer, 0, stream_), CUDA_ERROR_INVALID_VALUE);
  void* host = reinterpret_cast<void*>(std::uintptr_t{1});
  EXPECT_EQ(fake_.cuMemAllocHost(&host, 0), CUDA_SUCCESS);  // as on the H200: nothing allocated
  EXPECT_EQ(host, nullptr);
  EXPECT_EQ(fake_.cuMemAllocHost(nullptr, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pointer, 0u);
}

TEST_F(FakeSmallMemory, AllocationsBeyondTheFreeMemoryFailAndMemGetInfoReportsIt) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  ASSERT_EQ(fake_.cuMemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(total_bytes, std::size_t{1} << 20);
  EXPECT_EQ(free_bytes, total_bytes);
  CUdeviceptr pointer = 0;
  EXPECT_EQ(fake_.cuMemAlloc(&pointer, total_bytes + 1), CUDA_ERROR_OUT_OF_MEMORY);
  const CUdeviceptr big = alloc(total_bytes - 100);
  ASSERT_EQ(fake_.cuMemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, 100u);
  EXPECT_EQ(fake_.cuMemAlloc(&pointer, 101), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(fake_.cuMemAllocAsync(&pointer, 101, stream_), CUDA_ERROR_OUT_OF_MEMORY);
  const CUdeviceptr rest = alloc(100);
  free(big);
  free(rest);
  ASSERT_EQ(fake_.cuMemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, total_bytes);
  EXPECT_EQ(fake_.cuMemGetInfo(nullptr, &total_bytes), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeSmallMemory, PinnedHostMemoryIsAlignedRealAndLimited) {
  void* first = nullptr;
  ASSERT_EQ(fake_.cuMemAllocHost(&first, 1000), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u);
  std::memset(first, 0xab, 1000);  // real memory (ASan would object otherwise)
  EXPECT_EQ(fake_.live_handles().host_allocations, 1u);
  void* second = nullptr;
  EXPECT_EQ(fake_.cuMemAllocHost(&second, 4096), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(fake_.cuMemAllocHost(&second, 3096), CUDA_SUCCESS);
  int stack = 0;
  EXPECT_EQ(fake_.cuMemFreeHost(&stack), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuMemFreeHost(first), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuMemFreeHost(first), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuMemFreeHost(second), CUDA_SUCCESS);
}

TEST_F(FakeMemory, AllocationsNeverOverlapAreGappedAndFreedRangesAreNotReused) {
  const CUdeviceptr a = alloc(1000);
  const CUdeviceptr b = alloc(1000);
  EXPECT_EQ(a % 256, 0u);
  EXPECT_EQ(b % 256, 0u);
  EXPECT_GT(b, a + 1000);  // a gap: an overrun of a does not land in b
  std::vector<std::byte> byte(1);
  EXPECT_FALSE(fake_.read_device(a + 1000, byte));
  free(a);
  const CUdeviceptr c = alloc(1000);
  EXPECT_NE(c, a);
  EXPECT_GT(c, b);
  EXPECT_FALSE(fake_.read_device(a, byte));  // freed stays freed
  free(b);
  free(c);
}

TEST_F(FakeMemory, FreeRejectsUnknownInteriorAndDoubleFrees) {
  const CUdeviceptr a = alloc(64);
  EXPECT_EQ(fake_.cuMemFree(a + 8), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuMemFree(0x1234), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.live_handles().device_allocations, baseline_.device_allocations + 1);
  free(a);
  EXPECT_EQ(fake_.cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuMemFree(0), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuMemFreeHost(nullptr), CUDA_SUCCESS);
}

TEST_F(FakeMemory, FreshMemoryReadsAsZeroAndCopiesRoundTrip) {
  const CUdeviceptr a = alloc(16);
  EXPECT_THAT(download(a, 4, stream_), Each(0u));
  upload(a, {1, 2, 3, 4}, stream_);
  EXPECT_THAT(download(a, 4, stream_), ElementsAre(1, 2, 3, 4));
  ASSERT_EQ(fake_.cuMemsetD8Async(a + 4, 0xff, 8, stream_), CUDA_SUCCESS);
  EXPECT_THAT(download(a, 4, stream_), ElementsAre(1, 0xffffffffu, 0xffffffffu, 4));
  free(a);
}

TEST_F(FakeMemory, PageableSourceIsReadAtCallTimePinnedSourceWhenTheCopyRuns) {
  const CUdeviceptr a = alloc(8);
  std::uint32_t pageable[2] = {1, 2};
  void* pinned = nullptr;
  ASSERT_EQ(fake_.cuMemAllocHost(&pinned, 8), CUDA_SUCCESS);
  auto* staged = static_cast<std::uint32_t*>(pinned);
  staged[0] = 10;
  staged[1] = 20;

  ASSERT_EQ(fake_.cuMemcpyHtoDAsync(a, pageable, 8, stream_), CUDA_SUCCESS);
  pageable[0] = 99;  // too late: the call staged it
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_THAT(peek(a, 2), ElementsAre(1, 2));

  ASSERT_EQ(fake_.cuMemcpyHtoDAsync(a, pinned, 8, stream_), CUDA_SUCCESS);
  staged[0] = 11;  // in time: the copy has not run
  EXPECT_THAT(peek(a, 2), ElementsAre(1, 2));
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_THAT(peek(a, 2), ElementsAre(11, 20));
  EXPECT_EQ(fake_.cuMemFreeHost(pinned), CUDA_SUCCESS);
  free(a);
}

TEST_F(FakeMemory, CopyIntoPageableMemoryIsSynchronousIntoPinnedMemoryQueued) {
  const CUdeviceptr a = alloc(8);
  ASSERT_EQ(fill(stream_, a, 7, 2), CUDA_SUCCESS);
  EXPECT_EQ(fake_.pending_operations(stream_), 1u);
  std::uint32_t pageable[2] = {};
  ASSERT_EQ(fake_.cuMemcpyDtoHAsync(pageable, a, 8, stream_), CUDA_SUCCESS);
  EXPECT_EQ(pageable[0], 7u);  // no synchronize needed: the queue ran up to the copy
  EXPECT_EQ(fake_.pending_operations(), 0u);

  ASSERT_EQ(fill(stream_, a, 8, 2), CUDA_SUCCESS);
  void* pinned = nullptr;
  ASSERT_EQ(fake_.cuMemAllocHost(&pinned, 8), CUDA_SUCCESS);
  std::memset(pinned, 0, 8);
  ASSERT_EQ(fake_.cuMemcpyDtoHAsync(pinned, a, 8, stream_), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<std::uint32_t*>(pinned)[0], 0u);  // not yet
  EXPECT_EQ(fake_.pending_operations(stream_), 2u);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<std::uint32_t*>(pinned)[1], 8u);
  EXPECT_EQ(fake_.cuMemFreeHost(pinned), CUDA_SUCCESS);
  free(a);
}

TEST_F(FakeMemory, SynchronousFreesSynchronizeTheDevice) {
  const CUdeviceptr a = alloc(64);
  const CUdeviceptr b = alloc(64);
  ASSERT_EQ(fill(stream_, a, 5, 16), CUDA_SUCCESS);
  EXPECT_EQ(fake_.pending_operations(), 1u);
  free(b);  // waits for the fill on another allocation too
  EXPECT_EQ(fake_.pending_operations(), 0u);
  EXPECT_THAT(peek(a, 16), Each(5u));
  ASSERT_EQ(fill(stream_, a, 6, 16), CUDA_SUCCESS);
  void* host = nullptr;
  ASSERT_EQ(fake_.cuMemAllocHost(&host, 8), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuMemFreeHost(host), CUDA_SUCCESS);
  EXPECT_EQ(fake_.pending_operations(), 0u);
  free(a);
}

TEST_F(FakeMemory, StreamOrderedAllocationsAreFreedInOrder) {
  CUdeviceptr a = 0;
  ASSERT_EQ(fake_.cuMemAllocAsync(&a, 64, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.live_handles().device_allocations, baseline_.device_allocations + 1);
  ASSERT_EQ(fill(stream_, a, 3, 16), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuMemFreeAsync(a, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.live_handles().device_allocations, baseline_.device_allocations);
  EXPECT_EQ(fake_.cuMemFreeAsync(a, stream_), CUDA_ERROR_INVALID_VALUE);  // freed for the host
  std::vector<std::byte> bytes(4);
  EXPECT_TRUE(fake_.read_device(a, bytes));  // the device has not freed it yet
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_FALSE(fake_.read_device(a, bytes));
  EXPECT_THAT(fake_.violations(), IsEmpty());  // the fill ran before the free
}

TEST_F(FakeMemory, ReadAndWriteDeviceAreChecked) {
  const CUdeviceptr a = alloc(8);
  const std::uint32_t in[2] = {4, 5};
  EXPECT_TRUE(fake_.write_device(a, std::as_bytes(std::span(in))));
  EXPECT_THAT(peek(a, 2), ElementsAre(4, 5));
  EXPECT_FALSE(fake_.write_device(a + 4, std::as_bytes(std::span(in))));  // past the end
  std::vector<std::byte> out(8);
  EXPECT_FALSE(fake_.read_device(0, out));
  free(a);
  EXPECT_FALSE(fake_.read_device(a, out));
  EXPECT_THAT(fake_.violations(), IsEmpty());  // test access records nothing
}

TEST_F(FakeMemoryRecordOnly, OutOfBoundsFreedAndForeignAccessesAreViolations) {
  expect_violations_ = true;
  const CUdeviceptr a = alloc(16);
  ASSERT_EQ(fake_.cuMemsetD8Async(a + 8, 1, 16, stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  auto violations = fake_.violations();
  ASSERT_THAT(violations, SizeIs(1));
  EXPECT_THAT(violations[0], ::testing::HasSubstr("cuMemsetD8Async"));
  EXPECT_THAT(violations[0], ::testing::HasSubstr("past the end"));
  EXPECT_THAT(peek(a, 4), Each(0u));  // nothing written

  fake_.clear_violations();
  std::uint32_t host[4] = {};
  ASSERT_EQ(fake_.cuMemcpyHtoDAsync(0x7fff00000000ULL, host, 16, stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_TRUE(
      mentions(fake_.violations(), "cuMemcpyHtoDAsync", "not inside any device allocation"));

  fake_.clear_violations();
  free(a);
  ASSERT_EQ(fill(stream_, a, 9, 4), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  violations = fake_.violations();
  ASSERT_THAT(violations, SizeIs(1));
  EXPECT_THAT(violations[0], ::testing::HasSubstr("kernel 'fill'"));
  EXPECT_THAT(violations[0], ::testing::HasSubstr("freed"));

  fake_.clear_violations();
  ASSERT_EQ(fake_.cuMemcpyDtoHAsync(host, a, 16, stream_), CUDA_SUCCESS);
  EXPECT_TRUE(mentions(fake_.violations(), "cuMemcpyDtoHAsync", "freed"));
}

TEST_F(FakeMemoryRecordOnly, UseAfterFreeBetweenCallAndExecutionIsCaught) {
  expect_violations_ = true;
  CUdeviceptr a = 0;
  ASSERT_EQ(fake_.cuMemAllocAsync(&a, 16, stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuMemFreeAsync(a, stream_), CUDA_SUCCESS);
  ASSERT_EQ(fill(stream_, a, 1, 4), CUDA_SUCCESS);  // ordered after the free
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_TRUE(mentions(fake_.violations(), "fill", "freed"));
}

}  // namespace
}  // namespace graphcap::fake::unit
