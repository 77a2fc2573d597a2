// Several devices from several threads, on the fake with 2 devices: each thread drives
// its own device (uploads, launches, a recorded graph replayed, reads), and one of them also pulls
// peer copies from the other device's buffer while that device works, so the hand-back of a
// borrowed buffer to its stream crosses threads. Exact bytes are asserted; under the tsan preset
// it is also the race detector's workload.
#include <barrier>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/graphcap.h>

#include "device_fixture.h"
#include "matchers.h"
#include "test_driver.h"
#include "thread_failures.h"

namespace graphcap::testing {
namespace {

class MultiDeviceThreads : public ::testing::Test {
 protected:
  static constexpr std::uint32_t kN = 256;
  static constexpr int kSteps = 40;

  void SetUp() override {
    driver_ = make_test_driver(2);
    ASSERT_NE(driver_->fake(), nullptr);
    for (int ordinal : {0, 1}) {
      DeviceOptions options;
      options.ordinal = ordinal;
      // Each thread records on its own device while the other makes calls a GLOBAL-mode
      // recording would forbid.
      options.capture_mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
      Result<std::unique_ptr<Device>> device = Device::open(driver_->api(), options);
      ASSERT_THAT(device, IsOk());
      devices_[ordinal] = std::move(*device);
      Result<Module> module = devices_[ordinal]->load_module(driver_->kernel_image());
      ASSERT_THAT(module, IsOk());
      Result<Kernel> add_one = module->kernel("add_one");
      ASSERT_THAT(add_one, IsOk());
      modules_[ordinal] = *module;
      add_one_[ordinal] = *add_one;
    }
  }
  void TearDown() override {
    devices_[0].reset();
    devices_[1].reset();
    fake::FakeDriver* fake = driver_->fake();
    EXPECT_EQ(fake->live_handles().total(), 0u);
    EXPECT_THAT(fake->violations(), IsEmpty());
  }

  // On its own device: src = v, dst = src + 1 recorded once, replayed each step, bytes checked.
  void drive(int ordinal, ThreadFailures& failures) {
    Device& device = *devices_[ordinal];
    Stream& s = device.stream();
    const std::string who = "device " + std::to_string(ordinal);
    Result<Buffer> src = device.alloc(kN * 4, s);
    Result<Buffer> dst = device.alloc(kN * 4, s);
    if (!failures.check(src, who + " alloc") || !failures.check(dst, who + " alloc")) return;
    auto launch = [&] {
      return device.launch(s, add_one_[ordinal], dims_for(kN),
                           {Arg::in(*src), Arg::out(*dst), Arg::value(kN)});
    };
    if (!failures.check(device.prepare_capture(s), who + " prepare_capture")) return;
    if (!failures.check(device.begin_capture(s), who + " begin_capture")) return;
    if (!failures.check(launch(), who + " recorded launch")) return;
    Result<Graph> graph = device.end_capture(s);
    if (!failures.check(graph, who + " end_capture")) return;
    for (int step = 0; step < kSteps; ++step) {
      const std::uint32_t base = static_cast<std::uint32_t>(ordinal * 100000 + step * 1000);
      if (!failures.check(device.write(*src, to_bytes(iota_u32(kN, base)), s), who + " write")) {
        return;
      }
      const bool replay = step % 2 == 0;
      if (!failures.check(replay ? graph->replay() : launch(), who + " run")) return;
      Result<std::vector<std::byte>> bytes = device.read(*dst, s);
      if (!failures.check(bytes, who + " read")) return;
      if (to_u32(*bytes) != iota_u32(kN, base + 1)) {
        failures.add(who + " step " + std::to_string(step) + ": wrong bytes");
        return;
      }
    }
  }

  std::unique_ptr<TestDriver> driver_;
  std::unique_ptr<Device> devices_[2];
  Module modules_[2];
  Kernel add_one_[2];
};

TEST_F(MultiDeviceThreads, TwoThreadsEachDriveTheirOwnDevice) {
  ThreadFailures failures;
  std::barrier start(2);
  std::vector<std::thread> threads;
  for (int ordinal : {0, 1}) {
    threads.emplace_back([&, ordinal] {
      start.arrive_and_wait();
      drive(ordinal, failures);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(failures.list(), IsEmpty());
}

TEST_F(MultiDeviceThreads, PeerCopiesFromAnotherThreadsDevice) {
  Device& d0 = *devices_[0];
  Device& d1 = *devices_[1];
  ASSERT_THAT(d1.enable_peer_access(d0), IsOk());
  // A buffer of device 0 that device 1's thread copies from while device 0's thread works (and
  // records) on its default stream; the buffer belongs to a second stream of device 0, which each
  // copy's hand-back makes wait, from device 1's thread.
  Result<Stream*> side = d0.create_stream();
  ASSERT_THAT(side, IsOk());
  Result<Buffer> shared = d0.upload(to_bytes(iota_u32(kN, 7)), **side);
  ASSERT_THAT(shared, IsOk());
  Result<Event> uploaded = d0.create_event();
  ASSERT_THAT(uploaded, IsOk());
  ASSERT_THAT(d0.record_event(*uploaded, **side), IsOk());
  ASSERT_THAT(d1.wait(d1.stream(), *uploaded), IsOk());
  ThreadFailures failures;
  std::barrier start(2);
  std::thread worker0([&] {
    start.arrive_and_wait();
    drive(0, failures);
  });
  std::thread worker1([&] {
    start.arrive_and_wait();
    Result<Buffer> local = d1.alloc(kN * 4, d1.stream());
    if (!failures.check(local, "device 1 alloc")) return;
    for (int step = 0; step < kSteps; ++step) {
      if (!failures.check(d1.copy(*local, *shared, d1.stream()), "device 1 peer copy")) return;
      Result<std::vector<std::byte>> bytes = d1.read(*local, d1.stream());
      if (!failures.check(bytes, "device 1 read")) return;
      if (to_u32(*bytes) != iota_u32(kN, 7)) {
        failures.add("device 1 step " + std::to_string(step) + ": wrong bytes");
        return;
      }
    }
  });
  worker0.join();
  worker1.join();
  EXPECT_THAT(failures.list(), IsEmpty());
}

}  // namespace
}  // namespace graphcap::testing
