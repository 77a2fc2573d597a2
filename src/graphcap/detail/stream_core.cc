#include <graphcap/detail/stream_core.h>

#include <algorithm>
#include <string>
#include <utility>

#include <graphcap/detail/device_core.h>
#include <graphcap/driver/stream_fault.h>
#include <graphcap/log.h>

namespace graphcap::detail {

StreamCore::StreamCore(std::shared_ptr<DeviceCore> device, CUstream handle)
    : device_(std::move(device)),
      handle_(handle),
      device_pool_(device_->driver(), memory::SliceKind::device),
      staging_pool_(device_->driver(), memory::SliceKind::pinned_host),
      drops_(device_->driver(), handle, device_pool_, staging_pool_, &device_->drops_waiting()),
      window_(device_->graph_driver(), device_pool_, staging_pool_, drops_, device_->tracker(),
              gate_, handle) {}

StreamCore::~StreamCore() { close(); }

Result<std::shared_ptr<memory::Allocation>> StreamCore::take_slice(memory::SlicePool& pool,
                                                                   std::size_t bytes) {
  Result<memory::Slice> slice = [&]() -> Result<memory::Slice> {
    if (!pool.armed() || !window_.recording()) {
      Result<memory::Slice> cached = pool.acquire(bytes, /*may_allocate=*/false);
      if (cached || cached.error().code() == Errc::invalid_argument) return cached;
    }
    // Driver calls (an allocation, a fence query) only inside an unsafe-call scope: a GLOBAL
    // recording opening on another thread meanwhile would be invalidated by them.
    capture::CaptureTracker::UnsafeCall call = device_->tracker().enter_unsafe_call();
    const bool may_call = static_cast<bool>(call);
    // A stream forked into another stream's recording (a side stream) records too: no fence
    // into it, and no driver allocation, as on the recording stream itself.
    const bool recording = window_.recording();
    if (!recording) drops_.flush(may_call);
    return pool.acquire(bytes, may_call && !(recording && !pool.armed()));
  }();
  if (!slice) return std::move(slice).error();
  return std::make_shared<memory::Allocation>(
      std::static_pointer_cast<memory::SliceOwner>(shared_from_this()), *slice);
}

void StreamCore::failed(capture::Operation& op, capture::OpenRecording* recording,
                        const Error& error) {
  if (recording == nullptr || recording->claims()) op.fail_writes(error);
  if (recording != nullptr) (void)recording->record(op, index_, &error, target());
}

Result<std::shared_ptr<memory::BufferState>> StreamCore::allocate(std::size_t bytes) {
  capture::OpenRecording* recording = window_.recording_into();
  std::shared_ptr<memory::BufferState> state =
      window_.lend(bytes, std::static_pointer_cast<memory::SliceOwner>(shared_from_this()));
  if (!state) {
    Result<std::shared_ptr<memory::Allocation>> allocation = take_slice(device_pool_, bytes);
    if (!allocation) {
      Error error = std::move(allocation).error();
      if (recording != nullptr) recording->doom(error.context("alloc"));
      return error;
    }
    window_.allocated(*allocation);
    state = std::make_shared<memory::BufferState>(std::move(*allocation), bytes);
  }
  if (recording != nullptr) recording->allocated_inside(state);
  // The allocation counts as the buffer's first use, a write on its stream, lent or not: another
  // stream uses it once ordered after that (docs/capture-lifecycle.md, "Buffers on several
  // streams"), so after the pool's replays queued here before it too.
  state->used_by(*this, drops_.next_use(), true);
  return state;
}

void StreamCore::drop(const memory::Slice& slice, std::uint64_t last_use) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (closed()) {
      // The pool gave everything back to the driver, but what a graph of another device pinned.
      auto kept = std::find(kept_at_close_.begin(), kept_at_close_.end(), slice.address);
      if (kept == kept_at_close_.end()) return;
      kept_at_close_.erase(kept);
      if (Result<void> bound = device_->bind_thread(); !bound) {
        log(LogLevel::warn, bound.error().context("freeing a closed device's memory").message());
      }
      (void)device_pool_.free_kept(slice);
      device_->kept_slice_freed();
      return;
    }
    drops_.drop(slice, last_use);
  } catch (...) {
    log(LogLevel::error, "dropping a buffer failed unexpectedly; its memory stays reserved");
  }
}

void StreamCore::drop_to(const memory::Slice& slice, std::uint64_t last_use,
                         std::shared_ptr<memory::SliceHome> home) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (closed()) return;  // closing gave the range back already (keep_range)
    drops_.drop(slice, last_use, std::move(home));
    // A pool's memory is given back (unmapped) as soon as the stream is seen past the view's
    // last use: poll now rather than at the stream's next allocation, which may never come.
    flush_drops_locked();
  } catch (...) {
    log(LogLevel::error, "dropping a graph pool's buffer failed unexpectedly; its memory stays "
                         "mapped until the pool goes");
  }
}

void StreamCore::flush_drops() noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (!closed()) flush_drops_locked();
  } catch (...) {
    log(LogLevel::error, "polling a stream's drop queue failed unexpectedly");
  }
}

