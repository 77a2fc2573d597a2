// DriverApi: every CUDA driver entry point graphcap uses, one pure virtual each, named as in cuda.h
// without version suffixes and taking cuda.h's arguments (each at the ABI entry_points.def names).
// The real driver (load_cuda_driver) forwards to libcuda; graphcap::fake::FakeDriver simulates it.
// Nothing in graphcap calls CUDA any other way, so every test runs against either. The entry points
// themselves are listed once, in entry_points.def; every implementation is generated from there.
#pragma once

#include <cstddef>
#include <string>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/entry_points.h>

namespace graphcap {

class DriverApi {
 public:
  virtual ~DriverApi() = default;

  // A short name for messages and test names: "cuda" or "fake".
  virtual const char* name() const noexcept = 0;

  // Diagnostics, not a CUDA entry point: the driver's own account of what invalidated the capture
  // sequence last begun on `stream` (the stream that began it), in one sentence, or an empty
  // string when it keeps none. graphcap quotes it in the refusal of an invalidated recording
  // (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED), after its own account in terms of graphcap's
  // operations. libcuda keeps none (the default); graphcap::fake::FakeDriver names the offending
  // call and its thread from its call log. Asked only to word such a refusal, never on a hot
  // path; it must not call back into graphcap.
  virtual std::string capture_invalidation(CUstream stream) {
    (void)stream;
    return {};
  }

  // One pure virtual per line of entry_points.def:
  //   virtual CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) = 0;
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  virtual CUresult name(GRAPHCAP_PARAMS(params)) = 0;
#include <graphcap/driver/entry_points.def>
};

}  // namespace graphcap
