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

namespace detail {
struct DriverHooks;
}

class DriverApi {
 public:
  virtual ~DriverApi() = default;

  // A short name for messages and test names: "cuda" or "fake".
  virtual const char* name() const noexcept = 0;

  // One pure virtual per line of entry_points.def:
  //   virtual CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) = 0;
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  virtual CUresult name(GRAPHCAP_PARAMS(params)) = 0;
#include <graphcap/driver/entry_points.def>

 private:
  // Three hooks that are not CUDA entry points, for a driver that keeps more than libcuda does
  // (the fake). graphcap calls them through its own door, detail::DriverHooks
  // (driver/driver_hooks.h); they are no part of the API. A driver overrides them if it keeps
  // such an account (FakeDriver does, and offers them to its tests); libcuda keeps none (the
  // defaults). Decorators forward them (ForwardingDriver, MockDriver).
  friend struct detail::DriverHooks;

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

  // Diagnostics, not a CUDA entry point: the driver's own account of the fault that the last
  // failed wait on `stream` (cuStreamSynchronize, cuStreamQuery, cuEventSynchronize of an event
  // recorded on it) reported, in one sentence, or an empty string when it keeps none. libcuda
  // keeps none (the default); graphcap::fake::FakeDriver names the violation (the kernel or copy,
  // the address range and why). graphcap quotes it in the error of a failed sync or read. Asked
  // only to word an error, never on a hot path; it must not call back into graphcap.
  virtual std::string stream_fault(CUstream stream) {
    (void)stream;
    return {};
  }

  // An annotation, not a CUDA entry point: graphcap's memory layer says what it lends out of the
  // device memory it allocated. `bytes` > 0: a Buffer of `bytes` bytes now starts at `address`
  // (a pooled slice, inside a larger driver allocation); 0: every Buffer at `address` has gone
  // back to graphcap's pool. A driver that checks memory accesses (the fake) checks a kernel's
  // against the Buffer, not just the allocation; libcuda ignores it (the default: nothing, no
  // call into CUDA). Called on every Buffer handed out and returned, so overrides must be cheap,
  // must not fail and must not call back into graphcap. Not in entry_points.def (it lists CUDA's
  // entry points only): decorators forward it (ForwardingDriver), it is never logged or failed
  // by fault injection, and MockDriver passes it to its fake unmocked.
  virtual void annotate_buffer(CUdeviceptr address, std::size_t bytes) noexcept {
    (void)address;
    (void)bytes;
  }
};

}  // namespace graphcap
