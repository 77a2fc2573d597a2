// GraphCache on every driver: lazy recording, replay on a hit, exactly one execution of the step
// per run whatever happens, fallbacks for refused recordings, giving up, invalidate + re-record
// through exec update, eviction by count and by bytes.
#include <graphcap/graph_cache.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class GraphCacheTest : public DeviceFixture {
 protected:
  void SetUp() override {
    DeviceFixture::SetUp();
    if (HasFatalFailure()) return;
    state_ = upload_u32(std::vector<std::uint32_t>(kN, 0));
    previous_sink_ = set_log_sink([this](LogLevel level, std::string_view message) {
      if (level == LogLevel::warn) warnings_.emplace_back(message);
    });
  }
  void TearDown() override {
    set_log_sink(std::move(previous_sink_));
    DeviceFixture::TearDown();
  }

  // The step: state += 1 through an intermediate of `bucket` elements' worth of bytes (so steps
  // of different buckets differ in shape), each run counted.
  Result<void> step(std::uint32_t bucket) {
    ++executions_;
    Result<Buffer> scratch =
        device_->alloc((kN + bucket * 64) * sizeof(std::uint32_t), stream());
    if (!scratch) return scratch.error();
    if (Result<void> ok = add_one(state_, *scratch, kN); !ok) return ok;
    return device_->launch(stream(), copy_, dims_for(kN),
                           {Arg::in(*scratch), Arg::out(state_), Arg::value(kN)});
  }
  // A result the step allocates: a fresh buffer of kN words into `out`, filled with `value`.
  Result<void> fresh_result(Buffer& out, std::uint32_t value) {
    Result<Buffer> made = device_->alloc(kN * sizeof(std::uint32_t), stream());
    if (!made) return made.error();
    out = *made;
    return device_->launch(stream(), fill_, dims_for(kN),
                           {Arg::out(out), Arg::value(value), Arg::value(kN)});
  }
  std::vector<std::uint32_t> state() { return read_u32(state_); }
  static std::vector<std::uint32_t> all(std::uint32_t v) {
    return std::vector<std::uint32_t>(kN, v);
  }

  static constexpr std::uint32_t kN = 256;
  // Memory a recording asks for that its warm-up never did: more than a pool on virtual memory
  // maps for these steps (one 2 MiB granule), so the recording is refused on both layouts (issue
  // 25: a pool's recording may use what is already mapped beyond its plan; it was 1 MiB before).
  static constexpr std::size_t kUnseen = std::size_t{8} << 20;
  Buffer state_;
  int executions_ = 0;
  std::vector<std::string> warnings_;
  LogSink previous_sink_;
};

TEST_F(GraphCacheTest, AKeyIsRecordedOnItsFirstRunAndReplayedAfter) {
  GraphCache<std::uint32_t> cache(*device_, stream());
  for (int run = 0; run < 5; ++run) {
    ASSERT_THAT(cache.run(8, [&] { return step(8); }), IsOk());
  }
  // Every run had the effect of exactly one execution: five increments.
  EXPECT_THAT(state(), ElementsAreArray(all(5)));
  EXPECT_EQ(executions_, 2) << "the warm-up and the recording; then four replays";
  const GraphCacheStats stats = cache.stats();
  EXPECT_EQ(stats.captures, 1u);
  EXPECT_EQ(stats.hits, 4u);
  EXPECT_EQ(stats.fallbacks, 0u);
  EXPECT_GT(stats.bytes, 0u);
  EXPECT_TRUE(cache.recorded(8));
}

TEST_F(GraphCacheTest, KeysAreRecordedLazilyAndServedInAnyOrder) {
  GraphCache<std::uint32_t> cache(*device_, stream());
  const std::uint32_t order[] = {1, 4, 1, 16, 4, 4, 16, 1};
  for (std::uint32_t bucket : order) {
    ASSERT_THAT(cache.run(bucket, [&] { return step(bucket); }), IsOk());
  }
  EXPECT_THAT(state(), ElementsAreArray(all(8)));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.stats().captures, 3u);
  EXPECT_EQ(cache.stats().hits, 5u);
  ASSERT_NE(cache.pool(), nullptr) << "the cache's graphs share one pool";
}

TEST_F(GraphCacheTest, ARefusedRecordingFallsBackWithTheWarmUpsResultAndGivesUpAfterN) {
  GraphCacheOptions options;
  options.give_up_after = 2;
  GraphCache<std::string> cache(*device_, stream(), options);
  // A step that behaves differently when recorded: it asks for memory the warm-up never did, so
  // the recording is refused (the pool may not grow inside a recording).
  int calls = 0;
  auto shifty = [&]() -> Result<void> {
    if (++calls % 2 == 0) {
      Result<Buffer> extra = device_->alloc(kUnseen, stream());
      if (!extra) return extra.error();
    }
    return step(1);
  };
  ASSERT_THAT(cache.run("shifty", shifty), IsOk());
  EXPECT_THAT(state(), ElementsAreArray(all(1))) << "the warm-up ran it once, and it stands";
  EXPECT_EQ(cache.stats().fallbacks, 1u);
  EXPECT_FALSE(cache.recorded("shifty"));
  ASSERT_THAT(cache.run("shifty", shifty), IsOk());  // refused again: given up
  EXPECT_THAT(state(), ElementsAreArray(all(2)));
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_THAT(warnings_[0], HasSubstr("refused 2 times in a row"));
  EXPECT_THAT(warnings_[0], HasSubstr("inside the recording"));
  const int before = calls;
  ASSERT_THAT(cache.run("shifty", shifty), IsOk());  // eager, once
  EXPECT_EQ(calls, before + 1);
  EXPECT_THAT(state(), ElementsAreArray(all(3)));
  EXPECT_EQ(cache.stats().fallbacks, 3u);
  EXPECT_EQ(warnings_.size(), 1u) << "said once";
  EXPECT_EQ(cache.stats().captures, 0u);
}

