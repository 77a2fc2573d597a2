// Graph pools on every driver: graphs recorded into one pool share the
// memory of their intermediates; buffers alive after a recording are never shared; the memory goes
// when the last graph using it goes. Every test runs on both layouts a pool may have: one reserved
// range of virtual memory (where the device supports it: the fake and the H200 do) and plain
// allocations (GraphPoolOptions::virtual_memory false); the safety rules are the same on both.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/driver/executable_memory.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

enum class Layout { virtual_memory, plain };

class GraphPoolTest : public DeviceFixture, public ::testing::WithParamInterface<Layout> {
 protected:
  // Batch sizes of a decode step, largest first (recorded in that order, as vLLM does: a smaller
  // graph's intermediates then fit in the larger ones').
  static constexpr std::uint32_t kBatches[] = {128, 96, 64, 48, 32, 16, 8, 1};
  static constexpr std::uint32_t kWordsPerRow = 256;

  GraphPoolOptions pool_options() const {
    GraphPoolOptions options;
    options.virtual_memory = GetParam() == Layout::virtual_memory;
    return options;
  }
  Result<GraphPool> make_pool() { return device_->create_graph_pool(stream(), pool_options()); }
  static CaptureOptions in_pool(GraphPool& pool) {
    CaptureOptions options;
    options.pool = &pool;
    return options;
  }
  static std::size_t granules(std::size_t bytes, std::size_t granularity) {
    return (bytes + granularity - 1) / granularity * granularity;
  }

  struct Step {
    Buffer in, out;
    std::uint32_t n = 0;
  };

  Step make_step(std::uint32_t batch) {
    Step step;
    step.n = batch * kWordsPerRow;
    step.in = upload_u32(iota_u32(step.n, batch * 1000));
    step.out = upload_u32(std::vector<std::uint32_t>(step.n, 0));
    return step;
  }

  // `graph`, recorded from make_step(8), replays from a zeroed output and computes in + 2 again.
  void expect_big_step_computes(const Step& big, Graph& graph) {
    ASSERT_THAT(device_->write(big.out, to_bytes(std::vector<std::uint32_t>(big.n, 0)), stream()),
                IsOk());
    ASSERT_THAT(graph.replay(), IsOk());
    EXPECT_THAT(read_u32(big.out), ElementsAreArray(iota_u32(big.n, 8 * 1000 + 2)));
  }

  // One decode step: an intermediate allocated and dropped inside the pass.
  void pass(const Step& step) {
    Result<Buffer> tmp = device_->alloc(step.n * sizeof(std::uint32_t), stream());
    ASSERT_THAT(tmp, IsOk());
    ASSERT_THAT(add_one(step.in, *tmp, step.n), IsOk());
    ASSERT_THAT(add_one(*tmp, step.out, step.n), IsOk());
  }

  Result<Graph> record(const Step& step, GraphPool* pool) {
    CaptureOptions options;
    options.pool = pool;
    return device_->record(stream(), [&] { pass(step); }, options);
  }

  // A step whose one intermediate is `bytes`, filled with `value`, its last 64 bytes copied into
  // `out`: a replay that wrote `value` there had its intermediate mapped to its end.
  struct Sized {
    std::size_t bytes;
    std::uint8_t value;
    Buffer out;
  };
  void sized_pass(const Sized& sized) {
    Result<Buffer> tmp = device_->alloc(sized.bytes, stream());
    ASSERT_THAT(tmp, IsOk());
    ASSERT_THAT(device_->fill(*tmp, sized.value, stream()), IsOk());
    ASSERT_THAT(device_->copy(sized.out, 0, *tmp, sized.bytes - 64, 64, stream()), IsOk());
  }
  Result<Graph> record_sized(Sized& sized, GraphPool& pool) {
    if (!sized.out) sized.out = upload_u32(std::vector<std::uint32_t>(16, 0));
    CaptureOptions options = in_pool(pool);
    EXPECT_THAT(device_->prepare_capture(stream(), options), IsOk());
    sized_pass(sized);
    EXPECT_THAT(device_->begin_capture(stream()), IsOk());
    sized_pass(sized);
    return device_->end_capture(stream());
  }
  void expect_out(const Sized& sized) {
    Result<std::vector<std::byte>> read = device_->read(sized.out, stream());
    ASSERT_THAT(read, IsOk());
    EXPECT_THAT(*read, Each(std::byte{sized.value})) << sized.bytes;
  }
};

