// Graph pools on every driver (issue 10, part 1): graphs recorded into one pool share the memory
// of their intermediates; buffers alive after a recording are never shared; the memory goes when
// the last graph using it goes.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using ::testing::ElementsAreArray;

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

  CaptureOptions options;
  options.pool = &*pool;
  ASSERT_THAT(device_->prepare_capture(stream(), options), IsOk());
  Result<Buffer> kept = device_->alloc(small.n * sizeof(std::uint32_t), stream());
  ASSERT_THAT(kept, IsOk());
  ASSERT_THAT(add_one(small.in, *kept, small.n), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(small.in, *kept, small.n), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), StatusIs(Errc::graph_state));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  *kept = Buffer{};

  // The first graph is untouched and still computes.
  ASSERT_THAT(device_->write(big.out, to_bytes(std::vector<std::uint32_t>(big.n, 0)), stream()),
              IsOk());
  ASSERT_THAT(first->replay(), IsOk());
  EXPECT_THAT(read_u32(big.out), ElementsAreArray(iota_u32(big.n, 8 * 1000 + 2)));
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

}  // namespace
}  // namespace graphcap::testing