TEST_F(GraphCacheTest, AStepThatFailsEagerlyReturnsItsErrorAndLeavesTheStreamUsable) {
  GraphCache<int> cache(*device_, stream());
  Result<void> failed = cache.run(1, [&]() -> Result<void> {
    return Error(Errc::invalid_argument, "the step's own error");
  });
  EXPECT_THAT(failed, StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("own error")));
  ASSERT_THAT(cache.run(2, [&] { return step(2); }), IsOk());
  ASSERT_THAT(cache.run(2, [&] { return step(2); }), IsOk());
  EXPECT_THAT(state(), ElementsAreArray(all(2)));
}

TEST_F(GraphCacheTest, InvalidateReRecordsIntoTheSameExecutableByUpdate) {
  GraphCache<int> cache(*device_, stream());
  ASSERT_THAT(cache.run(7, [&] { return step(4); }), IsOk());
  ASSERT_THAT(cache.invalidate(7), IsOk());
  ASSERT_THAT(cache.run(7, [&] { return step(4); }), IsOk());  // the same topology: updated
  ASSERT_THAT(cache.run(7, [&] { return step(4); }), IsOk());  // a hit
  EXPECT_THAT(state(), ElementsAreArray(all(3)));
  EXPECT_EQ(cache.stats().captures, 1u);
  EXPECT_EQ(cache.stats().updates, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_THAT(cache.invalidate(8), StatusIs(Errc::invalid_argument));
}

TEST_F(GraphCacheTest, TheLeastRecentlyUsedGraphIsEvictedOverTheCount) {
  GraphCacheOptions options;
  options.max_graphs = 2;
  GraphCache<std::uint32_t> cache(*device_, stream(), options);
  for (std::uint32_t bucket : {1u, 2u, 1u, 4u}) {  // 2 is the least recently used when 4 comes
    ASSERT_THAT(cache.run(bucket, [&] { return step(bucket); }), IsOk());
  }
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_TRUE(cache.contains(1));
  EXPECT_FALSE(cache.contains(2));
  EXPECT_TRUE(cache.contains(4));
  ASSERT_THAT(cache.run(2, [&] { return step(2); }), IsOk());  // recorded again
  EXPECT_EQ(cache.stats().captures, 4u);
  EXPECT_THAT(state(), ElementsAreArray(all(5)));
}

TEST_F(GraphCacheTest, TheByteBudgetEvictsToFit) {
  // The probe records without a pool too, so `one` is one graph's bytes (a pool's
  // memory, whole granules on virtual memory, is the cache's, not any one graph's).
  GraphCacheOptions options;
  options.share_pool = false;
  GraphCache<std::uint32_t> probe(*device_, stream(), options);
  ASSERT_THAT(probe.run(1, [&] { return step(1); }), IsOk());
  const std::size_t one = probe.stats().bytes;
  probe.clear();
  options.byte_budget = one + one / 2;  // room for one graph of this size
  GraphCache<std::uint32_t> cache(*device_, stream(), options);
  ASSERT_THAT(cache.run(1, [&] { return step(1); }), IsOk());
  ASSERT_THAT(cache.run(2, [&] { return step(1); }), IsOk());
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_LE(cache.stats().bytes, options.byte_budget);
  EXPECT_FALSE(cache.contains(1));
  EXPECT_THAT(state(), ElementsAreArray(all(3)));
}

TEST_F(GraphCacheTest, InvalidateWithAnotherTopologyReInstantiatesIntoTheSameKey) {
  GraphCache<int> cache(*device_, stream());
  ASSERT_THAT(cache.run(3, [&] { return step(4); }), IsOk());
  ASSERT_THAT(cache.invalidate(3), IsOk());
  // The step now launches once more: the update is refused, a new executable is instantiated.
  auto longer = [&]() -> Result<void> {
    if (Result<void> ok = step(4); !ok) return ok;
    return add_one(state_, state_, kN);
  };
  ASSERT_THAT(cache.run(3, longer), IsOk());
  ASSERT_THAT(cache.run(3, longer), IsOk());  // a hit of the new graph
  EXPECT_THAT(state(), ElementsAreArray(all(1 + 2 + 2)));
  EXPECT_EQ(cache.stats().captures, 2u);
  EXPECT_EQ(cache.stats().updates, 0u);
  EXPECT_EQ(cache.stats().hits, 1u);
  ASSERT_NE(cache.graph(3), nullptr);
  EXPECT_FALSE(cache.graph(3)->report().updated);
  EXPECT_FALSE(cache.graph(3)->report().update_refusal.empty());
  // The bytes are the device memory the graph accounts for (its own buffers and its
  // executable's driver bytes) and its pool's, once.
  const GraphMemory& memory = cache.graph(3)->report().memory;
  ASSERT_NE(cache.pool(), nullptr);
  EXPECT_EQ(cache.stats().bytes,
            memory.own_bytes + memory.driver_bytes + cache.pool()->bytes_held());
}

// ---- A fallback's result, refusals that leave a stream recording, exceptions -----

// A fallback's result allocated by the step's warm-up (lazily, on first use)
// is never the pool's memory, so another key's replay can't overwrite it.
TEST_F(GraphCacheTest, AFallbacksResultIsNeverOverwrittenByAnotherKeysReplay) {
  GraphCache<std::uint32_t> cache(*device_, stream());
  ASSERT_THAT(cache.run(16, [&] { return step(16); }), IsOk());  // its scratch joins the pool
  Buffer result;
  bool recording_refused = false;
  auto lazy = [&]() -> Result<void> {
    if (!result) {
      Result<Buffer> made = device_->alloc(kN * sizeof(std::uint32_t), stream());
      if (!made) return made.error();
      result = *made;
    }
    if (stream().capture_state() == CaptureState::capture) {
      // Refused when recorded: memory the warm-up never asked for.
      recording_refused = true;
      Result<Buffer> extra = device_->alloc(kUnseen, stream());
      if (!extra) return extra.error();
    }
    return device_->launch(stream(), fill_, dims_for(kN),
                           {Arg::out(result), Arg::value(std::uint32_t{77}), Arg::value(kN)});
  };
  ASSERT_THAT(cache.run(1, lazy), IsOk());
  ASSERT_TRUE(recording_refused);
  EXPECT_EQ(cache.stats().fallbacks, 1u);
  ASSERT_THAT(cache.run(16, [&] { return step(16); }), IsOk());  // a hit: replays in the pool
  EXPECT_THAT(read_u32(result), Each(77u));
}

// A cache's window does not claim on refusal; neither does the refusal of a pool
// buffer that outlived its recording: run() returned success, so what the step produced reads.
// A refusal at the close runs the step once more, eagerly (the kept buffer was the recorded
// run's): that run executed the step twice.
TEST_F(GraphCacheTest, ARefusalForAKeptPoolBufferLeavesTheWarmUpsResultReadable) {
  GraphCache<std::uint32_t> cache(*device_, stream());
  ASSERT_THAT(cache.run(16, [&] { return step(16); }), IsOk());  // the pool has an intermediate
  Buffer kept;
  auto keeps_scratch = [&]() -> Result<void> {
    Result<Buffer> scratch = device_->alloc(kN * sizeof(std::uint32_t), stream());
    if (!scratch) return scratch.error();
    if (Result<void> ok = add_one(state_, *scratch, kN); !ok) return ok;
    kept = *scratch;  // outlives the recording
    return device_->launch(stream(), copy_, dims_for(kN),
                           {Arg::in(*scratch), Arg::out(state_), Arg::value(kN)});
  };
  ASSERT_THAT(cache.run(2, keeps_scratch), IsOk());
  EXPECT_EQ(cache.stats().fallbacks, 1u);
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("outlived the recording")));
  EXPECT_EQ(cache.stats().reruns, 1u);
  EXPECT_THAT(device_->read(kept, stream()), IsOk());
  kept = Buffer{};
  EXPECT_THAT(device_->read(state_, stream()), IsOk());
  EXPECT_THAT(state(), ElementsAreArray(all(3)));
}

