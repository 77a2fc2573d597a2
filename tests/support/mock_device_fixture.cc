#include "mock_device_fixture.h"

#include "kernels/test_kernels.h"
#include "matchers.h"

namespace graphcap::testing {

void MockDeviceTest::open(const DeviceOptions& options) {
  register_test_kernels(mock_.fake());
  Result<std::unique_ptr<Device>> device = Device::open(mock_, options);
  ASSERT_THAT(device, IsOk());
  device_ = std::move(*device);
}

Kernel MockDeviceTest::kernel(const char* name) {
  Result<Module> module = device_->load_module(mock_.fake().module_image({name}));
  EXPECT_THAT(module, IsOk());
  if (!module) return Kernel{};
  Result<Kernel> found = module->kernel(name);
  EXPECT_THAT(found, IsOk());
  return found ? *found : Kernel{};
}

void MockDeviceTest::TearDown() {
  device_.reset();
  EXPECT_EQ(mock_.fake().live_handles().total(), 0u);
  EXPECT_TRUE(mock_.fake().violations().empty());
}

}  // namespace graphcap::testing
