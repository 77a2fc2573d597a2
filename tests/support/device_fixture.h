// A Device opened on the test driver, with the test kernels loaded: the fixture of the device and
// capture suites (which run on every driver) and of the fake-only unit tests. On the fake, tearing
// down also proves the device released every handle exactly once and no memory-safety violation
// happened.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <graphcap/graphcap.h>

#include "matchers.h"
#include "test_driver.h"

namespace graphcap::testing {

std::vector<std::byte> to_bytes(const std::vector<std::uint32_t>& values);
std::vector<std::uint32_t> to_u32(const std::vector<std::byte>& bytes);
// One thread per element, 256 per block.
LaunchDims dims_for(std::size_t elements);
// 0, 1, 2, ... n-1, plus `offset`.
std::vector<std::uint32_t> iota_u32(std::size_t n, std::uint32_t offset = 0);
// Graph::dot() text without the "at <file>:<line>" line that ends each operation's label (where
// it was called: often this support's own lines, which an exact expectation should not pin).
std::string without_call_sites(std::string dot);

class DeviceFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Opens the device; subclasses may override the options before SetUp runs.
  virtual DeviceOptions device_options() const { return {}; }
  // The driver the device is opened on: the test driver's, or a decorator a subclass puts
  // around it (FaultFixture's FaultInjectingDriver). Called once, in SetUp.
  virtual DriverApi& device_driver(DriverApi& test_driver) { return test_driver; }

  Stream& stream() { return device_->stream(); }
  fake::FakeDriver* fake() { return driver_->fake(); }
  bool on_fake() { return driver_->fake() != nullptr; }

  // Upload / read helpers that fail the test on error.
  Buffer upload_u32(const std::vector<std::uint32_t>& values);
  Buffer upload_u32(const std::vector<std::uint32_t>& values, Stream& s);
  std::vector<std::uint32_t> read_u32(const Buffer& buffer);
  std::vector<std::uint32_t> read_u32(const Buffer& buffer, Stream& s);

  // Another stream of the device, or nullptr with a test failure; a new event (empty on failure).
  Stream* add_stream();
  Event new_event();

  // dst = src + 1 over n elements.
  Result<void> add_one(const Buffer& src, const Buffer& dst, std::uint32_t n);
  Result<void> add_one(const Buffer& src, const Buffer& dst, std::uint32_t n, Stream& s);
  // dst = value over n elements.
  Result<void> fill(const Buffer& dst, std::uint32_t value, std::uint32_t n);

  // Warm-up then recording of `body` on stream(), the way a user captures by hand: prepare, run
  // once, begin, run again (recorded), end into a new graph (capture) or into `into` (rerecord).
  template <class Body>
  Graph capture(Body&& body) {
    EXPECT_THAT(device_->prepare_capture(stream()), IsOk());
    body();
    EXPECT_THAT(device_->begin_capture(stream()), IsOk());
    body();
    Result<Graph> graph = device_->end_capture(stream());
    EXPECT_THAT(graph, IsOk());
    return graph ? std::move(*graph) : Graph{};
  }
  template <class Body>
  Result<void> rerecord(Graph& into, Body&& body) {
    EXPECT_THAT(device_->prepare_capture(stream()), IsOk());
    body();
    EXPECT_THAT(device_->begin_capture(stream()), IsOk());
    body();
    return device_->end_capture(stream(), into);
  }

  std::unique_ptr<TestDriver> driver_;
  std::unique_ptr<Device> device_;
  Module module_;
  Kernel empty_, add_one_, fill_, axpy_, copy_;
  // Set false by a test that leaves handles on purpose (e.g. a driver call it made itself).
  bool expect_clean_teardown_ = true;
  // Streams the device left to the driver (Device::streams_left_to_driver), read as it closes.
  std::size_t streams_left_ = 0;
};

// A fixture (DeviceFixture or one derived from it) with a second stream of the device, side_
// (stream 1), made in SetUp.
template <class Base>
class WithSideStream : public Base {
 protected:
  void SetUp() override {
    Base::SetUp();
    if (this->HasFatalFailure()) return;
    side_ = this->add_stream();
    ASSERT_NE(side_, nullptr);
  }
  Stream* side_ = nullptr;  // stream 1
};

}  // namespace graphcap::testing
