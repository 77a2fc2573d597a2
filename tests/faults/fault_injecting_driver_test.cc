// FaultInjectingDriver itself, on every driver (around the fake, and around libcuda on the H200):
// the fault plan (nth call, every call, a predicate), the log, and each row of its undo table
// (fault_injecting_driver.h): what a failed call leaves behind must be what a real failure leaves.
#include <cstdint>
#include <string_view>
#include <vector>

#include <graphcap/driver/entry_traits.h>
#include <graphcap/fake/fake_driver.h>
#include <graphcap/fake/fault_injecting_driver.h>

#include "conformance/conformance_fixture.h"

namespace graphcap::testing {
namespace {

class FaultInjectingDriverTest : public ConformanceTest {
 protected:
  void SetUp() override {
    ConformanceTest::SetUp();
    faults_ = std::make_unique<fake::FaultInjectingDriver>(api());
  }
  fake::FaultInjectingDriver& faults() { return *faults_; }

  // cuLaunchKernel of `function` through the decorator.
  template <class... Args>
  CUresult launch_through(CUfunction function, CUstream stream, Args... args) {
    void* params[] = {static_cast<void*>(&args)..., nullptr};
    return faults().cuLaunchKernel(function, kGrid, 1, 1, kBlock, 1, 1, 0, stream, params, nullptr);
  }