TEST_P(GraphPoolTest, EightBatchSizesShareTheLargestIntermediateAndReplayInAnyOrder) {
  std::vector<Step> steps;
  for (std::uint32_t batch : kBatches) steps.push_back(make_step(batch));

  // Each recorded alone (no pool): the reference bytes, and the sum of their intermediates.
  std::vector<std::vector<std::uint32_t>> alone;
  std::size_t unshared_pinned = 0;
  for (const Step& step : steps) {
    Result<Graph> graph = record(step, nullptr);
    ASSERT_THAT(graph, IsOk());
    EXPECT_EQ(graph->report().pool_shared_bytes, 0u);
    unshared_pinned += graph->report().pinned_bytes;
    ASSERT_THAT(device_->write(step.out, to_bytes(std::vector<std::uint32_t>(step.n, 0)), stream()),
                IsOk());
    ASSERT_THAT(graph->replay(), IsOk());
    alone.push_back(read_u32(step.out));
    EXPECT_THAT(alone.back(), ElementsAreArray(iota_u32(step.n, step.n / kWordsPerRow * 1000 + 2)));
  }

  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  EXPECT_EQ(pool->stats().virtual_memory, GetParam() == Layout::virtual_memory)
      << "the fake and the H200 support virtual memory management";
  std::vector<Graph> graphs;
  for (const Step& step : steps) {
    Result<Graph> graph = record(step, &*pool);
    ASSERT_THAT(graph, IsOk());
    graphs.push_back(std::move(*graph));
  }
  const std::size_t largest = graphs.front().report().pool_shared_bytes;
  ASSERT_GE(largest, std::size_t{128} * kWordsPerRow * sizeof(std::uint32_t));
  const GraphPoolStats stats = pool->stats();
  std::size_t held_by_largest = largest;
  if (stats.virtual_memory) {
    // Every graph lays its intermediate out from the range's base: its share is its own
    // intermediate, and the pool holds the largest one's, in whole granules.
    for (std::size_t i = 0; i < graphs.size(); ++i) {
      EXPECT_EQ(graphs[i].report().pool_shared_bytes, steps[i].n * sizeof(std::uint32_t)) << i;
    }
    EXPECT_EQ(stats.used_bytes, largest);
    held_by_largest = granules(largest, stats.granularity);
    EXPECT_EQ(pool->bytes_held(), held_by_largest);
    EXPECT_EQ(stats.growths, 1u) << "recorded largest first: mapped once";
  } else {
    // Each graph borrows the largest one's intermediate whole.
    for (const Graph& graph : graphs) EXPECT_EQ(graph.report().pool_shared_bytes, largest);
    EXPECT_LE(static_cast<double>(pool->bytes_held()), 1.1 * static_cast<double>(largest));
  }
  EXPECT_EQ(pool->intermediates(), 1u);
  // Without the pool, the graphs held every intermediate: the sum.
  std::size_t intermediates_sum = 0;
  for (const Step& step : steps) intermediates_sum += step.n * sizeof(std::uint32_t);
  EXPECT_GE(unshared_pinned, intermediates_sum);

  // Replaying in any order gives the same bytes as each recorded alone.
  for (const std::vector<int>& order : {std::vector<int>{7, 0, 3, 5, 1, 6, 2, 4},
                                        std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7},
                                        std::vector<int>{4, 4, 2, 7, 7, 0, 1, 3}}) {
    for (const Step& step : steps) {
      ASSERT_THAT(
          device_->write(step.out, to_bytes(std::vector<std::uint32_t>(step.n, 0)), stream()),
          IsOk());
    }
    for (int index : order) ASSERT_THAT(graphs[index].replay(), IsOk());
    for (int index : order) {
      EXPECT_THAT(read_u32(steps[index].out), ElementsAreArray(alone[index])) << index;
    }
  }

  // The pool's memory goes with its last graph.
  graphs.erase(graphs.begin() + 1, graphs.end());
  EXPECT_EQ(pool->bytes_held(), held_by_largest);
  ASSERT_THAT(graphs.front().destroy(), IsOk());
  EXPECT_EQ(pool->bytes_held(), 0u);
  EXPECT_EQ(pool->intermediates(), 0u);
}

TEST_P(GraphPoolTest, ABufferLentFromThePoolThatOutlivesItsRecordingIsRefused) {
  Step big = make_step(8);
  Step small = make_step(2);
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  Result<Graph> first = record(big, &*pool);
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(pool->intermediates(), 1u);

  // Allocated by the recording (the pool lends it the shared intermediate) and kept.
  CaptureOptions options = in_pool(*pool);
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  pass(small);
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<Buffer> kept = device_->alloc(small.n * sizeof(std::uint32_t), stream());
  ASSERT_THAT(kept, IsOk());
  ASSERT_THAT(add_one(small.in, *kept, small.n), IsOk());
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("outlived the recording")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  *kept = Buffer{};

  // The first graph is untouched and still computes.
  ASSERT_NO_FATAL_FAILURE(expect_big_step_computes(big, *first));
}

// A buffer the warm-up allocates is the window's own memory, never lent by the pool,
// so one kept across the recording is the graph's output like any buffer from before the window
// (it was refused as an outliving pool buffer before).
TEST_P(GraphPoolTest, ABufferTheWarmUpAllocatesAndTheRecordingKeepsIsTheGraphsOwnOutput) {
  Step big = make_step(8);
  Step small = make_step(2);
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  Result<Graph> first = record(big, &*pool);
  ASSERT_THAT(first, IsOk());

  CaptureOptions options = in_pool(*pool);
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  Result<Buffer> kept = device_->alloc(small.n * sizeof(std::uint32_t), stream());
  ASSERT_THAT(kept, IsOk());
  ASSERT_THAT(add_one(small.in, *kept, small.n), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(small.in, *kept, small.n), IsOk());
  Result<Graph> second = device_->end_capture(stream());
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->report().pool_shared_bytes, 0u) << "the kept buffer is not scratch";
  ASSERT_THAT(device_->write(*kept, to_bytes(std::vector<std::uint32_t>(small.n, 0)), stream()),
              IsOk());
  ASSERT_THAT(second->replay(), IsOk());
  ASSERT_THAT(first->replay(), IsOk());
  EXPECT_THAT(read_u32(*kept), ElementsAreArray(iota_u32(small.n, 2 * 1000 + 1)));
}

