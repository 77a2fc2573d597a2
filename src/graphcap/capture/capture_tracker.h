// CaptureTracker: which recordings are open on one driver, so graphcap never makes a call the
// driver would answer by invalidating one of them. CUDA's rule (docs/cuda-driver-facts.md, "What
// invalidates a capture"): a thread may not make potentially unsafe calls (allocation,
// synchronization, queries, destroying executables, unloading modules) while it has a recording
// of its own in GLOBAL or THREAD_LOCAL mode, or while any thread has one in GLOBAL mode. Such a
// call returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the recording, so graphcap
// checks first and defers, serves from cache, or refuses.
//
// Checking is not enough on its own: between another thread's check and its call, a GLOBAL
// recording could open. So an unsafe call is made inside an UnsafeCall scope, and a GLOBAL
// recording opens only once every unsafe call already in flight has returned (new ones are
// refused from the moment it is announced). Lock order: a stream's mutex may be held when an
// UnsafeCall is entered, never taken while one is held.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/driver_api.h>

namespace graphcap::capture {

class CaptureTracker {
 public:
  // One tracker per driver object, shared by every Device opened on it.
  static std::shared_ptr<CaptureTracker> for_driver(DriverApi& driver);

  // One open recording's place in the tracker, from just before the driver's cuStreamBeginCapture
  // until its capture is closed: released exactly once (release(), or the destructor), whichever
  // thread closes it.
  class Registration {
   public:
    Registration() noexcept = default;
    Registration(Registration&& other) noexcept
        : tracker_(std::exchange(other.tracker_, nullptr)), mode_(other.mode_),
          thread_(other.thread_) {}
    Registration& operator=(Registration&& other) noexcept {
      if (this != &other) {
        release();
        tracker_ = std::exchange(other.tracker_, nullptr);
        mode_ = other.mode_;
        thread_ = other.thread_;
      }
      return *this;
    }
    ~Registration() { release(); }
    explicit operator bool() const noexcept { return tracker_ != nullptr; }
    CUstreamCaptureMode mode() const noexcept { return mode_; }
    std::thread::id thread() const noexcept { return thread_; }
    void release() noexcept {
      if (CaptureTracker* tracker = std::exchange(tracker_, nullptr)) {
        tracker->recording_ended(mode_, thread_);
      }
    }

   private:
    friend class CaptureTracker;
    Registration(CaptureTracker* tracker, CUstreamCaptureMode mode, std::thread::id thread) noexcept
        : tracker_(tracker), mode_(mode), thread_(thread) {}
    CaptureTracker* tracker_ = nullptr;
    CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
    std::thread::id thread_;
  };
  // A recording opens on this thread in `mode` (call before the driver's cuStreamBeginCapture).
  // In GLOBAL mode this waits for the unsafe calls other threads have in flight.
  Registration register_recording(CUstreamCaptureMode mode);

  // True when an unsafe call from the calling thread would invalidate an open recording.
  bool unsafe_calls_forbidden() const noexcept;

  // The scope of one unsafe call: while it is alive and true, no GLOBAL recording opens.
  class UnsafeCall {
   public:
    UnsafeCall() noexcept = default;
    UnsafeCall(UnsafeCall&& other) noexcept : tracker_(std::exchange(other.tracker_, nullptr)) {}
    UnsafeCall& operator=(UnsafeCall&&) = delete;
    ~UnsafeCall() { end(); }
    // False: the call is forbidden now (defer it, serve from cache, or refuse).
    explicit operator bool() const noexcept { return tracker_ != nullptr; }
    // Leave the scope before the object goes (what the destructor would do, once).
    void end() noexcept {
      if (tracker_ != nullptr) std::exchange(tracker_, nullptr)->leave_unsafe_call();
    }

   private:
    friend class CaptureTracker;
    explicit UnsafeCall(CaptureTracker* tracker) noexcept : tracker_(tracker) {}
    CaptureTracker* tracker_ = nullptr;
  };
  UnsafeCall enter_unsafe_call() noexcept;
  // The same for the calls that close a recording (instantiate, update, upload), which only the
  // *other* open recordings forbid: `own` is the one being closed.
  UnsafeCall enter_unsafe_call_beside(const Registration& own) noexcept;

 private:
  void recording_started(CUstreamCaptureMode mode, std::thread::id thread);
  void recording_ended(CUstreamCaptureMode mode, std::thread::id thread) noexcept;
  // How many recordings `thread` owns in GLOBAL or THREAD_LOCAL mode.
  int own_recordings(std::thread::id thread) const noexcept;
  bool own_recording(std::thread::id thread) const noexcept {
    return own_recordings(thread) > 0;
  }
  void leave_unsafe_call() noexcept;

  std::atomic<int> global_recordings_{0};
  std::atomic<int> in_flight_{0};  // unsafe calls now running, any thread
  std::mutex wait_mutex_;
  std::condition_variable calls_done_;
  // Recordings each thread opened in GLOBAL or THREAD_LOCAL mode (a short list: one entry per
  // recording thread). own_total_ lets the common case (none) skip the lock.
  std::atomic<int> own_total_{0};
  mutable std::mutex own_mutex_;
  std::vector<std::pair<std::thread::id, int>> own_;
};

}  // namespace graphcap::capture
