// The capture window under injected driver failures: upload, instantiate and begin failing;
// replays failing; destroying graphs with replays in flight. Every driver: the faults come from a
// FaultInjectingDriver around the test driver (the fake, or libcuda on the H200).
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class CaptureFaultsTest : public FaultFixture {
 protected:
  void SetUp() override {
    FaultFixture::SetUp();
    if (HasFatalFailure()) return;
    x_ = upload_u32(iota_u32(32));
  }

  Result<Graph> capture_add_one() { return record_add_one(x_, x_, 32); }

  Buffer x_;
};

TEST_F(CaptureFaultsTest, UploadFailureIsAWarningAndTheGraphStillReplays) {
  Warnings log;
  faults().fail_call("cuGraphUpload", CUDA_ERROR_OUT_OF_MEMORY);
  Result<Graph> graph = capture_add_one();
  ASSERT_THAT(graph, IsOk());
  EXPECT_FALSE(graph->report().uploaded);
  EXPECT_THAT(log.lines, Contains(AllOf(HasSubstr("cuGraphUpload"),
                                           HasSubstr("CUDA_ERROR_OUT_OF_MEMORY"),
                                           HasSubstr("on demand"))));
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(32, 2)));  // warm-up + one replay
}

TEST_F(CaptureFaultsTest, InstantiateFailureNamesItFreesEverythingAndCapturesAgain) {
  const std::size_t graphs_before = faults().live_handles().graphs;
  faults().fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_OUT_OF_MEMORY);
  Result<Graph> graph = capture_add_one();
  EXPECT_THAT(graph, StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY,
                              AllOf(HasSubstr("cuGraphInstantiateWithParams"),
                                    HasSubstr("end_capture"))));
  EXPECT_EQ(faults().live_handles().graphs, graphs_before) << "intermediate graph destroyed";
  EXPECT_EQ(faults().live_handles().execs, 0u);
  EXPECT_EQ(faults().call_count("cuGraphDestroy"), 1u);
  // Nothing stays pinned: every slice the window touched is free again.
  ASSERT_THAT(device_->sync(stream()), IsOk());
  const MemoryStats stats = device_->memory_stats(stream());
  EXPECT_EQ(stats.pending_drops, 0u);
  // x_ was claimed by the refused recording.
  EXPECT_THAT(device_->read(x_, stream()), StatusIs(Errc::out_of_memory));
  ASSERT_THAT(device_->write(x_, to_bytes(iota_u32(32)), stream()), IsOk());
  Result<Graph> again = capture_add_one();
  ASSERT_THAT(again, IsOk());
  ASSERT_THAT(again->replay(), IsOk());
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(32, 2)));
}

TEST_F(CaptureFaultsTest, BeginCaptureFailureRestoresNoCaptureAndThePoolMode) {
  faults().fail_call("cuStreamBeginCapture", CUDA_ERROR_UNKNOWN);
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  EXPECT_THAT(device_->begin_capture(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_UNKNOWN, HasSubstr("cuStreamBeginCapture")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  // The pool is back in its dynamic mode: a new size is allocated from the driver, no error.
  Result<Buffer> fresh = device_->alloc(54321, stream());
  EXPECT_THAT(fresh, IsOk());
  Result<Graph> graph = capture_add_one();
  ASSERT_THAT(graph, IsOk());
}

TEST_F(CaptureFaultsTest, FailingReplaySurfacesOnTheNextSyncOnce) {
  Result<Graph> graph = capture_add_one();
  ASSERT_THAT(graph, IsOk());
  faults().fail_call("cuGraphLaunch", CUDA_ERROR_INVALID_VALUE);
  EXPECT_THAT(graph->replay(), StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE,
                                        HasSubstr("cuGraphLaunch")));
  EXPECT_THAT(device_->sync(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE, HasSubstr("cuGraphLaunch")));
  EXPECT_THAT(device_->sync(stream()), IsOk());
  // What the graph writes carries the failure, not the pre-replay bytes; and since the graph also
  // reads x_, the next replay is skipped rather than computing from them.
  EXPECT_THAT(device_->read(x_, stream()), StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE));
  EXPECT_THAT(graph->replay(), StatusIs(Errc::failed_buffer, CUDA_ERROR_INVALID_VALUE,
                                        HasSubstr("replay was skipped")));
  EXPECT_EQ(faults().call_count("cuGraphLaunch"), 1u) << "a skipped replay never reaches the driver";
  // As graph.h documents, the skipped replay's error is queued too: the next sync reports it once.
  EXPECT_THAT(device_->sync(stream()), StatusIs(Errc::failed_buffer, CUDA_ERROR_INVALID_VALUE,
                                                HasSubstr("replay was skipped")));
  EXPECT_THAT(device_->sync(stream()), IsOk());
  ASSERT_THAT(device_->write(x_, to_bytes(iota_u32(32, 100)), stream()), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(32, 101)));
}

