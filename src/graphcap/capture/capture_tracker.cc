#include <graphcap/capture/capture_tracker.h>

#include <algorithm>
#include <map>

namespace graphcap::capture {

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

void CaptureTracker::recording_started(CUstreamCaptureMode mode, std::thread::id thread) {
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) return;
  {
    std::lock_guard lock(own_mutex_);
    auto it = std::find_if(own_.begin(), own_.end(), [&](const auto& e) { return e.first == thread; });
    if (it == own_.end()) {
      own_.emplace_back(thread, 1);
    } else {
      ++it->second;
    }
    own_total_.fetch_add(1, std::memory_order_seq_cst);
  }
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL) return;
  // Announce first (unsafe calls entered from now on are refused), then let the ones in flight
  // finish: their checks passed before the announcement.
  global_recordings_.fetch_add(1, std::memory_order_seq_cst);
  std::unique_lock lock(wait_mutex_);
  calls_done_.wait(lock, [&] { return in_flight_.load(std::memory_order_seq_cst) == 0; });
}

void CaptureTracker::recording_ended(CUstreamCaptureMode mode, std::thread::id thread) noexcept {
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) return;
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) global_recordings_.fetch_sub(1, std::memory_order_seq_cst);
  std::lock_guard lock(own_mutex_);
  auto it = std::find_if(own_.begin(), own_.end(), [&](const auto& e) { return e.first == thread; });
  if (it == own_.end()) return;
  own_total_.fetch_sub(1, std::memory_order_seq_cst);
  if (--it->second == 0) own_.erase(it);
}

CaptureTracker::Registration CaptureTracker::register_recording(CUstreamCaptureMode mode) {
  const std::thread::id thread = std::this_thread::get_id();
  recording_started(mode, thread);
  return Registration(this, mode, thread);
}

int CaptureTracker::own_recordings(std::thread::id thread) const noexcept {
  if (own_total_.load(std::memory_order_seq_cst) == 0) return 0;
  std::lock_guard lock(own_mutex_);
  for (const auto& [owner, count] : own_) {
    if (owner == thread) return count;
  }
  return 0;
}

bool CaptureTracker::unsafe_calls_forbidden() const noexcept {
  return global_recordings_.load(std::memory_order_seq_cst) > 0 ||
         own_recording(std::this_thread::get_id());
}

CaptureTracker::UnsafeCall CaptureTracker::enter_unsafe_call() noexcept {
  // In flight first, then check: a GLOBAL recording announced after the increment waits for us;
  // one announced before it is seen by the check (both sequentially consistent).
  in_flight_.fetch_add(1, std::memory_order_seq_cst);
  if (unsafe_calls_forbidden()) {
    leave_unsafe_call();
    return UnsafeCall();
  }
  return UnsafeCall(this);
}

CaptureTracker::UnsafeCall CaptureTracker::enter_unsafe_call_beside(
    const Registration& own) noexcept {
  in_flight_.fetch_add(1, std::memory_order_seq_cst);
  const bool counted = static_cast<bool>(own) && own.mode() != CU_STREAM_CAPTURE_MODE_RELAXED;
  const int globals = global_recordings_.load(std::memory_order_seq_cst) -
                      (counted && own.mode() == CU_STREAM_CAPTURE_MODE_GLOBAL ? 1 : 0);
  const std::thread::id thread = std::this_thread::get_id();
  const int owned = own_recordings(thread) - (counted && own.thread() == thread ? 1 : 0);
  if (globals > 0 || owned > 0) {
    leave_unsafe_call();
    return UnsafeCall();
  }
  return UnsafeCall(this);
}

void CaptureTracker::leave_unsafe_call() noexcept {
  if (in_flight_.fetch_sub(1, std::memory_order_seq_cst) == 1) {
    std::lock_guard lock(wait_mutex_);  // pairs with the waiter's predicate check
    calls_done_.notify_all();
  }
}

}  // namespace graphcap::capture
