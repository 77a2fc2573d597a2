// CaptureTracker: which recordings are open on one driver, so graphcap never makes a call the
// driver would answer by invalidating one of them. CUDA's rule: a thread is prohibited from
// potentially unsafe calls (allocation, synchronization, queries, destroying executables,
// unloading modules) while it has a recording of its own in GLOBAL or THREAD_LOCAL mode, or while
// any thread has one in GLOBAL mode. Such a call returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and
// invalidates the recording, so graphcap checks first and defers, serves from cache, or refuses.
#pragma once

#include <atomic>
#include <memory>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/driver_api.h>

namespace graphcap::detail {

class CaptureTracker {
 public:
  // One tracker per driver object, shared by every Device opened on it.
  static std::shared_ptr<CaptureTracker> for_driver(DriverApi& driver);

  void recording_started(CUstreamCaptureMode mode) noexcept;
  void recording_ended(CUstreamCaptureMode mode) noexcept;

  // True when an unsafe call from the calling thread would invalidate an open recording.
  bool unsafe_calls_forbidden() const noexcept;

 private:
  std::atomic<int> global_recordings_{0};
};

}  // namespace graphcap::detail
