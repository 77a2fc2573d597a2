// Several devices through graphcap on the fake only, with 2 and 4 simulated devices: each call
// makes its device's context current (the replay hot path's thread-bound check included), peer
// access the fake does not support is the driver's error, and a ring of peer copies visits every
// device of 4.
#include <cstdint>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/graphcap.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class FakeDevices : public ::testing::Test {
 protected:
  void open(int count, bool peer_access = true) {
    fake::FakeDriverOptions options;
    options.device_count = count;
    options.peer_access = peer_access;
    fake_ = std::make_unique<fake::FakeDriver>(options);
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      DeviceOptions device_options;
      device_options.ordinal = ordinal;
      Result<std::unique_ptr<Device>> device = Device::open(*fake_, device_options);
      ASSERT_THAT(device, IsOk());
      devices_.push_back(std::move(*device));
    }
  }
  void TearDown() override {
    devices_.clear();
    if (fake_) {
      EXPECT_EQ(fake_->live_handles().total(), 0u);
      EXPECT_EQ(fake_->reclaimed_handles(), 0u);
      EXPECT_THAT(fake_->violations(), ::testing::IsEmpty());
    }
  }
  CUcontext current() {
    CUcontext context = nullptr;
    EXPECT_EQ(fake_->cuCtxGetCurrent(&context), CUDA_SUCCESS);
    return context;
  }
  CUcontext primary(int ordinal) {
    CUcontext context = nullptr;
    EXPECT_EQ(fake_->cuDevicePrimaryCtxRetain(&context, ordinal), CUDA_SUCCESS);
    EXPECT_EQ(fake_->cuDevicePrimaryCtxRelease(ordinal), CUDA_SUCCESS);
    return context;
  }
  void order(Device& from, Device& to) {
    Result<Event> event = from.create_event();
    ASSERT_THAT(event, IsOk());
    ASSERT_THAT(from.record_event(*event, from.stream()), IsOk());
    ASSERT_THAT(to.wait(to.stream(), *event), IsOk());
  }

  std::unique_ptr<fake::FakeDriver> fake_;
  std::vector<std::unique_ptr<Device>> devices_;
};