TEST_P(GraphPoolTest, APoolOfAnotherStreamOrAnEmptyPoolIsInvalidArgument) {
  Result<Stream*> other = device_->create_stream();
  ASSERT_THAT(other, IsOk());
  Result<GraphPool> foreign = device_->create_graph_pool(**other, pool_options());
  ASSERT_THAT(foreign, IsOk());
  CaptureOptions options = in_pool(*foreign);
  EXPECT_THAT(device_->prepare_capture(stream(), options), StatusIs(Errc::invalid_argument));
  GraphPool empty;
  options.pool = &empty;
  EXPECT_THAT(device_->prepare_capture(stream(), options), StatusIs(Errc::invalid_argument));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

TEST_P(GraphPoolTest, AnAbortedPoolWindowSharesNothing) {
  Step step = make_step(4);
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  CaptureOptions options = in_pool(*pool);
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  pass(step);
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  pass(step);
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  // Once the stream has passed the recording's uses (a pool on virtual memory gives back what the
  // window mapped then; one on plain allocations never shared anything).
  ASSERT_THAT(device_->sync(stream()), IsOk());
  EXPECT_EQ(pool->bytes_held(), 0u);
  // The next window without a pool does not lend from it.
  Result<Graph> graph = record(step, nullptr);
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().pool_shared_bytes, 0u);
}

// ---- A pool never lends memory that is still live ----------------------------------

bool overlap(const Buffer& a, const Buffer& b) {
  return a.native_handle() < b.native_handle() + b.size() &&
         b.native_handle() < a.native_handle() + a.size();
}

// A window that closes without a graph forgot who borrowed the pool's memory, so the
// next window lent it again while the first borrower was still alive, and the pool's graphs
// used it as scratch under the borrower's data.
TEST_P(GraphPoolTest, ABufferKeptPastAnAbortedPoolWindowIsNeverLentAgainNorSilentlyOverwritten) {
  Step big = make_step(8);
  Step small = make_step(2);
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  Result<Graph> first = record(big, &*pool);
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(pool->intermediates(), 1u);

  CaptureOptions options = in_pool(*pool);
  const std::size_t bytes = small.n * sizeof(std::uint32_t);
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  pass(small);
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<Buffer> kept = device_->alloc(bytes, stream());
  ASSERT_THAT(kept, IsOk());
  ASSERT_THAT(add_one(small.in, *kept, small.n), IsOk());
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());

  // The next window of the pool does not lend the memory the kept buffer still uses.
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  pass(small);
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<Buffer> next = device_->alloc(bytes, stream());
  ASSERT_THAT(next, IsOk());
  EXPECT_FALSE(overlap(*kept, *next)) << "two live buffers share an address range";
  next = Buffer{};
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());

  // The kept buffer can never return bytes another graph's replay wrote into it, nor write
  // into that graph's scratch under a queued replay: its memory is the pool's, so it carries an
  // error for good and no operation may use it.
  ASSERT_THAT(first->replay(), IsOk());
  EXPECT_THAT(device_->write(*kept, to_bytes(std::vector<std::uint32_t>(small.n, 7)), stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("graph pool")));
  EXPECT_THAT(device_->read(*kept, stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("graph pool")));
  EXPECT_THAT(add_one(*kept, small.out, small.n), StatusIs(Errc::graph_state));
  EXPECT_THAT(add_one(small.in, *kept, small.n), StatusIs(Errc::graph_state));
  // The pool's graph still computes.
  ASSERT_NO_FATAL_FAILURE(expect_big_step_computes(big, *first));
}

// A buffer the warm-up allocates and keeps (a lazily allocated result) is
// the window's own memory, never the pool's: another graph's replay can't overwrite it.
TEST_P(GraphPoolTest, ABufferTheWarmUpAllocatesAndKeepsIsNeverPoolMemory) {
  Step big = make_step(8);
  Step small = make_step(2);
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  Result<Graph> first = record(big, &*pool);
  ASSERT_THAT(first, IsOk());

  CaptureOptions options = in_pool(*pool);
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  Result<Buffer> result = device_->alloc(small.n * sizeof(std::uint32_t), stream());
  ASSERT_THAT(result, IsOk());
  ASSERT_THAT(add_one(small.in, *result, small.n), IsOk());  // the warm-up's result
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());     // no graph, say a refusal
  ASSERT_THAT(first->replay(), IsOk());
  EXPECT_THAT(read_u32(*result), ElementsAreArray(iota_u32(small.n, 2 * 1000 + 1)));
}