void StreamCore::flush_drops_locked() {
  // A recording stream (or a side stream forked into one) takes no fence; the window's close
  // flushes. A query is an unsafe call: without one, only the fence is recorded.
  if (drops_.pending() == 0) return;
  if (window_.recording()) {
    drops_.flush_later();
    return;
  }
  capture::CaptureTracker::UnsafeCall call = device_->tracker().enter_unsafe_call();
  drops_.flush(static_cast<bool>(call));
}

void StreamCore::keep_range(const std::shared_ptr<memory::VirtualRange>& range) {
  std::lock_guard lock(mutex_);
  std::erase_if(ranges_, [](const auto& weak) { return weak.expired(); });
  ranges_.push_back(range);
}

Result<void> StreamCore::synchronize(const char* operation) {
  if (window_.recording()) {
    return Error(Errc::graph_state,
                 std::string(operation) + ": the stream is recording; waiting for it now would "
                 "invalidate the recording (end_capture first)");
  }
  OrderPoint point;  // what the wait covers: everything enqueued so far, and what it came after
  {
    std::lock_guard lock(mutex_);
    point = order_point();
  }
  {
    capture::CaptureTracker::UnsafeCall call = device_->tracker().enter_unsafe_call();
    if (!call) {
      return Error(Errc::graph_state,
                   std::string(operation) + ": a recording is open in global mode (or on this "
                   "thread); waiting for a stream now would invalidate it");
    }
    if (CUresult result = device_->driver().cuStreamSynchronize(handle_); result != CUDA_SUCCESS) {
      device_->fault_reported(result);  // the caller is told: closing need not warn of it again
      return with_stream_fault(Error::from_driver("cuStreamSynchronize", result),
                               device_->driver(), handle_)
          .context(operation);
    }
  }
  host_saw_finish(point);
  device_->collect_deferred();
  return {};
}

void StreamCore::host_saw_finish(const OrderPoint& point) noexcept {
  {
    std::lock_guard lock(mutex_);
    drops_.passed(point.sequence);
  }
  try {
    device_->completed_order().completed(point);
  } catch (...) {
  }
}

void StreamCore::close() noexcept {
  gate_.set(capture::ReplayGate::kClosed);
  if (closed_.exchange(true)) return;
  try {
    // An asynchronous failure nobody synced for (e.g. of a graph destroyed just before): the
    // stream goes, so this is the last place it can be reported.
    if (std::optional<Error> queued = errors().take()) {
      log(LogLevel::warn, queued->context("closing a stream with an unreported error").message());
    }
  } catch (...) {
    log(LogLevel::error, "closing a stream: reporting its queued error failed");
  }
  std::lock_guard lock(mutex_);
  drops_.destroy_events();
  for (const auto& weak : std::exchange(ranges_, {})) {
    if (auto range = weak.lock()) range->close();
  }
  const memory::SlicePool::TeardownLevel level = [this](CUresult code) {
    return device_->teardown_level(code);
  };
  device_pool_.free_all(kept_at_close_, level);
  staging_pool_.free_all({}, level);
  if (CUresult result = device_->driver().cuStreamDestroy(handle_); result != CUDA_SUCCESS) {
    log(LogLevel::warn, Error::from_driver("cuStreamDestroy", result).context("closing a stream")
                            .message());
  }
  forget_abandoned_loop_streams();
  for (CUstream body : std::exchange(loop_streams_, {})) {
    if (CUresult result = device_->driver().cuStreamDestroy(body); result != CUDA_SUCCESS) {
      log(LogLevel::warn, Error::from_driver("cuStreamDestroy", result)
                              .context("closing a stream's loop-body stream")
                              .message());
    }
  }
}

void StreamCore::keep_at_close(const memory::Slice& slice) {
  std::lock_guard lock(mutex_);
  if (slice.kind == memory::SliceKind::device) kept_at_close_.push_back(slice.address);
}

void StreamCore::forget_abandoned_loop_streams() {
  for (CUstream abandoned : window_.own_recording().frames().take_abandoned_bodies()) {
    // Its invalidated capture can't be ended (ConditionalFrames::end_bodies), and the stream can't
    // be destroyed either: cuStreamDestroy of it crashed the driver (SIGSEGV) even after the
    // enclosing capture ended and the device was synchronised (H100, driver 580.159.04,
    // docs/cuda-driver-facts.md). So it is left to the driver, never used again: one stream
    // handle a failed body, for the process's life.
    loop_streams_.erase(std::remove(loop_streams_.begin(), loop_streams_.end(), abandoned),
                        loop_streams_.end());
    device_->leave_stream_to_driver();
  }
}

