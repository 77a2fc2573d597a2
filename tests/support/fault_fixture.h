// DeviceFixture with a FaultInjectingDriver between the device and the test driver: the fixture of
// the fault tests (tests/faults), which run on every driver. On the fake the decorator wraps a
// FakeDriver, on the H200 libcuda; a test injects faults through faults() (FakeDriver's
// vocabulary: fail_call, fail_always, fail_when, calls, call_count, live_handles) and so runs
// unchanged on both. Tearing down also checks, on both drivers, that every handle created through
// the decorator was released (its live_handles(): exact on libcuda too, where the driver's own
// handles cannot be counted), unless the test cleared expect_clean_teardown_.
#pragma once

#include <memory>

#include <graphcap/fake/fault_injecting_driver.h>

#include "device_fixture.h"

namespace graphcap::testing {

class FaultFixture : public DeviceFixture {
 protected:
  void TearDown() override;
  DriverApi& device_driver(DriverApi& test_driver) override;

  fake::FaultInjectingDriver& faults() { return *faults_; }

  std::unique_ptr<fake::FaultInjectingDriver> faults_;
};

}  // namespace graphcap::testing
