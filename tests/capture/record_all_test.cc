// GraphCache::record_all on several threads (RecordAllOptions::threads), on every driver: the
// calling thread records every key on the cache's stream while workers (std::jthread, so this
// file runs under ThreadSanitizer too: graphcap_thread_tests) instantiate and upload the graphs
// it closed. What comes out is what one key at a time gives: the same graphs, pool share and
// footprint, the same refusals per key, the step executed once per key, and the stream never
// left capturing. PendingGraph and InstantiateWorkers, the parts it is built on, directly.
#include <graphcap/graph_cache.h>

#include <cstdint>
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

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class RecordAllTest : public DeviceFixture {
 protected:
  void SetUp() override {
    DeviceFixture::SetUp();
    if (HasFatalFailure()) return;
    state_ = upload_u32(std::vector<std::uint32_t>(kN, 0));
  }

  // Key `bucket`'s step on `s`: state += 1 through an intermediate of the bucket's size, and
  // `bucket` fills of a second one, so keys differ in their nodes and intermediates.
  Result<void> step(std::uint32_t bucket, Stream& s, Buffer& state) {
    ++executions_;
    GRAPHCAP_ASSIGN_OR_RETURN(Buffer scratch,
                              device_->alloc((kN + bucket * 64) * sizeof(std::uint32_t), s));
    GRAPHCAP_ASSIGN_OR_RETURN(Buffer noise, device_->alloc(kN * sizeof(std::uint32_t), s));
    GRAPHCAP_TRY(add_one(state, scratch, kN, s));
    for (std::uint32_t i = 0; i < bucket; ++i) {
      GRAPHCAP_TRY(device_->launch(s, fill_, dims_for(kN),
                                   {Arg::out(noise), Arg::value(i), Arg::value(kN)}));
    }
    return device_->launch(s, copy_, dims_for(kN),
                           {Arg::in(scratch), Arg::out(state), Arg::value(kN)});
  }
  Result<void> step(std::uint32_t bucket) { return step(bucket, stream(), state_); }

  static std::vector<std::uint32_t> all(std::uint32_t v) {
    return std::vector<std::uint32_t>(kN, v);
  }
  static std::vector<std::uint32_t> buckets(std::uint32_t n) {
    std::vector<std::uint32_t> keys;
    for (std::uint32_t k = 1; k <= n; ++k) keys.push_back(k);
    return keys;
  }

  static constexpr std::uint32_t kN = 256;
  Buffer state_;
  int executions_ = 0;
};

// The same keys on two streams, one key at a time and on 2 and 4 threads: each key's graph has
// the same nodes and memory, and the caches the same footprint and pool.
TEST_F(RecordAllTest, SeveralThreadsRecordTheSameGraphsAndFootprintAsOneAtATime) {
  const std::vector<std::uint32_t> keys = buckets(12);
  GraphCache<std::uint32_t> serial(*device_, stream());
  Result<GraphCacheFootprint> one =
      serial.record_all(keys, [&](std::uint32_t k) { return step(k); });
  ASSERT_THAT(one, IsOk());
  for (unsigned threads : {2u, 4u}) {
    SCOPED_TRACE(threads);
    Stream* s = add_stream();
    ASSERT_NE(s, nullptr);
    Buffer state = upload_u32(std::vector<std::uint32_t>(kN, 0), *s);
    GraphCache<std::uint32_t> parallel(*device_, *s);
    Result<GraphCacheFootprint> many = parallel.record_all(
        keys, [&](std::uint32_t k) { return step(k, *s, state); },
        RecordAllOptions{.threads = threads});
    ASSERT_THAT(many, IsOk());
    EXPECT_EQ(s->capture_state(), CaptureState::no_capture);
    EXPECT_THAT(read_u32(state, *s), ElementsAreArray(all(keys.size())))
        << "each key's step ran once";
    EXPECT_EQ(many->graphs, keys.size());
    EXPECT_EQ(many->pool_bytes, one->pool_bytes);
    EXPECT_EQ(many->own_bytes, one->own_bytes);
    EXPECT_EQ(many->driver_bytes, one->driver_bytes);
    EXPECT_EQ(many->total(), parallel.stats().bytes);
    EXPECT_EQ(many->modelled_graphs, keys.size()) << "instantiated side by side: the model's";
    EXPECT_EQ(parallel.pool()->stats().used_bytes, serial.pool()->stats().used_bytes);
    const GraphCacheStats stats = parallel.stats();
    EXPECT_EQ(stats.captures, keys.size());
    EXPECT_EQ(stats.refusals + stats.fallbacks + stats.hits + stats.updates, 0u);
    for (std::uint32_t k : keys) {
      SCOPED_TRACE(k);
      ASSERT_NE(parallel.graph(k), nullptr);
      const GraphReport& got = parallel.graph(k)->report();
      const GraphReport& want = serial.graph(k)->report();
      EXPECT_EQ(got.node_count, want.node_count);
      EXPECT_EQ(got.node_count, 2u + k);
      EXPECT_EQ(got.nodes_by_type, want.nodes_by_type);
      EXPECT_EQ(got.pinned_slices, want.pinned_slices);
      EXPECT_EQ(got.pinned_bytes, want.pinned_bytes);
      EXPECT_EQ(got.memory.own_bytes, want.memory.own_bytes);
      EXPECT_EQ(got.memory.pool_bytes, want.memory.pool_bytes);
      EXPECT_EQ(got.memory.driver_bytes, want.memory.driver_bytes);
      EXPECT_EQ(got.uploaded, want.uploaded);
    }
    // The graphs replay on the cache's stream: one run more of every key is a hit.
    ASSERT_THAT(parallel.record_all(keys, [&](std::uint32_t k) { return step(k, *s, state); },
                                    RecordAllOptions{.threads = threads}),
                IsOk());
    EXPECT_EQ(parallel.stats().hits, keys.size());
    EXPECT_THAT(read_u32(state, *s), ElementsAreArray(all(2 * keys.size())));
  }
}

