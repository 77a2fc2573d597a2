// The check-then-call gaps around an open recording (house-in-order bug 2), each made to happen
// deterministically: a MockDriver delegating to the fake stops inside the call that follows
// graphcap's check and lets another thread act in the gap (a GLOBAL recording opening, or an
// unsafe call), giving it up to 300 ms. Fixed, graphcap holds the other thread off (it opens its
// recording only once the call has returned) or refuses it; broken, the driver invalidates a
// recording. Nothing here times anything: the wait only bounds how long the gap stays open.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/mock_driver.h>
#include <graphcap/graphcap.h>

#include "device_fixture.h"
#include "kernels/test_kernels.h"
#include "matchers.h"
#include "mock_device_fixture.h"

namespace graphcap::testing {
namespace {

using ::testing::_;

constexpr auto kGap = std::chrono::milliseconds(300);

class CaptureRacesTest : public MockDeviceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(open());
    add_one_ = kernel("add_one");
    Result<Stream*> other = device_->create_stream();
    ASSERT_THAT(other, IsOk());
    other_ = *other;
    x_ = *device_->upload(to_bytes(iota_u32(16)), device_->stream());
    y_ = *device_->upload(to_bytes(iota_u32(16)), *other_);
  }

  void TearDown() override {
    if (rival_.joinable()) rival_.join();
    MockDeviceTest::TearDown();
  }

  Result<void> add_one(const Buffer& b, Stream& s) {
    return device_->launch(s, add_one_, dims_for(16),
                           {Arg::in(b), Arg::out(b), Arg::value(std::uint32_t{16})});
  }

  // Another thread opens a GLOBAL recording of y += 1 on the other stream, then waits for
  // finish_rival() to end it. Called from inside a driver call of this thread: returns once the
  // recording is open or the gap is over, whichever comes first.
  void start_rival_recording() {
    ASSERT_THAT(device_->prepare_capture(*other_), IsOk());
    ASSERT_THAT(add_one(y_, *other_), IsOk());  // the warm-up
    std::promise<void> begun;
    std::future<void> opened = begun.get_future();
    rival_ = std::thread([this, begun = std::move(begun)]() mutable {
      rival_begin_ = device_->begin_capture(*other_);
      begun.set_value();
      if (!rival_begin_) return;
      rival_add_ = add_one(y_, *other_);
      std::unique_lock lock(mutex_);
      done_.wait(lock, [&] { return finish_; });
      lock.unlock();
      rival_graph_ = device_->end_capture(*other_);
    });
    (void)opened.wait_for(kGap);
  }
  void finish_rival() {
    {
      std::lock_guard lock(mutex_);
      finish_ = true;
    }
    done_.notify_all();
    rival_.join();
  }
  // The rival's recording was never invalidated: it closed into a graph that adds one.
  void expect_rival_intact() {
    ASSERT_THAT(rival_begin_, IsOk());
    ASSERT_THAT(rival_add_, IsOk());
    ASSERT_THAT(rival_graph_, IsOk()) << "the rival's recording was invalidated in the gap";
    ASSERT_THAT(rival_graph_->replay(), IsOk());
    Result<std::vector<std::byte>> y = device_->read(y_, *other_);
    ASSERT_THAT(y, IsOk());
    EXPECT_THAT(to_u32(*y), ElementsAreArray(iota_u32(16, 2)));  // warm-up + one replay
  }

  Kernel add_one_;
  Stream* other_ = nullptr;
  Buffer x_, y_;
  std::atomic<bool> armed_{true};
  std::thread rival_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool finish_ = false;
  Result<void> rival_begin_ = Error(Errc::driver, "not run");
  Result<void> rival_add_ = Error(Errc::driver, "not run");
  Result<Graph> rival_graph_ = Error(Errc::driver, "not run");
};

TEST_F(CaptureRacesTest, ARecordingOpeningDuringASyncWaitsForIt) {
  ON_CALL(mock_, cuStreamSynchronize(_)).WillByDefault([this](CUstream s) {
    if (armed_.exchange(false)) start_rival_recording();
    return mock_.fake().cuStreamSynchronize(s);
  });
  EXPECT_THAT(device_->sync(device_->stream()), IsOk());
  finish_rival();
  expect_rival_intact();
}

TEST_F(CaptureRacesTest, ARecordingOpeningDuringAnAllocationWaitsForIt) {
  ON_CALL(mock_, cuMemAlloc(_, _)).WillByDefault([this](CUdeviceptr* p, std::size_t bytes) {
    if (armed_.exchange(false)) start_rival_recording();
    return mock_.fake().cuMemAlloc(p, bytes);
  });
  EXPECT_THAT(device_->alloc(77777, device_->stream()), IsOk());  // a size no pool holds
  finish_rival();
  expect_rival_intact();
}

