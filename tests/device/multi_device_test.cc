// Several devices in one process, through graphcap, on every driver: the fake is made
// with 2 devices; on the real driver every test skips below 2 GPUs. Each call runs in its device's
// context; objects of one device passed to another are refused naming both; peer copies move
// bytes eagerly and from a replayed recording, ordered with events across the devices' streams,
// and carry failures as local copies do.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/graphcap.h>

#include "device_fixture.h"
#include "matchers.h"
#include "multi_device.h"
#include "test_driver.h"

namespace graphcap::testing {
namespace {

using ::testing::_;

class TwoDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    driver_ = make_test_driver(2);
    GRAPHCAP_REQUIRE_DEVICES(driver_->api(), 2);
    for (int ordinal : {0, 1}) {
      DeviceOptions options;
      options.ordinal = ordinal;
      Result<std::unique_ptr<Device>> device = Device::open(driver_->api(), options);
      ASSERT_THAT(device, IsOk());
      devices_[ordinal] = std::move(*device);
    }
  }
  void TearDown() override {
    devices_[1].reset();
    devices_[0].reset();
    if (fake::FakeDriver* fake = driver_ ? driver_->fake() : nullptr) {
      EXPECT_EQ(fake->live_handles().total(), 0u) << "the devices leaked driver handles";
      EXPECT_EQ(fake->reclaimed_handles(), 0u);
      EXPECT_THAT(fake->violations(), ::testing::IsEmpty());
    }
  }

  Device& d0() { return *devices_[0]; }
  Device& d1() { return *devices_[1]; }

  Buffer upload(Device& device, const std::vector<std::uint32_t>& values) {
    Result<Buffer> buffer = device.upload(to_bytes(values), device.stream());
    EXPECT_THAT(buffer, IsOk());
    return buffer ? *buffer : Buffer();
  }
  std::vector<std::uint32_t> read(Device& device, const Buffer& buffer) {
    Result<std::vector<std::byte>> bytes = device.read(buffer, device.stream());
    EXPECT_THAT(bytes, IsOk());
    return bytes ? to_u32(*bytes) : std::vector<std::uint32_t>{};
  }
  // Orders `to`'s default stream after everything issued so far on `from`'s.
  void order(Device& from, Device& to) {
    Result<Event> event = from.create_event();
    ASSERT_THAT(event, IsOk());
    ASSERT_THAT(from.record_event(*event, from.stream()), IsOk());
    ASSERT_THAT(to.wait(to.stream(), *event), IsOk());
  }
  // Device 0 records a copy of device 1's `b1` into its `b0`, ordered after device 1's work.
  void record_peer_copy(const Buffer& b0, const Buffer& b1, Graph& graph) {
    order(d1(), d0());
    ASSERT_THAT(d0().prepare_capture(d0().stream()), IsOk());
    ASSERT_THAT(d0().begin_capture(d0().stream()), IsOk());
    ASSERT_THAT(d0().copy(b0, b1, d0().stream()), IsOk());
    Result<Graph> recorded = d0().end_capture(d0().stream());
    ASSERT_THAT(recorded, IsOk());
    graph = std::move(*recorded);
  }
  // Peer access from d0 to d1 (what copies on d0's streams touching d1's memory need), or skip.
  bool enable_peer() {
    Result<bool> can = d0().can_access_peer(d1());
    EXPECT_THAT(can, IsOk());
    if (!can || !*can) return false;
    EXPECT_THAT(d0().enable_peer_access(d1()), IsOk());
    return true;
  }

  std::unique_ptr<TestDriver> driver_;
  std::unique_ptr<Device> devices_[2];
};

#define GRAPHCAP_REQUIRE_PEERS()                                                  \
  if (!enable_peer()) GTEST_SKIP() << "device 0 cannot access device 1's memory here"

