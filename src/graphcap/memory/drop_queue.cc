#include <graphcap/memory/drop_queue.h>

#include <algorithm>

#include <graphcap/log.h>
#include <graphcap/driver/stream_fault.h>

namespace graphcap::memory {

void DropQueue::drop(const Slice& slice, std::uint64_t last_use, std::shared_ptr<SliceHome> home) {
  Dropped dropped{slice, last_use, std::move(home)};
  if (last_use <= completed_) {
    release(dropped);
    return;
  }
  pending_.push_back(std::move(dropped));
  note_waiting();
}

void DropQueue::release(const Dropped& dropped) {
  if (dropped.home) {
    dropped.home->release(dropped.slice);
  } else {
    (dropped.slice.kind == SliceKind::device ? device_ : host_)->release(dropped.slice);
  }
}

void DropQueue::passed(std::uint64_t sequence) {
  if (sequence <= completed_) return;
  completed_ = sequence;
  while (!fences_.empty() && fences_.front().sequence <= completed_) {
    recycle(fences_.front().event);
    fences_.pop_front();
  }
  release_passed();
}

void DropQueue::release_passed() {
  auto passed_end = std::stable_partition(pending_.begin(), pending_.end(),
                                          [&](const Dropped& d) { return d.last_use <= completed_; });
  // Out of the queue first: a home released here may be destroyed, and it may drop more.
  std::vector<Dropped> passed(std::make_move_iterator(pending_.begin()),
                              std::make_move_iterator(passed_end));
  pending_.erase(pending_.begin(), passed_end);
  for (const Dropped& dropped : passed) release(dropped);
}

Result<void> DropQueue::record_fence() {
  // One fence covers every drop so far; skip it when the newest fence already does.
  std::uint64_t newest = 0;
  for (const Dropped& d : pending_) newest = std::max(newest, d.last_use);
  if (newest <= completed_ || (!fences_.empty() && fences_.back().sequence >= newest)) return {};
  CUevent event = nullptr;
  if (!spare_events_.empty()) {
    event = spare_events_.back();
    spare_events_.pop_back();
  } else if (CUresult result = driver_->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING);
             result != CUDA_SUCCESS) {
    return Error::from_driver("cuEventCreate", result).context("fencing the drop queue");
  }
  if (CUresult result = driver_->cuEventRecord(event, stream_); result != CUDA_SUCCESS) {
    recycle(event);
    return Error::from_driver("cuEventRecord", result).context("fencing the drop queue");
  }
  fences_.push_back({event, last_enqueued()});
  return {};
}

void DropQueue::flush(bool may_query) {
  // Fence what is waiting first, so this very poll can already find it passed.
  if (Result<void> fenced = record_fence(); !fenced) {
    log(LogLevel::warn, fenced.error().message());
  }
  if (!may_query) {
    note_waiting();
    return;
  }
  while (!fences_.empty()) {
    CUresult result = driver_->cuEventQuery(fences_.front().event);
    if (result == CUDA_ERROR_NOT_READY) break;
    if (result != CUDA_SUCCESS) {
      // The stream faulted; its next sync reports it. Slices stay queued (never reused unsafely).
      log(LogLevel::warn, Error::from_driver("cuEventQuery", result)
                              .context("polling the drop queue's fence").message());
      break;
    }
    const std::uint64_t sequence = fences_.front().sequence;
    recycle(fences_.front().event);
    fences_.pop_front();
    completed_ = std::max(completed_, sequence);
  }
  release_passed();
  note_waiting();
}

Result<void> DropQueue::drain() {
  if (Result<void> fenced = record_fence(); !fenced) return fenced;
  if (fences_.empty()) return {};
  const Fence newest = fences_.back();
  if (CUresult result = driver_->cuEventSynchronize(newest.event); result != CUDA_SUCCESS) {
    return with_stream_fault(Error::from_driver("cuEventSynchronize", result), *driver_, stream_)
        .context("draining the drop queue");
  }
  passed(newest.sequence);
  return {};
}

void DropQueue::destroy_events() noexcept {
  for (const Fence& fence : fences_) spare_events_.push_back(fence.event);
  fences_.clear();
  for (CUevent event : spare_events_) {
    if (CUresult result = driver_->cuEventDestroy(event); result != CUDA_SUCCESS) {
      log(LogLevel::warn, Error::from_driver("cuEventDestroy", result).message());
    }
  }
  spare_events_.clear();
}

}  // namespace graphcap::memory
