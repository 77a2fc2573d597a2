#include <graphcap/detail/capture_tracker.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace graphcap::detail {
namespace {

// Recordings this thread opened in GLOBAL or THREAD_LOCAL mode, per tracker. A fixed array of
// plain values: trivially destructible, so a Device closing during static destruction at exit can
// still read it (a thread_local container would already be gone).
struct OwnRecording {
  const CaptureTracker* tracker;
  int count;
};
constexpr std::size_t kTrackedDrivers = 16;
thread_local OwnRecording t_own_recordings[kTrackedDrivers] = {};

// The slot of `tracker` on this thread; a free one when it has none (nullptr when all 16 are
// busy with open recordings of other drivers: then this thread's own recordings are not
// tracked, and only the driver's own refusal protects them).
OwnRecording* own_slot(const CaptureTracker* tracker, bool create) {
  OwnRecording* free_slot = nullptr;
  for (OwnRecording& entry : t_own_recordings) {
    if (entry.tracker == tracker) return &entry;
    if (free_slot == nullptr && entry.count == 0) free_slot = &entry;
  }
  if (!create || free_slot == nullptr) return nullptr;
  *free_slot = OwnRecording{tracker, 0};
  return free_slot;
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
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    if (OwnRecording* own = own_slot(this, true)) ++own->count;
  }
}

void CaptureTracker::recording_ended(CUstreamCaptureMode mode) noexcept {
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) global_recordings_.fetch_sub(1);
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    if (OwnRecording* own = own_slot(this, false); own != nullptr && own->count > 0) --own->count;
  }
}

bool CaptureTracker::unsafe_calls_forbidden() const noexcept {
  if (global_recordings_.load(std::memory_order_acquire) > 0) return true;
  const OwnRecording* own = own_slot(this, false);
  return own != nullptr && own->count > 0;
}

}  // namespace graphcap::detail
