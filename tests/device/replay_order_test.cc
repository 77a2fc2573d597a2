// A graph's replay is a use of its buffers on its stream, on every driver (docs/capture-lifecycle.md,
// "Buffers on several streams"): another stream may use what a replay wrote only once ordered after
// that replay (an event recorded after it, or a host sync of its stream), and a replay must come
// after the uses of its buffers on other streams since its last replay, as an eager use would:
// otherwise Errc::invalid_argument, and nothing is enqueued. Two graphs of two streams that share a
// buffer check each other at every replay; a re-recorded graph's old buffers keep its last
// replay's position; a destroyed graph's replays are over.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class ReplayOrderTest : public WithSideStream<DeviceFixture> {
 protected:
  void replay_after_a_write_elsewhere(bool drop_x);
};

std::vector<std::uint32_t> zeros() { return std::vector<std::uint32_t>(64, 0); }

TEST_F(ReplayOrderTest, AnEventRecordedBeforeAReplayDoesNotOrderAnotherStreamAfterIt) {
  Buffer x = upload_u32(zeros());
  Graph g = capture([&] { EXPECT_THAT(fill(x, 7, 64), IsOk()); });
  Event before = new_event();
  ASSERT_THAT(device_->record_event(before, stream()), IsOk());
  ASSERT_THAT(g.replay(), IsOk());
  ASSERT_THAT(device_->wait(*side_, before), IsOk());
  EXPECT_THAT(device_->read(x, *side_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("last written by a graph's replay on another stream of "
                                       "this device (stream 0"),
                             HasSubstr("nothing orders this stream (stream 1)"))));
  Buffer out = upload_u32(zeros(), *side_);
  EXPECT_THAT(add_one(x, out, 64, *side_), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(read_u32(out, *side_), Each(0u));  // refused before anything was enqueued
}

TEST_F(ReplayOrderTest, AnEventRecordedAfterTheReplayOrdersAnotherStreamAfterIt) {
  Buffer x = upload_u32(zeros());
  Graph g = capture([&] { EXPECT_THAT(fill(x, 7, 64), IsOk()); });
  ASSERT_THAT(g.replay(), IsOk());
  Event after = new_event();
  ASSERT_THAT(device_->record_event(after, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, after), IsOk());
  EXPECT_THAT(read_u32(x, *side_), Each(7u));
  ASSERT_THAT(device_->fill(x, std::uint32_t{9}, *side_), IsOk());  // a write after the replay
  EXPECT_THAT(read_u32(x, *side_), Each(9u));
}

TEST_F(ReplayOrderTest, AHostSyncOfItsStreamOrdersEveryStreamAfterAReplay) {
  Buffer x = upload_u32(zeros());
  Graph g = capture([&] { EXPECT_THAT(fill(x, 7, 64), IsOk()); });
  ASSERT_THAT(g.replay(), IsOk());
  ASSERT_THAT(device_->sync(stream()), IsOk());
  EXPECT_THAT(read_u32(x, *side_), Each(7u));
  ASSERT_THAT(g.replay(), IsOk());  // after the sync: not covered
  EXPECT_THAT(device_->read(x, *side_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       HasSubstr("last written by a graph's replay")));
}

// The graph (stream 0) reads x, a buffer of stream 1; stream 1 then writes x (its own buffer, so
// nothing hands it back to stream 0). The next replay must come after that write, also when x's
// last handle went after the write (`drop_x`): the graph still replays with x's memory, so the
// use outlives the handle.
void ReplayOrderTest::replay_after_a_write_elsewhere(bool drop_x) {
  Device& device = *device_;
  Buffer x = upload_u32(zeros(), *side_);
  Buffer y = upload_u32(zeros());
  Event uploaded = new_event();
  ASSERT_THAT(device.record_event(uploaded, *side_), IsOk());
  ASSERT_THAT(device.wait(stream(), uploaded), IsOk());
  Graph g = capture([&] { EXPECT_THAT(add_one(x, y, 64), IsOk()); });
  ASSERT_THAT(g.replay(), IsOk());
  Event done = new_event();
  ASSERT_THAT(device.record_event(done, stream()), IsOk());
  ASSERT_THAT(device.wait(*side_, done), IsOk());
  ASSERT_THAT(device.fill(x, std::uint32_t{4}, *side_), IsOk());
  Event written = new_event();
  ASSERT_THAT(device.record_event(written, *side_), IsOk());
  if (drop_x) x = Buffer{};
  EXPECT_THAT(g.replay(),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("replay: a buffer the graph reads was last written on "
                                       "another stream of this device (stream 1"),
                             HasSubstr("nothing orders this stream (stream 0)"))));
  EXPECT_THAT(read_u32(y), Each(1u));  // the refused replay enqueued nothing
  ASSERT_THAT(device.wait(stream(), written), IsOk());
  ASSERT_THAT(g.replay(), IsOk());
  EXPECT_THAT(read_u32(y), Each(5u));
  ASSERT_THAT(g.replay(), IsOk());  // ordered once: later replays take the hot path again
}

