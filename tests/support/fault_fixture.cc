#include "fault_fixture.h"

#include <gmock/gmock.h>

namespace graphcap::fake {

void PrintTo(const LiveHandles& live, std::ostream* os) {
  *os << "{contexts " << live.contexts << ", streams " << live.streams << ", events "
      << live.events << ", modules " << live.modules << ", graphs " << live.graphs << ", execs "
      << live.execs << ", device allocations " << live.device_allocations
      << ", host allocations " << live.host_allocations << ", address ranges "
      << live.address_ranges << ", memory handles " << live.memory_handles << ", mappings "
      << live.mappings << "}";
}

}  // namespace graphcap::fake

namespace graphcap::testing {

DriverApi& FaultFixture::device_driver(DriverApi& test_driver) {
  faults_ = std::make_unique<fake::FaultInjectingDriver>(test_driver);
  return *faults_;
}

Result<Graph> FaultFixture::record_add_one(const Buffer& src, const Buffer& dst, std::uint32_t n) {
  return device_->record(stream(), [&] { return add_one(src, dst, n); });
}

std::map<std::string_view, std::size_t> FaultFixture::call_counts(
    bool (*pick)(const EntryTraits&)) {
  std::map<std::string_view, std::size_t> counts;
  for (const EntryTraits& traits : kEntryTraits) {
    if (pick(traits)) counts[traits.name] = faults_->call_count(traits.name);
  }
  return counts;
}

std::map<std::string_view, std::size_t> FaultFixture::calls_since(
    const std::map<std::string_view, std::size_t>& before, bool (*pick)(const EntryTraits&)) {
  std::map<std::string_view, std::size_t> made;
  for (const auto& [name, count] : call_counts(pick)) {
    const auto then = before.find(name);
    const std::size_t delta = count - (then == before.end() ? 0 : then->second);
    if (delta != 0) made[name] = delta;
  }
  return made;
}

void FaultFixture::TearDown() {
  DeviceFixture::TearDown();  // closes the device
  // A fault armed on a call the code never made tested nothing: the test passed for another
  // reason. (After the close: some tests arm faults for it.)
  if (faults_ != nullptr) {
    EXPECT_THAT(faults_->unfired_faults(), ::testing::IsEmpty())
        << "a fault the test armed never fired";
  }
  if (faults_ != nullptr && expect_clean_teardown_) {
    fake::LiveHandles left;
    left.streams = streams_left_;  // left to the driver, not leaked
    left.contexts = streams_left_ != 0 ? 1 : 0;  // kept with them
    EXPECT_EQ(faults_->live_handles(), left) << "the device leaked driver handles";
  }
}

}  // namespace graphcap::testing
