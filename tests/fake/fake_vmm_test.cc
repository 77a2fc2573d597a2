// The fake's virtual memory management beyond what the conformance suite checks on both drivers:
// what an access to a reserved range's unmapped or inaccessible part is (a violation naming the
// range; the H200 faults with CUDA_ERROR_ILLEGAL_ADDRESS for both, which kills its context,
// so the conformance suite can't ask it), the handles it counts, what a context's destruction
// reclaims, a device without VMM, and the memory the driver holds for executables.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/driver/executable_memory.h>

#include "fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

constexpr std::size_t kG = std::size_t{2} << 20;

CUmemAllocationProp device_property() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

class FakeVmm : public FakeDriverTest {
 protected:
  explicit FakeVmm(FakeDriverOptions options = {}) : FakeDriverTest(options) {}
  CUresult set_access(CUdeviceptr at, std::size_t size) {
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = 0;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return fake_.cuMemSetAccess(at, size, &desc, 1);
  }
  CUmemGenericAllocationHandle create(std::size_t size) {
    const CUmemAllocationProp prop = device_property();
    CUmemGenericAllocationHandle handle = 0;
    EXPECT_EQ(fake_.cuMemCreate(&handle, size, &prop, 0), CUDA_SUCCESS);
    return handle;
  }
  CUdeviceptr reserve(std::size_t size) {
    CUdeviceptr base = 0;
    EXPECT_EQ(fake_.cuMemAddressReserve(&base, size, 0, 0, 0), CUDA_SUCCESS);
    return base;
  }
};

// Violations studied one after another: recorded only (strict, the first is sticky, as on the
// H200).
class FakeVmmRecordOnly : public FakeVmm {
 protected:
  FakeVmmRecordOnly() : FakeVmm(record_only()) {}
};