// A key given twice is recorded once and replayed the second time; a key invalidated before is
// re-recorded into its graph (exec update) on the calling thread; a key given up runs eagerly.
TEST_F(RecordAllTest, KeysSeenBeforeRunAsRunWould) {
  GraphCache<std::uint32_t> cache(*device_, stream());
  ASSERT_THAT(cache.run(3, [&] { return step(3); }), IsOk());
  ASSERT_THAT(cache.invalidate(3), IsOk());
  const std::vector<std::uint32_t> keys = {1, 2, 1, 3, 4, 2};
  ASSERT_THAT(cache.record_all(keys, [&](std::uint32_t k) { return step(k); },
                               RecordAllOptions{.threads = 3}),
              IsOk());
  const GraphCacheStats stats = cache.stats();
  EXPECT_EQ(stats.captures, 4u) << "keys 1, 2, 4, and 3 before";
  EXPECT_EQ(stats.updates, 1u) << "key 3, re-recorded into its graph";
  EXPECT_EQ(stats.hits, 2u) << "keys 1 and 2 the second time";
  EXPECT_EQ(stats.fallbacks, 0u);
  EXPECT_THAT(read_u32(state_), ElementsAreArray(all(7))) << "one execution a run";
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

// A key whose recording is refused falls back alone: the others are recorded.
TEST_F(RecordAllTest, ARefusedRecordingFallsBackAloneAndTheOtherKeysAreRecorded) {
  GraphCache<std::uint32_t> cache(*device_, stream());
  // Key 4's recorded run leaves a WHILE loop open: end_capture refuses it (graph_state).
  auto leaves_a_loop_open = [&](std::uint32_t k) -> Result<void> {
    if (k == 4 && stream().capture_state() == CaptureState::capture) {
      Result<Loop> loop = device_->begin_while(stream(), false);
      if (!loop) return loop.error();
    }
    return step(k);
  };
  const std::vector<std::uint32_t> keys = buckets(6);
  ASSERT_THAT(cache.record_all(keys, leaves_a_loop_open, RecordAllOptions{.threads = 4}), IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  for (std::uint32_t k : keys) EXPECT_EQ(cache.recorded(k), k != 4) << k;
  EXPECT_EQ(cache.stats().refusals, 1u);
  EXPECT_EQ(cache.stats().fallbacks, 1u);
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("loop")));
  EXPECT_THAT(read_u32(state_), ElementsAreArray(all(6))) << "the fallback's warm-up stands";
}

