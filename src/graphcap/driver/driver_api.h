// DriverApi: every CUDA driver entry point graphcap uses, one pure virtual each, named as in cuda.h
// without version suffixes and taking cuda.h's arguments (each at the ABI entry_points.def names).
// The real driver (load_cuda_driver) forwards to libcuda; graphcap::fake::FakeDriver simulates it.
// Nothing in graphcap calls CUDA any other way, so every test runs against either. The entry points
// themselves are listed once, in entry_points.def; every implementation is generated from there.
#pragma once

#include <cstddef>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/entry_points.h>

namespace graphcap {

class DriverApi {
 public:
  virtual ~DriverApi() = default;

  // A short name for messages and test names: "cuda" or "fake".
  virtual const char* name() const noexcept = 0;

  // One pure virtual per line of entry_points.def:
  //   virtual CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) = 0;
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params) \
  virtual CUresult name(GRAPHCAP_PARAMS(params)) = 0;
#include <graphcap/driver/entry_points.def>
};

}  // namespace graphcap
