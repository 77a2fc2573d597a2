// GraphCache under injected driver failures, on every driver (through the FaultInjectingDriver):
// a miss whose recording fails after the warm-up ran falls back, and the step's outputs keep the
// warm-up's bytes (the cache's windows neither claim nor mark what a failed recorded operation
// would have written); the refusal is kept in last_refusal().
#include <graphcap/graph_cache.h>

#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class GraphCacheFaultsTest : public FaultFixture {
 protected:
  static constexpr std::uint32_t kN = 64;

  void SetUp() override {
    FaultFixture::SetUp();
    if (HasFatalFailure()) return;
    x_ = upload_u32(iota_u32(kN));
    y_ = upload_u32(std::vector<std::uint32_t>(kN, 0));
  }
  // y = x + 1, x = y + 1: one run adds 2 to x.
  Result<void> step() {
    ++executions_;
    if (Result<void> ok = add_one(x_, y_, kN); !ok) return ok;
    return add_one(y_, x_, kN);
  }
  Buffer x_, y_;
  int executions_ = 0;
};

TEST_F(GraphCacheFaultsTest, ARecordedLaunchThatFailsFallsBackAndLeavesTheWarmUpsResults) {
  GraphCache<int> cache(*device_, stream());
  // The third cuLaunchKernel: the recording's first launch (the warm-up made two).
  faults().fail_call("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 3);
  ASSERT_THAT(cache.run(1, [&] { return step(); }), IsOk());
  EXPECT_EQ(executions_, 2) << "the warm-up, then the recording that failed";
  EXPECT_EQ(cache.stats().fallbacks, 1u);
  EXPECT_FALSE(cache.recorded(1));
  ASSERT_NE(cache.last_refusal(), nullptr);
  // The recording was doomed by the failed launch: the refusal is the doom, naming it.
  EXPECT_THAT(*cache.last_refusal(),
              StatusIs(Errc::doomed, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                       HasSubstr("cuLaunchKernel")));
  EXPECT_FALSE(y_.failure().has_value()) << "the warm-up wrote y; the failed recording did not";
  EXPECT_THAT(read_u32(y_), ElementsAreArray(iota_u32(kN, 1)));
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(kN, 2)));
  ASSERT_THAT(cache.run(1, [&] { return step(); }), IsOk());  // recorded this time
  ASSERT_THAT(cache.run(1, [&] { return step(); }), IsOk());  // a hit
  EXPECT_EQ(cache.stats().captures, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(kN, 6)));
}

TEST_F(GraphCacheFaultsTest, AFailedInstantiateFallsBackAndTheKeyIsTriedAgain) {
  GraphCache<int> cache(*device_, stream());
  faults().fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_INVALID_VALUE);
  ASSERT_THAT(cache.run(1, [&] { return step(); }), IsOk());
  EXPECT_EQ(cache.stats().fallbacks, 1u);
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(), StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE,
                                              HasSubstr("cuGraphInstantiateWithParams")));
  EXPECT_FALSE(x_.failure().has_value());
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(kN, 2)));
  ASSERT_THAT(cache.run(1, [&] { return step(); }), IsOk());
  EXPECT_TRUE(cache.recorded(1));
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(kN, 4)));
}

TEST_F(GraphCacheFaultsTest, AFailedReplayIsReturnedAndNotCountedAsAHit) {
  GraphCache<int> cache(*device_, stream());
  ASSERT_THAT(cache.run(1, [&] { return step(); }), IsOk());
  faults().fail_call("cuGraphLaunch", CUDA_ERROR_INVALID_VALUE);
  EXPECT_THAT(cache.run(1, [&] { return step(); }),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE, HasSubstr("cuGraphLaunch")));
  EXPECT_EQ(cache.stats().hits, 0u);
  EXPECT_EQ(executions_, 2) << "no fallback: a failed replay is the run's error";
  // The failure was queued on the stream too, and what the graph writes carries it: the next
  // hit is refused by name until the caller writes its inputs again.
  EXPECT_THAT(device_->sync(stream()), StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE));
  ASSERT_TRUE(x_.failure().has_value());
  EXPECT_THAT(cache.run(1, [&] { return step(); }),
              StatusIs(Errc::failed_buffer, CUDA_ERROR_INVALID_VALUE, HasSubstr("cuGraphLaunch")));
  EXPECT_EQ(cache.stats().hits, 0u);
  EXPECT_THAT(device_->sync(stream()), StatusIs(Errc::failed_buffer)) << "queued as well";
  ASSERT_THAT(device_->write(x_, to_bytes(iota_u32(kN, 10)), stream()), IsOk());
  ASSERT_THAT(device_->write(y_, to_bytes(iota_u32(kN)), stream()), IsOk());
  ASSERT_THAT(cache.run(1, [&] { return step(); }), IsOk());
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(kN, 12)));
}

}  // namespace
}  // namespace graphcap::testing
