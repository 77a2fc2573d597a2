// GraphCache on every driver: lazy recording, replay on a hit, exactly one execution of the step
// per run whatever happens, fallbacks for refused recordings, giving up, invalidate + re-record
// through exec update, eviction by count and by bytes.
#include <graphcap/graph_cache.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

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
  std::vector<std::uint32_t> state() { return read_u32(state_); }
  static std::vector<std::uint32_t> all(std::uint32_t v) {
    return std::vector<std::uint32_t>(kN, v);
  }

  static constexpr std::uint32_t kN = 256;
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
      Result<Buffer> extra = device_->alloc(1 << 20, stream());
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
  GraphCache<std::uint32_t> probe(*device_, stream(), GraphCacheOptions{});
  ASSERT_THAT(probe.run(1, [&] { return step(1); }), IsOk());
  const std::size_t one = probe.stats().bytes;
  probe.clear();
  GraphCacheOptions options;
  options.byte_budget = one + one / 2;  // room for one graph of this size
  options.share_pool = false;
  GraphCache<std::uint32_t> cache(*device_, stream(), options);
  ASSERT_THAT(cache.run(1, [&] { return step(1); }), IsOk());
  ASSERT_THAT(cache.run(2, [&] { return step(1); }), IsOk());
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_LE(cache.stats().bytes, options.byte_budget);
  EXPECT_FALSE(cache.contains(1));
  EXPECT_THAT(state(), ElementsAreArray(all(3)));
}

}  // namespace
}  // namespace graphcap::testing
