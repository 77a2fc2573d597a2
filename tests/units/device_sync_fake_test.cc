// Device::sync and a device-side fault, on the fake only: the fault comes from a kernel that traps
// as it runs. On a GPU a real device fault (an illegal address, a trap) is sticky: it destroys the
// context for the rest of the process, so it cannot run among other tests there. The graphcap path
// it checks (a queued failure surfacing on the next sync, once) runs on both drivers with an
// injected cuStreamSynchronize failure in tests/faults (CaptureFaultsTest,
// RegressionTest.SyncReportsAQueuedErrorAndItsOwnWaitFailingBoth).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class DeviceSyncFakeTest : public DeviceFixture {
 protected:
  void SetUp() override {
    DeviceFixture::SetUp();
    ASSERT_NE(fake(), nullptr) << "graphcap_unit_tests runs on the fake driver";
  }
};

// The fake's fault is sticky, as measured on the H200 (docs/cuda-driver-facts.md,
// "Kernel faults and what the context does afterwards"): every later sync reports it again, not
// once. The code is the trap's.
TEST_F(DeviceSyncFakeTest, AsynchronousFaultSurfacesOnTheNextSyncAndStays) {
  fake()->register_typed_kernel<>("trap", [](fake::KernelContext& ctx) {
    ctx.trap(CUDA_ERROR_ILLEGAL_ADDRESS);
  });
  Result<Module> module = device_->load_module(fake()->module_image({"trap"}));
  ASSERT_THAT(module, IsOk());
  Result<Kernel> trap = module->kernel("trap");
  ASSERT_THAT(trap, IsOk());
  ASSERT_THAT(device_->launch(stream(), *trap, dims_for(1), {}), IsOk());  // enqueued fine
  EXPECT_THAT(device_->sync(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS,
                       AllOf(HasSubstr("cuStreamSynchronize"), HasSubstr("kernel 'trap' trapped"))));
  EXPECT_THAT(device_->sync(stream()), StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS));
  expect_clean_teardown_ = false;  // after a fault nothing frees (the context's release reclaims)
}

}  // namespace
}  // namespace graphcap::testing