TEST_F(ReplayOrderTest, AReplayMustComeAfterAnotherStreamsUseOfItsBuffersSince) {
  replay_after_a_write_elsewhere(/*drop_x=*/false);
}

TEST_F(ReplayOrderTest, AUseElsewhereBeforeTheBuffersLastHandleWentStillOrdersTheNextReplay) {
  replay_after_a_write_elsewhere(/*drop_x=*/true);
}

// A buffer of the graph's own stream written elsewhere is handed back to it (its stream waits
// for that use), so the next replay is ordered after it already.
TEST_F(ReplayOrderTest, AUseElsewhereOfABufferOfTheGraphsStreamIsHandedBackBeforeTheReplay) {
  Buffer x = upload_u32(zeros());
  Buffer y = upload_u32(zeros());
  Graph g = capture([&] { EXPECT_THAT(add_one(x, y, 64), IsOk()); });
  ASSERT_THAT(g.replay(), IsOk());
  Event done = new_event();
  ASSERT_THAT(device_->record_event(done, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, done), IsOk());
  ASSERT_THAT(device_->fill(x, std::uint32_t{4}, *side_), IsOk());
  ASSERT_THAT(g.replay(), IsOk());
  EXPECT_THAT(read_u32(y), Each(5u));
}

// A read elsewhere does not conflict with a replay that only reads.
TEST_F(ReplayOrderTest, ReadsOnTwoStreamsNeedNoOrderBetweenThem) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 2));
  Buffer y = upload_u32(zeros());
  Graph g = capture([&] { EXPECT_THAT(add_one(x, y, 64), IsOk()); });
  Event uploaded = new_event();
  ASSERT_THAT(device_->record_event(uploaded, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, uploaded), IsOk());
  ASSERT_THAT(g.replay(), IsOk());
  EXPECT_THAT(read_u32(x, *side_), Each(2u));
  ASSERT_THAT(g.replay(), IsOk());
  EXPECT_THAT(read_u32(y), Each(3u));
}

// g0 (stream 0) writes x, g1 (stream 1) reads it: neither replay stamps anything, so each checks
// the other's last replay every time.
TEST_F(ReplayOrderTest, GraphsOfTwoStreamsThatShareABufferAreOrderedAtEveryReplay) {
  Buffer x = upload_u32(zeros());
  Buffer y = upload_u32(zeros(), *side_);
  Graph g0 = capture([&] { EXPECT_THAT(fill(x, 7, 64), IsOk()); });
  Event recorded = new_event();
  ASSERT_THAT(device_->record_event(recorded, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, recorded), IsOk());
  ASSERT_THAT(device_->prepare_capture(*side_), IsOk());
  ASSERT_THAT(add_one(x, y, 64, *side_), IsOk());
  ASSERT_THAT(device_->begin_capture(*side_), IsOk());
  ASSERT_THAT(add_one(x, y, 64, *side_), IsOk());
  Result<Graph> g1 = device_->end_capture(*side_);
  ASSERT_THAT(g1, IsOk());
  // (g1's recording read x on stream 1: stream 0 writes it only after that, as for eager work.)
  Event g1_recorded = new_event();
  ASSERT_THAT(device_->record_event(g1_recorded, *side_), IsOk());
  ASSERT_THAT(device_->wait(stream(), g1_recorded), IsOk());

  ASSERT_THAT(g0.replay(), IsOk());
  EXPECT_THAT(g1->replay(), StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                                     AllOf(HasSubstr("replay: a buffer the graph reads was last "
                                                     "written by a graph's replay"),
                                           HasSubstr("(stream 0"))));
  Event replayed = new_event();
  ASSERT_THAT(device_->record_event(replayed, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, replayed), IsOk());
  ASSERT_THAT(g1->replay(), IsOk());
  // g0 writes what g1 read: it must come after g1's replay.
  EXPECT_THAT(g0.replay(), StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                                    HasSubstr("read by a graph's replay on another stream")));
  Event read = new_event();
  ASSERT_THAT(device_->record_event(read, *side_), IsOk());
  ASSERT_THAT(device_->wait(stream(), read), IsOk());
  EXPECT_THAT(g0.replay(), IsOk());
  EXPECT_THAT(read_u32(y, *side_), Each(8u));  // (a read waits for its stream: a host sync)
}

