// The lazy device: work queued in one global FIFO runs when the host waits for it; queries let the
// device catch up unless it is paused; events time the simulated clock; a trapped kernel reports
// its error to the next wait, once.
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

class FakeExecution : public FakeDriverTest {
 public:
  explicit FakeExecution(FakeDriverOptions options = {}) : FakeDriverTest(options) {}

 protected:
  void SetUp() override {
    // A kernel that faults the way a device fault does (registered before the base loads its
    // module, so that module doesn't name it; this test loads its own).
    fake_.register_typed_kernel<std::uint32_t>("trap", [](KernelContext& k) {
      k.trap(static_cast<CUresult>(k.value<std::uint32_t>(0)));
    });
    FakeDriverTest::SetUp();
    const auto image = fake_.module_image({"trap"});
    ASSERT_EQ(fake_.cuModuleLoadData(&trap_module_, image.data()), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuModuleGetFunction(&trap_, trap_module_, "trap"), CUDA_SUCCESS);
    baseline_ = fake_.live_handles();
  }
  void TearDown() override {
    EXPECT_EQ(fake_.cuModuleUnload(trap_module_), CUDA_SUCCESS);
    --baseline_.modules;
    FakeDriverTest::TearDown();
  }
  CUresult trap(CUstream stream, CUresult code) {
    return launch(trap_, stream, static_cast<std::uint32_t>(code));
  }
  CUmodule trap_module_ = nullptr;
  CUfunction trap_ = nullptr;
};

// Traps studied one report at a time: record-only (strict, a trap is sticky for the whole driver,
// as on the H200: tests/fake/fake_strict_test.cc).
class FakeExecutionRecordOnly : public FakeExecution {
 public:
  FakeExecutionRecordOnly() : FakeExecution(record_only()) {}
};

TEST_F(FakeExecution, WorkRunsOnlyWhenTheHostWaits) {
  const CUdeviceptr a = alloc(64);
  ASSERT_EQ(fill(stream_, a, 3, 16), CUDA_SUCCESS);
  EXPECT_EQ(fake_.pending_operations(stream_), 1u);
  EXPECT_THAT(peek(a, 16), Each(0u));
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.pending_operations(stream_), 0u);
  EXPECT_THAT(peek(a, 16), Each(3u));
  free(a);
}

TEST_F(FakeExecution, StreamSynchronizeRunsTheQueueUpToThatStreamsLastOperation) {
  CUstream other = new_stream();
  const CUdeviceptr a = alloc(16);
  const CUdeviceptr b = alloc(16);
  ASSERT_EQ(fill(other, b, 1, 4), CUDA_SUCCESS);  // before: runs
  ASSERT_EQ(fill(stream_, a, 2, 4), CUDA_SUCCESS);
  ASSERT_EQ(fill(other, b, 3, 4), CUDA_SUCCESS);  // after: stays queued
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_THAT(peek(a, 4), Each(2u));
  EXPECT_THAT(peek(b, 4), Each(1u));
  EXPECT_EQ(fake_.pending_operations(other), 1u);
  EXPECT_EQ(fake_.pending_operations(), 1u);
  fake_.run_pending();
  EXPECT_THAT(peek(b, 4), Each(3u));
  EXPECT_EQ(fake_.cuStreamDestroy(other), CUDA_SUCCESS);
  free(a);
  free(b);
}

TEST_F(FakeExecution, KernelParametersAreCopiedAtLaunchTime) {
  const CUdeviceptr a = alloc(16);
  std::uint32_t value = 5;
  std::uint32_t n = 4;
  void* params[] = {const_cast<CUdeviceptr*>(&a), &value, &n};  // declared sizes: no terminator
  ASSERT_EQ(fake_.cuLaunchKernel(fill_, 1, 1, 1, 32, 1, 1, 0, stream_, params, nullptr),
            CUDA_SUCCESS);
  value = 6;
  EXPECT_THAT(download(a, 4, stream_), Each(5u));
  free(a);
}

