// Graph pools on every driver (issue 10, part 1): graphs recorded into one pool share the memory
// of their intermediates; buffers alive after a recording are never shared; the memory goes when
// the last graph using it goes.
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using ::testing::Each;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// Batch sizes of a decode step, largest first (recorded in that order, as vLLM does: a smaller
// graph's intermediates then fit in the larger ones').
constexpr std::uint32_t kBatches[] = {128, 96, 64, 48, 32, 16, 8, 1};
constexpr std::uint32_t kWordsPerRow = 256;

class GraphPoolTest : public DeviceFixture {
 protected:
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
    EXPECT_THAT(device_->prepare_capture(stream(), options), IsOk());
    pass(step);
    EXPECT_THAT(device_->begin_capture(stream()), IsOk());
    pass(step);
    return device_->end_capture(stream());
  }
};

TEST_F(GraphPoolTest, EightBatchSizesShareTheLargestIntermediateAndReplayInAnyOrder) {
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

  Result<GraphPool> pool = device_->create_graph_pool(stream());
  ASSERT_THAT(pool, IsOk());
  std::vector<Graph> graphs;
  for (const Step& step : steps) {
    Result<Graph> graph = record(step, &*pool);
    ASSERT_THAT(graph, IsOk());
    graphs.push_back(std::move(*graph));
  }
  const std::size_t largest = graphs.front().report().pool_shared_bytes;
  ASSERT_GE(largest, std::size_t{128} * kWordsPerRow * sizeof(std::uint32_t));
  for (const Graph& graph : graphs) EXPECT_EQ(graph.report().pool_shared_bytes, largest);
  EXPECT_LE(static_cast<double>(pool->bytes_held()), 1.1 * static_cast<double>(largest));
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
  EXPECT_EQ(pool->bytes_held(), largest);
  ASSERT_THAT(graphs.front().destroy(), IsOk());
  EXPECT_EQ(pool->bytes_held(), 0u);
  EXPECT_EQ(pool->intermediates(), 0u);
}

TEST_F(GraphPoolTest, ABufferLentFromThePoolThatOutlivesItsRecordingIsRefused) {
  Step big = make_step(8);
  Step small = make_step(2);
  Result<GraphPool> pool = device_->create_graph_pool(stream());
  ASSERT_THAT(pool, IsOk());
  Result<Graph> first = record(big, &*pool);
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(pool->intermediates(), 1u);

  // Allocated by the recording (the pool lends it the shared intermediate) and kept.
  CaptureOptions options;
  options.pool = &*pool;
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
  ASSERT_THAT(device_->write(big.out, to_bytes(std::vector<std::uint32_t>(big.n, 0)), stream()),
              IsOk());
  ASSERT_THAT(first->replay(), IsOk());
  EXPECT_THAT(read_u32(big.out), ElementsAreArray(iota_u32(big.n, 8 * 1000 + 2)));
}

// Issue 21: a buffer the warm-up allocates is the window's own memory, never lent by the pool,
// so one kept across the recording is the graph's output like any buffer from before the window
// (it was refused as an outliving pool buffer before).
TEST_F(GraphPoolTest, ABufferTheWarmUpAllocatesAndTheRecordingKeepsIsTheGraphsOwnOutput) {
  Step big = make_step(8);
  Step small = make_step(2);
  Result<GraphPool> pool = device_->create_graph_pool(stream());
  ASSERT_THAT(pool, IsOk());
  Result<Graph> first = record(big, &*pool);
  ASSERT_THAT(first, IsOk());

  CaptureOptions options;
  options.pool = &*pool;
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

TEST_F(GraphPoolTest, APoolOfAnotherStreamOrAnEmptyPoolIsInvalidArgument) {
  Result<Stream*> other = device_->create_stream();
  ASSERT_THAT(other, IsOk());
  Result<GraphPool> foreign = device_->create_graph_pool(**other);
  ASSERT_THAT(foreign, IsOk());
  CaptureOptions options;
  options.pool = &*foreign;
  EXPECT_THAT(device_->prepare_capture(stream(), options), StatusIs(Errc::invalid_argument));
  GraphPool empty;
  options.pool = &empty;
  EXPECT_THAT(device_->prepare_capture(stream(), options), StatusIs(Errc::invalid_argument));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

TEST_F(GraphPoolTest, AnAbortedPoolWindowSharesNothing) {
  Step step = make_step(4);
  Result<GraphPool> pool = device_->create_graph_pool(stream());
  ASSERT_THAT(pool, IsOk());
  CaptureOptions options;
  options.pool = &*pool;
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  pass(step);
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  pass(step);
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_EQ(pool->bytes_held(), 0u);
  // The next window without a pool does not lend from it.
  Result<Graph> graph = record(step, nullptr);
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().pool_shared_bytes, 0u);
}


// ---- Issue 21: a pool never lends memory that is still live ----------------------------------

bool overlap(const Buffer& a, const Buffer& b) {
  return a.device_ptr() < b.device_ptr() + b.size() && b.device_ptr() < a.device_ptr() + a.size();
}

// Defect 1: a window that closes without a graph forgot who borrowed the pool's memory, so the
// next window lent it again while the first borrower was still alive, and the pool's graphs
// used it as scratch under the borrower's data.
TEST_F(GraphPoolTest, ABufferKeptPastAnAbortedPoolWindowIsNeverLentAgainNorSilentlyOverwritten) {
  Step big = make_step(8);
  Step small = make_step(2);
  Result<GraphPool> pool = device_->create_graph_pool(stream());
  ASSERT_THAT(pool, IsOk());
  Result<Graph> first = record(big, &*pool);
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(pool->intermediates(), 1u);

  CaptureOptions options;
  options.pool = &*pool;
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

  // The kept buffer can never return bytes another graph's replay wrote into it: its memory is
  // the pool's scratch, so it carries an error for good (a full write does not clear it).
  ASSERT_THAT(device_->write(*kept, to_bytes(std::vector<std::uint32_t>(small.n, 7)), stream()),
              IsOk());
  ASSERT_THAT(first->replay(), IsOk());
  EXPECT_THAT(device_->read(*kept, stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("graph pool")));
  EXPECT_THAT(add_one(*kept, small.out, small.n), StatusIs(Errc::failed_buffer));
  // The pool's graph still computes.
  ASSERT_THAT(device_->write(big.out, to_bytes(std::vector<std::uint32_t>(big.n, 0)), stream()),
              IsOk());
  ASSERT_THAT(first->replay(), IsOk());
  EXPECT_THAT(read_u32(big.out), ElementsAreArray(iota_u32(big.n, 8 * 1000 + 2)));
}

// Defect 1 (warm-up): a buffer the warm-up allocates and keeps (a lazily allocated result) is
// the window's own memory, never the pool's: another graph's replay can't overwrite it.
TEST_F(GraphPoolTest, ABufferTheWarmUpAllocatesAndKeepsIsNeverPoolMemory) {
  Step big = make_step(8);
  Step small = make_step(2);
  Result<GraphPool> pool = device_->create_graph_pool(stream());
  ASSERT_THAT(pool, IsOk());
  Result<Graph> first = record(big, &*pool);
  ASSERT_THAT(first, IsOk());

  CaptureOptions options;
  options.pool = &*pool;
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  Result<Buffer> result = device_->alloc(small.n * sizeof(std::uint32_t), stream());
  ASSERT_THAT(result, IsOk());
  ASSERT_THAT(add_one(small.in, *result, small.n), IsOk());  // the warm-up's result
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());     // no graph, say a refusal
  ASSERT_THAT(first->replay(), IsOk());
  EXPECT_THAT(read_u32(*result), ElementsAreArray(iota_u32(small.n, 2 * 1000 + 1)));
}