// A step that fails eagerly stops record_all with its error: the keys before it are recorded,
// none after it is run.
TEST_F(RecordAllTest, AStepThatFailsStopsAtItsKeyAndKeepsTheKeysBefore) {
  GraphCache<std::uint32_t> cache(*device_, stream());
  auto fails_at_5 = [&](std::uint32_t k) -> Result<void> {
    if (k == 5) return Error(Errc::invalid_argument, "key 5's own error");
    return step(k);
  };
  EXPECT_THAT(cache.record_all(buckets(8), fails_at_5, RecordAllOptions{.threads = 4}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("key 5's own error")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  for (std::uint32_t k = 1; k <= 8; ++k) EXPECT_EQ(cache.recorded(k), k < 5) << k;
  EXPECT_EQ(executions_, 2 * 4) << "keys 1-4, warm-up and recorded run each";
  EXPECT_THAT(read_u32(state_), ElementsAreArray(all(4)));
}

// A step that throws (while recorded, then in the warm-up): the exception leaves record_all, the
// stream is not capturing, and the keys recorded before it keep their graphs.
TEST_F(RecordAllTest, AStepThatThrowsLeavesNoWindowOpenAndKeepsTheKeysBefore) {
  GraphCache<std::uint32_t> cache(*device_, stream());
  auto throws_at_4 = [&](std::uint32_t k) -> Result<void> {
    if (k == 4 && stream().capture_state() == CaptureState::capture) {
      throw std::runtime_error("recorded");
    }
    return step(k);
  };
  EXPECT_THROW((void)cache.record_all(buckets(6), throws_at_4, RecordAllOptions{.threads = 3}),
               std::runtime_error);
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  for (std::uint32_t k = 1; k <= 6; ++k) EXPECT_EQ(cache.recorded(k), k < 4) << k;
  auto throws_eagerly = [&](std::uint32_t k) -> Result<void> {
    if (k == 9) throw std::runtime_error("warm-up");
    return step(k);
  };
  EXPECT_THROW((void)cache.record_all(std::vector<std::uint32_t>{7, 8, 9}, throws_eagerly,
                                      RecordAllOptions{.threads = 3}),
               std::runtime_error);
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_TRUE(cache.recorded(7));
  EXPECT_TRUE(cache.recorded(8));
  ASSERT_THAT(cache.run(4, [&] { return step(4); }), IsOk());  // recorded now
  ASSERT_THAT(cache.run(4, [&] { return step(4); }), IsOk());
  EXPECT_GE(cache.stats().hits, 1u);
}

// A cache that evicts runs one key at a time whatever `threads` says: the same evictions, the
// same graphs kept.
TEST_F(RecordAllTest, ACacheWithAGraphLimitRecordsOneKeyAtATime) {
  GraphCacheOptions options;
  options.max_graphs = 2;
  GraphCache<std::uint32_t> cache(*device_, stream(), options);
  ASSERT_THAT(cache.record_all(buckets(5), [&](std::uint32_t k) { return step(k); },
                               RecordAllOptions{.threads = 4}),
              IsOk());
  EXPECT_EQ(cache.stats().evictions, 3u);
  EXPECT_TRUE(cache.recorded(4));
  EXPECT_TRUE(cache.recorded(5));
  EXPECT_FALSE(cache.recorded(3));
}

// The parts: a recording closed with its instantiate left to a worker, which instantiates it
// while this thread's next recording (global mode) is open; that recording stays intact (the
// worker's calls are RELAXED), and both become graphs that replay.
TEST_F(RecordAllTest, AWorkerInstantiatesWhileAGlobalRecordingIsOpenAndLeavesItIntact) {
  InstantiateWorkers workers(*device_, 1);
  CaptureOptions global;
  global.mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  PendingGraph first;
  {
    CaptureSequence sequence(*device_, stream());
    ASSERT_THAT(sequence.prepare(global), IsOk());
    ASSERT_THAT(step(1), IsOk());
    ASSERT_THAT(sequence.begin(), IsOk());
    ASSERT_THAT(step(1), IsOk());
    Result<PendingGraph> closed = sequence.end_deferred();
    ASSERT_THAT(closed, IsOk());
    first = std::move(*closed);
  }
  EXPECT_FALSE(first.ready()) << "nothing instantiates it until it is submitted or finished";
  ASSERT_THAT(device_->prepare_capture(stream(), global), IsOk());
  ASSERT_THAT(step(2), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  workers.submit(first);
  while (!first.ready()) std::this_thread::yield();
  ASSERT_THAT(step(2), IsOk());
  EXPECT_THAT(first.finish(), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("recording")))
      << "not while its stream records";
  Result<Graph> second = device_->end_capture(stream());
  ASSERT_THAT(second, IsOk()) << "the worker's instantiate left the global recording intact";
  Result<Graph> graph = first.finish();
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().node_count, 3u);
  EXPECT_THAT(first.finish(), StatusIs(Errc::graph_state)) << "once";
  ASSERT_THAT(graph->replay(), IsOk());
  ASSERT_THAT(second->replay(), IsOk());
  EXPECT_THAT(read_u32(state_), ElementsAreArray(all(4)));
}

// A pending graph dropped unfinished, instantiated or not, lets go of everything (the fixture's
// teardown counts the handles); one never submitted is instantiated by finish() itself.
TEST_F(RecordAllTest, APendingGraphDroppedOrFinishedWithoutAWorkerLeavesNothingBehind) {
  auto record = [&](std::uint32_t k) -> Result<PendingGraph> {
    CaptureSequence sequence(*device_, stream());
    GRAPHCAP_TRY(sequence.prepare(CaptureOptions{}));
    GRAPHCAP_TRY(step(k));
    GRAPHCAP_TRY(sequence.begin());
    GRAPHCAP_TRY(step(k));
    return sequence.end_deferred();
  };
  Result<PendingGraph> submitted = record(1);
  ASSERT_THAT(submitted, IsOk());
  {
    InstantiateWorkers workers(*device_, 2);
    workers.submit(*submitted);
    Result<PendingGraph> kept = record(2);
    ASSERT_THAT(kept, IsOk());
    PendingGraph dropped = std::move(*kept);  // never instantiated
  }  // the workers take what was submitted before they end
  EXPECT_TRUE(submitted->ready());  // and it goes last, instantiated and unfinished
  Result<PendingGraph> alone = record(3);
  ASSERT_THAT(alone, IsOk());
  Result<Graph> graph = alone->finish();
  ASSERT_THAT(graph, IsOk());
  EXPECT_TRUE(graph->report().uploaded) << "uploaded on its stream when no worker did";
  EXPECT_THAT(PendingGraph{}.finish(), StatusIs(Errc::graph_state, CUDA_SUCCESS,
                                                HasSubstr("empty")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

}  // namespace
}  // namespace graphcap::testing