Result<CUstream> StreamCore::loop_stream(std::size_t depth, const char* operation) {
  forget_abandoned_loop_streams();
  while (loop_streams_.size() <= depth) {
    // Creating a stream is safe while a capture is open, in every mode (measured on the H200).
    CUstream body = nullptr;
    if (CUresult result = device_->driver().cuStreamCreate(&body, CU_STREAM_NON_BLOCKING);
        result != CUDA_SUCCESS) {
      // A failed driver step of begin_while/begin_if/begin_switch dooms the recording, as a
      // failure inserting the node does: the work the caller records next (meant for the body)
      // must never replay unconditionally.
      Error error = Error::from_driver("cuStreamCreate", result)
                        .context(std::string(operation) + ": the body's stream");
      if (capture::OpenRecording* recording = window_.recording_into()) recording->doom(error);
      return error;
    }
    loop_streams_.push_back(body);
  }
  return loop_streams_[depth];
}

}  // namespace graphcap::detail

namespace graphcap::detail {

DriverApi& StreamCore::device_driver() const noexcept { return device_->driver(); }

OrderPoint StreamCore::order_point() {
  OrderPoint point;
  point.stream = this;
  // A fresh position: a graph replayed since the last operation (placed just after it, see
  // ReplayBlock) comes before this point, one replayed from now on after it.
  point.sequence = drops_.next_use();
  const std::uint64_t recording = window_.recording_id();
  point.above = order_.joined_at(recording);
  point.after = order_.now(recording);
  return point;
}

bool StreamCore::ordered_after(const memory::SliceOwner* stream, std::uint64_t sequence) {
  if (sequence == 0) return true;
  const std::uint64_t recording = window_.recording_id();
  // Its own operations come first, except a side stream's eager work before its fork.
  if (stream == this && (!window_.is_side() || sequence > order_.joined_at(recording))) {
    return true;
  }
  return order_.covers(recording, stream, sequence) ||
         device_->completed_order().covers(stream, sequence);
}

void StreamCore::lost_order(capture::Operation& op, const Error& why) noexcept {
  try {
    destroy_fence(std::exchange(op.borrowed_fence, nullptr));
    // Without the fence the owners can't be ordered after this use: wait for it here instead.
    if (Result<void> waited = synchronize("handing a buffer back to its stream"); !waited) {
      log(LogLevel::error, why.context("handing a buffer back to its stream").message() +
                               "; waiting instead failed too (" + waited.error().message() +
                               "): its memory may be reused before this stream is done with it");
      return;
    }
    // Recovered (the use is complete, so the sync orders every owner after it), but the
    // driver's failure must not go unseen (it may be the first sign of a faulting device).
    log(LogLevel::warn, why.context("handing a buffer back to its stream").message() +
                            "; waited for the stream instead");
  } catch (...) {
    log(LogLevel::error, "handing a buffer back to its stream failed unexpectedly");
  }
}

void StreamCore::return_borrowed(capture::Operation& op) noexcept {
  if (op.borrowed_fence == nullptr) return;
  const CUevent fence = std::exchange(op.borrowed_fence, nullptr);
  try {
    OrderPoint point;
    point.stream = this;
    point.sequence = op.borrowed_at;
    std::vector<StreamCore*> done;
    for (const capture::BufferUse& use : op.uses) {
      auto& owner = static_cast<StreamCore&>((*use.buffer)->owner());
      if (&owner == this || std::find(done.begin(), done.end(), &owner) != done.end()) continue;
      done.push_back(&owner);
      std::lock_guard lock(owner.mutex());
      if (owner.closed()) continue;
      if (owner.window().recording()) {
        // Checked up front (Device::check_buffer); only a recording begun since can get here.
        log(LogLevel::warn, "a buffer used on another stream could not be handed back to its "
                            "own stream, which began recording meanwhile: sync that stream "
                            "before dropping the buffer");
        continue;
      }
      if (&owner.device() != device_.get()) {
        // A peer copy's buffer: its stream waits in its own device's context.
        if (Result<void> bound = owner.device().bind_thread(); !bound) {
          log(LogLevel::error, bound.error().context("handing a buffer back to its device's stream").message());
          continue;
        }
      }
      if (CUresult result = device_->driver().cuStreamWaitEvent(owner.handle(), fence, 0);
          result != CUDA_SUCCESS) {
        log(LogLevel::error, Error::from_driver("cuStreamWaitEvent", result)
                                 .context("handing a buffer back to its stream").message());
        continue;
      }
      const std::uint64_t at = owner.drops().next_use();
      for (const capture::BufferUse& other : op.uses) {
        if (&(*other.buffer)->owner() == &owner) (*other.buffer)->memory()->used_at(at);
      }
      if (point.stream != &owner) owner.order().after(point);
    }
  } catch (...) {
    log(LogLevel::error, "handing a buffer back to its stream failed unexpectedly");
  }
  destroy_fence(fence);
}

void StreamCore::destroy_fence(CUevent fence) noexcept {
  // The fence is this stream's device's: destroy it in that device's context (the owners'
  // waits above may have run in another device's).
  if (Result<void> bound = device_->bind_thread(); !bound) {
    log(LogLevel::error, bound.error().context("destroying a copy's fence").message());
  }
  if (CUresult result = device_->driver().cuEventDestroy(fence); result != CUDA_SUCCESS) {
    try {
      log(LogLevel::warn, Error::from_driver("cuEventDestroy", result)
                              .context("handing a buffer back to its stream: destroying its event")
                              .message());
    } catch (...) {
    }
  }
}

}  // namespace graphcap::detail