// An intermediate is what was allocated inside the pool's window; a graph's running
// state allocated before it (a step counter), whose handle went before end_capture, is the
// graph's own memory, not scratch for the pool's other graphs.
TEST_P(GraphPoolTest, StateAllocatedBeforeThePoolsWindowIsNeverShared) {
  constexpr std::uint32_t kWords = 64;
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  CaptureOptions options = in_pool(*pool);
  Buffer out_a = upload_u32(std::vector<std::uint32_t>(kWords, 0));
  Buffer out_b = upload_u32(std::vector<std::uint32_t>(kWords, 0));

  // Graph A: counter += 1 (the counter lives across replays), out_a = counter, through an
  // intermediate.
  Buffer counter = upload_u32(std::vector<std::uint32_t>(kWords, 0));
  auto step_a = [&] {
    Result<Buffer> tmp = device_->alloc(kWords * sizeof(std::uint32_t), stream());
    ASSERT_THAT(tmp, IsOk());
    ASSERT_THAT(add_one(counter, *tmp, kWords), IsOk());
    ASSERT_THAT(device_->launch(stream(), copy_, dims_for(kWords),
                                {Arg::in(*tmp), Arg::out(counter), Arg::value(kWords)}),
                IsOk());
    ASSERT_THAT(device_->launch(stream(), copy_, dims_for(kWords),
                                {Arg::in(counter), Arg::out(out_a), Arg::value(kWords)}),
                IsOk());
  };
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  step_a();
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  step_a();
  counter = Buffer{};  // only graph A holds the counter now
  Result<Graph> a = device_->end_capture(stream());
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(pool->intermediates(), 1u) << "the counter is A's state, not an intermediate";
  EXPECT_EQ(a->report().pool_shared_bytes, kWords * sizeof(std::uint32_t));

  // Graph B of the same pool: an intermediate of the counter's size, filled with 999.
  auto step_b = [&] {
    Result<Buffer> tmp = device_->alloc(kWords * sizeof(std::uint32_t), stream());
    ASSERT_THAT(tmp, IsOk());
    ASSERT_THAT(fill(*tmp, 999, kWords), IsOk());
    ASSERT_THAT(device_->launch(stream(), copy_, dims_for(kWords),
                                {Arg::in(*tmp), Arg::out(out_b), Arg::value(kWords)}),
                IsOk());
  };
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  step_b();
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  step_b();
  Result<Graph> b = device_->end_capture(stream());
  ASSERT_THAT(b, IsOk());

  // The warm-up counted once, and each replay of A counts once more.
  ASSERT_THAT(a->replay(), IsOk());
  EXPECT_THAT(read_u32(out_a), Each(2u));
  ASSERT_THAT(b->replay(), IsOk());
  EXPECT_THAT(read_u32(out_b), Each(999u));
  ASSERT_THAT(a->replay(), IsOk());
  EXPECT_THAT(read_u32(out_a), Each(3u)) << "B's replay overwrote A's counter";
}

// The refusal of a pool buffer that outlives its re-recording is decided before the
// re-recording touches `into`: the graph replays its old recording, unchanged.
TEST_P(GraphPoolTest, ARefusedReRecordingIntoAPoolGraphLeavesTheGraphAsItWas) {
  Step step = make_step(4);
  Buffer other_in = upload_u32(iota_u32(step.n, 50000));
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  Result<Graph> graph = record(step, &*pool);
  ASSERT_THAT(graph, IsOk());
  const CUgraphExec exec = graph->native_handle();

  // The same topology on another input (exec update would take it), keeping a lent buffer.
  CaptureOptions options = in_pool(*pool);
  Buffer kept;
  auto rerun = [&](bool keep) {
    Result<Buffer> tmp = device_->alloc(step.n * sizeof(std::uint32_t), stream());
    ASSERT_THAT(tmp, IsOk());
    ASSERT_THAT(add_one(other_in, *tmp, step.n), IsOk());
    ASSERT_THAT(add_one(*tmp, step.out, step.n), IsOk());
    if (keep) kept = *tmp;
  };
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  rerun(false);
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  rerun(true);
  EXPECT_THAT(device_->end_capture(stream(), *graph),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("outlived the recording")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(graph->native_handle(), exec);
  EXPECT_FALSE(graph->report().rerecorded);
  kept = Buffer{};
  ASSERT_THAT(device_->write(step.out, to_bytes(std::vector<std::uint32_t>(step.n, 0)), stream()),
              IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(step.out), ElementsAreArray(iota_u32(step.n, 4 * 1000 + 2)))
      << "the graph replayed the refused recording";
}

// The allocation is a write on the owner, lent or not: another stream uses a lent
// buffer only once ordered after it (a replay of the pool's graphs may still be queued there).
TEST_P(GraphPoolTest, ALentBufferIsUsedOnAnotherStreamOnlyOnceOrdered) {
  Step step = make_step(4);
  Stream* other = add_stream();
  ASSERT_NE(other, nullptr);
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  Result<Graph> graph = record(step, &*pool);
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());  // queued, using the pool's memory

  CaptureOptions options = in_pool(*pool);
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  pass(step);
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<Buffer> lent = device_->alloc(step.n * sizeof(std::uint32_t), stream());
  ASSERT_THAT(lent, IsOk());
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  // Refused twice over: nothing orders `other` after the allocation (a write on the pool's
  // stream, lent or not: the many-graph model checks that rule), and the buffer, lent to a
  // window that made no graph, is the queued replay's scratch.
  EXPECT_THAT(device_->fill(*lent, std::uint8_t{0}, *other), StatusIs(Errc::graph_state));
}

