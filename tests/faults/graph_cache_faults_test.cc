// GraphCache under injected driver failures, on every driver (through the FaultInjectingDriver):
// a miss whose recording fails after the warm-up ran falls back, and the step's outputs keep the
// warm-up's bytes (the cache's windows neither claim nor mark what a failed recorded operation
// would have written); the refusal is kept in last_refusal(). record_all on several threads
// (std::thread workers beside the recording thread: graphcap_thread_tests runs this file under
// ThreadSanitizer too): a key whose instantiate or recorded launch fails falls back alone (or,
// with fail_on_refusal, is the error), the other keys stay recorded, the step ran once per key;
// and the driver calls a bring-up waits on (the decorator's counts).
#include <graphcap/graph_cache.h>

#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

// 1, 2, ... n.
std::vector<int> bucket_keys(int n) {
  std::vector<int> made;
  for (int k = 1; k <= n; ++k) made.push_back(k);
  return made;
}

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

TEST_F(GraphCacheFaultsTest, RecordAllOnThreadsFallsBackAloneForAKeyWhoseInstantiateFails) {
  GraphCache<int> cache(*device_, stream());
  // The third instantiate: whichever key a worker (or the finishing thread) instantiates third.
  faults().fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_INVALID_VALUE, 3);
  ASSERT_THAT(cache.record_all(bucket_keys(6), [&](int) { return step(); },
                               RecordAllOptions{.threads = 4}),
              IsOk());
  EXPECT_TRUE(faults().unfired_faults().empty());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  int failed = 0;
  for (int k : bucket_keys(6)) {
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
  ASSERT_THAT(cache.run(failed, [&] { return step(); }), IsOk());
  EXPECT_TRUE(cache.recorded(failed));
}

TEST_F(GraphCacheFaultsTest, RecordAllOnThreadsWithFailOnRefusalReturnsAFailedInstantiate) {
  GraphCacheOptions options;
  options.fail_on_refusal = true;
  GraphCache<int> cache(*device_, stream(), options);
  faults().fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_INVALID_VALUE, 2);
  EXPECT_THAT(cache.record_all(bucket_keys(8), [&](int) { return step(); },
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

TEST_F(GraphCacheFaultsTest, RecordAllOnThreadsRefusesOnlyTheKeyWhoseRecordedLaunchFailed) {
  GraphCache<int> cache(*device_, stream());
  // Only the recording thread launches: two launches a warm-up, two a recorded run, so the 11th
  // is key 3's first recorded launch.
  faults().fail_call("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 11);
  ASSERT_THAT(cache.record_all(bucket_keys(5), [&](int) { return step(); },
                               RecordAllOptions{.threads = 3}),
              IsOk());
  EXPECT_TRUE(faults().unfired_faults().empty());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  for (int k : bucket_keys(5)) EXPECT_EQ(cache.recorded(k), k != 3) << k;
  ASSERT_NE(cache.last_refusal(), nullptr);
  EXPECT_THAT(*cache.last_refusal(), StatusIs(Errc::doomed, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                                              HasSubstr("cuLaunchKernel")));
  EXPECT_EQ(cache.stats().captures, 4u);
  EXPECT_FALSE(y_.failure().has_value());
  EXPECT_THAT(read_u32(x_), ElementsAreArray(iota_u32(kN, 10)));
}

// A bucket set's bring-up never waits on the host between keys: a key's recording begins while its
// warm-up still runs on the device (a wait per key would put every warm-up's device time in series
// with the recordings). On threads the only waits are each worker's, for its own uploads, at its end.
// Buffers dropped before a recording (the fixture's uploads' staging) are waited for once, at the
// next begin_capture: one recording first, so that the calls counted are the bring-ups' own.
TEST_F(GraphCacheFaultsTest, RecordAllWaitsOnTheHostOnlyForTheWorkersUploads) {
  // Every entry point whose row says the host waits for, or asks about, device work.
  const auto host_waits = [](const EntryTraits& t) { return t.host != EntryHost::none; };
  ASSERT_THAT(device_->record(stream(), [&] { return step(); }), IsOk());
  for (unsigned threads : {1u, 3u}) {
    SCOPED_TRACE(threads);
    GraphCache<int> cache(*device_, stream());
    const auto before = call_counts(host_waits);
    ASSERT_THAT(cache.record_all(bucket_keys(8), [&](int) { return step(); },
                                 RecordAllOptions{.threads = threads}),
                IsOk());
    EXPECT_EQ(cache.stats().captures, 8u);
    if (threads == 1) {
      EXPECT_THAT(calls_since(before, host_waits), IsEmpty());
    } else {
      EXPECT_THAT(calls_since(before, host_waits),
                  ElementsAre(::testing::Pair("cuStreamSynchronize", threads - 1)));
    }
  }
}

}  // namespace
}  // namespace graphcap::testing