// A recording whose end_capture is refused with the recording still open (a loop left
// open) is aborted by the cache: when run() returns, its stream is not capturing.
TEST_F(GraphCacheTest, ARunNeverLeavesItsStreamRecording) {
  GraphCache<int> cache(*device_, stream());
  auto leaves_a_loop_open = [&]() -> Result<void> {
    if (stream().capture_state() == CaptureState::capture) {
      Result<Loop> loop = device_->begin_while(stream(), false);
      if (!loop) return loop.error();
    }
    return step(1);
  };
  ASSERT_THAT(cache.run(1, leaves_a_loop_open), IsOk());  // the warm-up's result stands
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(cache.stats().fallbacks, 1u);
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("loop")));
  EXPECT_THAT(state(), ElementsAreArray(all(1)));
  ASSERT_THAT(cache.run(2, [&] { return step(2); }), IsOk());
  ASSERT_THAT(cache.run(2, [&] { return step(2); }), IsOk());
  EXPECT_EQ(cache.stats().hits, 1u);
}

// A step that throws, in the warm-up or while recorded: the exception leaves run(), and
// the stream is not capturing.
TEST_F(GraphCacheTest, AStepThatThrowsLeavesNoWindowOpen) {
  GraphCache<int> cache(*device_, stream());
  auto throws_when_recorded = [&]() -> Result<void> {
    if (stream().capture_state() == CaptureState::capture) throw std::runtime_error("recorded");
    return step(1);
  };
  EXPECT_THROW((void)cache.run(1, throws_when_recorded), std::runtime_error);
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  auto throws_eagerly = [&]() -> Result<void> { throw std::runtime_error("warm-up"); };
  EXPECT_THROW((void)cache.run(2, throws_eagerly), std::runtime_error);
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  ASSERT_THAT(cache.run(3, [&] { return step(3); }), IsOk());
  ASSERT_THAT(cache.run(3, [&] { return step(3); }), IsOk());
  EXPECT_EQ(cache.stats().hits, 1u);
}

// A step that allocates its result inside the step (a fresh output each call): its recording is
// refused (the recorded run's result outlived the recording), and run() succeeds only with a
// result that reads: the step runs once more, eagerly, so the buffer it produced last holds data.
TEST_F(GraphCacheTest, AStepThatAllocatesItsResultLeavesAResultThatReads) {
  GraphCache<int> cache(*device_, stream());
  Buffer out;
  std::uint32_t value = 42;
  int calls = 0;
  auto fresh_output = [&]() -> Result<void> {
    ++calls;
    return fresh_result(out, value);
  };
  ASSERT_THAT(cache.run(1, fresh_output), IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(cache.stats().fallbacks, 1u);
  EXPECT_EQ(cache.stats().reruns, 1u);
  EXPECT_EQ(calls, 3) << "the warm-up, the recorded run, and the eager run after the refusal";
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("outlived the recording")));
  Result<std::vector<std::byte>> bytes = device_->read(out, stream());
  ASSERT_THAT(bytes, IsOk());
  EXPECT_THAT(read_u32(out), Each(42u));
  value = 43;  // the next run's result reads too
  ASSERT_THAT(cache.run(1, fresh_output), IsOk());
  EXPECT_THAT(read_u32(out), Each(43u));
}

// A cache without a shared pool whose recorded run is served the memory for the result it
// allocates (a free slice of the stream's pool): the recording would close into a graph, and the
// result the caller holds (the recorded run's buffer) would hold whatever the slice held before,
// since only a replay writes it. Refused at the close (the buffer outlived a recording whose
// warm-up was the run), the step runs once more, eagerly: the result reads what it wrote.
TEST_F(GraphCacheTest, AResultAllocatedByARecordingThatWouldCloseIsWrittenBeforeTheRunReturns) {
  GraphCacheOptions options;
  options.share_pool = false;
  GraphCache<int> cache(*device_, stream(), options);
  // An earlier graph with two buffers of the result's size leaves two free slices of that size
  // in the stream's persistent pool once it is gone: one for the warm-up, one for the recorded run.
  {
    auto two = [&]() -> Result<void> {
      Result<Buffer> a = device_->alloc(kN * sizeof(std::uint32_t), stream());
      if (!a) return a.error();
      Result<Buffer> b = device_->alloc(kN * sizeof(std::uint32_t), stream());
      if (!b) return b.error();
      return device_->launch(stream(), copy_, dims_for(kN),
                             {Arg::in(*a), Arg::out(*b), Arg::value(kN)});
    };
    Result<Graph> earlier = device_->record(stream(), two);
    ASSERT_THAT(earlier, IsOk());
    ASSERT_THAT(earlier->destroy(), IsOk());
  }
  ASSERT_THAT(device_->sync(stream()), IsOk());
  Buffer out;
  int calls = 0;
  auto fresh_output = [&]() -> Result<void> {
    ++calls;
    return fresh_result(out, 42);
  };
  ASSERT_THAT(cache.run(1, fresh_output), IsOk());
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("outlived it")));
  EXPECT_EQ(cache.stats().captures, 0u);
  EXPECT_EQ(cache.stats().reruns, 1u);
  EXPECT_EQ(calls, 3) << "the warm-up, the recorded run, and the eager run after the refusal";
  EXPECT_THAT(read_u32(out), Each(42u));
}

