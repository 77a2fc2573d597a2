// make_test_driver() for graphcap_tests_cuda: the process's libcuda, loaded once, and the test
// kernels as the fatbin nvcc built from tests/kernels/test_kernels.cu. A machine where libcuda
// can't be loaded fails every test with the loader's message: the gpu preset never passes without
// a GPU having run it.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include <graphcap/driver/cuda_driver.h>
#include <graphcap/embedded/graphcap_test_kernels_fatbin.h>

#include "test_driver.h"

namespace graphcap::testing {
namespace {

class CudaTestDriver final : public TestDriver {
 public:
  explicit CudaTestDriver(DriverApi& api) : api_(&api) {}
  DriverApi& api() override { return *api_; }
  fake::FakeDriver* fake() override { return nullptr; }
  std::span<const std::byte> kernel_image() override {
    return embedded::graphcap_test_kernels_fatbin();
  }

 private:
  DriverApi* api_;  // the process-wide driver; outlives every test
};

}  // namespace

std::unique_ptr<TestDriver> make_test_driver() {
  // Loaded once per process, on first use, and deliberately never destroyed: unloading libcuda
  // during static destruction would pull its code from under the threads it started.
  static const Result<std::unique_ptr<DriverApi>>& driver =
      *new Result<std::unique_ptr<DriverApi>>(load_cuda_driver());
  if (!driver) {
    const std::string message =
        "graphcap_tests_cuda needs the real CUDA driver and could not load it: " +
        to_string(driver.error());
    std::fprintf(stderr, "%s\n", message.c_str());
    // gtest reports an exception from a test or its SetUp as a failure of that test.
    throw std::runtime_error(message);
  }
  return std::make_unique<CudaTestDriver>(**driver);
}

// The machine's GPUs, however many: the tests check the count.
std::unique_ptr<TestDriver> make_test_driver(int) { return make_test_driver(); }

std::unique_ptr<TestDriver> make_test_driver(const fake::FakeDriverOptions&) { return make_test_driver(); }

}  // namespace graphcap::testing
