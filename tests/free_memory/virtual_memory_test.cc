// Facts file, "Virtual memory management": the H200's answers to the VMM calls a
// graph pool makes (docs/measurements/probes/vmm_probe.cu measured each): the attribute and the
// 2 MiB granularity; reserve sizes, alignments and limits; physical memory taken at create and
// given back at the release of its last reference; whole handles mapped at offset 0 only, access
// and unmap over whole mappings; one range mapped from several allocations works across the seam
// for kernels and copies, and growing or shrinking it at the end leaves earlier graphs replaying
// correctly; every VMM call is allowed inside a capture in every mode.
#include <cstdint>
#include <thread>
#include <vector>

#include "conformance/conformance_fixture.h"

namespace graphcap::testing {
namespace {

constexpr std::size_t kG = 2 * kMiB;  // the granularity the H200 reported

// Own a reserved range and a physical allocation; a test unmaps what it mapped before they go.
class Reservation {
 public:
  Reservation(DriverApi& api, std::size_t size, std::size_t alignment = 0)
      : api_(&api), size_(size) {
    result_ = api.cuMemAddressReserve(&base_, size, alignment, 0, 0);
  }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation() {
    if (result_ == CUDA_SUCCESS && base_ != 0) {
      EXPECT_EQ(api_->cuMemAddressFree(base_, size_), CUDA_SUCCESS);
    }
  }
  CUresult result() const { return result_; }
  CUdeviceptr base() const { return base_; }

 private:
  DriverApi* api_;
  std::size_t size_;
  CUdeviceptr base_ = 0;
  CUresult result_;
};

class Physical {
 public:
  Physical(DriverApi& api, std::size_t size, int device) : api_(&api) {
    CUmemAllocationProp prop = property(device);
    result_ = api.cuMemCreate(&handle_, size, &prop, 0);
  }
  Physical(const Physical&) = delete;
  Physical& operator=(const Physical&) = delete;
  ~Physical() { reset(); }
  CUresult reset() {
    if (result_ != CUDA_SUCCESS || handle_ == 0) return CUDA_SUCCESS;
    return api_->cuMemRelease(std::exchange(handle_, 0));
  }
  CUresult result() const { return result_; }
  CUmemGenericAllocationHandle get() const { return handle_; }

  static CUmemAllocationProp property(int device) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
  }

 private:
  DriverApi* api_;
  CUmemGenericAllocationHandle handle_ = 0;
  CUresult result_;
};

class VirtualMemory : public KernelsTest {
 protected:
  void SetUp() override {
    KernelsTest::SetUp();
    if (HasFatalFailure()) return;
    int supported = 0;
    ASSERT_EQ(api().cuDeviceGetAttribute(
                  &supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device()),
              CUDA_SUCCESS);
    ASSERT_EQ(supported, 1) << "the H200 supports VMM";
    ASSERT_FALSE(HasFailure());
  }