// A pool recording refused at its close never destroys an executable (or makes any
// other call CUDA forbids) while another thread's GLOBAL recording is open: end_capture is
// refused up front then, with the recording still open, and the other recording is unharmed.
TEST_P(GraphPoolTest, ClosingAPoolRecordingNeverBreaksAnotherThreadsGlobalRecording) {
  Step big = make_step(8);
  Step small = make_step(2);
  Stream* other = add_stream();
  ASSERT_NE(other, nullptr);
  Buffer other_buffer = upload_u32(std::vector<std::uint32_t>(64, 0), *other);
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  Result<Graph> first = record(big, &*pool);
  ASSERT_THAT(first, IsOk());

  // This thread records in thread_local mode (so the other thread may open a GLOBAL recording)
  // and keeps a buffer lent from the pool.
  CaptureOptions options = in_pool(*pool);
  options.mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  pass(small);
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<Buffer> kept = device_->alloc(small.n * sizeof(std::uint32_t), stream());
  ASSERT_THAT(kept, IsOk());
  ASSERT_THAT(add_one(small.in, *kept, small.n), IsOk());

  std::promise<void> opened, closed_here;
  std::future<void> closed_future = closed_here.get_future();
  Result<Graph> other_graph = Error(Errc::driver, "not run");
  std::thread owner([&] {
    CaptureOptions global;
    global.mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    EXPECT_THAT(device_->prepare_capture(*other, global), IsOk());
    EXPECT_THAT(device_->begin_capture(*other), IsOk());
    EXPECT_THAT(add_one(other_buffer, other_buffer, 64, *other), IsOk());
    opened.set_value();
    closed_future.wait();
    other_graph = device_->end_capture(*other);
  });
  opened.get_future().wait();
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("global mode")));
  EXPECT_EQ(stream().capture_state(), CaptureState::capture) << "refused up front: still open";
  closed_here.set_value();
  owner.join();
  ASSERT_THAT(other_graph, IsOk()) << "the other thread's recording was invalidated";
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("outlived the recording")));
  ASSERT_THAT(other_graph->replay(), IsOk());
  EXPECT_THAT(read_u32(other_buffer, *other), Each(1u));
}

// ---- Pools that share in any recording order ---------------------------------------

// 8 bucket graphs (batch 1..128, 256 bytes a row: the 65,280 bytes against 32,768 for the
// largest alone), recorded largest first, smallest first and shuffled: on virtual memory the pool
// holds at most 1.05x the largest one's intermediates plus one granule in every order, and every
// graph replays what it recorded; on plain allocations only largest first shares.
TEST_P(GraphPoolTest, EightBucketsHoldTheLargestOnesIntermediatesInAnyRecordingOrder) {
  constexpr std::uint32_t kRow = 64;  // words: 256 bytes a row
  const std::vector<std::uint32_t> largest_first = {128, 64, 32, 16, 8, 4, 2, 1};
  const std::vector<std::uint32_t> smallest_first = {1, 2, 4, 8, 16, 32, 64, 128};
  const std::vector<std::uint32_t> shuffled = {16, 1, 128, 4, 32, 2, 64, 8};
  for (const auto* order : {&largest_first, &smallest_first, &shuffled}) {
    SCOPED_TRACE(order == &largest_first ? "largest first"
                 : order == &smallest_first ? "smallest first" : "shuffled");
    Result<GraphPool> pool = make_pool();
    ASSERT_THAT(pool, IsOk());
    std::vector<Step> steps;
    std::vector<Graph> graphs;
    std::size_t largest = 0;
    std::size_t sum = 0;
    for (std::uint32_t batch : *order) {
      Step step;
      step.n = batch * kRow;
      step.in = upload_u32(iota_u32(step.n, batch * 1000));
      step.out = upload_u32(std::vector<std::uint32_t>(step.n, 0));
      Result<Graph> graph = record(step, &*pool);
      ASSERT_THAT(graph, IsOk());
      largest = std::max<std::size_t>(largest, step.n * sizeof(std::uint32_t));
      sum += step.n * sizeof(std::uint32_t);
      steps.push_back(std::move(step));
      graphs.push_back(std::move(*graph));
    }
    ASSERT_EQ(largest, 32768u);
    ASSERT_EQ(sum, 65280u);
    const GraphPoolStats stats = pool->stats();
    if (stats.virtual_memory) {
      EXPECT_EQ(stats.used_bytes, largest);
      EXPECT_LE(static_cast<double>(pool->bytes_held()),
                1.05 * static_cast<double>(largest) + static_cast<double>(stats.granularity));
    } else if (order == &largest_first) {
      EXPECT_EQ(pool->bytes_held(), largest);
    } else if (order == &smallest_first) {
      EXPECT_EQ(pool->bytes_held(), sum) << "plain allocations: no intermediate fits a later one";
    }
    // Replayed in reverse recording order, every graph computes from its own input.
    for (std::size_t i = graphs.size(); i-- > 0;) ASSERT_THAT(graphs[i].replay(), IsOk());
    for (std::size_t i = 0; i < graphs.size(); ++i) {
      EXPECT_THAT(read_u32(steps[i].out),
                  ElementsAreArray(iota_u32(steps[i].n, steps[i].n / kRow * 1000 + 2)))
          << i;
    }
  }
}

