// The device layer under injected faults: steady-state allocation counts, the drop queue under a
// device that seems to lag behind (its queries say NOT_READY), failure-carrying buffers from
// injected faults, out-of-memory recovery, and every failure of Device::open named. Every driver:
// the faults come from a FaultInjectingDriver around the test driver (the fake, or libcuda on the
// H200). The asynchronous fault of a trapping kernel stays fake-only
// (tests/units/device_sync_fake_test.cc says why).
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fault_injecting_driver.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class DeviceFaultsTest : public FaultFixture {
 protected:
  std::size_t allocations() {
    return faults().call_count("cuMemAlloc") + faults().call_count("cuMemAllocHost");
  }

  // The device seems to lag behind: every poll of a fence finds it not yet passed (on the fake,
  // the device is also held back, so the queued work really is still queued). Waits still wait.
  void lag_behind() {
    faults().fail_always("cuEventQuery", CUDA_ERROR_NOT_READY);
    if (on_fake()) fake()->set_device_paused(true);
  }

  // Upload, 150 ping-pong launches, read back: one decode-like pass.
  std::vector<std::uint32_t> pass(std::uint32_t n) {
    Buffer a = upload_u32(iota_u32(n));
    Result<Buffer> b = device_->alloc(n * sizeof(std::uint32_t), stream());
    EXPECT_THAT(b, IsOk());
    for (int i = 0; i < 150; ++i) {
      EXPECT_THAT(add_one(i % 2 == 0 ? a : *b, i % 2 == 0 ? *b : a, n), IsOk());
    }
    return read_u32(a);
  }
};

TEST_F(DeviceFaultsTest, SecondIdenticalPassMakesNoDriverAllocation) {
  EXPECT_THAT(pass(1000), ElementsAreArray(iota_u32(1000, 150)));
  const std::size_t after_first = allocations();
  EXPECT_GT(after_first, 0u);
  for (int again = 0; again < 3; ++again) {
    EXPECT_THAT(pass(1000), ElementsAreArray(iota_u32(1000, 150)));
  }
  if (on_fake()) {
    EXPECT_EQ(allocations(), after_first) << "steady state must be served from the pools";
  } else {
    // On the H200 (runs 8 and 9 of docs/conformance.md) one later pass made one allocation more,
    // the second pass in one run and the third or fourth in another: a slice dropped late in a
    // pass was still behind a fence the drop queue had not yet seen pass when the next pass asked
    // for that size. Once the pool holds the extra slice, nothing more is allocated.
    EXPECT_LE(allocations(), after_first + 1) << "steady state must be served from the pools";
  }
}

TEST_F(DeviceFaultsTest, DroppedBufferIsNotReusedWhileALaunchMayStillUseIt) {
  lag_behind();  // queries report work as unfinished until a wait
  Buffer input = upload_u32(iota_u32(256));
  CUdeviceptr dropped = 0;
  {
    Result<Buffer> scratch = device_->alloc(1024, stream());
    ASSERT_THAT(scratch, IsOk());
    dropped = scratch->native_handle();
    ASSERT_THAT(add_one(input, *scratch, 256), IsOk());  // queued, not run
  }
  if (on_fake()) {
    EXPECT_GT(fake()->pending_operations(stream().native_handle()), 0u);
  }
  Result<Buffer> next = device_->alloc(1024, stream());
  ASSERT_THAT(next, IsOk());
  EXPECT_NE(next->native_handle(), dropped) << "reused while its launch was still queued";
  EXPECT_GE(device_->memory_stats(stream()).pending_drops, 1u);
  ASSERT_THAT(device_->sync(stream()), IsOk());
  EXPECT_EQ(device_->memory_stats(stream()).pending_drops, 0u);
  Result<Buffer> reused = device_->alloc(1024, stream());
  ASSERT_THAT(reused, IsOk());
  EXPECT_EQ(reused->native_handle(), dropped) << "released once the stream passed it";
  if (on_fake()) {
    EXPECT_THAT(fake()->violations(), IsEmpty());
  }
}

TEST_F(DeviceFaultsTest, StagingIsNotReusedWhileItsCopyIsQueued) {
  lag_behind();
  Result<Buffer> a = device_->alloc(64, stream());
  Result<Buffer> b = device_->alloc(64, stream());
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  // Both copies stay queued; if the second write reused the first's staging slice, the first
  // copy would read the second's bytes when it finally runs.
  ASSERT_THAT(device_->write(*a, to_bytes(std::vector<std::uint32_t>(16, 1)), stream()), IsOk());
  ASSERT_THAT(device_->write(*b, to_bytes(std::vector<std::uint32_t>(16, 2)), stream()), IsOk());
  faults().clear_faults();
  if (on_fake()) fake()->set_device_paused(false);
  EXPECT_THAT(read_u32(*a), ElementsAreArray(std::vector<std::uint32_t>(16, 1)));
  EXPECT_THAT(read_u32(*b), ElementsAreArray(std::vector<std::uint32_t>(16, 2)));
}