TEST_F(FakeExecution, QueriesLetTheDeviceCatchUpUnlessPaused) {
  const CUdeviceptr a = alloc(16);
  CUevent event = new_event();
  EXPECT_EQ(fake_.cuStreamQuery(stream_), CUDA_SUCCESS);  // idle
  EXPECT_EQ(fake_.cuEventQuery(event), CUDA_SUCCESS);     // never recorded

  fake_.set_device_paused(true);
  ASSERT_EQ(fill(stream_, a, 1, 4), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventRecord(event, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamQuery(stream_), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(fake_.cuEventQuery(event), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(fake_.pending_operations(stream_), 2u);
  ASSERT_EQ(fake_.cuEventSynchronize(event), CUDA_SUCCESS);  // waits still run the work
  EXPECT_EQ(fake_.cuEventQuery(event), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamQuery(stream_), CUDA_SUCCESS);

  fake_.set_device_paused(false);
  ASSERT_EQ(fill(stream_, a, 2, 4), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamQuery(stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.pending_operations(stream_), 0u);
  EXPECT_THAT(peek(a, 4), Each(2u));
  ASSERT_EQ(fill(stream_, a, 3, 4), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventRecord(event, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventQuery(event), CUDA_SUCCESS);
  EXPECT_THAT(peek(a, 4), Each(3u));
  EXPECT_EQ(fake_.cuEventDestroy(event), CUDA_SUCCESS);
  free(a);
}

TEST_F(FakeExecution, EventsMeasureTheSimulatedClock) {
  CUevent start = new_event();
  CUevent end = new_event();
  CUevent untimed = new_event(CU_EVENT_DISABLE_TIMING);
  CUevent unrecorded = new_event();
  ASSERT_EQ(fake_.cuEventRecord(start, stream_), CUDA_SUCCESS);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(empty(stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventRecord(end, stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventRecord(untimed, stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventSynchronize(end), CUDA_SUCCESS);
  float ms = -1;
  EXPECT_EQ(fake_.cuEventElapsedTime(&ms, start, end), CUDA_SUCCESS);
  EXPECT_GT(ms, 0.0f);
  float reverse = 1;
  EXPECT_EQ(fake_.cuEventElapsedTime(&reverse, end, start), CUDA_SUCCESS);
  EXPECT_FLOAT_EQ(reverse, -ms);
  EXPECT_EQ(fake_.cuEventElapsedTime(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fake_.cuEventElapsedTime(&ms, start, unrecorded), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fake_.cuEventElapsedTime(nullptr, start, end), CUDA_ERROR_INVALID_VALUE);
  for (CUevent event : {start, end, untimed, unrecorded}) {
    EXPECT_EQ(fake_.cuEventDestroy(event), CUDA_SUCCESS);
  }
  EXPECT_EQ(fake_.cuEventDestroy(start), CUDA_ERROR_INVALID_HANDLE);
  CUevent bad = nullptr;
  EXPECT_EQ(fake_.cuEventCreate(&bad, 0x80), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuEventCreate(&bad, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeExecutionRecordOnly, ATrapIsReportedOnceByTheNextStreamWait) {
  ASSERT_EQ(trap(stream_, CUDA_ERROR_ILLEGAL_ADDRESS), CUDA_SUCCESS);  // launching succeeds
  // A query reports it too (a fault surfaces on the next sync or query), but does not
  // consume it: the next wait still reports it.
  EXPECT_EQ(fake_.cuStreamQuery(stream_), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(fake_.cuStreamQuery(stream_), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
}

TEST_F(FakeExecutionRecordOnly, ATrapIsReportedByTheSyncOfALaterEventNotAnEarlierOne) {
  CUevent before = new_event();
  CUevent after = new_event();
  ASSERT_EQ(fake_.cuEventRecord(before, stream_), CUDA_SUCCESS);
  ASSERT_EQ(trap(stream_, CUDA_ERROR_LAUNCH_FAILED), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventRecord(after, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventSynchronize(before), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventSynchronize(after), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(fake_.cuEventSynchronize(after), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);  // already reported
  EXPECT_EQ(fake_.cuEventDestroy(before), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventDestroy(after), CUDA_SUCCESS);
}

TEST_F(FakeExecutionRecordOnly, ATrapIsReportedByContextSynchronize) {
  CUstream other = new_stream();
  ASSERT_EQ(trap(other, CUDA_ERROR_ASSERT), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuCtxSynchronize(), CUDA_ERROR_ASSERT);
  EXPECT_EQ(fake_.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(other), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(other), CUDA_SUCCESS);
}

TEST_F(FakeExecutionRecordOnly, WorkAfterATrapStillRuns) {
  const CUdeviceptr a = alloc(16);
  ASSERT_EQ(trap(stream_, CUDA_ERROR_LAUNCH_FAILED), CUDA_SUCCESS);
  ASSERT_EQ(fill(stream_, a, 4, 4), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_THAT(peek(a, 4), Each(4u));
  free(a);
}

TEST_F(FakeExecution, DestroyingAStreamRunsItsQueuedWork) {
  CUstream other = new_stream();
  const CUdeviceptr a = alloc(16);
  ASSERT_EQ(fill(other, a, 8, 4), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(other), CUDA_SUCCESS);
  EXPECT_EQ(fake_.pending_operations(), 0u);
  EXPECT_THAT(peek(a, 4), Each(8u));
  EXPECT_EQ(fake_.cuStreamDestroy(other), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fake_.cuStreamDestroy(nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fake_.cuStreamSynchronize(other), CUDA_ERROR_INVALID_HANDLE);
  free(a);
}

TEST_F(FakeExecution, TheNullLegacyAndPerThreadStreamsWork) {
  const CUdeviceptr a = alloc(16);
  ASSERT_EQ(fill(nullptr, a, 1, 4), CUDA_SUCCESS);
  EXPECT_EQ(fake_.pending_operations(stream_legacy()), 1u);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_legacy()), CUDA_SUCCESS);
  EXPECT_THAT(peek(a, 4), Each(1u));
  ASSERT_EQ(fill(stream_per_thread(), a, 2, 4), CUDA_SUCCESS);
  EXPECT_EQ(fake_.pending_operations(stream_per_thread()), 1u);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_per_thread()), CUDA_SUCCESS);
  EXPECT_THAT(peek(a, 4), Each(2u));
  EXPECT_EQ(fake_.cuStreamCreate(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  CUstream bad = nullptr;
  EXPECT_EQ(fake_.cuStreamCreate(&bad, 0x10), CUDA_ERROR_INVALID_VALUE);
  free(a);
}

TEST_F(FakeExecution, EventWaitsOrderWorkAcrossStreams) {
  CUstream other = new_stream();
  CUevent event = new_event();
  const CUdeviceptr a = alloc(16);
  const CUdeviceptr b = alloc(16);
  ASSERT_EQ(fill(stream_, a, 6, 4), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventRecord(event, stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamWaitEvent(other, event, 0), CUDA_SUCCESS);
  ASSERT_EQ(add_one(other, a, b, 4), CUDA_SUCCESS);
  EXPECT_THAT(download(b, 4, other), Each(7u));
  EXPECT_EQ(fake_.cuStreamWaitEvent(other, event, 0x4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(other), CUDA_SUCCESS);
  free(a);
  free(b);
}

TEST_F(FakeExecution, AThrowingKernelIsAViolationAndAFault) {
  expect_violations_ = true;
  fake_.register_typed_kernel<>("throws", [](KernelContext&) { throw std::runtime_error("boom"); });
  const auto image = fake_.module_image({"throws"});
  CUmodule module = nullptr;
  ASSERT_EQ(fake_.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  CUfunction throws = nullptr;
  ASSERT_EQ(fake_.cuModuleGetFunction(&throws, module, "throws"), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuLaunchKernel(throws, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_TRUE(mentions(fake_.violations(), "'throws'", "boom"));
  EXPECT_EQ(fake_.cuModuleUnload(module), CUDA_SUCCESS);
}

}  // namespace
}  // namespace graphcap::fake::unit