TEST_F(CaptureRacesTest, ARecordingOpeningDuringAGraphDestroyWaitsForIt) {
  Stream& s = device_->stream();
  ASSERT_THAT(device_->prepare_capture(s), IsOk());
  ASSERT_THAT(add_one(x_, s), IsOk());
  ASSERT_THAT(device_->begin_capture(s), IsOk());
  ASSERT_THAT(add_one(x_, s), IsOk());
  Result<Graph> graph = device_->end_capture(s);
  ASSERT_THAT(graph, IsOk());
  ON_CALL(mock_, cuGraphExecDestroy(_)).WillByDefault([this](CUgraphExec exec) {
    if (armed_.exchange(false)) start_rival_recording();
    return mock_.fake().cuGraphExecDestroy(exec);
  });
  EXPECT_THAT(graph->destroy(), IsOk());
  finish_rival();
  expect_rival_intact();
}

// The gap at the other end: the recording must count as open until cuStreamEndCapture has
// returned, or another thread's legal-looking sync invalidates the recording being ended.
TEST_F(CaptureRacesTest, AnUnsafeCallDuringEndCaptureIsRefusedNotLetThrough) {
  Stream& s = device_->stream();
  ASSERT_THAT(device_->prepare_capture(s), IsOk());
  ASSERT_THAT(add_one(x_, s), IsOk());
  ASSERT_THAT(device_->begin_capture(s), IsOk());
  ASSERT_THAT(add_one(x_, s), IsOk());
  Result<void> intruder = Error(Errc::driver, "not run");
  ON_CALL(mock_, cuStreamEndCapture(_, _)).WillByDefault([&](CUstream stream, CUgraph* out) {
    if (armed_.exchange(false)) {
      std::thread other([&] { intruder = device_->sync(*other_); });
      other.join();
    }
    return mock_.fake().cuStreamEndCapture(stream, out);
  });
  Result<Graph> graph = device_->end_capture(s);
  ASSERT_THAT(graph, IsOk()) << "the sync in the gap invalidated the recording being ended";
  EXPECT_THAT(intruder, StatusIs(Errc::graph_state));
  ASSERT_THAT(graph->replay(), IsOk());
  Result<std::vector<std::byte>> x = device_->read(x_, s);
  ASSERT_THAT(x, IsOk());
  EXPECT_THAT(to_u32(*x), ElementsAreArray(iota_u32(16, 2)));
}

// Without a mock: threads that record in GLOBAL mode and threads that sync, allocate, destroy
// graphs and drop modules, all at once. No recording may ever be invalidated (ThreadSanitizer
// runs this too).
TEST(CaptureRacesStress, RecordingsAndUnsafeCallsOnOtherThreadsNeverCollide) {
  fake::FakeDriver driver;
  register_test_kernels(driver);
  Result<std::unique_ptr<Device>> opened = Device::open(driver);
  ASSERT_THAT(opened, IsOk());
  Device& device = **opened;
  const std::vector<std::byte> image = driver.module_image({"add_one"});
  Result<Module> module = device.load_module(image);
  ASSERT_THAT(module, IsOk());
  const Kernel add_one = *module->kernel("add_one");
  Stream* streams[2] = {*device.create_stream(), *device.create_stream()};
  std::atomic<int> invalidated{0};
  std::atomic<int> recorded{0};
  std::atomic<bool> stop{false};

  std::thread recorder([&] {
    Stream& s = *streams[0];
    Result<Buffer> x = device.upload(to_bytes(iota_u32(64)), s);
    ASSERT_THAT(x, IsOk());
    const std::uint32_t n = 64;
    for (int i = 0; i < 150; ++i) {
      ASSERT_THAT(device.prepare_capture(s), IsOk());
      ASSERT_THAT(device.launch(s, add_one, dims_for(n), {Arg::in(*x), Arg::out(*x), Arg::value(n)}),
                  IsOk());  // the warm-up
      Result<void> begun = device.begin_capture(s);
      if (!begun) {
        (void)device.abort_capture(s);
        continue;  // refused (another recording's rule): fine, try again
      }
      (void)device.launch(s, add_one, dims_for(n), {Arg::in(*x), Arg::out(*x), Arg::value(n)});
      Result<Graph> graph = device.end_capture(s);
      if (!graph && graph.error().driver_code() == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) ++invalidated;
      if (graph) ++recorded;
    }
    stop = true;
  });
  std::thread worker([&] {
    Stream& s = *streams[1];
    std::size_t size = 256;
    while (!stop) {
      (void)device.sync(s);
      Result<Buffer> b = device.alloc(size, s);  // new sizes keep reaching the driver
      size = size % 65536 + 256;
      Result<Module> extra = device.load_module(image);  // dropped at once: an unload
      (void)extra;
    }
  });
  recorder.join();
  worker.join();
  EXPECT_EQ(invalidated.load(), 0) << "an unsafe call reached the driver while a recording was open";
  EXPECT_GT(recorded.load(), 0);
  EXPECT_TRUE(driver.violations().empty());
}

}  // namespace
}  // namespace graphcap::testing