TEST_F(TwoDevices, EachDeviceKeepsItsOrdinalAndItsOwnMemory) {
  EXPECT_EQ(d0().ordinal(), 0);
  EXPECT_EQ(d1().ordinal(), 1);
  // Calls alternate between the devices on one thread: each runs in its own context.
  Buffer a = upload(d0(), iota_u32(32, 0));
  Buffer b = upload(d1(), iota_u32(32, 1000));
  Buffer c = upload(d0(), iota_u32(32, 2000));
  EXPECT_NE(a.native_handle(), b.native_handle());
  EXPECT_THAT(read(d1(), b), ElementsAreArray(iota_u32(32, 1000)));
  EXPECT_THAT(read(d0(), a), ElementsAreArray(iota_u32(32, 0)));
  EXPECT_THAT(read(d0(), c), ElementsAreArray(iota_u32(32, 2000)));
}

TEST_F(TwoDevices, ADeviceIsNotItsOwnPeer) {
  EXPECT_THAT(d0().can_access_peer(d0()), ::testing::Optional(false));
}

TEST_F(TwoDevices, ObjectsOfAnotherDeviceAreRefusedNamingBoth) {
  auto names_both = StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                             AllOf(HasSubstr("another device"), HasSubstr("device 1"),
                                   HasSubstr("device 0")));
  Buffer b1 = upload(d1(), iota_u32(16));
  Buffer b0 = upload(d0(), iota_u32(16));
  // A stream of device 1 given to device 0.
  EXPECT_THAT(d0().alloc(64, d1().stream()), names_both);
  // A buffer of device 1 in device 0's operations (copies aside: those are peer copies).
  EXPECT_THAT(d0().write(b1, to_bytes(iota_u32(16)), d0().stream()), names_both);
  EXPECT_THAT(d0().read(b1, d0().stream()), names_both);
  EXPECT_THAT(d0().fill(b1, std::uint8_t{0}, d0().stream()), names_both);
  EXPECT_THAT(d0().record_external(d0().stream(), {Arg::in(b1)}), names_both);
  // An event of device 1 recorded on device 0's stream.
  Result<Event> e1 = d1().create_event();
  ASSERT_THAT(e1, IsOk());
  EXPECT_THAT(d0().record_event(*e1, d0().stream()), names_both);
  // A kernel of device 1's module launched on device 0.
  Result<Module> module = d1().load_module(driver_->kernel_image());
  ASSERT_THAT(module, IsOk());
  Result<Kernel> add_one = module->kernel("add_one");
  ASSERT_THAT(add_one, IsOk());
  EXPECT_THAT(d0().launch(d0().stream(), *add_one, dims_for(16),
                          {Arg::in(b0), Arg::out(b0), Arg::value(std::uint32_t{16})}),
              names_both);
  // A graph recorded on device 1 to re-record into on device 0.
  ASSERT_THAT(d1().prepare_capture(d1().stream()), IsOk());
  ASSERT_THAT(d1().begin_capture(d1().stream()), IsOk());
  ASSERT_THAT(d1().fill(b1, std::uint8_t{1}, d1().stream()), IsOk());
  Result<Graph> g1 = d1().end_capture(d1().stream());
  ASSERT_THAT(g1, IsOk());
  ASSERT_THAT(d0().prepare_capture(d0().stream()), IsOk());
  ASSERT_THAT(d0().begin_capture(d0().stream()), IsOk());
  EXPECT_THAT(d0().end_capture(d0().stream(), *g1), names_both);
  ASSERT_THAT(d0().abort_capture(d0().stream()), IsOk());
  // A graph pool of device 1's stream.
  Result<GraphPool> pool = d1().create_graph_pool(d1().stream());
  ASSERT_THAT(pool, IsOk());
  CaptureOptions options;
  options.pool = &*pool;
  EXPECT_THAT(d0().prepare_capture(d0().stream(), options), names_both);
}

TEST_F(TwoDevices, APeerCopyWithoutPeerAccessIsRefused) {
  Buffer b0 = upload(d0(), std::vector<std::uint32_t>(16, 0));
  Buffer b1 = upload(d1(), iota_u32(16));
  order(d1(), d0());
  EXPECT_THAT(d0().copy(b0, b1, d0().stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("device 1"), HasSubstr("enable_peer_access"))));
  EXPECT_THAT(read(d0(), b0), Each(0u));
}