// A recorded run doomed after it kept the result it allocated (here from the shared pool, whose
// kept buffer is poisoned for good): the doom refuses the recording, and the step runs once
// more, eagerly, so the result the caller holds reads what the step wrote.
TEST_F(GraphCacheTest, ADoomAfterAKeptAllocationStillLeavesAResultThatReads) {
  GraphCache<int> cache(*device_, stream());
  ASSERT_THAT(cache.run(16, [&] { return step(16); }), IsOk());  // the pool has an intermediate
  Buffer out;
  auto keeps_then_dooms = [&]() -> Result<void> {
    if (Result<void> ok = fresh_result(out, 7); !ok) return ok;
    if (stream().capture_state() == CaptureState::capture) {
      Result<Buffer> extra = device_->alloc(kUnseen, stream());  // dooms the recording
      if (!extra) return extra.error();
    }
    return {};
  };
  ASSERT_THAT(cache.run(2, keeps_then_dooms), IsOk());
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_EQ(cache.last_refusal()->code(), Errc::doomed);
  EXPECT_EQ(cache.stats().reruns, 1u);
  Result<std::vector<std::byte>> bytes = device_->read(out, stream());
  ASSERT_THAT(bytes, IsOk());
  EXPECT_THAT(read_u32(out), Each(7u));
}

// A refusal that keeps no buffer the recorded run allocated (a side stream left unjoined) leaves
// the warm-up's results, which stand: the step is not run again (it ran once).
TEST_F(GraphCacheTest, ARefusalThatKeepsNoRecordedAllocationRerunsNothing) {
  Result<Stream*> side = device_->create_stream();
  ASSERT_THAT(side, IsOk());
  Result<Event> fork = device_->create_event();
  ASSERT_THAT(fork, IsOk());
  Buffer side_out = upload_u32(all(0), **side);
  Result<Event> uploaded = device_->create_event();  // the graph replays after the upload
  ASSERT_THAT(uploaded, IsOk());
  ASSERT_THAT(device_->record_event(*uploaded, **side), IsOk());
  ASSERT_THAT(device_->wait(stream(), *uploaded), IsOk());
  GraphCache<int> cache(*device_, stream());
  auto leaves_a_side_unjoined = [&]() -> Result<void> {
    if (Result<void> ok = step(1); !ok) return ok;
    if (stream().capture_state() != CaptureState::capture) return {};
    if (Result<void> ok = device_->record_event(*fork, stream()); !ok) return ok;
    if (Result<void> ok = device_->wait(**side, *fork); !ok) return ok;
    return device_->launch(**side, fill_, dims_for(kN),
                           {Arg::out(side_out), Arg::value(std::uint32_t{5}), Arg::value(kN)});
  };
  ASSERT_THAT(cache.run(1, leaves_a_side_unjoined), IsOk());
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("not joined")));
  EXPECT_EQ(cache.stats().reruns, 0u);
  EXPECT_EQ(executions_, 2) << "the warm-up and the recorded run";
  EXPECT_THAT(state(), ElementsAreArray(all(1))) << "one execution of the step";
}

// With fail_on_refusal a refused recording is run()'s error (the step ran once: the warm-up),
// counted as no fallback, and the stream is left as run found it; last_refusal() is that error.
TEST_F(GraphCacheTest, FailOnRefusalReturnsTheRefusalAsRunsError) {
  GraphCacheOptions options;
  options.fail_on_refusal = true;
  GraphCache<int> cache(*device_, stream(), options);
  int calls = 0;
  auto shifty = [&]() -> Result<void> {
    if (++calls % 2 == 0) {  // the recording asks for memory the warm-up did not
      Result<Buffer> extra = device_->alloc(kUnseen, stream());
      if (!extra) return extra.error();
    }
    return step(1);
  };
  Result<void> ran = cache.run(1, shifty);
  EXPECT_THAT(ran, StatusIs(Errc::doomed, CUDA_SUCCESS,
                            AllOf(HasSubstr("GraphCache"), HasSubstr("inside the recording"))));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(calls, 2);
  const GraphCacheStats stats = cache.stats();
  EXPECT_EQ(stats.fallbacks, 0u);
  EXPECT_EQ(stats.refusals, 1u);
  EXPECT_EQ(stats.captures, 0u);
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_EQ(cache.last_refusal()->code(), Errc::doomed);
  EXPECT_THAT(state(), ElementsAreArray(all(1))) << "the warm-up ran once";
  // A refusal at the close (a kept result in the pool's memory) is the error too, not re-run.
  Buffer kept;
  auto keeps = [&]() -> Result<void> {
    Result<Buffer> made = device_->alloc(kN * sizeof(std::uint32_t), stream());
    if (!made) return made.error();
    kept = *made;
    return add_one(state_, kept, kN);
  };
  EXPECT_THAT(cache.run(2, keeps),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("outlived the recording")));
  EXPECT_EQ(cache.stats().reruns, 0u);
  EXPECT_EQ(cache.stats().fallbacks, 0u);
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

