#include <graphcap/detail/capture_tracker.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace graphcap::detail {
namespace {

// Recordings this thread opened in GLOBAL or THREAD_LOCAL mode, per tracker.
thread_local std::vector<std::pair<const CaptureTracker*, int>> t_own_recordings;

int& own_recordings(const CaptureTracker* tracker) {
  for (auto& entry : t_own_recordings) {
    if (entry.first == tracker) return entry.second;
  }
  return t_own_recordings.emplace_back(tracker, 0).second;
}

}  // namespace

std::shared_ptr<CaptureTracker> CaptureTracker::for_driver(DriverApi& driver) {
  static std::mutex mutex;
  static std::map<const DriverApi*, std::weak_ptr<CaptureTracker>> trackers;
  std::lock_guard lock(mutex);
  std::weak_ptr<CaptureTracker>& slot = trackers[&driver];
  std::shared_ptr<CaptureTracker> tracker = slot.lock();
  if (!tracker) {
    tracker = std::make_shared<CaptureTracker>();
    slot = tracker;
  }
  // Forget drivers whose devices are all gone, so a new driver at a reused address starts clean.
  std::erase_if(trackers, [](const auto& entry) { return entry.second.expired(); });
  return tracker;
}

void CaptureTracker::recording_started(CUstreamCaptureMode mode) noexcept {
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) global_recordings_.fetch_add(1);
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED) ++own_recordings(this);
}

void CaptureTracker::recording_ended(CUstreamCaptureMode mode) noexcept {
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) global_recordings_.fetch_sub(1);
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    int& own = own_recordings(this);
    own = std::max(0, own - 1);
  }
}

bool CaptureTracker::unsafe_calls_forbidden() const noexcept {
  if (global_recordings_.load(std::memory_order_acquire) > 0) return true;
  for (const auto& entry : t_own_recordings) {
    if (entry.first == this) return entry.second > 0;
  }
  return false;
}

}  // namespace graphcap::detail
