// Device::record: prepare, the step once eagerly (the warm-up), begin, the step again
// (recorded), end, in one call; on any failure the stream is left not capturing. And the other
// "one way to do each thing" names: native_handle() on every wrapper, GraphCache::graph for
// Graph::set on a cached graph. On every driver.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class RecordTest : public DeviceFixture {};

TEST_F(RecordTest, WarmsUpThenRecordsTheStep) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0));
  int runs = 0;
  Result<Graph> graph = device_->record(stream(), [&]() -> Result<void> {
    ++runs;
    return add_one(x, x, 64);
  });
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(runs, 2) << "warm-up and recording";
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_THAT(read_u32(x), Each(1u)) << "the warm-up ran; the recording did not";
  ASSERT_THAT(graph->replay(), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x), Each(3u));
}

TEST_F(RecordTest, AStepReturningVoidIsAStepToo) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0));
  Result<Graph> graph = device_->record(stream(), [&] { (void)fill(x, 5, 64); });
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_KERNEL), 1u);
}

TEST_F(RecordTest, AFailingWarmUpLeavesTheStreamNotCapturingAndUsable) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0));
  Result<Graph> graph = device_->record(stream(), [&]() -> Result<void> {
    return Error(Errc::invalid_argument, "the step said no");
  });
  EXPECT_THAT(graph, StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                              HasSubstr("record (the warm-up run of the step): the step said no")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_THAT(device_->record(stream(), [&] { return add_one(x, x, 64); }), IsOk());
}

TEST_F(RecordTest, AFailingRecordedRunIsAbortedAndClaimsItsOutputs) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0));
  int runs = 0;
  Result<Graph> graph = device_->record(stream(), [&]() -> Result<void> {
    if (++runs == 2) return Error(Errc::invalid_argument, "not the second time");
    return add_one(x, x, 64);
  });
  EXPECT_THAT(graph, StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                              HasSubstr("record (the recorded run of the step)")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  ASSERT_THAT(device_->sync(stream()), IsOk());
}

TEST_F(RecordTest, AStreamAlreadyInAWindowIsLeftAsItWas) {
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  EXPECT_THAT(device_->record(stream(), [] { return Result<void>{}; }),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("record: prepare_capture")));
  EXPECT_EQ(stream().capture_state(), CaptureState::prepare) << "not record's to abort";
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
}

// Whatever leaves record (an exception from the step, in either run; a refusal of end_capture
// that keeps the recording open), the stream is left as record found it: not capturing, usable.
TEST_F(RecordTest, AStepThatThrowsInTheWarmUpLeavesTheStreamNotCapturing) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0));
  EXPECT_THROW((void)device_->record(stream(), [&]() -> Result<void> {
    throw std::runtime_error("the warm-up threw");
  }), std::runtime_error);
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  ASSERT_THAT(device_->record(stream(), [&] { return add_one(x, x, 64); }), IsOk());
  EXPECT_THAT(read_u32(x), Each(1u));
}

TEST_F(RecordTest, AStepThatThrowsWhileRecordedLeavesTheStreamNotCapturing) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0));
  EXPECT_THROW((void)device_->record(stream(), [&]() -> Result<void> {
    if (stream().capture_state() == CaptureState::capture) {
      throw std::runtime_error("the recorded run threw");
    }
    return add_one(x, x, 64);
  }), std::runtime_error);
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  ASSERT_THAT(device_->sync(stream()), IsOk());
  Result<Graph> graph = device_->record(stream(), [&] { return add_one(x, x, 64); });
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
}

TEST_F(RecordTest, AnEndRefusedWithALoopOpenLeavesTheStreamNotCapturing) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0));
  Result<Graph> graph = device_->record(stream(), [&]() -> Result<void> {
    if (stream().capture_state() == CaptureState::capture) {
      if (Result<Loop> loop = device_->begin_while(stream(), false); !loop) return loop.error();
    }
    return add_one(x, x, 64);
  });
  EXPECT_THAT(graph, StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("loop")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  Buffer y = upload_u32(std::vector<std::uint32_t>(64, 0));  // x is claimed by the abort
  EXPECT_THAT(device_->record(stream(), [&] { return add_one(y, y, 64); }), IsOk());
}

TEST_F(RecordTest, AnEndRefusedForAConditionThatSteersNoBranchLeavesTheStreamNotCapturing) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0));
  Result<Graph> graph = device_->record(stream(), [&]() -> Result<void> {
    if (stream().capture_state() == CaptureState::capture) {
      if (Result<Condition> c = device_->condition(stream()); !c) return c.error();
    }
    return add_one(x, x, 64);
  });
  EXPECT_THAT(graph, StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("steers no branch")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  Buffer y = upload_u32(std::vector<std::uint32_t>(64, 0));  // x is claimed by the abort
  EXPECT_THAT(device_->record(stream(), [&] { return add_one(y, y, 64); }), IsOk());
}