TEST_F(CaptureFaultsTest, ReplayClearsWhatItProducesAndSkipsOnFailedInputs) {
  // y = x + 1 (out): y is produced whole by every replay.
  Buffer y = upload_u32(std::vector<std::uint32_t>(32, 0));
  Result<Graph> graph = record_add_one(x_, y, 32);
  ASSERT_THAT(graph, IsOk());
  // The input fails (an injected copy failure): the replay is skipped and y carries it.
  faults().fail_call("cuMemcpyHtoDAsync", CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(device_->write(x_, to_bytes(iota_u32(32, 7)), stream()), StatusIs(Errc::driver));
  EXPECT_THAT(graph->replay(), StatusIs(Errc::failed_buffer, CUDA_ERROR_ILLEGAL_ADDRESS));
  EXPECT_THAT(device_->read(y, stream()), StatusIs(Errc::failed_buffer, CUDA_ERROR_ILLEGAL_ADDRESS));
  EXPECT_THAT(device_->sync(stream()), StatusIs(Errc::failed_buffer, CUDA_ERROR_ILLEGAL_ADDRESS,
                                                HasSubstr("replay was skipped")));
  // The input is rewritten: the next replay runs and its output is data again.
  ASSERT_THAT(device_->write(x_, to_bytes(iota_u32(32, 7)), stream()), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(y), ElementsAreArray(iota_u32(32, 8)));
}

TEST_F(CaptureFaultsTest, DestroyingAGraphWaitsForItsReplays) {
  Result<Graph> graph = capture_add_one();
  ASSERT_THAT(graph, IsOk());
  // On the fake the device is held back, so the replays are certainly still queued; on a GPU
  // they may or may not have finished, and the order of the calls is what is checked.
  if (on_fake()) fake()->set_device_paused(true);
  for (int i = 0; i < 5; ++i) ASSERT_THAT(graph->replay(), IsOk());
  if (on_fake()) {
    EXPECT_GE(fake()->pending_operations(stream().native_handle()), 5u);
  }
  ASSERT_THAT(graph->destroy(), IsOk());
  if (on_fake()) {
    EXPECT_EQ(fake()->pending_operations(stream().native_handle()), 0u);
  }
  // The wait came before the executable's destruction.
  const std::vector<fake::CallRecord> calls = faults().calls();
  std::size_t last_sync = 0, destroy = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].entry_point == "cuStreamSynchronize") last_sync = i;
    if (calls[i].entry_point == "cuGraphExecDestroy") destroy = i;
  }
  ASSERT_GT(destroy, 0u) << "the executable was never destroyed";
  EXPECT_LT(last_sync, destroy);
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(32, 6)));
}

TEST_F(CaptureFaultsTest, DestroyOnAFaultedStreamDestroysAnywayAndQueuesTheError) {
  Result<Graph> graph = capture_add_one();
  ASSERT_THAT(graph, IsOk());
  faults().fail_call("cuStreamSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(graph->destroy(), IsOk());
  EXPECT_EQ(faults().live_handles().execs, 0u);
  EXPECT_THAT(device_->sync(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS, HasSubstr("destroying a graph")));
  EXPECT_THAT(device_->sync(stream()), IsOk());
}

TEST_F(CaptureFaultsTest, UnsafeCallsDuringAGlobalRecordingAreAvoided) {
  Result<Stream*> other = device_->create_stream();
  ASSERT_THAT(other, IsOk());
  Buffer y = upload_u32(iota_u32(8), **other);
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  // Another stream of the same thread: syncing or allocating from the driver now would
  // invalidate the recording, so graphcap refuses instead.
  EXPECT_THAT(device_->sync(**other), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("global")));
  EXPECT_THAT(device_->alloc(77777, **other), StatusIs(Errc::out_of_memory));
  ASSERT_THAT(add_one(x_, x_, 32), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk()) << "the recording must have survived";
  EXPECT_THAT(read_u32(y, **other), ElementsAreArray(iota_u32(8)));
}

}  // namespace
}  // namespace graphcap::testing
