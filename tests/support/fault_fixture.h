// DeviceFixture with a FaultInjectingDriver between the device and the test driver: the fixture of
// the fault tests (tests/faults), which run on every driver. On the fake the decorator wraps a
// FakeDriver, on the H200 libcuda; a test injects faults through faults() (FakeDriver's
// vocabulary: fail_call, fail_always, fail_when, calls, call_count, live_handles) and so runs
// unchanged on both. Tearing down also checks, on both drivers, that every handle created through
// the decorator was released (its live_handles(): exact on libcuda too, where the driver's own
// handles cannot be counted), unless the test cleared expect_clean_teardown_.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <graphcap/driver/entry_traits.h>
#include <graphcap/fake/fault_injecting_driver.h>

#include "device_fixture.h"

namespace graphcap::fake {
// Failures print live handles by kind, not as bytes.
void PrintTo(const LiveHandles& live, std::ostream* os);
}  // namespace graphcap::fake

namespace graphcap::testing {

// Collects the warnings (and errors) graphcap logs while it lives: many injected failures are
// reported only as a warning (destructor paths, the warning-only cuGraphUpload).
class Warnings {
 public:
  Warnings() {
    previous_ = set_log_sink([this](LogLevel level, std::string_view message) {
      if (level <= LogLevel::warn) lines.emplace_back(message);
    });
  }
  ~Warnings() { set_log_sink(previous_); }
  Warnings(const Warnings&) = delete;
  Warnings& operator=(const Warnings&) = delete;
  std::vector<std::string> lines;

 private:
  LogSink previous_;
};

class FaultFixture : public DeviceFixture {
 protected:
  void TearDown() override;
  DriverApi& device_driver(DriverApi& test_driver) override;

  fake::FaultInjectingDriver& faults() { return *faults_; }

  // The calls made so far of every entry point whose table row `pick` selects (entry_traits.h:
  // the host waits, the potentially unsafe calls, ...), by name; two of them compare as counts.
  std::map<std::string_view, std::size_t> call_counts(bool (*pick)(const EntryTraits&));
  // The calls made between `before` (call_counts of the same pick) and now, of those made at all.
  std::map<std::string_view, std::size_t> calls_since(
      const std::map<std::string_view, std::size_t>& before, bool (*pick)(const EntryTraits&));

  // dst = src + 1, warmed up (run once eagerly after prepare_capture), recorded and closed into a
  // graph: the end_capture's result, or the error of the first step that failed.
  Result<Graph> record_add_one(const Buffer& src, const Buffer& dst, std::uint32_t n);

  std::unique_ptr<fake::FaultInjectingDriver> faults_;
};

}  // namespace graphcap::testing