// The reason of a fallback is reachable: a recorded run that failed for a doom is the doom
// (Errc::doomed, the failed operation's message inside), as end_capture would say it.
TEST_F(GraphCacheTest, AFallbacksReasonIsTheDoomOfItsRecording) {
  GraphCache<int> cache(*device_, stream());
  int calls = 0;
  auto shifty = [&]() -> Result<void> {
    if (++calls % 2 == 0) {
      Result<Buffer> extra = device_->alloc(kUnseen, stream());
      if (!extra) return extra.error();
    }
    return step(1);
  };
  ASSERT_THAT(cache.run(1, shifty), IsOk());
  EXPECT_EQ(cache.stats().fallbacks, 1u);
  EXPECT_EQ(cache.stats().refusals, 1u);
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(),
              StatusIs(Errc::doomed, CUDA_SUCCESS,
                       AllOf(HasSubstr("recording refused"), HasSubstr("inside the recording"))));
}

// GraphCache::set patches every cached graph that took the param, skips the ones that never did,
// and sets the param's own value for eager runs and later recordings.
TEST_F(GraphCacheTest, SetPatchesEveryGraphThatTookTheParamAndSkipsTheRest) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(1);
  Buffer with_param = upload_u32(all(0));
  Buffer without = upload_u32(all(0));
  GraphCache<int> cache(*device_, stream());
  auto takes = [&]() -> Result<void> {
    return device_->launch(stream(), fill_, dims_for(kN),
                           {Arg::out(with_param), Arg::param(value), Arg::value(kN)});
  };
  auto ignores = [&]() -> Result<void> {
    return device_->launch(stream(), fill_, dims_for(kN),
                           {Arg::out(without), Arg::value(std::uint32_t{5}), Arg::value(kN)});
  };
  ASSERT_THAT(cache.run(1, takes), IsOk());
  ASSERT_THAT(cache.run(2, ignores), IsOk());
  ASSERT_TRUE(cache.recorded(1));
  ASSERT_TRUE(cache.recorded(2));
  ASSERT_THAT(cache.set(value, 9u), IsOk());
  EXPECT_EQ(value.value(), 9u);
  ASSERT_THAT(cache.run(1, takes), IsOk());
  ASSERT_THAT(cache.run(2, ignores), IsOk());
  EXPECT_EQ(cache.stats().hits, 2u);
  EXPECT_THAT(read_u32(with_param), Each(9u));
  EXPECT_THAT(read_u32(without), Each(5u));
  // A key recorded after the set takes the new value too.
  Buffer later = upload_u32(all(0));
  ASSERT_THAT(cache.run(3, [&]() -> Result<void> {
    return device_->launch(stream(), fill_, dims_for(kN),
                           {Arg::out(later), Arg::param(value), Arg::value(kN)});
  }), IsOk());
  EXPECT_THAT(read_u32(later), Each(9u));
  Param<std::uint32_t> empty;
  EXPECT_THAT(cache.set(empty, 3u), StatusIs(Errc::invalid_argument));
}

// The byte budget counts a shared pool's memory once, not once per graph; and
// it counts all the device memory the graphs account for: their own buffers, their executables'
// driver bytes, the pool's memory (GraphCache::footprint()).
TEST_F(GraphCacheTest, StatsCountASharedPoolsMemoryOnce) {
  GraphCache<std::uint32_t> cache(*device_, stream());
  for (std::uint32_t bucket : {8u, 4u, 2u}) {
    ASSERT_THAT(cache.run(bucket, [&] { return step(bucket); }), IsOk());
  }
  ASSERT_NE(cache.pool(), nullptr);
  std::size_t own = 0;
  std::size_t driver = 0;
  std::size_t per_graph_pool = 0;
  for (std::uint32_t bucket : {8u, 4u, 2u}) {
    const GraphReport& report = cache.graph(bucket)->report();
    ASSERT_GT(report.pool_shared_bytes, 0u);
    EXPECT_EQ(report.memory.pool_bytes, report.pool_shared_bytes);
    own += report.memory.own_bytes;
    driver += report.memory.driver_bytes;
    per_graph_pool += cache.pool()->bytes_held();
  }
  const GraphCacheFootprint footprint = cache.footprint();
  EXPECT_EQ(footprint.graphs, 3u);
  EXPECT_EQ(footprint.own_bytes, own);
  EXPECT_EQ(footprint.driver_bytes, driver);
  EXPECT_EQ(footprint.pool_bytes, cache.pool()->bytes_held());
  EXPECT_EQ(footprint.pool_on_virtual_memory, cache.pool()->stats().virtual_memory);
  EXPECT_EQ(cache.stats().bytes, footprint.total());
  EXPECT_EQ(cache.stats().bytes, own + driver + cache.pool()->bytes_held());
  EXPECT_LT(cache.stats().bytes, own + driver + per_graph_pool) << "the pool counted once";
}

// Evicting a graph gives back the pool's memory beyond what the remaining graphs use, whatever
// order the keys came in. Recorded largest first (a 5 MiB intermediate, then 1 MiB ones, on the
// H200's 2 MiB granule), the pool used to keep the large key's memory after its eviction, so the
// byte budget then evicted a small key it had room for.
TEST_F(GraphCacheTest, EvictingTheLargestKeyGivesBackThePoolsMemoryBeyondTheRest) {
  Result<GraphPool> vmm = device_->create_graph_pool(stream());
  ASSERT_THAT(vmm, IsOk());
  const std::size_t g = vmm->stats().granularity;
  ASSERT_GT(g, 0u) << "the fake and the H200 support virtual memory management";
  const std::size_t large = 2 * g + g / 2;
  const std::size_t small = g / 2;
  // Key k's step: state += 1 through an intermediate of bytes[k].
  const std::size_t bytes[] = {large, small, small};
  auto sized_step = [&](int key) -> Result<void> {
    ++executions_;
    Result<Buffer> scratch = device_->alloc(bytes[key], stream());
    if (!scratch) return scratch.error();
    if (Result<void> ok = add_one(state_, *scratch, kN); !ok) return ok;
    return device_->launch(stream(), copy_, dims_for(kN),
                           {Arg::in(*scratch), Arg::out(state_), Arg::value(kN)});
  };
  // A small key's own and driver bytes (the pool's are the cache's, counted once).
  std::size_t per_graph = 0;
  {
    GraphCache<int> probe(*device_, stream());
    ASSERT_THAT(probe.run(1, [&] { return sized_step(1); }), IsOk());
    const GraphMemory& memory = probe.graph(1)->report().memory;
    per_graph = memory.own_bytes + memory.driver_bytes;
  }
  GraphCacheOptions options;
  // Room for the two small keys and the one granule their intermediates share; not for the
  // large key's three granules beside them.
  options.byte_budget = g + 2 * per_graph + g / 2;
  GraphCache<int> cache(*device_, stream(), options);
  ASSERT_THAT(cache.run(0, [&] { return sized_step(0); }), IsOk());
  EXPECT_EQ(cache.stats().evictions, 0u) << "over the budget alone, and kept: nothing to evict";
  ASSERT_THAT(cache.run(1, [&] { return sized_step(1); }), IsOk());
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_FALSE(cache.contains(0));
  ASSERT_NE(cache.pool(), nullptr);
  EXPECT_EQ(cache.pool()->bytes_held(), g) << "the large key's granules beyond the first went";
  ASSERT_THAT(cache.run(2, [&] { return sized_step(2); }), IsOk());
  EXPECT_EQ(cache.stats().evictions, 1u) << "the budget has room for both small keys";
  EXPECT_TRUE(cache.contains(1));
  EXPECT_TRUE(cache.contains(2));
  EXPECT_EQ(cache.pool()->bytes_held(), g);
  EXPECT_LE(cache.stats().bytes, options.byte_budget);
  // Both replay, each run one execution of the step: the probe's, three first runs, two hits.
  ASSERT_THAT(cache.run(1, [&] { return sized_step(1); }), IsOk());
  ASSERT_THAT(cache.run(2, [&] { return sized_step(2); }), IsOk());
  EXPECT_EQ(cache.stats().hits, 2u);
  EXPECT_THAT(state(), ElementsAreArray(all(1 + 3 + 2)));
}

