// Several streams in one recording, on every driver: a stream that waits on an event recorded
// inside a recording is forked into it (its operations are recorded, claimed and pinned), joined
// back by an event the recording stream waits on; side work never joined is refused by name at
// end_capture, before the driver's bare CUDA_ERROR_STREAM_CAPTURE_UNJOINED; every stream the
// recording touched is left in no_capture and usable.
#include <cstdint>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class ForkJoinTest : public WithSideStream<DeviceFixture> {
 protected:
  CUstreamCaptureStatus driver_status(Stream& s) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    EXPECT_EQ(device_->driver().cuStreamIsCapturing(s.native_handle(), &status), CUDA_SUCCESS);
    return status;
  }
};

TEST_F(ForkJoinTest, AForkedSideStreamIsRecordedAndJoinedBack) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64));
  Buffer z = upload_u32(iota_u32(64));
  Event fork = new_event();
  Event join = new_event();
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(x, 1, 64), IsOk());
  ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, fork), IsOk());
  EXPECT_EQ(side_->capture_state(), CaptureState::capture);
  ASSERT_THAT(add_one(x, y, 64, *side_), IsOk());           // compute beside...
  ASSERT_THAT(device_->copy(z, x, stream()), IsOk());        // ...a copy
  ASSERT_THAT(device_->record_event(join, *side_), IsOk());
  ASSERT_THAT(device_->wait(stream(), join), IsOk());
  ASSERT_THAT(add_one(y, y, 64), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().node_count, 4u);
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_KERNEL), 3u);
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_MEMCPY), 1u);
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(side_->capture_state(), CaptureState::no_capture);
  EXPECT_EQ(driver_status(*side_), CU_STREAM_CAPTURE_STATUS_NONE);
  // Recorded, not run: y still holds what was uploaded.
  EXPECT_THAT(read_u32(y), ElementsAreArray(iota_u32(64)));
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(y), Each(3u));
  EXPECT_THAT(read_u32(z), Each(1u));
  EXPECT_EQ(without_call_sites(graph->dot()),
            "digraph graphcap {\n"
            "  node [shape=box];\n"
            "  subgraph cluster_stream0 {\n"
            "    label=\"stream 0\";\n"
            "    n0 [label=\"KERNEL\\nkernel fill\\ngrid (1, 1, 1) block (256, 1, 1)\\n"
            "arg 0: out 256 B\\narg 1: value 4 B = 1 (0x1)\\narg 2: value 4 B = 64 (0x40)\"];\n"
            "    n2 [label=\"MEMCPY\\nmemcpy 256 B device to device\\nfrom +0 of 256 B\\n"
            "to +0 of 256 B\"];\n"
            "    n3 [label=\"KERNEL\\nkernel add_one\\ngrid (1, 1, 1) block (256, 1, 1)\\n"
            "arg 0: in 256 B\\narg 1: out 256 B\\narg 2: value 4 B = 64 (0x40)\"];\n"
            "  }\n"
            "  subgraph cluster_stream1 {\n"
            "    label=\"stream 1\";\n"
            "    n1 [label=\"KERNEL\\nkernel add_one\\ngrid (1, 1, 1) block (256, 1, 1)\\n"
            "arg 0: in 256 B\\narg 1: out 256 B\\narg 2: value 4 B = 64 (0x40)\"];\n"
            "  }\n"
            "  n0 -> n1;\n"
            "  n0 -> n2;\n"
            "  n2 -> n3;\n"
            "  n1 -> n3;\n"
            "}\n");
  // Both streams work eagerly again.
  ASSERT_THAT(add_one(y, y, 64), IsOk());
  EXPECT_THAT(read_u32(y), Each(4u));
  Buffer own = upload_u32(iota_u32(8), *side_);
  EXPECT_THAT(read_u32(own, *side_), ElementsAreArray(iota_u32(8)));
}

