// The strict fake (FakeDriverOptions::strict, the default): a violation in executing work fails it
// as the GPU's fault would, the fault is sticky as the H200's is (docs/cuda-driver-facts.md,
// "Kernel faults and what the context does afterwards"), and graphcap's Buffer annotations
// (DriverApi::annotate_buffer) make bounds per Buffer, not per driver allocation. A fault ends
// the driver for good, as it ends a GPU process: each faulting test has its own FakeDriver.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

// A fresh fake with one stream and a hand-written kernel, touch(p, words): ++p[i] for i < words,
// through KernelContext::buffer (the whole range checked at once).
class Faulting {
 public:
  explicit Faulting(FakeDriverOptions options = {}) : fake(options) {
    fake.register_typed_kernel<CUdeviceptr, std::uint32_t>("touch", [](KernelContext& k) {
      for (std::uint32_t& word : k.buffer<std::uint32_t>(0, k.value<std::uint32_t>(1))) ++word;
    });
    graphcap::testing::register_test_kernels(fake);
    EXPECT_EQ(fake.cuInit(0), CUDA_SUCCESS);
    EXPECT_EQ(fake.cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
    EXPECT_EQ(fake.cuCtxSetCurrent(context), CUDA_SUCCESS);
    const auto image = fake.module_image({"touch", "fill"});
    EXPECT_EQ(fake.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
    EXPECT_EQ(fake.cuModuleGetFunction(&touch_fn, module, "touch"), CUDA_SUCCESS);
    EXPECT_EQ(fake.cuModuleGetFunction(&fill_fn, module, "fill"), CUDA_SUCCESS);
    EXPECT_EQ(fake.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT_EQ(fake.cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  }
  CUdeviceptr alloc(std::size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(fake.cuMemAlloc(&p, bytes), CUDA_SUCCESS);
    return p;
  }
  CUresult touch(CUdeviceptr address, std::uint32_t words, CUstream on = nullptr) {
    void* params[] = {&address, &words};
    return fake.cuLaunchKernel(touch_fn, 1, 1, 1, 1, 1, 1, 0, on ? on : stream, params, nullptr);
  }
  CUresult fill(CUdeviceptr dst, std::uint32_t value, std::uint32_t n) {
    void* params[] = {&dst, &value, &n};
    return fake.cuLaunchKernel(fill_fn, 2, 1, 1, 64, 1, 1, 0, stream, params, nullptr);
  }
  std::vector<std::uint32_t> peek(CUdeviceptr src, std::size_t count) {
    std::vector<std::uint32_t> values(count);
    EXPECT_TRUE(fake.read_device(src, std::as_writable_bytes(std::span(values))));
    return values;
  }

  FakeDriver fake;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction touch_fn = nullptr, fill_fn = nullptr;
  CUstream stream = nullptr, other = nullptr;
};

TEST(FakeStrict, AnOutOfBoundsKernelFailsTheNextSyncWithIllegalAddressNamingTheViolation) {
  Faulting f;
  const CUdeviceptr a = f.alloc(16);
  ASSERT_EQ(f.touch(a, 5), CUDA_SUCCESS);  // 20 bytes of 16: the launch itself succeeds
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(f.fake.stream_fault(f.stream),
              AllOf(HasSubstr("kernel 'touch' parameter 0"), HasSubstr("runs 4 bytes past the end"),
                    HasSubstr("of 16 bytes")));
  EXPECT_THAT(f.fake.violations(), SizeIs(1));
  EXPECT_THAT(f.peek(a, 4), Each(0u)) << "the faulting body wrote scratch memory";
}

TEST(FakeStrict, TheFaultIsStickyForEveryStreamAndEveryCallThatUsesTheContext) {
  Faulting f;
  const CUdeviceptr a = f.alloc(16);
  const CUdeviceptr b = f.alloc(16);
  ASSERT_EQ(f.touch(a, 5), CUDA_SUCCESS);
  ASSERT_EQ(f.touch(b, 1, f.other), CUDA_SUCCESS);  // queued after the fault: never runs
  EXPECT_EQ(f.fake.cuStreamQuery(f.stream), CUDA_ERROR_ILLEGAL_ADDRESS);
  for (int again = 0; again < 2; ++again) {  // measured: 700 every time, not once
    EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT_EQ(f.fake.cuStreamSynchronize(f.other), CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT_EQ(f.fake.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  }
  EXPECT_THAT(f.peek(b, 4), Each(0u)) << "work queued behind the fault did not run";
  EXPECT_THAT(f.fake.stream_fault(f.other), HasSubstr("kernel 'touch'"));
  CUdeviceptr more = 0;
  EXPECT_EQ(f.fake.cuMemAlloc(&more, 16), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(f.fake.cuMemFree(a), CUDA_ERROR_ILLEGAL_ADDRESS);  // measured: 700 too
  CUstream late = nullptr;
  EXPECT_EQ(f.fake.cuStreamCreate(&late, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(f.touch(a, 1), CUDA_ERROR_ILLEGAL_ADDRESS);
  // Releasing handles still works (measured for executables and graphs), and so does what needs
  // no context; a context never comes back.
  EXPECT_EQ(f.fake.cuStreamDestroy(f.other), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuModuleUnload(f.module), CUDA_SUCCESS);
  int count = 0;
  EXPECT_EQ(f.fake.cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  CUcontext again = nullptr;
  EXPECT_EQ(f.fake.cuDevicePrimaryCtxRetain(&again, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(f.fake.violations(), SizeIs(1));
}

TEST(FakeStrict, ATrapIsStickyAsLaunchFailed) {
  Faulting f;
  f.fake.register_typed_kernel<>("trap", [](KernelContext& k) { k.trap(); });
  const auto image = f.fake.module_image({"trap"});
  CUmodule module = nullptr;
  CUfunction trap = nullptr;
  ASSERT_EQ(f.fake.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  ASSERT_EQ(f.fake.cuModuleGetFunction(&trap, module, "trap"), CUDA_SUCCESS);
  ASSERT_EQ(f.fake.cuLaunchKernel(trap, 1, 1, 1, 1, 1, 1, 0, f.stream, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.other), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_THAT(f.fake.stream_fault(f.stream), HasSubstr("kernel 'trap' trapped"));
  EXPECT_THAT(f.fake.violations(), ::testing::IsEmpty()) << "a trap is no violation";
}

TEST(FakeStrict, FreedForeignAndNullMemoryFaultWithIllegalAddress) {
  for (int kind = 0; kind < 3; ++kind) {
    Faulting f;
    CUdeviceptr address = 0;  // null
    if (kind == 1) {
      address = f.alloc(16);
      EXPECT_EQ(f.fake.cuMemFree(address), CUDA_SUCCESS);
    } else if (kind == 2) {
      address = 0x1000;  // in no allocation
    }
    ASSERT_EQ(f.touch(address, 1), CUDA_SUCCESS);
    EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_ERROR_ILLEGAL_ADDRESS) << kind;
    EXPECT_THAT(f.fake.stream_fault(f.stream),
                HasSubstr(kind == 0   ? "null device pointer"
                          : kind == 1 ? "freed memory"
                                      : "not inside any device allocation"));
  }
}

TEST(FakeStrict, AMisalignedAccessIsMisalignedAddress) {
  Faulting f;
  const CUdeviceptr a = f.alloc(16);
  ASSERT_EQ(f.touch(a + 2, 1), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_ERROR_MISALIGNED_ADDRESS);
  EXPECT_THAT(f.fake.stream_fault(f.stream), HasSubstr("is not aligned to 4 bytes"));
}

TEST(FakeStrict, ACopyOfFreedMemoryFaults) {
  Faulting f;
  const CUdeviceptr dst = f.alloc(16);
  const CUdeviceptr gone = f.alloc(16);
  EXPECT_EQ(f.fake.cuMemFree(gone), CUDA_SUCCESS);
  ASSERT_EQ(f.fake.cuMemcpyDtoDAsync(dst, gone, 16, f.stream), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(f.fake.stream_fault(f.stream),
              AllOf(HasSubstr("device-to-device copy"), HasSubstr("freed memory")));
}

TEST(FakeStrict, AFaultingGraphLaunchStopsAtTheFaultingNode) {
  Faulting f;
  const CUdeviceptr a = f.alloc(16);
  const CUdeviceptr b = f.alloc(16);
  ASSERT_EQ(f.fake.cuStreamBeginCapture(f.stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(f.touch(a, 5), CUDA_SUCCESS);
  ASSERT_EQ(f.fill(b, 7, 4), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(f.fake.cuStreamEndCapture(f.stream, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(f.fake.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.fake.cuGraphLaunch(exec, f.stream), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(f.fake.stream_fault(f.stream), HasSubstr("cuGraphLaunch of exec"));
  EXPECT_THAT(f.peek(b, 4), Each(0u)) << "the node after the fault did not run";
  EXPECT_EQ(f.fake.cuGraphLaunch(exec, f.stream), CUDA_ERROR_ILLEGAL_ADDRESS);  // measured
  EXPECT_EQ(f.fake.cuGraphExecDestroy(exec), CUDA_SUCCESS);                     // measured
  EXPECT_EQ(f.fake.cuGraphDestroy(graph), CUDA_SUCCESS);                        // measured
}

TEST(FakeStrict, RecordOnlyRecordsTheViolationAndTheStreamStaysClean) {
  Faulting f(record_only());
  const CUdeviceptr a = f.alloc(16);
  ASSERT_EQ(f.touch(a, 5), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_SUCCESS);
  EXPECT_THAT(f.fake.violations(), SizeIs(1));
  EXPECT_EQ(f.fake.stream_fault(f.stream), "");
  EXPECT_EQ(f.fake.cuMemFree(a), CUDA_SUCCESS);
}

// ---- per-Buffer bounds --------------------------------------------------------------------------

TEST(FakeStrict, AnAnnotatedBufferBoundsAccessesInsideItsAllocation) {
  Faulting f;
  const CUdeviceptr slice = f.alloc(512);  // a pool's slice
  f.fake.annotate_buffer(slice, 64);       // lent as a Buffer of 64 bytes
  ASSERT_EQ(f.touch(slice, 16), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_SUCCESS);
  EXPECT_THAT(f.peek(slice, 16), Each(1u));
  ASSERT_EQ(f.touch(slice, 17), CUDA_SUCCESS);  // one word past the Buffer
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(f.fake.stream_fault(f.stream),
              AllOf(HasSubstr("runs 4 bytes past the end of the Buffer at"),
                    HasSubstr("of 64 bytes (in allocation"), HasSubstr("of 512 bytes")));
  EXPECT_EQ(f.peek(slice + 64, 1), std::vector<std::uint32_t>{0}) << "the neighbour is untouched";
}

TEST(FakeStrict, AReturnedBuffersMemoryIsNoBuffersAndALaterLendReplacesIt) {
  FakeDriverOptions options = record_only();  // several violations in one test
  Faulting f(options);
  const CUdeviceptr slice = f.alloc(512);
  f.fake.annotate_buffer(slice, 64);
  f.fake.annotate_buffer(slice, 0);  // back in graphcap's pool
  ASSERT_EQ(f.touch(slice, 1), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_SUCCESS);
  EXPECT_THAT(f.fake.violations(),
              ::testing::ElementsAre(HasSubstr("in the memory of a Buffer that was dropped")));
  f.fake.annotate_buffer(slice, 128);  // lent again, larger
  ASSERT_EQ(f.touch(slice, 32), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_SUCCESS);
  EXPECT_THAT(f.fake.violations(), SizeIs(1));
  f.fake.annotate_buffer(slice, 8);  // and again, smaller: the latest lend holds
  ASSERT_EQ(f.touch(slice, 3), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_SUCCESS);
  EXPECT_THAT(f.fake.violations(), SizeIs(2));
  EXPECT_EQ(f.fake.cuMemFree(slice), CUDA_SUCCESS);
  f.fake.annotate_buffer(slice, 64);  // freed memory: ignored
}

TEST(FakeStrict, ALaunchIsCheckedAgainstTheBufferOfItsLaunchNotOfItsRun) {
  Faulting f;
  const CUdeviceptr slice = f.alloc(512);
  f.fake.annotate_buffer(slice, 128);
  // Queued (the device is lazy), then the memory is lent again as a smaller Buffer before it
  // runs: it still runs against its own Buffer of 128 bytes.
  ASSERT_EQ(f.touch(slice, 32), CUDA_SUCCESS);
  // Captured with the Buffer of 128 bytes, replayed after a smaller lend.
  ASSERT_EQ(f.fake.cuStreamBeginCapture(f.stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(f.touch(slice, 32), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(f.fake.cuStreamEndCapture(f.stream, &graph), CUDA_SUCCESS);
  f.fake.annotate_buffer(slice, 16);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(f.fake.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.fake.cuGraphLaunch(exec, f.stream), CUDA_SUCCESS);
  EXPECT_EQ(f.fake.cuStreamSynchronize(f.stream), CUDA_SUCCESS);
  EXPECT_THAT(f.peek(slice, 32), Each(2u));
  EXPECT_THAT(f.fake.violations(), ::testing::IsEmpty());
}

}  // namespace
}  // namespace graphcap::fake::unit