TEST_F(DeviceFaultsTest, FailedLaunchPoisonsItsOutputsUntilRewritten) {
  Buffer a = upload_u32(iota_u32(64));
  Buffer b = upload_u32(std::vector<std::uint32_t>(64, 0));
  Buffer c = upload_u32(std::vector<std::uint32_t>(64, 0));
  faults().fail_call("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_THAT(add_one(a, b, 64),
              StatusIs(Errc::driver, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                       HasSubstr("cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")));
  ASSERT_TRUE(b.failure().has_value());
  EXPECT_FALSE(a.failure().has_value()) << "inputs are not poisoned";
  // Downstream: the launch is skipped and names the original error; its output is poisoned too.
  const std::size_t launches = faults().call_count("cuLaunchKernel");
  EXPECT_THAT(add_one(b, c, 64),
              StatusIs(Errc::failed_buffer, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                       HasSubstr("cuLaunchKernel failed")));
  EXPECT_EQ(faults().call_count("cuLaunchKernel"), launches) << "a skipped launch never reaches the driver";
  EXPECT_THAT(device_->read(b, stream()),
              StatusIs(Errc::driver, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  EXPECT_THAT(device_->read(c, stream()),
              StatusIs(Errc::failed_buffer, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  // A partial write does not clear it; a full one does.
  ASSERT_THAT(device_->write(b, to_bytes({1, 2}), stream()), IsOk());
  EXPECT_THAT(device_->read(b, stream()), StatusIs(Errc::driver));
  ASSERT_THAT(device_->write(b, to_bytes(iota_u32(64, 10)), stream()), IsOk());
  EXPECT_THAT(read_u32(b), ElementsAreArray(iota_u32(64, 10)));
  // And an `out` launch that succeeds replaces c's contents.
  ASSERT_THAT(add_one(b, c, 64), IsOk());
  EXPECT_THAT(read_u32(c), ElementsAreArray(iota_u32(64, 11)));
}

TEST_F(DeviceFaultsTest, FailedWritePoisonsTheDestination) {
  Buffer a = upload_u32(iota_u32(8));
  faults().fail_call("cuMemcpyHtoDAsync", CUDA_ERROR_INVALID_VALUE);
  EXPECT_THAT(device_->write(a, to_bytes(iota_u32(8, 5)), stream()),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE, HasSubstr("cuMemcpyHtoDAsync")));
  EXPECT_THAT(device_->read(a, stream()), StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE));
}

TEST_F(DeviceFaultsTest, OutOfMemoryTrimsTheCacheAndRetries) {
  // Cache free slices of one size class, then make the driver refuse the next allocation as out
  // of memory: the pool gives its cached slices back and retries once, which succeeds.
  {
    std::vector<Buffer> hold;
    for (int i = 0; i < 3; ++i) {
      Result<Buffer> big = device_->alloc(std::size_t{3} << 20, stream());
      ASSERT_THAT(big, IsOk());
      hold.push_back(*big);
    }
    ASSERT_THAT(device_->sync(stream()), IsOk());
  }  // now cached, free
  const std::size_t frees = faults().call_count("cuMemFree");
  const std::size_t allocs = faults().call_count("cuMemAlloc");
  faults().fail_call("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  Result<Buffer> other = device_->alloc(std::size_t{50} << 20, stream());
  EXPECT_THAT(other, IsOk()) << "the cached slices should have been trimmed to make room";
  EXPECT_GE(faults().call_count("cuMemFree"), frees + 3) << "every cached slice given back";
  EXPECT_EQ(faults().call_count("cuMemAlloc"), allocs + 2) << "one refused, one retried";
}

TEST_F(DeviceFaultsTest, DriverNamesEveryFailureOfOpen) {
  for (const char* entry : {"cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",
                            "cuDeviceGetAttribute", "cuStreamCreate"}) {
    fake::FaultInjectingDriver driver(driver_->api());
    driver.fail_call(entry, CUDA_ERROR_UNKNOWN);
    Result<std::unique_ptr<Device>> device = Device::open(driver);
    EXPECT_THAT(device, StatusIs(Errc::driver, CUDA_ERROR_UNKNOWN, HasSubstr(entry))) << entry;
    EXPECT_EQ(driver.live_handles().total(), 0u) << entry;
  }
}

TEST_F(DeviceFaultsTest, LogSinkReceivesWarnings) {
  std::vector<std::string> messages;
  LogSink previous = set_log_sink([&](LogLevel level, std::string_view message) {
    if (level <= LogLevel::warn) messages.emplace_back(message);
  });
  log(LogLevel::warn, "hello");
  log(LogLevel::debug, "quiet");
  set_log_sink(previous);
  EXPECT_THAT(messages, ElementsAreArray({std::string("hello")}));
}

}  // namespace
}  // namespace graphcap::testing