// On virtual memory, a recording that needs more than is mapped maps more at the end at
// begin_capture (earlier graphs keep their addresses and replay); when graphs go, the tail no
// remaining graph uses is unmapped and given back, and a later, larger recording grows it again.
TEST_P(GraphPoolTest, ThePoolGrowsAtItsEndAndGivesBackTheTailNoGraphUses) {
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  if (!pool->stats().virtual_memory) GTEST_SKIP() << "a pool on plain allocations holds slices";
  const std::size_t granularity = pool->stats().granularity;
  std::vector<Sized> sizes = {{granularity / 2, 1, {}},
                              {granularity + granularity / 2, 2, {}},
                              {2 * granularity + granularity / 2, 3, {}}};
  std::vector<Graph> graphs;
  for (Sized& sized : sizes) {
    Result<Graph> graph = record_sized(sized, *pool);
    ASSERT_THAT(graph, IsOk());
    graphs.push_back(std::move(*graph));
    EXPECT_EQ(pool->bytes_held(), granules(sized.bytes, granularity)) << "grown at its end";
  }
  EXPECT_EQ(pool->stats().growths, 3u);
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    ASSERT_THAT(graphs[i].replay(), IsOk());
    expect_out(sizes[i]);
  }
  ASSERT_THAT(graphs[2].destroy(), IsOk());
  EXPECT_EQ(pool->bytes_held(), 2 * granularity) << "the largest graph's tail given back";
  ASSERT_THAT(graphs[1].destroy(), IsOk());
  EXPECT_EQ(pool->bytes_held(), granularity);
  EXPECT_EQ(pool->stats().shrinks, 2u);
  ASSERT_THAT(graphs[0].replay(), IsOk());
  expect_out(sizes[0]);
  // Grown again, and the smallest graph still replays beside the new one.
  sizes[2].value = 9;
  Result<Graph> again = record_sized(sizes[2], *pool);
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(pool->bytes_held(), 3 * granularity);
  ASSERT_THAT(again->replay(), IsOk());
  ASSERT_THAT(graphs[0].replay(), IsOk());
  expect_out(sizes[2]);
  expect_out(sizes[0]);
  ASSERT_THAT(again->destroy(), IsOk());
  ASSERT_THAT(graphs[0].destroy(), IsOk());
  EXPECT_EQ(pool->bytes_held(), 0u);
}

// Graphs that go give back what no remaining graph uses, in every recording order and every
// order of going. On virtual memory the pool holds the largest remaining graph's intermediates
// rounded up to the granule (every graph lays its intermediates out from the base). It used to
// map each growth as one physical allocation, which can only go whole: recorded largest first,
// the pool held the largest graph's memory for as long as any smaller graph used its first
// granule. On plain allocations a graph borrows the smallest earlier intermediate that holds its
// own, and the pool holds each intermediate until the last graph using it goes.
TEST_P(GraphPoolTest, GoingGraphsGiveBackWhatNoRemainingGraphUsesInEveryOrder) {
  Result<GraphPool> pool_on_vmm = device_->create_graph_pool(stream());
  ASSERT_THAT(pool_on_vmm, IsOk());
  const std::size_t g = pool_on_vmm->stats().granularity;
  ASSERT_GT(g, 0u) << "the fake and the H200 support virtual memory management";
  const std::size_t large = 2 * g + g / 2, middle = g + g / 2, small = g / 2;
  struct Order {
    const char* name;
    std::vector<std::size_t> recorded;
  };
  const Order orders[] = {{"largest first", {large, middle, small}},
                          {"smallest first", {small, middle, large}},
                          {"middle first", {middle, large, small}},
                          {"middle, smallest, largest", {middle, small, large}}};
  for (const Order& order : orders) {
    for (const bool reverse : {false, true}) {
      SCOPED_TRACE(std::string(order.name) + (reverse ? ", last recorded goes first"
                                                      : ", first recorded goes first"));
      Result<GraphPool> pool = make_pool();
      ASSERT_THAT(pool, IsOk());
      const bool vmm = pool->stats().virtual_memory;
      std::vector<Sized> sizes;
      std::vector<Graph> graphs;
      for (std::size_t bytes : order.recorded) {
        sizes.push_back({bytes, static_cast<std::uint8_t>(sizes.size() + 1), {}});
        Result<Graph> graph = record_sized(sizes.back(), *pool);
        ASSERT_THAT(graph, IsOk());
        graphs.push_back(std::move(*graph));
      }
      // Plain allocations: the intermediate each graph uses (its own, or the smallest earlier
      // one that holds it), as an index into `order.recorded`.
      std::vector<std::size_t> uses;
      for (std::size_t i = 0; i < order.recorded.size(); ++i) {
        std::size_t best = i;
        for (std::size_t j = 0; j < i; ++j) {
          if (uses[j] == j && order.recorded[j] >= order.recorded[i] &&
              (best == i || order.recorded[j] < order.recorded[best])) {
            best = j;
          }
        }
        uses.push_back(best);
      }
      std::vector<bool> live(graphs.size(), true);
      auto expected_held = [&] {
        std::size_t need = 0;
        std::vector<bool> used(graphs.size(), false);
        for (std::size_t i = 0; i < graphs.size(); ++i) {
          if (!live[i]) continue;
          need = std::max(need, order.recorded[i]);
          used[uses[i]] = true;
        }
        if (vmm) return granules(need, g);
        std::size_t held = 0;
        for (std::size_t i = 0; i < graphs.size(); ++i) held += used[i] ? order.recorded[i] : 0;
        return held;
      };
      EXPECT_EQ(pool->bytes_held(), expected_held()) << "all recorded";
      for (std::size_t step = 0; step < graphs.size(); ++step) {
        const std::size_t going = reverse ? graphs.size() - 1 - step : step;
        ASSERT_THAT(graphs[going].destroy(), IsOk());
        live[going] = false;
        // Given back once the stream is past the graph's last use.
        ASSERT_THAT(device_->sync(stream()), IsOk());
        EXPECT_EQ(pool->bytes_held(), expected_held()) << order.recorded[going] << " went";
        for (std::size_t i = 0; i < graphs.size(); ++i) {
          if (!live[i]) continue;
          ASSERT_THAT(device_->write(sizes[i].out, to_bytes(std::vector<std::uint32_t>(16, 0)),
                                     stream()),
                      IsOk());
          ASSERT_THAT(graphs[i].replay(), IsOk());
        }
        for (std::size_t i = 0; i < graphs.size(); ++i) {
          if (live[i]) expect_out(sizes[i]);
        }
      }
      EXPECT_EQ(pool->bytes_held(), 0u);
    }
  }
}

