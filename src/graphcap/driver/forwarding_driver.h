// ForwardingDriver: a DriverApi that forwards every call, unchanged, to another DriverApi. Derive
// from it to observe or alter a few entry points and leave the rest alone:
//
//   class CountingLaunches : public graphcap::ForwardingDriver {
//    public:
//     using ForwardingDriver::ForwardingDriver;
//     CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) override {
//       ++launches;
//       return ForwardingDriver::cuGraphLaunch(exec, stream);
//     }
//     int launches = 0;
//   };
//
// Each method is one call through the inner driver, nothing else (a decorator's cost is that one
// indirect call); ForwardingDriver::<entry point> calls it without a second virtual dispatch. The
// methods are generated from entry_points.def. Not thread-safe beyond what the inner driver is.
#pragma once

#include <graphcap/driver/driver_api.h>

namespace graphcap {

class ForwardingDriver : public DriverApi {
 public:
  // `inner` must outlive this driver.
  explicit ForwardingDriver(DriverApi& inner) noexcept : inner_(&inner) {}

  DriverApi& inner() const noexcept { return *inner_; }

  const char* name() const noexcept override { return inner_->name(); }

#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  CUresult name(GRAPHCAP_PARAMS(params)) override { return inner_->name(GRAPHCAP_ARGS(params)); }
#include <graphcap/driver/entry_points.def>

 private:
  // DriverApi's private hooks, forwarded to the inner driver (forwarding_driver.cc).
  std::string capture_invalidation(CUstream stream) override;
  std::string stream_fault(CUstream stream) override;
  void annotate_buffer(CUdeviceptr address, std::size_t bytes) noexcept override;

  DriverApi* inner_;
};

}  // namespace graphcap