TEST_F(FakeVmm, AWriteToAMappingWithoutAccessFailsTheStreamsSyncWithIllegalAddress) {
  expect_violations_ = true;
  expect_fault_ = true;  // sticky: the context is done (the handles go with the fake)
  const CUdeviceptr va = reserve(4 * kG);
  const CUmemGenericAllocationHandle handle = create(kG);
  ASSERT_EQ(fake_.cuMemMap(va, kG, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(fill(stream_, va, 1, 64), CUDA_SUCCESS);  // the launch itself is accepted
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_TRUE(mentions(fake_.violations(), "cuMemSetAccess has not made accessible"));
}

TEST_F(FakeVmmRecordOnly, AnAccessWhereNothingAccessibleIsMappedIsAViolationNamingTheRange) {
  expect_violations_ = true;
  const CUdeviceptr va = reserve(4 * kG);
  const CUmemGenericAllocationHandle handle = create(kG);
  ASSERT_EQ(fake_.cuMemMap(va, kG, 0, handle, 0), CUDA_SUCCESS);
  // Mapped, but no access set yet.
  ASSERT_EQ(fill(stream_, va, 1, 64), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_TRUE(mentions(fake_.violations(), "cuMemSetAccess has not made accessible"));
  fake_.clear_violations();
  ASSERT_EQ(set_access(va, kG), CUDA_SUCCESS);
  ASSERT_EQ(fill(stream_, va, 1, 64), CUDA_SUCCESS);
  EXPECT_THAT(download(va, 64, stream_), Each(1u));
  EXPECT_THAT(fake_.violations(), ::testing::IsEmpty());
  // Reserved but unmapped, and a range running on from the mapping into it.
  ASSERT_EQ(fill(stream_, va + 2 * kG, 1, 64), CUDA_SUCCESS);
  ASSERT_EQ(fill(stream_, va + kG - 128, 1, 64), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_TRUE(mentions(fake_.violations(), "reserved by cuMemAddressReserve"));
  // (The kernel's accesses are checked one by one: the first past the end is 4 bytes.)
  EXPECT_TRUE(mentions(fake_.violations(), "runs 4 bytes past the end of mapping"))
      << ::testing::PrintToString(fake_.violations());
  // Unmapping does not wait for queued work: the fill queued before it finds nothing there.
  fake_.clear_violations();
  fake_.set_device_paused(true);
  ASSERT_EQ(fill(stream_, va, 2, 64), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuMemUnmap(va, kG), CUDA_SUCCESS);
  fake_.set_device_paused(false);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_TRUE(mentions(fake_.violations(), "reserved by cuMemAddressReserve"));
  ASSERT_EQ(fake_.cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuMemAddressFree(va, 4 * kG), CUDA_SUCCESS);
}

TEST_F(FakeVmm, RangesHandlesAndMappingsAreLiveHandlesUntilReleased) {
  const CUdeviceptr va = reserve(2 * kG);
  const CUmemGenericAllocationHandle handle = create(kG);
  ASSERT_EQ(fake_.cuMemMap(va, kG, 0, handle, 0), CUDA_SUCCESS);
  LiveHandles live = fake_.live_handles();
  EXPECT_EQ(live.address_ranges, baseline_.address_ranges + 1);
  EXPECT_EQ(live.memory_handles, baseline_.memory_handles + 1);
  EXPECT_EQ(live.mappings, baseline_.mappings + 1);
  ASSERT_EQ(fake_.cuMemRelease(handle), CUDA_SUCCESS);
  live = fake_.live_handles();
  EXPECT_EQ(live.memory_handles, baseline_.memory_handles) << "released: no longer a handle";
  EXPECT_EQ(live.mappings, baseline_.mappings + 1) << "its mapping holds the memory";
  ASSERT_EQ(fake_.cuMemUnmap(va, kG), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuMemAddressFree(va, 2 * kG), CUDA_SUCCESS);
}

TEST(FakeVmmContext, DestroyingThePrimaryContextReclaimsRangesHandlesAndMappings) {
  FakeDriver fake;
  ASSERT_EQ(fake.cuInit(0), CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuCtxSetCurrent(context), CUDA_SUCCESS);
  std::size_t free_before = 0, total = 0;
  ASSERT_EQ(fake.cuMemGetInfo(&free_before, &total), CUDA_SUCCESS);
  CUdeviceptr va = 0;
  ASSERT_EQ(fake.cuMemAddressReserve(&va, 2 * kG, 0, 0, 0), CUDA_SUCCESS);
  const CUmemAllocationProp prop = device_property();
  CUmemGenericAllocationHandle mapped = 0, unmapped = 0;
  ASSERT_EQ(fake.cuMemCreate(&mapped, kG, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuMemCreate(&unmapped, kG, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuMemMap(va, kG, 0, mapped, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  EXPECT_EQ(fake.reclaimed_handles(), 4u) << "the range, two handles and the mapping";
  EXPECT_EQ(fake.live_handles().total(), 0u);
  ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuCtxSetCurrent(context), CUDA_SUCCESS);
  std::size_t free_after = 0;
  ASSERT_EQ(fake.cuMemGetInfo(&free_after, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_after, free_before);
  ASSERT_EQ(fake.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
}

class FakeWithoutVmm : public FakeDriverTest {
 protected:
  static FakeDriverOptions without() {
    FakeDriverOptions options;
    options.virtual_memory = false;
    return options;
  }
  FakeWithoutVmm() : FakeDriverTest(without()) {}
};

TEST_F(FakeWithoutVmm, TheAttributeIsZeroAndCreateAndGranularityAreNotSupported) {
  int supported = -1;
  ASSERT_EQ(fake_.cuDeviceGetAttribute(&supported,
                                       CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(supported, 0);
  const CUmemAllocationProp prop = device_property();
  std::size_t granularity = 0;
  EXPECT_EQ(fake_.cuMemGetAllocationGranularity(&granularity, &prop,
                                                CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_NOT_SUPPORTED);
  CUmemGenericAllocationHandle handle = 0;
  EXPECT_EQ(fake_.cuMemCreate(&handle, kG, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
}

// docs/cuda-driver-facts.md, "Device memory the driver holds per executable": what the driver
// takes shows in cuMemGetInfo and in executable_memory(), in chunks, and is kept after destroy.
TEST_F(FakeVmm, ExecutablesTakeTheModelsBytesInChunksThatAreKept) {
  std::size_t free_before = 0, total = 0;
  ASSERT_EQ(fake_.cuMemGetInfo(&free_before, &total), CUDA_SUCCESS);
  EXPECT_EQ(fake_.executable_memory(), 0u);
  const CUgraph graph = capture(stream_, [&] { ASSERT_EQ(empty(stream_), CUDA_SUCCESS); });
  std::vector<CUgraphExec> execs;
  for (int i = 0; i < 19; ++i) execs.push_back(instantiate(graph));  // 19 x 112 KiB: 2 chunks
  EXPECT_EQ(executable_driver_bytes({1, 0, 0}), std::size_t{112} << 10);
  EXPECT_EQ(fake_.executable_memory(), 2 * kDriverMemoryChunk);
  std::size_t free_now = 0;
  ASSERT_EQ(fake_.cuMemGetInfo(&free_now, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_before - free_now, 2 * kDriverMemoryChunk);
  for (CUgraphExec exec : execs) ASSERT_EQ(fake_.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(fake_.executable_memory(), 2 * kDriverMemoryChunk) << "kept after destroy";
  const CUgraphExec again = instantiate(graph);
  EXPECT_EQ(fake_.executable_memory(), 2 * kDriverMemoryChunk) << "reused";
  ASSERT_EQ(fake_.cuGraphExecDestroy(again), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
}

}  // namespace
}  // namespace graphcap::fake::unit