// The device memory a pool graph accounts for (GraphReport::memory): its own buffers, its share
// of the pool and the driver's bytes for its executable, the same on every driver.
// A lent buffer dropped after its window: the pool's memory under it goes back once the stream
// is seen past its last use. That used to wait for the stream's next allocation (which may never
// come): a drop now polls its stream, and a drop made while another stream's GLOBAL recording
// forbade the poll is polled when that recording ends (found by the many-graph model, seed 59).
TEST_P(GraphPoolTest, ALentBufferDroppedAfterItsWindowGivesThePoolsMemoryBackWithoutASync) {
  Step step = make_step(4);
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  if (!pool->stats().virtual_memory) GTEST_SKIP() << "a pool on plain allocations holds slices";
  Result<Stream*> other = device_->create_stream();
  ASSERT_THAT(other, IsOk());
  auto kept_past_an_aborted_window = [&]() -> Buffer {
    CaptureOptions options = in_pool(*pool);
    EXPECT_THAT(device_->prepare_capture(stream(), options), IsOk());
    pass(step);
    EXPECT_THAT(device_->begin_capture(stream()), IsOk());
    Result<Buffer> kept = device_->alloc(step.n * sizeof(std::uint32_t), stream());
    EXPECT_THAT(kept, IsOk());
    EXPECT_THAT(add_one(step.in, *kept, step.n), IsOk());
    EXPECT_THAT(device_->abort_capture(stream()), IsOk());
    EXPECT_GT(pool->bytes_held(), 0u) << "the kept buffer holds its piece";
    return kept ? std::move(*kept) : Buffer{};
  };
  // On the GPU the stream may still run the warm-up when it is polled: then only a sync tells.
  auto settled = [&] { return on_fake() ? Result<void>{} : device_->sync(stream()); };

  Buffer kept = kept_past_an_aborted_window();
  kept = Buffer{};
  ASSERT_THAT(settled(), IsOk());
  EXPECT_EQ(pool->bytes_held(), 0u) << "given back at the drop";

  kept = kept_past_an_aborted_window();
  ASSERT_THAT(device_->prepare_capture(**other), IsOk());
  ASSERT_THAT(device_->begin_capture(**other), IsOk());  // GLOBAL: no query may run meanwhile
  kept = Buffer{};
  EXPECT_GT(pool->bytes_held(), 0u) << "held while the recording forbids polling the stream";
  Result<Graph> graph = device_->end_capture(**other);
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(settled(), IsOk());
  EXPECT_EQ(pool->bytes_held(), 0u) << "given back when the recording ended";
}

// ---- A recording's allocations are its own memory -----------------------------------------

// Each allocation of a recording is memory of its own for the recording's whole life: in the
// replay, what orders the uses of two intermediates is the graph's edges, not the order the
// recording allocated them in, and graphcap does not look for a path of edges that would make
// sharing safe. The plain layout used to lend an earlier graph's intermediate again once the
// recording dropped the buffer it had lent it to.
class GraphPoolDistinctTest : public GraphPoolTest {
 protected:
  static constexpr std::uint32_t kN = 4 * kWordsPerRow;
  static constexpr std::size_t kBytes = kN * sizeof(std::uint32_t);

  void SetUp() override {
    GraphPoolTest::SetUp();
    if (HasFatalFailure()) return;
    Result<GraphPool> pool = make_pool();
    ASSERT_THAT(pool, IsOk());
    pool_ = std::move(*pool);
    // An earlier graph of the pool whose intermediate fits both of the recording's (what the
    // plain layout lends).
    big_ = make_step(8);
    Result<Graph> earlier = record(big_, &pool_);
    ASSERT_THAT(earlier, IsOk());
    earlier_ = std::move(*earlier);
    out1_ = upload_u32(std::vector<std::uint32_t>(kN, 0));
    out2_ = upload_u32(std::vector<std::uint32_t>(kN, 0));
  }

  // Warm-up and recording of `step`, which sets the two intermediates' addresses.
  Result<Graph> record_step(const std::function<void()>& step) {
    CaptureOptions options = in_pool(pool_);
    EXPECT_THAT(device_->prepare_capture(stream(), options), IsOk());
    step();
    EXPECT_THAT(device_->begin_capture(stream()), IsOk());
    step();
    return device_->end_capture(stream());
  }

