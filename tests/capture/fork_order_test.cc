// The order between streams inside a recording, and what a recording that made no graph leaves,
// on every driver (docs/capture-lifecycle.md, "Buffers on several streams"): order made by the
// events of a recording is transitive through every stream forked into it, as outside
// recordings; a refused or aborted recording's uses never ran, so each buffer it touched is left
// with the users it had before (its writes still carry the refusal: that is the claim).
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class ForkOrderTest : public WithSideStream<DeviceFixture> {
 protected:
  void SetUp() override {
    WithSideStream::SetUp();
    if (HasFatalFailure()) return;
    third_ = add_stream();
    ASSERT_NE(third_, nullptr);
  }
  void begin(Stream& s) {
    ASSERT_THAT(device_->prepare_capture(s), IsOk());
    ASSERT_THAT(device_->begin_capture(s), IsOk());
  }
  // `to` waits for an event recorded on `from` now.
  void order(Stream& from, Stream& to) {
    events_.push_back(new_event());
    ASSERT_THAT(device_->record_event(events_.back(), from), IsOk());
    ASSERT_THAT(device_->wait(to, events_.back()), IsOk());
  }
  Stream* third_ = nullptr;  // stream 2
  std::vector<Event> events_;
};

// 0 -> 1 -> 2: stream 2 forks from stream 1, which forked from stream 0; stream 2 reads what
// stream 0 wrote in the recording.
TEST_F(ForkOrderTest, AStreamForkedFromASideStreamIsOrderedAfterTheOrigin) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64));
  Buffer z = upload_u32(iota_u32(64));
  begin(stream());
  ASSERT_THAT(fill(x, 7, 64), IsOk());
  order(stream(), *side_);
  order(*side_, *third_);
  EXPECT_EQ(third_->capture_state(), CaptureState::capture);
  ASSERT_THAT(add_one(x, y, 64, *third_), IsOk());
  order(*third_, stream());
  ASSERT_THAT(add_one(y, z, 64), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().node_count, 3u);
  EXPECT_EQ(third_->capture_state(), CaptureState::no_capture);
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(z), Each(9u));
  EXPECT_THAT(read_u32(y), Each(8u));
}

// 2 -> 1 -> 0: stream 2's work is joined into stream 0 through stream 1; stream 0 then reads
// what stream 2 wrote.
TEST_F(ForkOrderTest, AJoinThroughASideStreamOrdersTheOriginAfterItsWork) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64));
  Buffer z = upload_u32(iota_u32(64));
  begin(stream());
  order(stream(), *side_);
  order(stream(), *third_);
  ASSERT_THAT(add_one(x, y, 64, *third_), IsOk());
  order(*third_, *side_);
  order(*side_, stream());
  ASSERT_THAT(add_one(y, z, 64), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().node_count, 2u);
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(z), ElementsAreArray(iota_u32(64, 2)));
}

// What is not ordered stays refused inside a recording: a side stream forked before the write.
TEST_F(ForkOrderTest, AnEventRecordedBeforeTheWriteOrdersNothingInARecording) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64));
  begin(stream());
  order(stream(), *side_);
  ASSERT_THAT(fill(x, 7, 64), IsOk());  // after the fork
  order(*side_, *third_);
  EXPECT_THAT(add_one(x, y, 64, *third_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("last written on another stream of this device (stream 0"),
                             HasSubstr("nothing orders this stream (stream 2)"))));
  order(*third_, stream());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());  // the refusal doomed nothing
}

// A graph replays on its origin, after the origin's earlier work only: a side stream's eager
// work before its fork is not ordered before the graph's nodes, though it came first on the side
// stream. Stream 1 uploaded x; recording x's write on stream 1 after the fork is refused, and
// allowed once the origin was ordered after the upload before begin_capture.
TEST_F(ForkOrderTest, ASideStreamsWorkBeforeItsForkDoesNotComeBeforeTheGraph) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0), *side_);
  Buffer y = upload_u32(iota_u32(64));
  begin(stream());
  order(stream(), *side_);
  EXPECT_THAT(add_one(y, x, 64, *side_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("argument 1: it was last used on this stream (stream 1"),
                             HasSubstr("before it was forked into the recording"))));
  order(*side_, stream());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());  // the refusal doomed nothing
  EXPECT_THAT(read_u32(x, *side_), Each(0u));

  order(*side_, stream());  // eagerly: the origin's replays come after the upload
  begin(stream());
  order(stream(), *side_);
  ASSERT_THAT(add_one(y, x, 64, *side_), IsOk());
  order(*side_, stream());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray(iota_u32(64, 1)));
}