// record_all runs every key once (recording it) and reports the footprint; on the
// fake that is the plan for the GPU. Buckets recorded smallest first still share on virtual
// memory: the pool holds the largest one's intermediate.
TEST_F(GraphCacheTest, RecordAllRecordsEveryKeyAndReportsTheFootprint) {
  GraphCache<std::uint32_t> cache(*device_, stream());
  const std::vector<std::uint32_t> keys = {1, 2, 4, 8, 16};
  Result<GraphCacheFootprint> planned =
      cache.record_all(keys, [&](std::uint32_t bucket) { return step(bucket); });
  ASSERT_THAT(planned, IsOk());
  EXPECT_EQ(planned->graphs, keys.size());
  EXPECT_EQ(cache.stats().captures, keys.size());
  EXPECT_THAT(state(), ElementsAreArray(all(static_cast<std::uint32_t>(keys.size()))))
      << "each key's run was one execution of the step";
  EXPECT_EQ(planned->total(), cache.stats().bytes);
  const GraphPoolStats pool = cache.pool()->stats();
  if (pool.virtual_memory) {
    EXPECT_EQ(pool.used_bytes, (kN + 16 * 64) * sizeof(std::uint32_t)) << "the largest step's";
    EXPECT_EQ(planned->pool_bytes, pool.granularity);
  }
  EXPECT_EQ(planned->modelled_graphs, keys.size()) << "small executables: the model's bytes";
}

TEST_F(GraphCacheTest, InvalidateOfAKeyGivenUpTriesToRecordItAgain) {
  GraphCacheOptions options;
  options.give_up_after = 1;
  GraphCache<int> cache(*device_, stream(), options);
  bool shifty = true;
  int calls = 0;
  auto maybe_shifty = [&]() -> Result<void> {
    if (shifty && ++calls % 2 == 0) {  // the recording asks for memory the warm-up did not
      Result<Buffer> extra = device_->alloc(kUnseen, stream());
      if (!extra) return extra.error();
    }
    return step(1);
  };
  ASSERT_THAT(cache.run(5, maybe_shifty), IsOk());  // refused once: given up
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(), StatusIs(Errc::doomed, CUDA_SUCCESS, HasSubstr("alloc")));
  EXPECT_EQ(warnings_.size(), 1u);
  ASSERT_THAT(cache.run(5, maybe_shifty), IsOk());  // eager
  EXPECT_FALSE(cache.recorded(5));
  shifty = false;
  ASSERT_THAT(cache.invalidate(5), IsOk());
  ASSERT_THAT(cache.run(5, maybe_shifty), IsOk());  // recorded now
  ASSERT_THAT(cache.run(5, maybe_shifty), IsOk());  // a hit
  EXPECT_TRUE(cache.recorded(5));
  EXPECT_THAT(state(), ElementsAreArray(all(4)));
  EXPECT_EQ(cache.stats().fallbacks, 2u);
  EXPECT_EQ(cache.stats().captures, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST_F(GraphCacheTest, RunningOnAStreamInsideTheCallersOwnWindowIsRefusedAndRunsNothing) {
  GraphCache<int> cache(*device_, stream());
  ASSERT_THAT(cache.run(2, [&] { return step(2); }), IsOk());  // recorded
  const int executed = executions_;
  // The caller's own window on the cache's stream: a miss can't open one, a hit can't replay.
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  EXPECT_THAT(cache.run(9, [&] { return step(9); }),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("GraphCache")));
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  EXPECT_THAT(cache.run(9, [&] { return step(9); }), StatusIs(Errc::graph_state));
  EXPECT_THAT(cache.run(2, [&] { return step(2); }),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("recording")));
  EXPECT_EQ(executions_, executed) << "no step ran";
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_EQ(cache.stats().hits, 0u) << "a refused replay is no hit";
  EXPECT_EQ(cache.stats().fallbacks, 0u);
  EXPECT_EQ(cache.stats().captures, 1u);
  EXPECT_FALSE(cache.recorded(9));
  ASSERT_THAT(cache.run(2, [&] { return step(2); }), IsOk());
  EXPECT_THAT(state(), ElementsAreArray(all(2)));
}

// A hash that sends every key to one of two values: keys probe past each other in the cache's
// table, and an eviction's gap must not hide the keys placed after it.
struct CollidingHash {
  std::size_t operator()(int key) const noexcept { return static_cast<std::size_t>(key % 2); }
};

