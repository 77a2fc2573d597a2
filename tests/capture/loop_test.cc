// Device-side loops on every driver: Device::begin_while / end_while record a WHILE
// node whose body is what the stream records in between; a kernel given Arg::condition(loop) sets
// the condition on the device. Replays run the body until it is 0, with the same results on the
// fake and the H200; misuse is Errc::graph_state with nothing changed.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/try.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class LoopTest : public DeviceFixture {
 protected:
  void SetUp() override {
    DeviceFixture::SetUp();
    if (HasFatalFailure()) return;
    Result<Kernel> countdown = module_.kernel("countdown");
    Result<Kernel> set_condition = module_.kernel("set_condition");
    ASSERT_THAT(countdown, IsOk());
    ASSERT_THAT(set_condition, IsOk());
    countdown_ = *countdown;
    set_condition_ = *set_condition;
    counter_ = upload_u32({0});
    iterations_ = upload_u32({0});
    out_ = upload_u32({0});
  }

  // The step: counter = k; iterations = 0; while (counter > 0) { --counter; ++iterations };
  // out = iterations + 1 (after the loop).
  Result<void> record_countdown_step(std::uint32_t k, bool first = true) {
    GRAPHCAP_TRY(fill(counter_, k, 1));
    GRAPHCAP_TRY(fill(iterations_, 0, 1));
    Result<Loop> loop = device_->begin_while(stream(), first);
    if (!loop) return loop.error();
    GRAPHCAP_TRY(countdown(*loop));
    GRAPHCAP_TRY(device_->end_while(stream(), *loop));
    return add_one(iterations_, out_, 1);
  }
  Result<void> countdown(const Loop& loop) {
    return device_->launch(stream(), countdown_, LaunchDims{{1, 1, 1}, {1, 1, 1}, 0},
                           {Arg::condition(loop), Arg::inout(counter_), Arg::inout(iterations_)});
  }
  Result<void> set(const Loop& loop, std::uint32_t value) {
    return device_->launch(stream(), set_condition_, LaunchDims{{1, 1, 1}, {1, 1, 1}, 0},
                           {Arg::condition(loop), Arg::value(value)});
  }
  void begin() {
    ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
    ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  }

  Kernel countdown_, set_condition_;
  Buffer counter_, iterations_, out_;
};

TEST_F(LoopTest, ARecordedLoopRunsItsBodyUntilAKernelClearsTheConditionOnEveryReplay) {
  begin();
  ASSERT_THAT(record_countdown_step(5), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  // The graph's own nodes: fill, fill, the WHILE node, add_one (the body is the node's).
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_CONDITIONAL), 1u);
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_KERNEL), 3u);
  for (int replay = 0; replay < 2; ++replay) {
    ASSERT_THAT(graph->replay(), IsOk());
    EXPECT_EQ(read_u32(iterations_), std::vector<std::uint32_t>{5});
    EXPECT_EQ(read_u32(counter_), std::vector<std::uint32_t>{0});
    EXPECT_EQ(read_u32(out_), std::vector<std::uint32_t>{6});
  }
}

TEST_F(LoopTest, AFirstConditionOfFalseSkipsTheBody) {
  begin();
  ASSERT_THAT(record_countdown_step(5, /*first=*/false), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(iterations_), std::vector<std::uint32_t>{0});
  EXPECT_EQ(read_u32(counter_), std::vector<std::uint32_t>{5});
  EXPECT_EQ(read_u32(out_), std::vector<std::uint32_t>{1});
}