  // The replay writes out1 = 1 + 1 (through the first intermediate) and out2 = 5 + 1 (through
  // the second); the earlier graph still computes beside it.
  void expect_replays_right(Graph& graph) {
    ASSERT_THAT(device_->write(out1_, to_bytes(std::vector<std::uint32_t>(kN, 0)), stream()),
                IsOk());
    ASSERT_THAT(device_->write(out2_, to_bytes(std::vector<std::uint32_t>(kN, 0)), stream()),
                IsOk());
    ASSERT_THAT(graph.replay(), IsOk());
    EXPECT_THAT(read_u32(out1_), Each(2u));
    EXPECT_THAT(read_u32(out2_), Each(6u));
    ASSERT_THAT(earlier_.replay(), IsOk());
    EXPECT_THAT(read_u32(big_.out), ElementsAreArray(iota_u32(big_.n, 8 * 1000 + 2)));
  }

  GraphPool pool_;
  Step big_;
  Graph earlier_;
  Buffer out1_, out2_;
  CUdeviceptr first_ = 0, second_ = 0;
};

// A side stream forked into the recording reads the first intermediate; the origin drops it,
// allocates the second and writes it, with no edge between that write and the side's read.
TEST_P(GraphPoolDistinctTest, TwoIntermediatesOfAForkedRecordingAreDistinctMemory) {
  Stream* side = add_stream();
  ASSERT_NE(side, nullptr);
  Event fork = new_event();
  Event join = new_event();
  auto step = [&] {
    Result<Buffer> first = device_->alloc(kBytes, stream());
    ASSERT_THAT(first, IsOk());
    first_ = first->native_handle();
    ASSERT_THAT(fill(*first, 1, kN), IsOk());
    ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
    ASSERT_THAT(device_->wait(*side, fork), IsOk());
    ASSERT_THAT(add_one(*first, out1_, kN, *side), IsOk());
    *first = Buffer{};  // dropped while the side stream's read of it is unordered with what follows
    Result<Buffer> second = device_->alloc(kBytes, stream());
    ASSERT_THAT(second, IsOk());
    second_ = second->native_handle();
    ASSERT_THAT(fill(*second, 5, kN), IsOk());
    ASSERT_THAT(add_one(*second, out2_, kN), IsOk());
    ASSERT_THAT(device_->record_event(join, *side), IsOk());
    ASSERT_THAT(device_->wait(stream(), join), IsOk());
  };
  Result<Graph> graph = record_step(step);
  ASSERT_THAT(graph, IsOk());
  EXPECT_NE(first_, second_) << "the second intermediate was lent the first one's memory";
  EXPECT_FALSE(first_ < second_ + kBytes && second_ < first_ + kBytes) << "they overlap";
  expect_replays_right(*graph);
}

// The same on one stream: stream order would make sharing safe here (every use of the first
// comes before the second's allocation), but the rule is the same: distinct memory.
TEST_P(GraphPoolDistinctTest, TwoIntermediatesOfOneStreamsRecordingAreDistinctMemory) {
  auto step = [&] {
    Result<Buffer> first = device_->alloc(kBytes, stream());
    ASSERT_THAT(first, IsOk());
    first_ = first->native_handle();
    ASSERT_THAT(fill(*first, 1, kN), IsOk());
    ASSERT_THAT(add_one(*first, out1_, kN), IsOk());
    *first = Buffer{};
    Result<Buffer> second = device_->alloc(kBytes, stream());
    ASSERT_THAT(second, IsOk());
    second_ = second->native_handle();
    ASSERT_THAT(fill(*second, 5, kN), IsOk());
    ASSERT_THAT(add_one(*second, out2_, kN), IsOk());
  };
  Result<Graph> graph = record_step(step);
  ASSERT_THAT(graph, IsOk());
  EXPECT_NE(first_, second_);
  EXPECT_FALSE(first_ < second_ + kBytes && second_ < first_ + kBytes) << "they overlap";
  expect_replays_right(*graph);
}

TEST_P(GraphPoolTest, AGraphsReportSaysTheDeviceMemoryItAccountsFor) {
  Step step = make_step(4);
  Result<GraphPool> pool = make_pool();
  ASSERT_THAT(pool, IsOk());
  Result<Graph> graph = record(step, &*pool);
  ASSERT_THAT(graph, IsOk());
  const GraphMemory& memory = graph->report().memory;
  const std::size_t bytes = step.n * sizeof(std::uint32_t);
  EXPECT_EQ(memory.pool_bytes, bytes) << "its intermediate";
  EXPECT_EQ(memory.own_bytes, 2 * bytes) << "in and out, allocated before the window";
  EXPECT_EQ(memory.driver_model_bytes, executable_driver_bytes({2, 0, 0}));
  // A small executable fits in the driver's 2 MiB chunks: cuMemGetInfo can't see it alone, so
  // it is not asked, and the model's figure stands.
  EXPECT_EQ(memory.driver_source, DriverBytesSource::model);
  EXPECT_EQ(memory.driver_bytes, memory.driver_model_bytes);
  EXPECT_FALSE(memory.driver_taken_known);
  EXPECT_EQ(memory.device_bytes(), memory.own_bytes + memory.pool_bytes + memory.driver_bytes);
}

std::string layout_name(const ::testing::TestParamInfo<Layout>& param_info) {
  return param_info.param == Layout::virtual_memory ? "VirtualMemory" : "Plain";
}

INSTANTIATE_TEST_SUITE_P(Layouts, GraphPoolDistinctTest,
                         ::testing::Values(Layout::virtual_memory, Layout::plain), layout_name);
INSTANTIATE_TEST_SUITE_P(Layouts, GraphPoolTest,
                         ::testing::Values(Layout::virtual_memory, Layout::plain), layout_name);

}  // namespace
}  // namespace graphcap::testing
