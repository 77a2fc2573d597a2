// What a graph and a recording keep alive, and who may close a recording: regression tests of the
// lifecycle bugs fixed in the house-in-order round, on every driver (the fake and the H200).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class CaptureLifetimeTest : public DeviceFixture {
 protected:
  CUstreamCaptureStatus driver_status(Stream& s) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    EXPECT_EQ(driver_->api().cuStreamIsCapturing(s.native_handle(), &status), CUDA_SUCCESS);
    return status;
  }
  // A full prepare / warm-up / record / end of x = x + 1 on `s`: the stream captures again.
  void expect_captures_again(Stream& s) {
    Buffer y = upload_u32(iota_u32(8), s);
    ASSERT_THAT(device_->prepare_capture(s), IsOk());
    ASSERT_THAT(add_one(y, y, 8, s), IsOk());
    ASSERT_THAT(device_->begin_capture(s), IsOk());
    ASSERT_THAT(add_one(y, y, 8, s), IsOk());
    Result<Graph> graph = device_->end_capture(s);
    ASSERT_THAT(graph, IsOk());
    ASSERT_THAT(graph->replay(), IsOk());
    EXPECT_THAT(read_u32(y, s), ElementsAreArray(iota_u32(8, 2)));
  }
};

// Bug 1: a graph kept replaying a kernel whose Module and Kernel handles had gone, after
// ~ModuleState had unloaded the module (the fake reported it; on CUDA it is undefined).
TEST_F(CaptureLifetimeTest, AGraphKeepsTheModulesOfItsKernelsLoaded) {
  Buffer x = upload_u32(iota_u32(64));
  Result<Graph> graph = Error(Errc::driver, "not recorded");
  {
    Result<Module> own = device_->load_module(driver_->kernel_image());
    ASSERT_THAT(own, IsOk());
    Result<Kernel> step = own->kernel("add_one");
    ASSERT_THAT(step, IsOk());
    const std::uint32_t n = 64;
    auto run = [&] {
      return device_->launch(stream(), *step, dims_for(n), {Arg::in(x), Arg::out(x), Arg::value(n)});
    };
    ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
    ASSERT_THAT(run(), IsOk());
    ASSERT_THAT(device_->begin_capture(stream()), IsOk());
    ASSERT_THAT(run(), IsOk());
    graph = device_->end_capture(stream());
    ASSERT_THAT(graph, IsOk());
  }  // the Module and the Kernel go; the graph still replays the kernel
  if (fake::FakeDriver* f = fake()) {
    EXPECT_EQ(f->live_handles().modules, 2u) << "the graph's module must stay loaded";
  }
  ASSERT_THAT(graph->replay(), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray(iota_u32(64, 3)));  // warm-up + 2 replays
  ASSERT_THAT(graph->destroy(), IsOk());
  if (fake::FakeDriver* f = fake()) {
    EXPECT_EQ(f->live_handles().modules, 1u) << "the graph's module goes with the graph";
  }
}

// Bug 5: dynamic shared memory above 48 KiB passed graphcap's check but was never enabled, so
// the driver refused the launch.
TEST_F(CaptureLifetimeTest, LaunchesUpToTheOptInSharedMemoryLimitRunEagerAndRecorded) {
  ASSERT_GT(device_->limits().max_shared_bytes, 49152u);
  Buffer x = upload_u32(iota_u32(32));
  LaunchDims dims = dims_for(32);
  dims.shared_bytes = 64 * 1024;
  const std::uint32_t n = 32;
  auto run = [&](unsigned shared) {
    dims.shared_bytes = shared;
    return device_->launch(stream(), add_one_, dims, {Arg::in(x), Arg::out(x), Arg::value(n)});
  };
  ASSERT_THAT(run(64 * 1024), IsOk());
  ASSERT_THAT(run(device_->limits().max_shared_bytes), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray(iota_u32(32, 2)));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(run(96 * 1024), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(run(96 * 1024), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray(iota_u32(32, 4)));
  // Above the device's limit: refused before the driver sees it, nothing marked.
  EXPECT_THAT(run(device_->limits().max_shared_bytes + 1),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("shared memory")));
  EXPECT_EQ(x.failure(), std::nullopt);
}

// Bug 8: an Arg kept a raw pointer to the caller's Buffer, so a stored Arg dangled.
TEST_F(CaptureLifetimeTest, AStoredArgKeepsItsBufferAlive) {
  Result<Buffer> made = device_->alloc(16 * sizeof(std::uint32_t), stream());
  ASSERT_THAT(made, IsOk());
  const Arg stored = Arg::out(*made);
  made = Error(Errc::driver, "the caller's handle is gone");  // only the Arg holds the buffer
  const std::uint32_t value = 9, n = 16;
  ASSERT_THAT(device_->launch(stream(), fill_, dims_for(n), {stored, Arg::value(value), Arg::value(n)}),
              IsOk());
  ASSERT_NE(stored.buffer(), nullptr);
  EXPECT_THAT(read_u32(*stored.buffer()), ElementsAreArray(std::vector<std::uint32_t>(16, 9)));
}