TEST_F(TwoDevices, EnablingPeerAccessTwiceIsFine) {
  GRAPHCAP_REQUIRE_PEERS();
  EXPECT_THAT(d0().enable_peer_access(d1()), IsOk());
  EXPECT_THAT(d0().enable_peer_access(d0()), StatusIs(Errc::invalid_argument));
}

TEST_F(TwoDevices, APeerCopyMovesTheBytesFromAnotherDevice) {
  GRAPHCAP_REQUIRE_PEERS();
  Buffer b0 = upload(d0(), std::vector<std::uint32_t>(64, 0));
  Buffer b1 = upload(d1(), iota_u32(64, 300));
  order(d1(), d0());  // the upload on device 1 before the copy on device 0
  ASSERT_THAT(d0().copy(b0, b1, d0().stream()), IsOk());
  EXPECT_THAT(read(d0(), b0), ElementsAreArray(iota_u32(64, 300)));
  // The source was handed back to its stream: device 1 may write it again without more ordering.
  EXPECT_THAT(d1().write(b1, to_bytes(iota_u32(64, 7)), d1().stream()), IsOk());
  EXPECT_THAT(read(d1(), b1), ElementsAreArray(iota_u32(64, 7)));
}

TEST_F(TwoDevices, APeerCopyWritesIntoAnotherDevice) {
  GRAPHCAP_REQUIRE_PEERS();
  Buffer b0 = upload(d0(), iota_u32(64, 40));
  Buffer b1 = upload(d1(), std::vector<std::uint32_t>(64, 0));
  order(d1(), d0());
  ASSERT_THAT(d0().copy(b1, b0, d0().stream()), IsOk());
  // Handed back: device 1's stream reads it after the copy.
  EXPECT_THAT(read(d1(), b1), ElementsAreArray(iota_u32(64, 40)));
}

TEST_F(TwoDevices, AnUnorderedPeerCopyIsRefused) {
  GRAPHCAP_REQUIRE_PEERS();
  Buffer b0 = upload(d0(), std::vector<std::uint32_t>(16, 0));
  Buffer b1 = upload(d1(), iota_u32(16));
  // Nothing orders device 0's stream after the upload on device 1.
  EXPECT_THAT(d0().copy(b0, b1, d0().stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("a stream of device 1"), HasSubstr("Device::wait"))));
}

TEST_F(TwoDevices, ARecordedPeerCopyIsAMemcpyNodeThatCopiesOnReplay) {
  GRAPHCAP_REQUIRE_PEERS();
  Buffer b0 = upload(d0(), std::vector<std::uint32_t>(64, 0));
  Buffer b1 = upload(d1(), iota_u32(64, 1));
  Graph graph;
  ASSERT_NO_FATAL_FAILURE(record_peer_copy(b0, b1, graph));
  EXPECT_EQ(graph.report().node_count, 1u);
  EXPECT_EQ(graph.report().nodes(CU_GRAPH_NODE_TYPE_MEMCPY), 1u);
  EXPECT_THAT(read(d0(), b0), Each(0u));  // recorded, not run
  for (std::uint32_t step = 0; step < 3; ++step) {
    // Device 1 writes its buffer after the last replay read it, and the next replay after that.
    order(d0(), d1());
    ASSERT_THAT(d1().write(b1, to_bytes(iota_u32(64, 100 * step)), d1().stream()), IsOk());
    order(d1(), d0());
    ASSERT_THAT(graph.replay(), IsOk());
    EXPECT_THAT(read(d0(), b0), ElementsAreArray(iota_u32(64, 100 * step)));
  }
}