  CUresult set_access(CUdeviceptr at, std::size_t size,
                      CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = device();
    desc.flags = flags;
    return api().cuMemSetAccess(at, size, &desc, 1);
  }
  // Maps `handle` (of kG bytes) at `at` and makes it readable and writable.
  void map(CUdeviceptr at, const Physical& handle, std::size_t size = kG) {
    ASSERT_EQ(api().cuMemMap(at, size, 0, handle.get(), 0), CUDA_SUCCESS);
    ASSERT_EQ(set_access(at, size), CUDA_SUCCESS);
  }
};

TEST_F(VirtualMemory, TheGranularityIsTwoMebibytesMinimumAndRecommended) {
  const CUmemAllocationProp prop = Physical::property(device());
  std::size_t minimum = 0;
  std::size_t recommended = 0;
  EXPECT_EQ(api().cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemGetAllocationGranularity(&recommended, &prop,
                                                CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
            CUDA_SUCCESS);
  EXPECT_EQ(minimum, kG);
  EXPECT_EQ(recommended, kG);
  std::size_t other = 0;
  EXPECT_EQ(api().cuMemGetAllocationGranularity(
                &other, &prop, static_cast<CUmemAllocationGranularity_flags>(5)),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(VirtualMemory, AReservationIsAPositiveMultipleOfTheGranularityAlignedToAtLeastIt) {
  for (std::size_t size : {std::size_t{4096}, kMiB, std::size_t{1000}, kG + 4096, std::size_t{0}}) {
    CUdeviceptr base = 0;
    EXPECT_EQ(api().cuMemAddressReserve(&base, size, 0, 0, 0), CUDA_ERROR_INVALID_VALUE) << size;
  }
  CUdeviceptr base = 0;
  EXPECT_EQ(api().cuMemAddressReserve(&base, kG, 3 * kG, 0, 0), CUDA_ERROR_INVALID_VALUE)
      << "an alignment that is not a power of two";
  for (std::size_t alignment : {std::size_t{0}, std::size_t{4096}, kG}) {
    Reservation range(api(), kG, alignment);
    ASSERT_EQ(range.result(), CUDA_SUCCESS) << alignment;
    EXPECT_EQ(range.base() % kG, 0u) << alignment;
  }
  Reservation giga(api(), kG, std::size_t{1} << 30);
  ASSERT_EQ(giga.result(), CUDA_SUCCESS);
  EXPECT_EQ(giga.base() % (std::size_t{1} << 30), 0u);
}

TEST_F(VirtualMemory, ReservationsCostNoMemoryUpToSixteenTebibytesAndRefuse128) {
  const std::size_t before = free_memory();
  for (std::size_t size : {std::size_t{64} << 30, std::size_t{256} << 30, std::size_t{1} << 40,
                           std::size_t{16} << 40}) {
    Reservation range(api(), size);
    EXPECT_EQ(range.result(), CUDA_SUCCESS) << size;
    EXPECT_EQ(free_memory(), before) << "a reservation takes no device memory";
  }
  CUdeviceptr base = 0;
  EXPECT_EQ(api().cuMemAddressReserve(&base, std::size_t{128} << 40, 0, 0, 0),
            CUDA_ERROR_OUT_OF_MEMORY);
}

TEST_F(VirtualMemory, OnlyAWholeReservationIsFreedAndOnlyOnce) {
  CUdeviceptr base = 0;
  ASSERT_EQ(api().cuMemAddressReserve(&base, 4 * kG, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemAddressFree(base, 2 * kG), CUDA_ERROR_INVALID_VALUE) << "half the size";
  EXPECT_EQ(api().cuMemAddressFree(base + kG, kG), CUDA_ERROR_INVALID_VALUE) << "interior";
  EXPECT_EQ(api().cuMemAddressFree(base, 4 * kG), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemAddressFree(base, 4 * kG), CUDA_ERROR_INVALID_VALUE) << "twice";
  DeviceMemory plain = alloc(kG);
  EXPECT_EQ(api().cuMemAddressFree(plain.get(), kG), CUDA_ERROR_INVALID_VALUE)
      << "a cuMemAlloc pointer";
}

TEST_F(VirtualMemory, CreateTakesTheMemoryAndTheReleaseOfTheLastReferenceGivesItBack) {
  constexpr std::size_t kSize = 32 * kMiB;
  const std::size_t start = free_memory();
  Reservation range(api(), kSize);
  ASSERT_EQ(range.result(), CUDA_SUCCESS);
  {
    Physical handle(api(), kSize, device());
    ASSERT_EQ(handle.result(), CUDA_SUCCESS);
    EXPECT_EQ(start - free_memory(), kSize) << "taken at cuMemCreate";
    map(range.base(), handle, kSize);
    // The first and the last 4 KiB of the mapping are used (a fill of all 32 MiB costs a minute on
    // the sanitized fake and shows nothing more about what the memory costs).
    constexpr std::uint32_t kWords = 1024;
    for (CUdeviceptr at : {range.base(), range.base() + kSize - 4 * kWords}) {
      ASSERT_EQ(launch(fill_, s_.get(), 4, 256, at, std::uint32_t{9}, kWords), CUDA_SUCCESS);
    }
    EXPECT_THAT(download(range.base() + kSize - 4 * kWords, kWords, s_.get()), Each(9u));
    EXPECT_EQ(start - free_memory(), kSize) << "nothing more at reserve, map, access or use";
    ASSERT_EQ(api().cuMemUnmap(range.base(), kSize), CUDA_SUCCESS);
    EXPECT_EQ(start - free_memory(), kSize) << "unmapping gives nothing back";
  }
  EXPECT_EQ(free_memory(), start) << "the release gives it all back at once";

  // Released while mapped: usable through the mapping and held until the unmap.
  Physical handle(api(), kSize, device());
  ASSERT_EQ(handle.result(), CUDA_SUCCESS);
  map(range.base(), handle, kSize);
  const CUmemGenericAllocationHandle raw = handle.get();
  ASSERT_EQ(handle.reset(), CUDA_SUCCESS);
  ASSERT_EQ(launch(fill_, s_.get(), 4, 64, range.base(), std::uint32_t{5}, std::uint32_t{1024}),
            CUDA_SUCCESS);
  EXPECT_THAT(download(range.base(), 1024, s_.get()), Each(5u));
  EXPECT_EQ(start - free_memory(), kSize);
  EXPECT_EQ(api().cuMemRelease(raw), CUDA_ERROR_INVALID_VALUE) << "a second release";
  ASSERT_EQ(api().cuMemUnmap(range.base(), kSize), CUDA_SUCCESS);
  EXPECT_EQ(free_memory(), start) << "the unmap of a released handle gives it back";
}

TEST_F(VirtualMemory, CreateRefusesWhatTheH200Refused) {
  CUmemAllocationProp prop = Physical::property(device());
  CUmemGenericAllocationHandle handle = 0;
  for (std::size_t size : {kG / 2, kG + 4096, std::size_t{0}}) {
    EXPECT_EQ(api().cuMemCreate(&handle, size, &prop, 0), CUDA_ERROR_INVALID_VALUE) << size;
  }
  EXPECT_EQ(api().cuMemCreate(&handle, kG, &prop, 1), CUDA_ERROR_INVALID_VALUE) << "flags 1";
  int count = 0;
  ASSERT_EQ(api().cuDeviceGetCount(&count), CUDA_SUCCESS);
  CUmemAllocationProp absent = Physical::property(count);
  EXPECT_EQ(api().cuMemCreate(&handle, kG, &absent, 0), CUDA_ERROR_INVALID_DEVICE);
  CUmemAllocationProp invalid = prop;
  invalid.type = CU_MEM_ALLOCATION_TYPE_INVALID;
  EXPECT_EQ(api().cuMemCreate(&handle, kG, &invalid, 0), CUDA_ERROR_INVALID_VALUE);
  std::size_t free = 0;
  std::size_t total = 0;
  ASSERT_EQ(api().cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  const std::size_t beyond = (total / kG + 1) * kG;
  EXPECT_EQ(api().cuMemCreate(&handle, beyond, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(api().cuMemRelease(0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(VirtualMemory, OnlyWholeHandlesAreMappedAtOffsetZeroIntoAFreePartOfAReservation) {
  Reservation range(api(), 8 * kG);
  ASSERT_EQ(range.result(), CUDA_SUCCESS);
  const CUdeviceptr va = range.base();
  Physical h1(api(), kG, device());
  Physical h2(api(), 2 * kG, device());
  ASSERT_EQ(h1.result(), CUDA_SUCCESS);
  ASSERT_EQ(h2.result(), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemMap(va + kG / 2, kG, 0, h1.get(), 0), CUDA_ERROR_INVALID_VALUE)
      << "misaligned";
  EXPECT_EQ(api().cuMemMap(va, kG, kG, h2.get(), 0), CUDA_ERROR_NOT_SUPPORTED) << "offset G";
  EXPECT_EQ(api().cuMemMap(va, 2 * kG, 0, h1.get(), 0), CUDA_ERROR_NOT_SUPPORTED)
      << "more than the handle";
  EXPECT_EQ(api().cuMemMap(va, kG / 2, 0, h1.get(), 0), CUDA_ERROR_NOT_SUPPORTED)
      << "less than the handle";
  EXPECT_EQ(api().cuMemMap(va, kG, 0, h1.get(), 1), CUDA_ERROR_INVALID_VALUE) << "flags 1";
  ASSERT_EQ(api().cuMemMap(va, kG, 0, h1.get(), 0), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemMap(va, kG, 0, h1.get(), 0), CUDA_ERROR_INVALID_VALUE) << "mapped again";
  EXPECT_EQ(api().cuMemMap(va, 2 * kG, 0, h2.get(), 0), CUDA_ERROR_INVALID_VALUE)
      << "over a range half mapped";
  // Outside this reservation: 801 where nothing is reserved (the fake; the probes' H200 run), 1
  // on the H200 of 2026-12-03's run, where the driver evidently holds something there.
  EXPECT_THAT(api().cuMemMap(va + (std::size_t{1} << 40), 2 * kG, 0, h2.get(), 0),
              ::testing::AnyOf(CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_INVALID_VALUE))
      << "an address outside any reservation";
  EXPECT_EQ(api().cuMemAddressFree(va, 8 * kG), CUDA_ERROR_INVALID_VALUE)
      << "a reservation with a mapping";
  ASSERT_EQ(api().cuMemUnmap(va, kG), CUDA_SUCCESS);
}

TEST_F(VirtualMemory, AccessAndUnmapTakeWholeMappingsOneOrSeveral) {
  Reservation range(api(), 8 * kG);
  ASSERT_EQ(range.result(), CUDA_SUCCESS);
  const CUdeviceptr va = range.base();
  Physical h1(api(), kG, device());
  Physical h2(api(), 2 * kG, device());
  ASSERT_EQ(api().cuMemMap(va, kG, 0, h1.get(), 0), CUDA_SUCCESS);
  EXPECT_EQ(set_access(va, 3 * kG), CUDA_ERROR_INVALID_VALUE) << "partly unmapped";
  EXPECT_EQ(set_access(va, kG / 2), CUDA_ERROR_INVALID_VALUE) << "half a mapping";
  EXPECT_EQ(set_access(va, kG), CUDA_SUCCESS);
  // One allocation mapped at two addresses is one memory: a store through one reads through the
  // other.
  ASSERT_EQ(api().cuMemMap(va + kG, kG, 0, h1.get(), 0), CUDA_SUCCESS);
  EXPECT_EQ(set_access(va, 2 * kG), CUDA_SUCCESS) << "two mappings in one call";
  ASSERT_EQ(launch(fill_, s_.get(), 1, 64, va, std::uint32_t{5}, std::uint32_t{64}), CUDA_SUCCESS);
  EXPECT_THAT(download(va + kG, 64, s_.get()), Each(5u));
  ASSERT_EQ(api().cuMemMap(va + 2 * kG, 2 * kG, 0, h2.get(), 0), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemUnmap(va, kG / 2), CUDA_ERROR_INVALID_VALUE) << "part of a mapping";
  EXPECT_EQ(api().cuMemUnmap(va + 2 * kG, kG), CUDA_ERROR_INVALID_VALUE) << "half of h2's";
  EXPECT_EQ(api().cuMemUnmap(va + kG, 3 * kG), CUDA_SUCCESS) << "h1's second view and all of h2";
  EXPECT_EQ(api().cuMemUnmap(va, kG), CUDA_SUCCESS);
}

// A range grows in place by mapping more at its end; kernels and copies work across the seam
// of two physical allocations; a graph captured before the growth replays correctly after it, and
// after the tail is unmapped and released.
TEST_F(VirtualMemory, ARangeGrowsAndShrinksAtItsEndWhileEarlierGraphsReplay) {
  Reservation range(api(), 16 * kG);
  ASSERT_EQ(range.result(), CUDA_SUCCESS);
  const CUdeviceptr va = range.base();
  Physical piece0(api(), kG, device());
  map(va, piece0);
  const CUdeviceptr in = va;
  const CUdeviceptr out = va + kG / 2;
  constexpr std::uint32_t kN = 4096;
  upload(in, iota(kN, 100), s_.get());
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(launch(add_one_, s_.get(), kGrid, kBlock, in, out, kN), CUDA_SUCCESS);
  });
  Exec exec = instantiate(graph.get());

  Physical piece1(api(), kG, device());
  ASSERT_EQ(api().cuMemMap(va + kG, kG, 0, piece1.get(), 0), CUDA_SUCCESS);
  ASSERT_EQ(set_access(va + kG, kG), CUDA_SUCCESS) << "access set on the new piece only";
  EXPECT_EQ(download(in, kN, s_.get()), iota(kN, 100)) << "piece 0 kept its address and data";
  // Across the seam: a kernel, HtoD and DtoH, DtoD and a 32-bit memset.
  const CUdeviceptr seam = va + kG - 2048 * 4;
  ASSERT_EQ(launch(fill_, s_.get(), kGrid, kBlock, seam, std::uint32_t{7}, std::uint32_t{4096}),
            CUDA_SUCCESS);
  EXPECT_THAT(download(seam, 4096, s_.get()), Each(7u));
  upload(seam, iota(4096, 1), s_.get());
  EXPECT_EQ(download(seam, 4096, s_.get()), iota(4096, 1));
  ASSERT_EQ(api().cuMemcpyDtoDAsync(va + kG + kG / 2, seam, 4096 * 4, s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(download(va + kG + kG / 2, 4096, s_.get()), iota(4096, 1));
  ASSERT_EQ(api().cuMemsetD32Async(seam, 3u, 4096, s_.get()), CUDA_SUCCESS);
  EXPECT_THAT(download(seam, 4096, s_.get()), Each(3u));
  ASSERT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(download(out, kN, s_.get()), iota(kN, 101)) << "after the growth";

  // Shrink: the tail unmapped and released, its memory back at once.
  const std::size_t before = free_memory();
  ASSERT_EQ(api().cuMemUnmap(va + kG, kG), CUDA_SUCCESS);
  ASSERT_EQ(piece1.reset(), CUDA_SUCCESS);
  EXPECT_EQ(free_memory() - before, kG);
  upload(out, std::vector<std::uint32_t>(kN, 0), s_.get());
  ASSERT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(download(out, kN, s_.get()), iota(kN, 101)) << "after the shrink";
  exec.reset();
  ASSERT_EQ(api().cuMemUnmap(va, kG), CUDA_SUCCESS);
}

// Every VMM call graphcap makes, between two captured kernels, in each capture mode and
// from another thread during a GLOBAL capture: SUCCESS, the capture still active, the graph the
// two kernels (cuMemAlloc in the same place is 900 and invalidates, except in RELAXED mode).
class VirtualMemoryInCapture : public VirtualMemory,
                               public ::testing::WithParamInterface<CUstreamCaptureMode> {
 protected:
  // Reserve, create, map, set access, unmap, release, free, and the granularity.
  void vmm_calls() {
    const CUmemAllocationProp prop = Physical::property(device());
    std::size_t granularity = 0;
    EXPECT_EQ(api().cuMemGetAllocationGranularity(&granularity, &prop,
                                                  CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              CUDA_SUCCESS);
    CUdeviceptr va = 0;
    EXPECT_EQ(api().cuMemAddressReserve(&va, 2 * kG, 0, 0, 0), CUDA_SUCCESS);
    CUmemGenericAllocationHandle handle = 0;
    EXPECT_EQ(api().cuMemCreate(&handle, kG, &prop, 0), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemMap(va, kG, 0, handle, 0), CUDA_SUCCESS);
    EXPECT_EQ(set_access(va, kG), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemUnmap(va, kG), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemRelease(handle), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemAddressFree(va, 2 * kG), CUDA_SUCCESS);
  }
};

TEST_P(VirtualMemoryInCapture, EveryCallIsAllowedAndLeavesTheCaptureActive) {
  const CUfunction empty = kernel(module_, "empty");
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), GetParam()), CUDA_SUCCESS);
  ASSERT_EQ(launch(empty, s_.get(), 1, 1), CUDA_SUCCESS);
  vmm_calls();
  ASSERT_EQ(launch(empty, s_.get(), 1, 1), CUDA_SUCCESS);
  expect_still_active(s_.get(), 2);
}

TEST_P(VirtualMemoryInCapture, CallsFromAnotherThreadLeaveTheCaptureActive) {
  const CUfunction empty = kernel(module_, "empty");
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), GetParam()), CUDA_SUCCESS);
  ASSERT_EQ(launch(empty, s_.get(), 1, 1), CUDA_SUCCESS);
  std::thread other([&] {
    ASSERT_EQ(api().cuCtxSetCurrent(context()), CUDA_SUCCESS);
    vmm_calls();
  });
  other.join();
  ASSERT_EQ(launch(empty, s_.get(), 1, 1), CUDA_SUCCESS);
  expect_still_active(s_.get(), 2);
}

INSTANTIATE_TEST_SUITE_P(Modes, VirtualMemoryInCapture,
                         ::testing::Values(CU_STREAM_CAPTURE_MODE_GLOBAL,
                                           CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                           CU_STREAM_CAPTURE_MODE_RELAXED),
                         [](const ::testing::TestParamInfo<CUstreamCaptureMode>& param_info) {
                           switch (param_info.param) {
                             case CU_STREAM_CAPTURE_MODE_GLOBAL: return "Global";
                             case CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: return "ThreadLocal";
                             default: return "Relaxed";
                           }
                         });

}  // namespace
}  // namespace graphcap::testing