TEST_F(FakeDevices, EachCallRunsInItsDevicesContextIncludingReplays) {
  open(2);
  Device& d0 = *devices_[0];
  Device& d1 = *devices_[1];
  Result<Buffer> b0 = d0.upload(to_bytes(iota_u32(8)), d0.stream());
  ASSERT_THAT(b0, IsOk());
  Result<Buffer> out = d0.alloc(32, d0.stream());
  ASSERT_THAT(out, IsOk());
  ASSERT_THAT(d0.prepare_capture(d0.stream()), IsOk());
  ASSERT_THAT(d0.begin_capture(d0.stream()), IsOk());
  ASSERT_THAT(d0.copy(*out, *b0, d0.stream()), IsOk());
  Result<Graph> graph = d0.end_capture(d0.stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(current(), primary(0));
  // A call on device 1 makes its context current ...
  ASSERT_THAT(d1.alloc(64, d1.stream()), IsOk());
  EXPECT_EQ(current(), primary(1));
  // ... and device 0's replay (the hot path checks the thread's bound device) switches back.
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(current(), primary(0));
  EXPECT_THAT(d0.read(*out, d0.stream()), ::testing::Optional(ElementsAreArray(to_bytes(iota_u32(8)))));
  // Every launch of the graph ran on device 0's stream, in device 0's context.
  EXPECT_EQ(fake_->call_count("cuGraphLaunch"), 1u);
}

TEST_F(FakeDevices, AfterContextChangedTheNextCallMakesItsContextCurrentAgain) {
  open(2);
  Device& d0 = *devices_[0];
  ASSERT_THAT(d0.alloc(64, d0.stream()), IsOk());
  // A library switches the thread to device 1's context behind graphcap's back.
  ASSERT_EQ(fake_->cuCtxSetCurrent(primary(1)), CUDA_SUCCESS);
  Device::context_changed();
  ASSERT_THAT(d0.alloc(64, d0.stream()), IsOk());
  EXPECT_EQ(current(), primary(0));
}

TEST_F(FakeDevices, PeerAccessTheDevicesDoNotSupportIsTheDriversError) {
  open(2, /*peer_access=*/false);
  EXPECT_THAT(devices_[0]->can_access_peer(*devices_[1]), ::testing::Optional(false));
  EXPECT_THAT(devices_[0]->enable_peer_access(*devices_[1]),
              StatusIs(Errc::driver, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
                       HasSubstr("cuCtxEnablePeerAccess")));
}

TEST_F(FakeDevices, EnablingPeerAccessOnceReachesTheDriverOnce) {
  open(2);
  ASSERT_THAT(devices_[0]->enable_peer_access(*devices_[1]), IsOk());
  ASSERT_THAT(devices_[0]->enable_peer_access(*devices_[1]), IsOk());
  EXPECT_EQ(fake_->call_count("cuCtxEnablePeerAccess"), 1u);
  // Enabled behind graphcap's back (a second Device of ordinal 0 would do it): 704 counts as done.
  ASSERT_EQ(fake_->cuCtxSetCurrent(primary(1)), CUDA_SUCCESS);
  ASSERT_EQ(fake_->cuCtxEnablePeerAccess(primary(0), 0), CUDA_SUCCESS);
  EXPECT_THAT(devices_[1]->enable_peer_access(*devices_[0]), IsOk());
}

TEST_F(FakeDevices, ARingOfPeerCopiesVisitsEveryDeviceOfFour) {
  open(4);
  std::vector<Buffer> buffers;
  for (int d = 0; d < 4; ++d) {
    Device& device = *devices_[static_cast<std::size_t>(d)];
    ASSERT_THAT(device.enable_peer_access(*devices_[static_cast<std::size_t>((d + 3) % 4)]),
                IsOk());
    Result<Buffer> buffer =
        device.upload(to_bytes(std::vector<std::uint32_t>(16, 0)), device.stream());
    ASSERT_THAT(buffer, IsOk());
    buffers.push_back(*buffer);
  }
  ASSERT_THAT(devices_[0]->write(buffers[0], to_bytes(iota_u32(16, 50)), devices_[0]->stream()),
              IsOk());
  // Device d pulls from device d-1, around the ring and back to 0.
  for (int step = 1; step <= 4; ++step) {
    const std::size_t to = static_cast<std::size_t>(step % 4);
    const std::size_t from = static_cast<std::size_t>(step - 1);
    order(*devices_[from], *devices_[to]);
    ASSERT_THAT(devices_[to]->copy(buffers[to], buffers[from], devices_[to]->stream()), IsOk())
        << "step " << step;
  }
  for (std::size_t d = 0; d < 4; ++d) {
    EXPECT_THAT(devices_[d]->read(buffers[d], devices_[d]->stream()),
                ::testing::Optional(ElementsAreArray(to_bytes(iota_u32(16, 50)))))
        << "device " << d;
  }
  // Pointers tell their device: each device's buffer lies in its own address window.
  for (std::size_t d = 1; d < 4; ++d) {
    EXPECT_GT(buffers[d].native_handle(), buffers[d - 1].native_handle());
  }
}

TEST_F(FakeDevices, APeerCopyOfAClosedDevicesBufferIsRefused) {
  open(2);
  ASSERT_THAT(devices_[0]->enable_peer_access(*devices_[1]), IsOk());
  Result<Buffer> b1 = devices_[1]->upload(to_bytes(iota_u32(4)), devices_[1]->stream());
  ASSERT_THAT(b1, IsOk());
  Result<Buffer> b0 = devices_[0]->alloc(16, devices_[0]->stream());
  ASSERT_THAT(b0, IsOk());
  devices_[1].reset();
  EXPECT_THAT(devices_[0]->copy(*b0, *b1, devices_[0]->stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("closed")));
}

}  // namespace
}  // namespace graphcap::testing