TEST_F(TwoDevices, APeerCopyFromAFailedBufferCarriesTheFailure) {
  GRAPHCAP_REQUIRE_PEERS();
  Buffer b0 = upload(d0(), std::vector<std::uint32_t>(16, 0));
  Buffer b1 = upload(d1(), iota_u32(16));
  // External work on device 1 that failed: its output carries the failure.
  Error failure(Errc::driver, "the external work failed", CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_THAT(d1().record_external(d1().stream(), {Arg::out(b1)}, failure),
              StatusIs(Errc::driver));
  order(d1(), d0());
  EXPECT_THAT(d0().copy(b0, b1, d0().stream()),
              StatusIs(Errc::failed_buffer, _, HasSubstr("the external work failed")));
  ASSERT_TRUE(b0.failure().has_value());
  EXPECT_THAT(d0().read(b0, d0().stream()), StatusIs(Errc::failed_buffer));
}

TEST_F(TwoDevices, ARecordingCannotWaitForAnotherDevicesEvent) {
  Result<Event> e1 = d1().create_event();
  ASSERT_THAT(e1, IsOk());
  ASSERT_THAT(d1().record_event(*e1, d1().stream()), IsOk());
  ASSERT_THAT(d0().prepare_capture(d0().stream()), IsOk());
  ASSERT_THAT(d0().begin_capture(d0().stream()), IsOk());
  EXPECT_THAT(d0().wait(d0().stream(), *e1),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("can't span devices")));
  ASSERT_THAT(d0().abort_capture(d0().stream()), IsOk());
  // Outside a recording, the wait is fine.
  EXPECT_THAT(d0().wait(d0().stream(), *e1), IsOk());
  EXPECT_THAT(d0().sync(d0().stream()), IsOk());
}

// A graph keeps alive everything it replays against, across devices: device
// 1 closing leaves the memory a graph of device 0 copies from allocated until that graph goes.
TEST_F(TwoDevices, AGraphKeepsAnotherDevicesMemoryAliveAfterThatDeviceCloses) {
  GRAPHCAP_REQUIRE_PEERS();
  Buffer b0 = upload(d0(), std::vector<std::uint32_t>(64, 0));
  Buffer b1 = upload(d1(), iota_u32(64, 1));
  Graph graph;
  ASSERT_NO_FATAL_FAILURE(record_peer_copy(b0, b1, graph));
  b1 = Buffer{};         // only the graph holds device 1's buffer now
  devices_[1].reset();   // device 1 closes
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read(d0(), b0), ElementsAreArray(iota_u32(64, 1)));
  if (fake::FakeDriver* fake = driver_->fake()) {
    EXPECT_THAT(fake->violations(), ::testing::IsEmpty());
    EXPECT_GT(fake->live_handles().device_allocations, 0u)
        << "device 1's memory is still the graph's";
  }
  ASSERT_THAT(graph.destroy(), IsOk());
  if (fake::FakeDriver* fake = driver_->fake()) {
    // What device 1 kept for the graph went with it (TearDown checks every handle).
    EXPECT_EQ(fake->live_handles().contexts, 1u) << "device 0's context only";
  }
}

// Peer access belongs to the two devices as opened: a peer closed and
// opened again must be enabled again (the driver dropped the access with the peer's context).
TEST_F(TwoDevices, PeerAccessIsForgottenWhenThePeerIsClosedAndOpenedAgain) {
  GRAPHCAP_REQUIRE_PEERS();
  devices_[1].reset();
  DeviceOptions options;
  options.ordinal = 1;
  Result<std::unique_ptr<Device>> reopened = Device::open(driver_->api(), options);
  ASSERT_THAT(reopened, IsOk());
  devices_[1] = std::move(*reopened);
  Buffer b0 = upload(d0(), std::vector<std::uint32_t>(32, 0));
  Buffer b1 = upload(d1(), iota_u32(32, 9));
  order(d1(), d0());
  EXPECT_THAT(d0().copy(b0, b1, d0().stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("enable_peer_access")));
  ASSERT_THAT(d0().enable_peer_access(d1()), IsOk());
  ASSERT_THAT(d0().copy(b0, b1, d0().stream()), IsOk());
  EXPECT_THAT(read(d0(), b0), ElementsAreArray(iota_u32(32, 9)));
}

}  // namespace
}  // namespace graphcap::testing