TEST_F(ForkJoinTest, UnjoinedSideWorkIsRefusedByNameAndEveryStreamIsLeftUsable) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64));
  Event fork = new_event();
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(x, 1, 64), IsOk());
  ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, fork), IsOk());
  ASSERT_THAT(add_one(x, y, 64, *side_), IsOk());
  EXPECT_THAT(device_->end_capture(*side_),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("forked into the recording")));
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS,
                       AllOf(HasSubstr("stream 1"), HasSubstr("kernel add_one"),
                             HasSubstr("not joined back"))));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(side_->capture_state(), CaptureState::no_capture);
  EXPECT_EQ(driver_status(stream()), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(driver_status(*side_), CU_STREAM_CAPTURE_STATUS_NONE);
  // The claims cover the side stream's writes: y holds what no operation produced. (A refused
  // recording's uses never ran: y is still last written by its upload on the recording stream,
  // so the side stream reads it once ordered after that.)
  Event closed = new_event();
  ASSERT_THAT(device_->record_event(closed, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, closed), IsOk());
  EXPECT_THAT(device_->read(y, *side_), StatusIs(Errc::graph_state, CUDA_SUCCESS,
                                                  HasSubstr("not joined back")));
  // Both streams are usable; the recording stream can record again.
  Buffer own = upload_u32(iota_u32(8), *side_);
  ASSERT_THAT(add_one(own, own, 8, *side_), IsOk());
  EXPECT_THAT(read_u32(own, *side_), ElementsAreArray(iota_u32(8, 1)));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(x, 2, 64), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(ForkJoinTest, ASideStreamObeysTheRecordingsRules) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer own = upload_u32(iota_u32(64), *side_);
  Event fork = new_event();
  Event join = new_event();
  // The graph replays on stream 0: it must come after the side stream's upload.
  Event uploaded = new_event();
  ASSERT_THAT(device_->record_event(uploaded, *side_), IsOk());
  ASSERT_THAT(device_->wait(stream(), uploaded), IsOk());
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, fork), IsOk());
  // No reads or syncs, no window of its own.
  EXPECT_THAT(device_->read(own, *side_), StatusIs(Errc::graph_state));
  EXPECT_THAT(device_->sync(*side_), StatusIs(Errc::graph_state));
  EXPECT_THAT(device_->prepare_capture(*side_), StatusIs(Errc::graph_state));
  ASSERT_THAT(add_one(own, own, 64, *side_), IsOk());
  ASSERT_THAT(device_->record_event(join, *side_), IsOk());
  ASSERT_THAT(device_->wait(stream(), join), IsOk());
  ASSERT_THAT(add_one(x, x, 64), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());  // the refusals above did not invalidate the recording
  EXPECT_EQ(graph->report().node_count, 2u);
  // The graph runs on the recording stream: its side-stream uses count as that stream's now, so
  // the side stream reads its own buffer once ordered after the close.
  EXPECT_THAT(device_->read(own, *side_), StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                                                    HasSubstr("nothing orders")));
  Event closed = new_event();
  ASSERT_THAT(device_->record_event(closed, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, closed), IsOk());
  EXPECT_THAT(read_u32(own, *side_), ElementsAreArray(iota_u32(64)));  // recorded, not run
  ASSERT_THAT(graph->replay(), IsOk());
  ASSERT_THAT(device_->sync(stream()), IsOk());
  Event after_replay = new_event();
  ASSERT_THAT(device_->record_event(after_replay, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, after_replay), IsOk());
  EXPECT_THAT(read_u32(own, *side_), ElementsAreArray(iota_u32(64, 1)));

  // No driver allocation from its pools: as on the recording stream, an allocation the pool
  // can't serve is refused and dooms the recording.
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, fork), IsOk());
  EXPECT_THAT(device_->alloc(5 << 20, *side_), StatusIs(Errc::out_of_memory));
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::doomed, CUDA_SUCCESS, HasSubstr("alloc")));
  EXPECT_EQ(side_->capture_state(), CaptureState::no_capture);
}