TEST_F(LoopTest, NestedLoopsRunTheInnerBodyPerOuterIterationWhenAKernelReArmsIt) {
  Buffer inner_counter = upload_u32({0});
  Buffer inner_iterations = upload_u32({0});
  begin();
  ASSERT_THAT(fill(counter_, 3, 1), IsOk());
  ASSERT_THAT(fill(iterations_, 0, 1), IsOk());
  ASSERT_THAT(fill(inner_iterations, 0, 1), IsOk());
  Result<Loop> outer = device_->begin_while(stream());
  ASSERT_THAT(outer, IsOk());
  ASSERT_THAT(fill(inner_counter, 4, 1), IsOk());
  Result<Loop> inner = device_->begin_while(stream());
  ASSERT_THAT(inner, IsOk());
  ASSERT_THAT(device_->launch(stream(), countdown_, LaunchDims{{1, 1, 1}, {1, 1, 1}, 0},
                              {Arg::condition(*inner), Arg::inout(inner_counter),
                               Arg::inout(inner_iterations)}),
              IsOk());
  ASSERT_THAT(device_->end_while(stream(), *inner), IsOk());
  // The inner condition is 0 now and its first value applies once per replay: re-arm it.
  ASSERT_THAT(set(*inner, 1), IsOk());
  ASSERT_THAT(countdown(*outer), IsOk());
  ASSERT_THAT(device_->end_while(stream(), *outer), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(iterations_), std::vector<std::uint32_t>{3});
  EXPECT_EQ(read_u32(inner_iterations), std::vector<std::uint32_t>{12});
}

TEST_F(LoopTest, ABufferDroppedAfterTheRecordingStaysPinnedForTheLoopBody) {
  Buffer scratch = upload_u32({0});
  begin();
  ASSERT_THAT(fill(counter_, 2, 1), IsOk());
  ASSERT_THAT(fill(iterations_, 0, 1), IsOk());
  Result<Loop> loop = device_->begin_while(stream());
  ASSERT_THAT(loop, IsOk());
  ASSERT_THAT(add_one(iterations_, scratch, 1), IsOk());  // scratch = iterations + 1
  ASSERT_THAT(countdown(*loop), IsOk());
  ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  ASSERT_THAT(add_one(scratch, out_, 1), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  scratch = Buffer{};  // the body still writes it on every replay
  Buffer reuse = upload_u32({1000});
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(out_), std::vector<std::uint32_t>{3});  // scratch = 1 + 1 in the last pass
  EXPECT_EQ(read_u32(reuse), std::vector<std::uint32_t>{1000});
}

TEST_F(LoopTest, AnInputCarryingAFailureInTheBodyDoomsTheRecordingAndClaimsItsWrites) {
  Buffer failed = upload_u32({0});
  // Give `failed` a failure: an abandoned recording that wrote it (in a loop body) claims it.
  begin();
  Result<Loop> first = device_->begin_while(stream());
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(fill(failed, 1, 1), IsOk());
  ASSERT_THAT(countdown(*first), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), StatusIs(Errc::graph_state));  // loop open
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_THAT(device_->read(failed, stream()), StatusIs(Errc::doomed));
  // The loop's own buffers were claimed too (countdown writes them): produce them again.
  ASSERT_THAT(fill(counter_, 0, 1), IsOk());
  ASSERT_THAT(fill(iterations_, 0, 1), IsOk());
  // A body that reads it is skipped, so the recording is doomed and what it writes is claimed.
  begin();
  Result<Loop> second = device_->begin_while(stream());
  ASSERT_THAT(second, IsOk());
  EXPECT_THAT(add_one(failed, out_, 1), StatusIs(Errc::failed_buffer));
  ASSERT_THAT(countdown(*second), IsOk());
  ASSERT_THAT(device_->end_while(stream(), *second), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), StatusIs(Errc::doomed));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_THAT(device_->read(out_, stream()),
              StatusIs(Errc::doomed, ::testing::_, HasSubstr("launch of add_one")));
}