// A recorded run that fails because the recording is doomed (an allocation the pool may not
// grow for, inside the recording) comes back as the doom, naming what doomed it, as end_capture
// says it; the step's own error is the context.
TEST_F(RecordTest, ARecordedRunFailedByADoomReturnsTheDoom) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0));
  Result<Graph> graph = device_->record(stream(), [&]() -> Result<void> {
    if (stream().capture_state() == CaptureState::capture) {
      Result<Buffer> unseen = device_->alloc(std::size_t{8} << 20, stream());
      if (!unseen) return unseen.error();
    }
    return add_one(x, x, 64);
  });
  EXPECT_THAT(graph, StatusIs(Errc::doomed, CUDA_SUCCESS,
                              AllOf(HasSubstr("record (the recorded run of the step)"),
                                    HasSubstr("recording refused"), HasSubstr("alloc"),
                                    HasSubstr("inside the recording"))));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

// A step whose recorded run fails for a reason of its own (after an operation that doomed the
// recording and whose error it dropped): the doom comes back, and the step's error is named in it.
TEST_F(RecordTest, ARecordedRunFailingAfterADoomItIgnoredReturnsTheDoomAndNamesTheStepsError) {
  Buffer x = upload_u32(std::vector<std::uint32_t>(64, 0));
  Result<Graph> graph = device_->record(stream(), [&]() -> Result<void> {
    if (stream().capture_state() == CaptureState::capture) {
      (void)device_->alloc(std::size_t{8} << 20, stream());  // dooms the recording
      return Error(Errc::invalid_argument, "the step gave up");
    }
    return add_one(x, x, 64);
  });
  EXPECT_THAT(graph, StatusIs(Errc::doomed, CUDA_SUCCESS,
                              AllOf(HasSubstr("the step gave up"),
                                    HasSubstr("inside the recording"))));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

// The old accessors (device_ptr, handle, function) stay, deprecated, for one round: they still
// answer as native_handle() does.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_F(RecordTest, EveryWrapperHasANativeHandle) {
  Buffer x = upload_u32(iota_u32(16));
  EXPECT_EQ(x.native_handle(), x.device_ptr());
  EXPECT_NE(x.native_handle(), 0u);
  EXPECT_EQ(stream().native_handle(), stream().handle());
  EXPECT_EQ(add_one_.native_handle(), add_one_.function());
  EXPECT_NE(add_one_.native_handle(), nullptr);
  EXPECT_NE(module_.native_handle(), nullptr);
  EXPECT_EQ(Module{}.native_handle(), nullptr);
  Event event = new_event();
  EXPECT_NE(event.native_handle(), nullptr);
  Result<Graph> graph = device_->record(stream(), [&] { return add_one(x, x, 16); });
  ASSERT_THAT(graph, IsOk());
  EXPECT_NE(graph->native_handle(), nullptr);
}
#pragma GCC diagnostic pop

TEST_F(RecordTest, AParamIsPatchedInEveryGraphOfACache) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(1);
  GraphCache<int> cache(*device_, stream());
  std::vector<Buffer> outs;
  for (int key = 0; key < 3; ++key) outs.push_back(upload_u32(std::vector<std::uint32_t>(64, 0)));
  auto step = [&](int key) {
    return [&, key] {
      return device_->launch(stream(), fill_, dims_for(64),
                             {Arg::out(outs[static_cast<std::size_t>(key)]), Arg::param(value),
                              Arg::value(std::uint32_t{64})});
    };
  };
  for (int key = 0; key < 3; ++key) ASSERT_THAT(cache.run(key, step(key)), IsOk());
  ASSERT_NE(cache.graph(1), nullptr);
  // Patch every cached graph, as graph_cache.h shows; the eager value follows.
  int patched = 0;
  cache.for_each_graph([&](const int&, Graph& graph) {
    EXPECT_THAT(graph.set(value, 9u), IsOk());
    ++patched;
  });
  value.set(9);
  EXPECT_EQ(patched, 3);
  for (int key = 0; key < 3; ++key) ASSERT_THAT(cache.run(key, step(key)), IsOk());
  EXPECT_EQ(cache.stats().hits, 3u);
  for (const Buffer& out : outs) EXPECT_THAT(read_u32(out), Each(9u));
  // One key's graph, through the non-const overload.
  ASSERT_THAT(cache.graph(2)->set(value, 4u), IsOk());
  ASSERT_THAT(cache.run(2, step(2)), IsOk());
  EXPECT_THAT(read_u32(outs[2]), Each(4u));
  EXPECT_EQ(cache.graph(7), nullptr);
}

}  // namespace
}  // namespace graphcap::testing
