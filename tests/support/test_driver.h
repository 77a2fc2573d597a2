// The driver a test runs against. The suites under tests/conformance, tests/device and
// tests/capture are compiled into one executable per driver: graphcap_tests_fake (always) and
// graphcap_tests_cuda (gpu preset, label gpu). Each links exactly one definition of
// make_test_driver(), so the same test body runs on the fake and on the H200.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include <graphcap/driver/driver_api.h>

namespace graphcap::fake {
class FakeDriver;
struct FakeDriverOptions;
}

namespace graphcap::testing {

class TestDriver {
 public:
  virtual ~TestDriver() = default;
  virtual DriverApi& api() = 0;
  // The fake, when this is the fake driver; nullptr on the real one. Tests that need fault
  // injection take it from a FaultInjectingDriver around api() (tests/support/fault_fixture.h) and
  // run on every driver; tests that need the fake's own machinery (trapping kernels, MockDriver)
  // belong in graphcap_unit_tests.
  virtual fake::FakeDriver* fake() = 0;
  // A module image holding every test kernel (tests/kernels): a fatbin for the real driver,
  // FakeDriver::module_image for the fake.
  virtual std::span<const std::byte> kernel_image() = 0;
  bool is_fake() { return fake() != nullptr; }
};

// A fresh driver for one test (the fake: a new FakeDriver with the test kernels registered; the
// real driver: the process's libcuda, loaded once).
std::unique_ptr<TestDriver> make_test_driver();
// The same with `devices` devices where the driver is made for the test: the fake gets exactly
// that many (FakeDriverOptions::device_count); the real driver has the machine's GPUs, so tests of
// several devices ask cuDeviceGetCount and GTEST_SKIP below what they need (devices_or_skip in
// multi_device.h).
std::unique_ptr<TestDriver> make_test_driver(int devices);
// The same with the fake made with `options` (the real driver has none to take).
std::unique_ptr<TestDriver> make_test_driver(const fake::FakeDriverOptions& options);

}  // namespace graphcap::testing
