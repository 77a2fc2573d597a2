// The fake's several devices: a primary context and an address window per device, and peer
// access as cuda.h documents it (FakeDriverOptions::peer_access says whether pairs support it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

namespace graphcap::fake::unit {
namespace {

FakeDriverOptions devices(int count, bool peer_access = true) {
  FakeDriverOptions options;
  options.device_count = count;
  options.peer_access = peer_access;
  return options;
}

class FakePeers : public ::testing::Test {
 protected:
  explicit FakePeers(FakeDriverOptions options = devices(4)) : fake_(options) {}
  void SetUp() override {
    ASSERT_EQ(fake_.cuInit(0), CUDA_SUCCESS);
    for (int d = 0; d < 4; ++d) {
      ASSERT_EQ(fake_.cuDevicePrimaryCtxRetain(&contexts_[d], d), CUDA_SUCCESS);
    }
    ASSERT_EQ(fake_.cuCtxSetCurrent(contexts_[0]), CUDA_SUCCESS);
  }
  void TearDown() override {
    for (int d = 0; d < 4; ++d) {
      if (contexts_[d] != nullptr) {
        EXPECT_EQ(fake_.cuDevicePrimaryCtxRelease(d), CUDA_SUCCESS);
      }
    }
  }

  FakeDriver fake_;
  CUcontext contexts_[4] = {};
};

TEST_F(FakePeers, EveryDeviceHasItsOwnPrimaryContext) {
  for (int a = 0; a < 4; ++a) {
    for (int b = a + 1; b < 4; ++b) EXPECT_NE(contexts_[a], contexts_[b]);
  }
}

TEST_F(FakePeers, AllocationsOfEachDeviceLieInItsOwnAddressWindow) {
  CUdeviceptr pointers[4] = {};
  for (int d = 0; d < 4; ++d) {
    ASSERT_EQ(fake_.cuCtxSetCurrent(contexts_[d]), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuMemAlloc(&pointers[d], 4096), CUDA_SUCCESS);
  }
  for (int d = 1; d < 4; ++d) {
    // Windows of 2^40 bytes, in ordinal order: the pointer tells its device.
    EXPECT_EQ((pointers[d] - pointers[0]) >> 40, static_cast<CUdeviceptr>(d));
  }
  for (int d = 0; d < 4; ++d) {
    ASSERT_EQ(fake_.cuCtxSetCurrent(contexts_[d]), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuMemFree(pointers[d]), CUDA_SUCCESS);
  }
}

TEST_F(FakePeers, CanAccessPeerIsOneBetweenDistinctDevicesAndZeroForItself) {
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      int can = -1;
      ASSERT_EQ(fake_.cuDeviceCanAccessPeer(&can, a, b), CUDA_SUCCESS);
      EXPECT_EQ(can, a == b ? 0 : 1) << a << " -> " << b;
    }
  }
  int can = -1;
  EXPECT_EQ(fake_.cuDeviceCanAccessPeer(&can, 0, 4), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(fake_.cuDeviceCanAccessPeer(&can, -1, 0), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(fake_.cuDeviceCanAccessPeer(nullptr, 0, 1), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakePeers, EnablingIsOncePerOrderedPairOfContexts) {
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[2], 0), CUDA_SUCCESS);
  // The other direction is a separate pair.
  ASSERT_EQ(fake_.cuCtxSetCurrent(contexts_[1]), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[0], 0), CUDA_SUCCESS);
}

TEST_F(FakePeers, EnablingRefusesWhatCudaDocuments) {
  // Itself: 217 (measured on the H200 by graphcap-fidelity; the fake had guessed 201).
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[0], 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(nullptr, 0), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[1], 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(fake_.cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_ERROR_INVALID_CONTEXT);  // none
}

TEST_F(FakePeers, AccessEndsWithEitherContext) {
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_SUCCESS);
  // Device 1's context destroyed (last release) and made again: access must be enabled anew.
  ASSERT_EQ(fake_.cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(fake_.cuDevicePrimaryCtxRetain(&contexts_[1], 1), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_SUCCESS);
}

TEST_F(FakePeers, CopiesBetweenDevicesMoveTheBytes) {
  CUdeviceptr on0 = 0;
  CUdeviceptr on3 = 0;
  ASSERT_EQ(fake_.cuMemAlloc(&on0, 16), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuCtxSetCurrent(contexts_[3]), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuMemAlloc(&on3, 16), CUDA_SUCCESS);
  const std::byte bytes[16] = {std::byte{1}, std::byte{2}, std::byte{3}};
  ASSERT_TRUE(fake_.write_device(on3, bytes));
  ASSERT_EQ(fake_.cuCtxSetCurrent(contexts_[0]), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuMemcpyDtoDAsync(on0, on3, 16, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuCtxSynchronize(), CUDA_SUCCESS);
  std::byte out[16] = {};
  ASSERT_TRUE(fake_.read_device(on0, out));
  EXPECT_EQ(out[0], std::byte{1});
  EXPECT_EQ(out[2], std::byte{3});
  EXPECT_EQ(fake_.cuMemFree(on0), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuMemFree(on3), CUDA_SUCCESS);
}

class FakeWithoutPeers : public FakePeers {
 protected:
  FakeWithoutPeers() : FakePeers(devices(4, false)) {}
};

TEST_F(FakeWithoutPeers, NoPairCanAccessTheOtherAndEnablingIsUnsupported) {
  int can = -1;
  ASSERT_EQ(fake_.cuDeviceCanAccessPeer(&can, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(can, 0);
  EXPECT_EQ(fake_.cuCtxEnablePeerAccess(contexts_[1], 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
}

}  // namespace
}  // namespace graphcap::fake::unit
