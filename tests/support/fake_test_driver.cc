// make_test_driver() for graphcap_tests_fake: a fresh FakeDriver per test, with every test kernel
// registered and a module image naming them all.
#include <cstddef>
#include <iterator>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <graphcap/fake/fake_driver.h>

#include "kernels/test_kernels.h"
#include "test_driver.h"

namespace graphcap::testing {
namespace {

template <std::size_t... I>
std::vector<std::byte> image_of_test_kernels(const fake::FakeDriver& driver,
                                             std::index_sequence<I...>) {
  return driver.module_image({kTestKernelNames[I]...});
}

class FakeTestDriver final : public TestDriver {
 public:
  explicit FakeTestDriver(const fake::FakeDriverOptions& options) : driver_(options) {
    register_test_kernels(driver_);
    image_ =
        image_of_test_kernels(driver_, std::make_index_sequence<std::size(kTestKernelNames)>{});
  }

  DriverApi& api() override { return driver_; }
  fake::FakeDriver* fake() override { return &driver_; }
  std::span<const std::byte> kernel_image() override { return image_; }

 private:
  fake::FakeDriver driver_;
  std::vector<std::byte> image_;
};

}  // namespace

std::unique_ptr<TestDriver> make_test_driver() { return make_test_driver(fake::FakeDriverOptions{}); }

std::unique_ptr<TestDriver> make_test_driver(int devices) {
  fake::FakeDriverOptions options;
  options.device_count = devices;
  return make_test_driver(options);
}

std::unique_ptr<TestDriver> make_test_driver(const fake::FakeDriverOptions& options) {
  return std::make_unique<FakeTestDriver>(options);
}

}  // namespace graphcap::testing