// Defect 2: an intermediate is what was allocated inside the pool's window; a graph's running
// state allocated before it (a step counter), whose handle went before end_capture, is the
// graph's own memory, not scratch for the pool's other graphs.
TEST_F(GraphPoolTest, StateAllocatedBeforeThePoolsWindowIsNeverShared) {
  constexpr std::uint32_t kWords = 64;
  Result<GraphPool> pool = device_->create_graph_pool(stream());
  ASSERT_THAT(pool, IsOk());
  CaptureOptions options;
  options.pool = &*pool;
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

// Defect 3b: the refusal of a pool buffer that outlives its re-recording is decided before the
// re-recording touches `into`: the graph replays its old recording, unchanged.
TEST_F(GraphPoolTest, ARefusedReRecordingIntoAPoolGraphLeavesTheGraphAsItWas) {
  Step step = make_step(4);
  Buffer other_in = upload_u32(iota_u32(step.n, 50000));
  Result<GraphPool> pool = device_->create_graph_pool(stream());
  ASSERT_THAT(pool, IsOk());
  Result<Graph> graph = record(step, &*pool);
  ASSERT_THAT(graph, IsOk());
  const CUgraphExec exec = graph->native_handle();

  // The same topology on another input (exec update would take it), keeping a lent buffer.
  CaptureOptions options;
  options.pool = &*pool;
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

// Defect 4: the allocation is a write on the owner, lent or not: another stream uses a lent
// buffer only once ordered after it (a replay of the pool's graphs may still be queued there).
TEST_F(GraphPoolTest, ALentBufferIsUsedOnAnotherStreamOnlyOnceOrdered) {
  Step step = make_step(4);
  Stream* other = add_stream();
  ASSERT_NE(other, nullptr);
  Result<GraphPool> pool = device_->create_graph_pool(stream());
  ASSERT_THAT(pool, IsOk());
  Result<Graph> graph = record(step, &*pool);
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());  // queued, using the pool's memory

  CaptureOptions options;
  options.pool = &*pool;
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  pass(step);
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  Result<Buffer> lent = device_->alloc(step.n * sizeof(std::uint32_t), stream());
  ASSERT_THAT(lent, IsOk());
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_THAT(device_->fill(*lent, std::uint8_t{0}, *other),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("nothing orders")));
}


// Defect 3c: a pool recording refused at its close never destroys an executable (or makes any
// other call CUDA forbids) while another thread's GLOBAL recording is open: end_capture is
// refused up front then, with the recording still open, and the other recording is unharmed.
TEST_F(GraphPoolTest, ClosingAPoolRecordingNeverBreaksAnotherThreadsGlobalRecording) {
  Step big = make_step(8);
  Step small = make_step(2);
  Stream* other = add_stream();
  ASSERT_NE(other, nullptr);
  Buffer other_buffer = upload_u32(std::vector<std::uint32_t>(64, 0), *other);
  Result<GraphPool> pool = device_->create_graph_pool(stream());
  ASSERT_THAT(pool, IsOk());
  Result<Graph> first = record(big, &*pool);
  ASSERT_THAT(first, IsOk());

  // This thread records in thread_local mode (so the other thread may open a GLOBAL recording)
  // and keeps a buffer lent from the pool.
  CaptureOptions options;
  options.pool = &*pool;
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

}  // namespace
}  // namespace graphcap::testing
