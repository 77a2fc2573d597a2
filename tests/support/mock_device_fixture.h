// A Device opened on a MockDriver that delegates to the fake (a NiceMock: calls no test expects go
// through to the fake unremarked), for the tests that count or intercept driver calls with gMock.
// A test opens the device (open(), with the options it needs) and loads the test kernels it uses
// (kernel()); tearing down closes the device and proves it released every handle and the fake saw
// no memory-safety violation.
#pragma once

#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/mock_driver.h>
#include <graphcap/graphcap.h>

namespace graphcap::testing {

class MockDeviceTest : public ::testing::Test {
 protected:
  // Opens device_ on mock_ (the test kernels registered with its fake); a fatal failure if not.
  void open(const DeviceOptions& options = {});
  // The test kernel `name`, from a module of its own; a fatal failure if it can't be loaded.
  Kernel kernel(const char* name);
  void TearDown() override;

  ::testing::NiceMock<fake::MockDriver> mock_;
  std::unique_ptr<Device> device_;
};

}  // namespace graphcap::testing
