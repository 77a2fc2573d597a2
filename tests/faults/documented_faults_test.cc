// The fault examples of the docs (docs/testing-on-the-fake.md, "Fault injection"), each run as
// written, on every driver: each fault fires (unfired_faults() is empty after it, which the
// fixture's teardown checks too) and the operation answers with the exact Errc and driver code
// the doc says. tests/docs/check_fault_examples.cmake fails when a doc arms a fault that is not
// armed here the same way.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class DocumentedFaults : public FaultFixture {
 protected:
  void SetUp() override {
    FaultFixture::SetUp();
    if (HasFatalFailure()) return;
    x_ = upload_u32(iota_u32(32));
  }
  // The docs' `step`: one launch, dst = src + 1.
  Result<void> step() { return add_one(x_, x_, 32); }

  Buffer x_;
};

TEST_F(DocumentedFaults, AnInstantiateFaultRefusesTheRecordingWithTheDriversCode) {
  faults().fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_OUT_OF_MEMORY);
  Result<Graph> graph = device_->record(stream(), [&] { return step(); });
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.error().code(), Errc::out_of_memory);
  EXPECT_EQ(graph.error().driver_code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(faults().unfired_faults(), IsEmpty());
  EXPECT_EQ(faults().live_handles().execs, 0u);
}

// What the docs once said: graphcap never calls cuGraphInstantiateWithFlags, so the fault can't
// fire and the recording succeeds. unfired_faults() is how a test finds out. (Another code than
// the docs' example: tests/docs/check_fault_examples.cmake must not count this as its test.)
TEST_F(DocumentedFaults, AFaultOnAnEntryPointTheOperationNeverCallsIsListedUnfired) {
  faults().fail_call("cuGraphInstantiateWithFlags", CUDA_ERROR_UNKNOWN);
  EXPECT_THAT(device_->record(stream(), [&] { return step(); }), IsOk());
  EXPECT_THAT(faults().unfired_faults(),
              ElementsAre(AllOf(HasSubstr("cuGraphInstantiateWithFlags"),
                                HasSubstr("CUDA_ERROR_UNKNOWN not returned"))));
  faults().clear_faults();  // the teardown's check would fail otherwise: that is its point
}

TEST_F(DocumentedFaults, AnUnknownNameIsAnErrorWhereItIsArmed) {
  EXPECT_THROW(faults().fail_call("cuNoSuchCall", CUDA_ERROR_OUT_OF_MEMORY), std::invalid_argument);
  EXPECT_THROW(faults().fail_call("cuGraphInstantiate_v2", CUDA_ERROR_OUT_OF_MEMORY),
               std::invalid_argument);
  EXPECT_THAT(faults().unfired_faults(), IsEmpty());
}

TEST_F(DocumentedFaults, AnUploadFaultKeepsTheGraphAndTheFirstReplayUploads) {
  Warnings log;
  faults().fail_call("cuGraphUpload", CUDA_ERROR_OUT_OF_MEMORY);
  Result<Graph> graph = device_->record(stream(), [&] { return step(); });
  ASSERT_THAT(graph, IsOk());
  EXPECT_FALSE(graph->report().uploaded);
  EXPECT_THAT(log.lines, Contains(AllOf(HasSubstr("cuGraphUpload"),
                                           HasSubstr("CUDA_ERROR_OUT_OF_MEMORY"))));
  EXPECT_TRUE(graph->replay());
  EXPECT_THAT(read_u32(x_), ::testing::ElementsAreArray(iota_u32(32, 2)));  // warm-up + replay
}

TEST_F(DocumentedFaults, AReplayFaultIsTheReplaysErrorAndWhatItWritesCarriesIt) {
  Result<Graph> graph = device_->record(stream(), [&] { return step(); });
  ASSERT_THAT(graph, IsOk());
  faults().fail_call("cuGraphLaunch", CUDA_ERROR_LAUNCH_FAILED);
  Result<void> replayed = graph->replay();
  ASSERT_FALSE(replayed);
  EXPECT_EQ(replayed.error().driver_code(), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_THAT(device_->sync(stream()), StatusIs(Errc::driver, CUDA_ERROR_LAUNCH_FAILED));
  EXPECT_THAT(device_->read(x_, stream()), StatusIs(Errc::driver, CUDA_ERROR_LAUNCH_FAILED));
}

TEST_F(DocumentedFaults, AllocationsTheNthWaitAndAPredicateOnOneStream) {
  // One refused allocation is retried after the pool's cached memory is given back, and
  // succeeds: the pool caches the 5 MiB slice dropped here.
  ASSERT_THAT(device_->alloc(5 << 20, stream()), IsOk());
  ASSERT_THAT(device_->sync(stream()), IsOk());
  const std::size_t allocations = faults().call_count("cuMemAlloc");
  faults().fail_call("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(device_->alloc(7 << 20, stream()), IsOk());
  EXPECT_EQ(faults().call_count("cuMemAlloc"), allocations + 2);
  faults().fail_always("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(device_->alloc(9 << 20, stream()),
              StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY, HasSubstr("cuMemAlloc")));
  faults().clear_faults();

  faults().fail_call("cuStreamSynchronize", CUDA_ERROR_LAUNCH_FAILED, 2);
  EXPECT_THAT(device_->sync(stream()), IsOk());
  EXPECT_THAT(device_->sync(stream()), StatusIs(Errc::driver, CUDA_ERROR_LAUNCH_FAILED));

  Stream* side_stream = add_stream();
  ASSERT_NE(side_stream, nullptr);
  Stream& side = *side_stream;
  faults().fail_when("cuStreamSynchronize", CUDA_ERROR_LAUNCH_FAILED,
                     [side = side.native_handle()](const fake::CallInfo& call) {
                       return call.stream == side;
                     });
  EXPECT_THAT(device_->sync(side), StatusIs(Errc::driver, CUDA_ERROR_LAUNCH_FAILED,
                                            HasSubstr("cuStreamSynchronize")));
  EXPECT_THAT(device_->sync(stream()), IsOk());
  faults().clear_faults();
}

// docs/fake-driver.md: failing every cuEventQuery with NOT_READY makes the device look behind (as
// the fake's set_device_paused does): a dropped buffer's slice is not reused until a wait.
TEST_F(DocumentedFaults, QueriesAnsweringNotReadyKeepDroppedMemoryQueued) {
  faults().fail_always("cuEventQuery", CUDA_ERROR_NOT_READY);
  {
    Result<Buffer> dropped = device_->alloc(x_.size(), stream());
    ASSERT_THAT(dropped, IsOk());
    ASSERT_THAT(add_one(x_, *dropped, 32), IsOk());
  }
  ASSERT_THAT(device_->alloc(x_.size(), stream()), IsOk());  // polls the queue: not passed
  EXPECT_GE(device_->memory_stats(stream()).pending_drops, 1u);
  EXPECT_GE(faults().call_count("cuEventQuery"), 1u);
  faults().clear_faults();
  ASSERT_THAT(device_->sync(stream()), IsOk());
  EXPECT_EQ(device_->memory_stats(stream()).pending_drops, 0u);
}

}  // namespace
}  // namespace graphcap::testing