TEST_F(GraphCacheTest, KeysWithCollidingHashesStayFindableThroughGrowthAndEviction) {
  GraphCacheOptions options;
  options.max_graphs = 6;
  GraphCache<int, CollidingHash> cache(*device_, stream(), options);
  std::vector<int> recency;  // the model: least recently used first
  std::size_t misses = 0;
  auto in_model = [&](int key) {
    return std::find(recency.begin(), recency.end(), key) != recency.end();
  };
  std::vector<int> order;
  for (int key = 0; key < 20; ++key) order.push_back(key);
  for (int key : {3, 17, 18, 19, 2, 16, 15, 19, 0, 1, 2, 3, 4, 18}) order.push_back(key);
  for (int key : order) {
    SCOPED_TRACE("key " + std::to_string(key));
    if (in_model(key)) {
      recency.erase(std::find(recency.begin(), recency.end(), key));
    } else {
      ++misses;
    }
    recency.push_back(key);
    if (recency.size() > options.max_graphs) recency.erase(recency.begin());
    ASSERT_THAT(cache.run(key, [&] { return add_one(state_, state_, kN); }), IsOk());
    for (int other = 0; other < 20; ++other) {
      ASSERT_EQ(cache.contains(other), in_model(other)) << "key " << other;
      ASSERT_EQ(cache.recorded(other), in_model(other)) << "key " << other;
    }
    ASSERT_EQ(cache.size(), recency.size());
  }
  EXPECT_EQ(cache.stats().captures, misses);
  EXPECT_EQ(cache.stats().hits, order.size() - misses);
  EXPECT_EQ(cache.stats().evictions, misses - options.max_graphs);
  EXPECT_THAT(state(), ElementsAreArray(all(static_cast<std::uint32_t>(order.size()))));
}

TEST_F(GraphCacheTest, ManyKeysGrowTheTableAndAllReplay) {
  GraphCache<std::string> cache(*device_, stream());
  for (int round = 0; round < 2; ++round) {
    for (int key = 0; key < 40; ++key) {
      ASSERT_THAT(cache.run("bucket " + std::to_string(key),
                            [&] { return add_one(state_, state_, kN); }),
                  IsOk());
    }
  }
  EXPECT_EQ(cache.size(), 40u);
  EXPECT_EQ(cache.stats().captures, 40u);
  EXPECT_EQ(cache.stats().hits, 40u);
  EXPECT_TRUE(cache.recorded("bucket 0"));
  EXPECT_TRUE(cache.recorded("bucket 39"));
  EXPECT_FALSE(cache.contains("bucket 40"));
  EXPECT_THAT(state(), ElementsAreArray(all(80)));
}

// ---- a key recorded while another stream of the device has its own recording open ----------

// Another stream's recording, open around the cache's runs: prepare + warm-up + begin + one
// recorded launch (other = other + 1), closed by end(), replayed once. Its buffer is read back.
class OtherRecording {
 public:
  OtherRecording(Device& device, Stream& stream, Kernel add_one, CUstreamCaptureMode mode)
      : device_(device), stream_(stream), add_one_(add_one), mode_(mode) {}
  Result<void> open(Buffer& other) {
    other_ = other;
    CaptureOptions options;
    options.mode = mode_;
    if (Result<void> r = device_.prepare_capture(stream_, options); !r) return r;
    if (Result<void> r = launch(); !r) return r;  // the warm-up: other = 1
    if (Result<void> r = device_.begin_capture(stream_); !r) return r;
    return launch();  // recorded
  }
  Result<Graph> end() { return device_.end_capture(stream_); }

 private:
  Result<void> launch() {
    const std::uint32_t n = 64;
    return device_.launch(stream_, add_one_, dims_for(n),
                          {Arg::in(other_), Arg::out(other_), Arg::value(n)});
  }
  Device& device_;
  Stream& stream_;
  Kernel add_one_;
  CUstreamCaptureMode mode_;
  Buffer other_;
};

// The cache's step with no allocation of its own: state += 1 through a scratch buffer allocated
// before (so the key's miss makes no call CUDA forbids while a GLOBAL recording is open).
class GraphCacheNextToARecordingTest : public GraphCacheTest {
 protected:
  void SetUp() override {
    GraphCacheTest::SetUp();
    if (HasFatalFailure()) return;
    scratch_ = upload_u32(std::vector<std::uint32_t>(kN, 0));
    side_ = add_stream();
    ASSERT_NE(side_, nullptr);
    other_ = upload_u32(std::vector<std::uint32_t>(64, 0), *side_);
  }
  Result<void> preallocated_step() {
    ++executions_;
    if (Result<void> ok = add_one(state_, scratch_, kN); !ok) return ok;
    return device_->launch(stream(), copy_, dims_for(kN),
                           {Arg::in(scratch_), Arg::out(state_), Arg::value(kN)});
  }
  // The other recording ended, replayed once: its buffer went 0 -> 1 (warm-up) -> 2 (replay).
  void expect_other_recording_replays(Result<Graph>& graph) {
    ASSERT_THAT(graph, IsOk());
    ASSERT_THAT(graph->replay(), IsOk());
    EXPECT_THAT(read_u32(other_, *side_), ElementsAreArray(std::vector<std::uint32_t>(64, 2)));
  }
  // Another thread opens the other recording in `mode` and holds it open while this thread runs
  // `meanwhile`; then it ends it. What its open and its end returned.
  struct OtherThreadsRecording {
    Result<void> open = Error(Errc::driver, "not run");
    Result<Graph> graph = Error(Errc::driver, "not run");
  };
  OtherThreadsRecording while_another_thread_records(CUstreamCaptureMode mode,
                                                     const std::function<void()>& meanwhile) {
    OtherThreadsRecording result;
    std::promise<void> opened, served;
    std::future<void> served_future = served.get_future();
    std::thread owner([&] {
      OtherRecording recording(*device_, *side_, add_one_, mode);
      result.open = recording.open(other_);
      opened.set_value();
      served_future.wait();
      result.graph = recording.end();
    });
    opened.get_future().wait();
    meanwhile();
    served.set_value();
    owner.join();
    return result;
  }
  Buffer scratch_;
  Stream* side_ = nullptr;
  Buffer other_;
};