// A join orders the origin after the side stream's recorded work, not after its eager work
// before the fork: the origin may not read what stream 1 uploaded.
TEST_F(ForkOrderTest, AJoinDoesNotOrderTheOriginAfterTheSideStreamsWorkBeforeItsFork) {
  Buffer x = upload_u32(iota_u32(64), *side_);
  Buffer y = upload_u32(iota_u32(64));
  Buffer z = upload_u32(iota_u32(64));
  begin(stream());
  order(stream(), *side_);
  ASSERT_THAT(add_one(y, z, 64, *side_), IsOk());
  order(*side_, stream());
  EXPECT_THAT(add_one(x, y, 64),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("last written on another stream of this device (stream 1"),
                             HasSubstr("nothing orders this stream (stream 0)"))));
  ASSERT_THAT(add_one(z, y, 64), IsOk());  // what stream 1 recorded is ordered by the join
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(y), ElementsAreArray(iota_u32(64, 2)));
}

// A side stream's eager order is not the graph's either: stream 1 waited eagerly for stream 2's
// upload of x before its fork, but nothing orders the origin's replays after that upload.
TEST_F(ForkOrderTest, ASideStreamsEagerOrderBeforeItsForkOrdersNothingInTheGraph) {
  Buffer x = upload_u32(iota_u32(64), *third_);
  Buffer y = upload_u32(iota_u32(64));
  order(*third_, *side_);
  begin(stream());
  order(stream(), *side_);
  EXPECT_THAT(add_one(x, y, 64, *side_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("argument 0: it was last written on another stream of "
                                       "this device (stream 2"),
                             HasSubstr("nothing orders this stream (stream 1)"))));
  order(*side_, stream());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

// An abort with a side stream forked in: the side stream's buffers are still its own.
TEST_F(ForkOrderTest, AnAbortLeavesTheSideStreamsBuffersWithTheirUsers) {
  Buffer own = upload_u32(iota_u32(64), *side_);
  Buffer read_only = upload_u32(iota_u32(64), *side_);
  order(*side_, stream());  // the graph would replay after the uploads
  begin(stream());
  order(stream(), *side_);
  ASSERT_THAT(add_one(read_only, own, 64, *side_), IsOk());
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_EQ(side_->capture_state(), CaptureState::no_capture);
  // Claimed (the abort's failure), still last written on stream 1: stream 2 is not ordered
  // after that, stream 1 reads the failure and writes it anew.
  EXPECT_THAT(device_->read(own, *third_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("last written on another stream of this device (stream 1"),
                             HasSubstr("nothing orders this stream (stream 2)"))));
  EXPECT_THAT(device_->read(own, *side_),
              StatusIs(Errc::doomed, CUDA_SUCCESS, HasSubstr("abort_capture")));
  EXPECT_THAT(read_u32(read_only, *side_), ElementsAreArray(iota_u32(64)));
  ASSERT_THAT(add_one(read_only, own, 64, *side_), IsOk());
  EXPECT_THAT(read_u32(own, *side_), ElementsAreArray(iota_u32(64, 1)));
}

// The same for a refusal at end_capture (side work never joined back), and for the origin's own
// recorded uses of a buffer of another stream.
TEST_F(ForkOrderTest, ARefusedRecordingLeavesEveryBufferWithTheUsersItHadBefore) {
  Buffer own = upload_u32(iota_u32(64), *side_);
  Buffer lent = upload_u32(iota_u32(64), *third_);
  order(*third_, stream());  // stream 0 may use `lent`
  order(*side_, stream());   // the graph would replay after `own`'s upload
  begin(stream());
  ASSERT_THAT(add_one(lent, lent, 64), IsOk());  // the origin's recorded write
  order(stream(), *side_);
  ASSERT_THAT(add_one(own, own, 64, *side_), IsOk());  // never joined back
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("not joined back")));
  // Each is still last written where it was uploaded; the claims carry the refusal.
  EXPECT_THAT(device_->read(own, *side_),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("not joined back")));
  ASSERT_THAT(device_->fill(own, std::uint32_t{3}, *side_), IsOk());
  EXPECT_THAT(read_u32(own, *side_), Each(3u));
  EXPECT_THAT(device_->read(lent, *third_),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("not joined back")));
  ASSERT_THAT(device_->fill(lent, std::uint32_t{4}, *third_), IsOk());
  EXPECT_THAT(read_u32(lent, *third_), Each(4u));
}

// A graph made: its side streams' uses were the graph's and run on the origin's stream, so they
// count as the origin's (at the close).
TEST_F(ForkOrderTest, AGraphsSideStreamUsesCountAsTheOrigins) {
  Buffer own = upload_u32(iota_u32(64), *side_);
  Buffer x = upload_u32(iota_u32(64));  // (stream 0 has enqueued work: its close is a position)
  order(*side_, stream());  // the graph replays after `own`'s upload
  begin(stream());
  order(stream(), *side_);
  ASSERT_THAT(add_one(own, own, 64, *side_), IsOk());
  order(*side_, stream());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_THAT(device_->read(own, *side_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("last written on another stream of this device (stream 0"),
                             HasSubstr("nothing orders this stream (stream 1)"))));
}

}  // namespace
}  // namespace graphcap::testing