TEST_F(LoopTest, AbortWithLoopsOpenLeavesTheStreamUsable) {
  begin();
  Result<Loop> outer = device_->begin_while(stream());
  ASSERT_THAT(outer, IsOk());
  Result<Loop> inner = device_->begin_while(stream());
  ASSERT_THAT(inner, IsOk());
  ASSERT_THAT(countdown(*inner), IsOk());
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  // What the recording would have written is claimed; eager work produces it again, and a new
  // recording with a loop works.
  EXPECT_THAT(device_->read(counter_, stream()), StatusIs(Errc::doomed));
  ASSERT_THAT(fill(counter_, 0, 1), IsOk());
  ASSERT_THAT(fill(iterations_, 0, 1), IsOk());
  ASSERT_THAT(fill(out_, 7, 1), IsOk());
  EXPECT_EQ(read_u32(out_), std::vector<std::uint32_t>{7});
  begin();
  ASSERT_THAT(record_countdown_step(2), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(iterations_), std::vector<std::uint32_t>{2});
}

TEST_F(LoopTest, StreamHandleIsTheInnermostBodyStreamWhileALoopIsOpen) {
  const CUstream own = stream().native_handle();
  begin();
  Result<Loop> loop = device_->begin_while(stream());
  ASSERT_THAT(loop, IsOk());
  EXPECT_NE(stream().native_handle(), own);
  ASSERT_THAT(countdown(*loop), IsOk());
  ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  EXPECT_EQ(stream().native_handle(), own);
  ASSERT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(LoopTest, AnUnsafeCallDuringALoopInvalidatesTheRecordingButNeverTheBody) {
  Stream* other = add_stream();
  ASSERT_NE(other, nullptr);
  begin();
  Result<Loop> loop = device_->begin_while(stream());
  ASSERT_THAT(loop, IsOk());
  ASSERT_THAT(countdown(*loop), IsOk());
  // An unsafe call made outside graphcap in global mode invalidates the recording's capture; the
  // body's is RELAXED (an invalidated body crashed the H200's driver on every way out of it).
  EXPECT_EQ(device_->driver().cuStreamQuery(other->native_handle()),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_THAT(device_->end_while(stream(), *loop), IsOk());
  EXPECT_FALSE(loop->open());
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                       HasSubstr("no graphcap operation saw the invalidation")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  // Nothing was left capturing: eager work and a new recording with a loop work (the fake would
  // record an end of an invalidated body as the H200's crash: TearDown checks there is none).
  ASSERT_THAT(fill(counter_, 0, 1), IsOk());
  ASSERT_THAT(fill(iterations_, 0, 1), IsOk());
  begin();
  ASSERT_THAT(record_countdown_step(3), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(iterations_), std::vector<std::uint32_t>{3});
}

// ---- misuse: Errc::graph_state, nothing changed -----------------------------------------------

TEST_F(LoopTest, ALoopOutsideARecordingIsRefused) {
  EXPECT_THAT(device_->begin_while(stream()),
              StatusIs(Errc::graph_state, ::testing::_, HasSubstr("begin_while")));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  EXPECT_THAT(device_->begin_while(stream()), StatusIs(Errc::graph_state));
  EXPECT_EQ(stream().capture_state(), CaptureState::prepare);
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
}

TEST_F(LoopTest, EndWhileOfAnEmptyOrEndedLoopIsRefused) {
  Loop empty;
  EXPECT_THAT(device_->end_while(stream(), empty), StatusIs(Errc::graph_state));
  begin();
  Result<Loop> loop = device_->begin_while(stream());
  ASSERT_THAT(loop, IsOk());
  ASSERT_THAT(countdown(*loop), IsOk());
  Loop copy = *loop;
  ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  EXPECT_FALSE(loop->open());
  EXPECT_THAT(device_->end_while(stream(), copy),
              StatusIs(Errc::graph_state, ::testing::_, HasSubstr("not open")));
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(LoopTest, EndCaptureInsideAnOpenLoopIsRefusedAndTheRecordingStaysOpen) {
  begin();
  Result<Loop> loop = device_->begin_while(stream());
  ASSERT_THAT(loop, IsOk());
  ASSERT_THAT(countdown(*loop), IsOk());
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::graph_state, ::testing::_, HasSubstr("end_while")));
  EXPECT_EQ(stream().capture_state(), CaptureState::capture);
  EXPECT_TRUE(loop->open());
  ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(LoopTest, LoopsEndInnermostFirst) {
  begin();
  Result<Loop> outer = device_->begin_while(stream());
  Result<Loop> inner = device_->begin_while(stream());
  ASSERT_THAT(outer, IsOk());
  ASSERT_THAT(inner, IsOk());
  ASSERT_THAT(countdown(*inner), IsOk());
  EXPECT_THAT(device_->end_while(stream(), *outer),
              StatusIs(Errc::graph_state, ::testing::_, HasSubstr("innermost")));
  EXPECT_TRUE(outer->open());
  ASSERT_THAT(device_->end_while(stream(), *inner), IsOk());
  ASSERT_THAT(countdown(*outer), IsOk());
  ASSERT_THAT(device_->end_while(stream(), *outer), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(LoopTest, AConditionOutsideItsRecordingIsRefused) {
  begin();
  Result<Loop> loop = device_->begin_while(stream());
  ASSERT_THAT(loop, IsOk());
  ASSERT_THAT(countdown(*loop), IsOk());
  ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  ASSERT_THAT(device_->end_capture(stream()), IsOk());
  // Eagerly, and in a later recording: the handle is the old graph's.
  EXPECT_THAT(set(*loop, 0), StatusIs(Errc::invalid_argument, ::testing::_, HasSubstr("eager")));
  begin();
  EXPECT_THAT(set(*loop, 0),
              StatusIs(Errc::invalid_argument, ::testing::_, HasSubstr("another recording")));
  EXPECT_THAT(set(Loop{}, 0), StatusIs(Errc::invalid_argument, ::testing::_, HasSubstr("empty")));
  EXPECT_THAT(device_->end_capture(stream()), IsOk());  // refusals doom nothing
}

TEST_F(LoopTest, EventsInsideALoopBodyAreRefused) {
  Event event = new_event();
  begin();
  // In the recording, outside the loop:
  ASSERT_THAT(device_->record_event(event, stream()), IsOk());
  Result<Loop> loop = device_->begin_while(stream());
  ASSERT_THAT(loop, IsOk());
  EXPECT_THAT(device_->wait(stream(), event),
              StatusIs(Errc::graph_state, ::testing::_, HasSubstr("loop body")));
  EXPECT_THAT(device_->record_event(event, stream()), StatusIs(Errc::graph_state));
  ASSERT_THAT(countdown(*loop), IsOk());
  ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(LoopTest, ASideStreamCannotBeginALoop) {
  Stream* side = add_stream();
  ASSERT_NE(side, nullptr);
  Event fork = new_event();
  Event join = new_event();
  begin();
  ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side, fork), IsOk());
  EXPECT_THAT(device_->begin_while(*side),
              StatusIs(Errc::graph_state, ::testing::_, HasSubstr("forked")));
  ASSERT_THAT(device_->record_event(join, *side), IsOk());
  ASSERT_THAT(device_->wait(stream(), join), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

// A loop whose condition starts true and that no recorded kernel takes
// would never end on the GPU: end_while refuses it, and the loop stays open to be mended.
TEST_F(LoopTest, ALoopStartingTrueThatNoKernelCanEndIsRefusedAndStaysOpen) {
  begin();
  Result<Loop> loop = device_->begin_while(stream(), true);
  ASSERT_THAT(loop, IsOk());
  ASSERT_THAT(add_one(counter_, out_, 1), IsOk());
  EXPECT_THAT(device_->end_while(stream(), *loop),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("Arg::condition")));
  EXPECT_THAT(device_->end_capture(stream()), StatusIs(Errc::graph_state));  // still open
  ASSERT_THAT(set(*loop, 0), IsOk());
  ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(out_), std::vector<std::uint32_t>{1});
}

}  // namespace
}  // namespace graphcap::testing