// Re-recorded to write y instead of x: replays of the old executable may still be queued, so x
// keeps the last one's position.
TEST_F(ReplayOrderTest, AReRecordedGraphsOldBuffersKeepItsLastReplay) {
  Buffer x = upload_u32(zeros());
  Buffer y = upload_u32(zeros());
  Graph g = capture([&] { EXPECT_THAT(fill(x, 7, 64), IsOk()); });
  Event before = new_event();
  ASSERT_THAT(device_->record_event(before, stream()), IsOk());
  ASSERT_THAT(g.replay(), IsOk());
  ASSERT_THAT(rerecord(g, [&] { EXPECT_THAT(fill(y, 3, 64), IsOk()); }), IsOk());
  ASSERT_THAT(device_->wait(*side_, before), IsOk());
  EXPECT_THAT(device_->read(x, *side_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       HasSubstr("last written by a graph's replay")));
  Event after = new_event();
  ASSERT_THAT(device_->record_event(after, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, after), IsOk());
  EXPECT_THAT(read_u32(x, *side_), Each(7u));
}

// Destroying a graph waits for its stream (its replays may still run there): once the host has
// seen that finish, every stream is ordered after what the stream had enqueued, as after a sync.
TEST_F(ReplayOrderTest, DestroyingAGraphOrdersEveryStreamAfterItsStreamsEarlierWork) {
  Buffer x = upload_u32(zeros());
  Buffer y = upload_u32(zeros());
  Graph g = capture([&] { EXPECT_THAT(fill(y, 7, 64), IsOk()); });
  ASSERT_THAT(fill(x, 5, 64), IsOk());
  ASSERT_THAT(g.replay(), IsOk());
  ASSERT_THAT(g.destroy(), IsOk());
  EXPECT_THAT(read_u32(x, *side_), Each(5u));
  EXPECT_THAT(read_u32(y, *side_), Each(7u));
}

// Destroying a graph waits for its replays: they are no longer uses.
TEST_F(ReplayOrderTest, ADestroyedGraphsReplaysAreNoLongerUses) {
  Buffer x = upload_u32(zeros());
  Graph g = capture([&] { EXPECT_THAT(fill(x, 7, 64), IsOk()); });
  Event recorded = new_event();
  ASSERT_THAT(device_->record_event(recorded, stream()), IsOk());
  ASSERT_THAT(g.replay(), IsOk());
  ASSERT_THAT(g.destroy(), IsOk());
  ASSERT_THAT(device_->wait(*side_, recorded), IsOk());
  EXPECT_THAT(read_u32(x, *side_), Each(7u));
}

}  // namespace
}  // namespace graphcap::testing

namespace graphcap::testing {
namespace {

// A failure a buffer of another stream carries reaches the graphs that replay with it: a replay
// reading it is skipped (its outputs carry the reason), whichever stream owns the buffer.
TEST_F(ReplayOrderTest, AReplayReadingAFailedBufferOfAnotherStreamIsSkipped) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 1), *side_);
  Buffer y = upload_u32(zeros());
  Event uploaded = new_event();
  ASSERT_THAT(device_->record_event(uploaded, *side_), IsOk());
  ASSERT_THAT(device_->wait(stream(), uploaded), IsOk());
  Graph g = capture([&] { EXPECT_THAT(add_one(x, y, 64), IsOk()); });
  Event recorded = new_event();
  ASSERT_THAT(device_->record_event(recorded, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, recorded), IsOk());
  // Stream 1 records a write of x and abandons it: x carries the refusal.
  ASSERT_THAT(device_->prepare_capture(*side_), IsOk());
  ASSERT_THAT(device_->begin_capture(*side_), IsOk());
  ASSERT_THAT(device_->fill(x, std::uint32_t{9}, *side_), IsOk());
  ASSERT_THAT(device_->abort_capture(*side_), IsOk());
  ASSERT_TRUE(x.failure().has_value());

  EXPECT_THAT(g.replay(), StatusIs(Errc::failed_buffer, CUDA_SUCCESS,
                                   HasSubstr("a buffer the graph reads carries an error")));
  ASSERT_TRUE(y.failure().has_value());  // its output says why
  EXPECT_THAT(y.failure()->message(), HasSubstr("abandoned"));
  EXPECT_THAT(device_->sync(stream()), StatusIs(Errc::failed_buffer));  // queued there too

  ASSERT_THAT(device_->fill(x, std::uint32_t{9}, *side_), IsOk());  // written whole: holds data
  EXPECT_FALSE(x.failure().has_value());
  Event written = new_event();
  ASSERT_THAT(device_->record_event(written, *side_), IsOk());
  ASSERT_THAT(device_->wait(stream(), written), IsOk());
  ASSERT_THAT(g.replay(), IsOk());
  EXPECT_FALSE(y.failure().has_value());  // produced whole by the replay
  EXPECT_THAT(read_u32(y), Each(10u));
}

}  // namespace
}  // namespace graphcap::testing