TEST_F(ForkJoinTest, AStreamThatNeverForkedIsNotPartOfTheRecording) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer own = upload_u32(iota_u32(64), *side_);
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(x, 1, 64), IsOk());
  EXPECT_EQ(side_->capture_state(), CaptureState::no_capture);
  ASSERT_THAT(add_one(own, own, 64, *side_), IsOk());  // runs eagerly
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().node_count, 1u);
  EXPECT_THAT(read_u32(own, *side_), ElementsAreArray(iota_u32(64, 1)));
}

TEST_F(ForkJoinTest, ForksThatCantBeAreRefusedBeforeTheDriverSeesThem) {
  Event fork = new_event();
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
  // A stream with its own window open can't be forked into another recording.
  ASSERT_THAT(device_->prepare_capture(*side_), IsOk());
  EXPECT_THAT(device_->wait(*side_, fork), StatusIs(Errc::graph_state));
  ASSERT_THAT(device_->abort_capture(*side_), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
  // The recording has ended: its event can't fork anything any more.
  EXPECT_THAT(device_->wait(*side_, fork),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("has ended")));
  EXPECT_EQ(side_->capture_state(), CaptureState::no_capture);
  EXPECT_EQ(driver_status(*side_), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(ForkJoinTest, AbortingTheRecordingReleasesItsSideStreams) {
  Buffer x = upload_u32(iota_u32(64));
  Event fork = new_event();
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, fork), IsOk());
  ASSERT_THAT(fill(x, 1, 64), IsOk());
  EXPECT_THAT(device_->abort_capture(*side_), StatusIs(Errc::graph_state));
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_EQ(side_->capture_state(), CaptureState::no_capture);
  EXPECT_EQ(driver_status(*side_), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_THAT(device_->sync(*side_), IsOk());
}

// end_capture into a graph on a side stream is refused like the plain end_capture (it
// used to end the driver's capture there, invalidating the origin's recording, and to release
// the recording's registration twice: the process lost its guard of GLOBAL recordings).
TEST_F(ForkJoinTest, EndCaptureIntoAGraphOnASideStreamIsRefusedAndChangesNothing) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64), *side_);
  // A graph of the side stream to (wrongly) end into.
  ASSERT_THAT(device_->prepare_capture(*side_), IsOk());
  ASSERT_THAT(device_->begin_capture(*side_), IsOk());
  ASSERT_THAT(add_one(y, y, 64, *side_), IsOk());
  Result<Graph> side_graph = device_->end_capture(*side_);
  ASSERT_THAT(side_graph, IsOk());
  Event used = new_event();  // the recording below replays after the side stream's use of y
  ASSERT_THAT(device_->record_event(used, *side_), IsOk());
  ASSERT_THAT(device_->wait(stream(), used), IsOk());

  Event fork = new_event();
  Event join = new_event();
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(x, 1, 64), IsOk());
  ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, fork), IsOk());
  ASSERT_THAT(add_one(x, y, 64, *side_), IsOk());
  EXPECT_THAT(device_->end_capture(*side_, *side_graph),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("forked into the recording")));
  EXPECT_EQ(side_->capture_state(), CaptureState::capture);
  EXPECT_EQ(driver_status(stream()), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  ASSERT_THAT(device_->record_event(join, *side_), IsOk());
  ASSERT_THAT(device_->wait(stream(), join), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());

  // The guard still holds: while a GLOBAL recording is open, another thread's sync is refused.
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<void> synced = Error(Errc::driver, "not run");
  std::thread other([&] { synced = device_->sync(*side_); });
  other.join();
  EXPECT_THAT(synced, StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("global mode")));
  ASSERT_THAT(device_->end_capture(stream()), IsOk());
}

}  // namespace
}  // namespace graphcap::testing