// Bug 4: a recording begun (GLOBAL) on a thread that finished without ending it wedged the
// stream: no other thread could end or abort it.
TEST_F(CaptureLifetimeTest, AbortFromAnotherThreadTerminatesARecordingWhoseThreadIsGone) {
  Buffer x = upload_u32(iota_u32(16));
  std::thread recorder([&] {
    ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
    ASSERT_THAT(add_one(x, x, 16), IsOk());
    ASSERT_THAT(device_->begin_capture(stream()), IsOk());
    ASSERT_THAT(add_one(x, x, 16), IsOk());
  });  // leaves without ending it
  recorder.join();
  ASSERT_EQ(stream().capture_state(), CaptureState::capture);
  // Ending belongs to the recording thread; aborting terminates it from here.
  EXPECT_THAT(device_->end_capture(stream()), StatusIs(Errc::graph_state, CUDA_SUCCESS,
                                                       HasSubstr("abort_capture")));
  EXPECT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(driver_status(stream()), CU_STREAM_CAPTURE_STATUS_NONE);
  // x was written by a recorded launch that will never run: it carries the abandonment.
  EXPECT_THAT(device_->read(x, stream()), StatusIs(Errc::doomed, CUDA_SUCCESS, HasSubstr("abandoned")));
  // The stream is usable: syncs, reads and recordings work from this thread.
  ASSERT_THAT(device_->sync(stream()), IsOk());
  ASSERT_THAT(device_->write(x, to_bytes(iota_u32(16)), stream()), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray(iota_u32(16, 0)));
  expect_captures_again(stream());
}

// Bug 3: a device closed while another thread's GLOBAL recording was open took the closing
// thread's count of its own recordings down instead of the recording thread's, so the recording
// thread's later syncs and reads (on any device of the driver) stayed refused.
TEST_F(CaptureLifetimeTest, ClosingADeviceEndsTheRecordingOfTheThreadThatBeganIt) {
  Result<std::unique_ptr<Device>> doomed_device = Device::open(driver_->api());
  ASSERT_THAT(doomed_device, IsOk());
  Result<Module> module = (*doomed_device)->load_module(driver_->kernel_image());
  ASSERT_THAT(module, IsOk());
  Result<Kernel> kernel = module->kernel("add_one");
  ASSERT_THAT(kernel, IsOk());

  std::mutex mutex;
  std::condition_variable changed;
  int phase = 0;  // 1: the recording is open; 2: its device is closed
  Result<void> later_sync = Error(Errc::driver, "not run");
  Result<std::vector<std::byte>> later_read = Error(Errc::driver, "not run");
  Buffer mine = upload_u32(iota_u32(8));
  std::thread recorder([&] {
    Device& other = **doomed_device;
    Stream& s = other.stream();
    Result<Buffer> x = other.upload(to_bytes(iota_u32(8)), s);
    ASSERT_THAT(x, IsOk());
    const std::uint32_t n = 8;
    auto run = [&] { return other.launch(s, *kernel, dims_for(n), {Arg::in(*x), Arg::out(*x), Arg::value(n)}); };
    ASSERT_THAT(other.prepare_capture(s), IsOk());
    ASSERT_THAT(run(), IsOk());
    ASSERT_THAT(other.begin_capture(s), IsOk());
    ASSERT_THAT(run(), IsOk());
    {
      std::unique_lock lock(mutex);
      phase = 1;
      changed.notify_all();
      changed.wait(lock, [&] { return phase == 2; });
    }
    // The recording is gone with its device: this thread may wait again.
    later_sync = device_->sync(stream());
    later_read = device_->read(mine, stream());
  });
  {
    std::unique_lock lock(mutex);
    // Bounded only so that a recorder that failed an assertion early can't hang the suite.
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(60), [&] { return phase == 1; }));
  }
  module = Error(Errc::driver, "dropped");
  kernel = Error(Errc::driver, "dropped");
  doomed_device->reset();  // closes it: force-closes the other thread's recording
  {
    std::lock_guard lock(mutex);
    phase = 2;
    changed.notify_all();
  }
  recorder.join();
  EXPECT_THAT(later_sync, IsOk());
  ASSERT_THAT(later_read, IsOk());
  EXPECT_THAT(to_u32(*later_read), ElementsAreArray(iota_u32(8)));
}

}  // namespace
}  // namespace graphcap::testing
