// GraphCache::record_all on several threads (std::thread workers beside the recording thread:
// graphcap_thread_tests runs this under ThreadSanitizer too) under injected driver failures, on
// every driver: a key whose instantiate or recorded launch fails falls back alone (or, with
// fail_on_refusal, is the error), the other keys stay recorded, the step ran once per key, and
// the stream is left not capturing.
#include <graphcap/graph_cache.h>

#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class RecordAllFaultsTest : public FaultFixture {
 protected:
  static constexpr std::uint32_t kN = 64;

  void SetUp() override {
    FaultFixture::SetUp();
    if (HasFatalFailure()) return;
    x_ = upload_u32(iota_u32(kN));
    y_ = upload_u32(std::vector<std::uint32_t>(kN, 0));
  }
  // y = x + 1, x = y + 1: one run adds 2 to x. Two launches a run.
  Result<void> step(int) {
    ++executions_;
    if (Result<void> ok = add_one(x_, y_, kN); !ok) return ok;
    return add_one(y_, x_, kN);
  }
  static std::vector<int> keys(int n) {
    std::vector<int> made;
    for (int k = 1; k <= n; ++k) made.push_back(k);
    return made;
  }
  Buffer x_, y_;
  int executions_ = 0;
};

TEST_F(RecordAllFaultsTest, AKeyWhoseInstantiateFailsFallsBackAloneAndTheOthersAreRecorded) {
  GraphCache<int> cache(*device_, stream());
  // The third instantiate: whichever key a worker (or the finishing thread) instantiates third.
  faults().fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_INVALID_VALUE, 3);
  ASSERT_THAT(cache.record_all(keys(6), [&](int k) { return step(k); },
                               RecordAllOptions{.threads = 4}),
              IsOk());
  EXPECT_TRUE(faults().unfired_faults().empty());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  int failed = 0;
  for (int k : keys(6)) {
    if (!cache.recorded(k)) failed = failed == 0 ? k : -1;
  }
  ASSERT_GT(failed, 0) << "exactly one key is not recorded";
  const GraphCacheStats stats = cache.stats();
  EXPECT_EQ(stats.captures, 5u);
  EXPECT_EQ(stats.refusals, 1u);
  EXPECT_EQ(stats.fallbacks, 1u);
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(), StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE,
                                              HasSubstr("cuGraphInstantiateWithParams")));
  EXPECT_EQ(executions_, 12) << "warm-up and recorded run of each key, nothing more";
  EXPECT_FALSE(x_.failure().has_value()) << "the cache's windows mark nothing on a refusal";
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(kN, 12))) << "each key ran once";
  // The key is tried again on its next run, and recorded.
  ASSERT_THAT(cache.run(failed, [&] { return step(failed); }), IsOk());
  EXPECT_TRUE(cache.recorded(failed));
}

TEST_F(RecordAllFaultsTest, WithFailOnRefusalAFailedInstantiateIsTheErrorAndKeepsTheOthers) {
  GraphCacheOptions options;
  options.fail_on_refusal = true;
  GraphCache<int> cache(*device_, stream(), options);
  faults().fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_INVALID_VALUE, 2);
  EXPECT_THAT(cache.record_all(keys(8), [&](int k) { return step(k); },
                               RecordAllOptions{.threads = 2}),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE,
                       HasSubstr("cuGraphInstantiateWithParams")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  // Recording stops once the refusal is known; every key run is recorded but the refused one.
  const int run = executions_ / 2;
  ASSERT_GE(run, 2);
  int unrecorded = 0;
  for (int k = 1; k <= run; ++k) unrecorded += cache.recorded(k) ? 0 : 1;
  EXPECT_EQ(unrecorded, 1);
  for (int k = run + 1; k <= 8; ++k) EXPECT_FALSE(cache.contains(k)) << k << " never ran";
  EXPECT_EQ(cache.stats().refusals, 1u);
  EXPECT_EQ(cache.stats().fallbacks, 0u);
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(kN, 2 * static_cast<std::uint32_t>(run))));
}

TEST_F(RecordAllFaultsTest, ARecordedLaunchThatFailsDoomsOnlyItsKey) {
  GraphCache<int> cache(*device_, stream());
  // Only the recording thread launches: two launches a warm-up, two a recorded run, so the 11th
  // is key 3's first recorded launch.
  faults().fail_call("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 11);
  ASSERT_THAT(cache.record_all(keys(5), [&](int k) { return step(k); },
                               RecordAllOptions{.threads = 3}),
              IsOk());
  EXPECT_TRUE(faults().unfired_faults().empty());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  for (int k : keys(5)) EXPECT_EQ(cache.recorded(k), k != 3) << k;
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(), StatusIs(Errc::doomed, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                                              HasSubstr("cuLaunchKernel")));
  EXPECT_EQ(cache.stats().captures, 4u);
  EXPECT_FALSE(y_.failure().has_value());
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(kN, 10)));
}

}  // namespace
}  // namespace graphcap::testing