  std::unique_ptr<fake::FaultInjectingDriver> faults_;
};

TEST_F(FaultInjectingDriverTest, TheNthCallFailsAndIsLoggedAsInjected) {
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  faults().fail_call("cuStreamQuery", CUDA_ERROR_LAUNCH_FAILED, 2);
  EXPECT_EQ(faults().cuStreamQuery(s.get()), CUDA_SUCCESS);
  EXPECT_EQ(faults().cuStreamQuery(s.get()), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(faults().cuStreamQuery(s.get()), CUDA_SUCCESS) << "only the 2nd call fails";
  const std::vector<fake::CallRecord> calls = faults().calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_FALSE(calls[0].injected);
  EXPECT_TRUE(calls[1].injected);
  EXPECT_EQ(calls[1].result, CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(faults().call_count("cuStreamQuery"), 3u);
}

TEST_F(FaultInjectingDriverTest, FailAlwaysAndAPredicateOnTheStream) {
  RawStream a = new_stream();
  RawStream b = new_stream();
  ASSERT_FALSE(HasFailure());
  const CUstream target = b.get();
  faults().fail_when("", CUDA_ERROR_NOT_READY,
                     [target](const fake::CallInfo& call) { return call.stream == target; });
  EXPECT_EQ(faults().cuStreamQuery(a.get()), CUDA_SUCCESS);
  EXPECT_EQ(faults().cuStreamQuery(b.get()), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(faults().cuStreamSynchronize(a.get()), CUDA_SUCCESS);
  EXPECT_EQ(faults().cuStreamSynchronize(b.get()), CUDA_ERROR_NOT_READY);
  faults().fail_always("cuStreamQuery", CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(faults().cuStreamQuery(a.get()), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(faults().cuStreamQuery(b.get()), CUDA_ERROR_NOT_READY) << "fail_when wins";
  faults().clear_faults();
  EXPECT_EQ(faults().cuStreamQuery(b.get()), CUDA_SUCCESS);
}

TEST_F(FaultInjectingDriverTest, AFailedEndCaptureStillEndsTheCapture) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(faults().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(launch_through(empty, s.get()), CUDA_SUCCESS);
  faults().fail_call("cuStreamEndCapture", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x1});  // must come back NULL
  EXPECT_EQ(faults().cuStreamEndCapture(s.get(), &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_NONE) << "the capture ended";
  EXPECT_EQ(faults().live_handles().graphs, 0u) << "the graph it returned was destroyed";
  // The stream captures again.
  ASSERT_EQ(faults().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  expect_still_active(s.get(), 0);
}

TEST_F(FaultInjectingDriverTest, AFailedCapturedLaunchInvalidatesTheCapture) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(faults().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  faults().fail_call("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(launch_through(empty, s.get()), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  expect_invalidated(s.get(), empty);
}

// The drift the H200's traces found: cuMemcpyDtoDAsync and cuMemsetD32Async were stream-ordered in
// the fake's list but missing from the decorator's, so an injected failure of either left a real
// capture valid while the fake invalidated it. Both now read entry_points.def's order column.
// Checked through the decorator (fake and H200) and, on the fake, through its own injection.
TEST_F(FaultInjectingDriverTest, AFailedCapturedDeviceCopyOrWordFillInvalidatesTheCapture) {
  static_assert(entry::cuMemcpyDtoDAsync::order == EntryOrder::ordered &&
                entry::cuMemsetD32Async::order == EntryOrder::ordered);
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  DeviceMemory a = alloc(64 * sizeof(std::uint32_t));
  DeviceMemory b = alloc(64 * sizeof(std::uint32_t));
  ASSERT_FALSE(HasFailure());
  auto call = [&](DriverApi& driver, std::string_view entry_point) {
    return entry_point == "cuMemcpyDtoDAsync"
               ? driver.cuMemcpyDtoDAsync(b.get(), a.get(), 64 * sizeof(std::uint32_t), s.get())
               : driver.cuMemsetD32Async(b.get(), 7u, 64, s.get());
  };
  for (std::string_view entry_point : {"cuMemcpyDtoDAsync", "cuMemsetD32Async"}) {
    SCOPED_TRACE(entry_point);
    ASSERT_EQ(faults().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    faults().fail_call(entry_point, CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(call(faults(), entry_point), CUDA_ERROR_INVALID_VALUE);
    expect_invalidated(s.get(), empty);
    if (fake::FakeDriver* fake = test_driver().fake()) {
      ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
      fake->fail_call(entry_point, CUDA_ERROR_INVALID_VALUE);
      EXPECT_EQ(call(api(), entry_point), CUDA_ERROR_INVALID_VALUE);
      expect_invalidated(s.get(), empty);
    }
  }
}

TEST_F(FaultInjectingDriverTest, AFailedLaunchOutsideACaptureEnqueuesNothing) {
  RawModule module = load_test_kernels();
  CUfunction fill = kernel(module, "fill");
  RawStream s = new_stream();
  DeviceMemory x = alloc(64 * sizeof(std::uint32_t));
  ASSERT_FALSE(HasFailure());
  upload(x.get(), iota(64), s.get());
  faults().fail_call("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(launch_through(fill, s.get(), x.get(), std::uint32_t{7}, std::uint32_t{64}),
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(download(x.get(), 64, s.get()), iota(64)) << "the failed launch did not run";
}

TEST_F(FaultInjectingDriverTest, AFailedBeginOrInstantiateCreatesNothing) {
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  faults().fail_call("cuStreamBeginCapture", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(faults().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_NONE) << "nothing begun";

  RawGraph graph = capture(s.get(), [] {});
  ASSERT_TRUE(graph);
  faults().fail_call("cuGraphInstantiateWithFlags", CUDA_ERROR_OUT_OF_MEMORY);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(faults().cuGraphInstantiateWithFlags(&exec, graph.get(), 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(exec, nullptr) << "no executable handed back";
  EXPECT_EQ(faults().live_handles().execs, 0u);
  // The graph instantiates once the fault is spent.
  ASSERT_EQ(faults().cuGraphInstantiateWithFlags(&exec, graph.get(), 0), CUDA_SUCCESS);
  EXPECT_EQ(faults().live_handles().execs, 1u);
  EXPECT_EQ(faults().cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(faults().live_handles().execs, 0u);
}

TEST_F(FaultInjectingDriverTest, AFailedFreeLeaksItsHandleUntilReleaseLeaked) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(faults().cuMemAlloc(&pointer, 4096), CUDA_SUCCESS);
  EXPECT_EQ(faults().live_handles().device_allocations, 1u);
  faults().fail_call("cuMemFree", CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(faults().cuMemFree(pointer), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(faults().live_handles().device_allocations, 1u) << "a failed free frees nothing";
  EXPECT_EQ(faults().release_leaked(), 1u);
  EXPECT_EQ(faults().live_handles().total(), 0u);
  // It really was freed: freeing it again is the driver's "already freed" (facts: 1).
  EXPECT_EQ(api().cuMemFree(pointer), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FaultInjectingDriverTest, AFailedWaitStillWaits) {
  RawModule module = load_test_kernels();
  CUfunction fill = kernel(module, "fill");
  RawStream s = new_stream();
  DeviceMemory x = alloc(64 * sizeof(std::uint32_t));
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(launch_through(fill, s.get(), x.get(), std::uint32_t{5}, std::uint32_t{64}),
            CUDA_SUCCESS);
  faults().fail_call("cuStreamSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(faults().cuStreamSynchronize(s.get()), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(api().cuStreamQuery(s.get()), CUDA_SUCCESS) << "the work before the wait is done";
  EXPECT_EQ(download(x.get(), 64, s.get()), std::vector<std::uint32_t>(64, 5));
}

TEST_F(FaultInjectingDriverTest, SettledQueriesFindTheWorkDone) {
  RawModule module = load_test_kernels();
  CUfunction fill = kernel(module, "fill");
  RawStream s = new_stream();
  RawEvent e = new_event();
  DeviceMemory x = alloc(1 << 20);
  ASSERT_FALSE(HasFailure());
  fake::FaultInjectingDriver settled(api(), {.settle_queries = true});
  void* params[3];
  CUdeviceptr pointer = x.get();
  std::uint32_t value = 9;
  // On the GPU the fills must outlast a plain query; the fake holds its device back instead (below),
  // so a small fill shows the same there without simulating 5 million elements.
  std::uint32_t count = test_driver().fake() != nullptr ? 1024 : (1 << 20) / 4;
  params[0] = &pointer;
  params[1] = &value;
  params[2] = &count;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(settled.cuLaunchKernel(fill, kGrid, 1, 1, kBlock, 1, 1, 0, s.get(), params, nullptr),
              CUDA_SUCCESS);
  }
  ASSERT_EQ(settled.cuEventRecord(e.get(), s.get()), CUDA_SUCCESS);
  if (fake::FakeDriver* f = test_driver().fake()) {
    // The fake's device held back: a plain query finds the work queued, a settled one waits.
    f->set_device_paused(true);
    EXPECT_EQ(api().cuEventQuery(e.get()), CUDA_ERROR_NOT_READY);
  }
  EXPECT_EQ(settled.cuEventQuery(e.get()), CUDA_SUCCESS);
  EXPECT_EQ(settled.cuStreamQuery(s.get()), CUDA_SUCCESS);
}

}  // namespace
}  // namespace graphcap::testing