// A GLOBAL recording open on this thread: the cache's warm-up runs (launches on another stream
// are safe), but its recording may not begin (begin_capture drains the drop queue, which would
// invalidate the open recording): each miss falls back, with the warm-up as its one execution.
TEST_F(GraphCacheNextToARecordingTest, AMissWhileThisThreadRecordsGlobalFallsBackUntilItEnds) {
  OtherRecording recording(*device_, *side_, add_one_, CU_STREAM_CAPTURE_MODE_GLOBAL);
  ASSERT_THAT(recording.open(other_), IsOk());
  GraphCache<int> cache(*device_, stream());
  ASSERT_THAT(cache.run(1, [&] { return preallocated_step(); }), IsOk());
  ASSERT_THAT(cache.run(1, [&] { return preallocated_step(); }), IsOk());
  EXPECT_EQ(cache.stats().captures, 0u);
  EXPECT_EQ(cache.stats().hits, 0u);
  EXPECT_EQ(cache.stats().fallbacks, 2u);
  EXPECT_EQ(executions_, 2) << "each run's warm-up, once";
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(), StatusIs(Errc::graph_state, CUDA_SUCCESS,
                                              HasSubstr("another recording is open")));
  EXPECT_FALSE(cache.recorded(1));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(side_->capture_state(), CaptureState::capture) << "the other recording is still open";
  Result<Graph> other = recording.end();
  expect_other_recording_replays(other);
  EXPECT_THAT(state(), ElementsAreArray(all(2)));
  // Not given up (2 refusals of 4): the key records now, and replays.
  ASSERT_THAT(cache.run(1, [&] { return preallocated_step(); }), IsOk());
  ASSERT_THAT(cache.run(1, [&] { return preallocated_step(); }), IsOk());
  EXPECT_EQ(cache.stats().captures, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_EQ(executions_, 4);
  EXPECT_THAT(state(), ElementsAreArray(all(4)));
}

TEST_F(GraphCacheNextToARecordingTest, AMissThatMustAllocateWhileThisThreadRecordsGlobalFails) {
  OtherRecording recording(*device_, *side_, add_one_, CU_STREAM_CAPTURE_MODE_GLOBAL);
  ASSERT_THAT(recording.open(other_), IsOk());
  GraphCache<int> cache(*device_, stream());
  // The warm-up's intermediate needs memory from the driver, which CUDA forbids while a GLOBAL
  // recording is open: the step fails eagerly, as it would without the cache.
  Result<void> ran = cache.run(8, [&] { return step(8); });
  EXPECT_THAT(ran, StatusIs(Errc::out_of_memory, CUDA_SUCCESS, HasSubstr("record")));
  EXPECT_EQ(executions_, 1);
  EXPECT_EQ(cache.stats().captures, 0u);
  EXPECT_EQ(cache.stats().fallbacks, 0u);
  EXPECT_FALSE(cache.recorded(8));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  // The other recording was not disturbed; once it is closed the key records.
  Result<Graph> other = recording.end();
  expect_other_recording_replays(other);
  EXPECT_THAT(state(), ElementsAreArray(all(0))) << "the failed step changed nothing";
  ASSERT_THAT(cache.run(8, [&] { return step(8); }), IsOk());
  ASSERT_THAT(cache.run(8, [&] { return step(8); }), IsOk());
  EXPECT_THAT(state(), ElementsAreArray(all(2)));
  EXPECT_EQ(cache.stats().captures, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST_F(GraphCacheNextToARecordingTest, AKeyIsRecordedWhileAnotherThreadRecordsThreadLocal) {
  GraphCache<int> cache(*device_, stream());
  Result<void> miss = Error(Errc::driver, "not run");
  Result<void> hit = Error(Errc::driver, "not run");
  OtherThreadsRecording other =
      while_another_thread_records(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, [&] {
        miss = cache.run(8, [&] { return step(8); });
        hit = cache.run(8, [&] { return step(8); });
      });
  ASSERT_THAT(other.open, IsOk());
  // A THREAD_LOCAL recording forbids nothing to other threads: the miss allocates, records.
  EXPECT_THAT(miss, IsOk());
  EXPECT_THAT(hit, IsOk());
  EXPECT_EQ(cache.stats().captures, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_EQ(cache.stats().fallbacks, 0u);
  EXPECT_THAT(state(), ElementsAreArray(all(2)));
  expect_other_recording_replays(other.graph);
}

// A GLOBAL recording open on another thread forbids this thread's allocations from the driver
// and the drain of begin_capture, as one on this thread does.
TEST_F(GraphCacheNextToARecordingTest, AMissWhileAnotherThreadRecordsGlobalFailsOrFallsBack) {
  GraphCache<int> cache(*device_, stream());
  Result<void> allocating = Error(Errc::driver, "not run");
  Result<void> preallocated = Error(Errc::driver, "not run");
  OtherThreadsRecording other = while_another_thread_records(CU_STREAM_CAPTURE_MODE_GLOBAL, [&] {
    allocating = cache.run(8, [&] { return step(8); });
    preallocated = cache.run(1, [&] { return preallocated_step(); });
  });
  ASSERT_THAT(other.open, IsOk());
  EXPECT_THAT(allocating, StatusIs(Errc::out_of_memory, CUDA_SUCCESS, HasSubstr("record")))
      << "the warm-up's intermediate: the step failed eagerly, as without the cache";
  EXPECT_THAT(preallocated, IsOk()) << "its warm-up ran; its recording fell back";
  EXPECT_EQ(cache.stats().captures, 0u);
  EXPECT_EQ(cache.stats().fallbacks, 1u);
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(), StatusIs(Errc::graph_state, CUDA_SUCCESS,
                                              HasSubstr("another recording is open")));
  EXPECT_FALSE(cache.recorded(1));
  EXPECT_FALSE(cache.recorded(8));
  EXPECT_THAT(state(), ElementsAreArray(all(1)));
  expect_other_recording_replays(other.graph);
  ASSERT_THAT(cache.run(8, [&] { return step(8); }), IsOk());  // the recording closed: recorded
  EXPECT_TRUE(cache.recorded(8));
  EXPECT_THAT(state(), ElementsAreArray(all(2)));
}

}  // namespace
}  // namespace graphcap::testing
