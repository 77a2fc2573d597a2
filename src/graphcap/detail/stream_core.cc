#include <graphcap/detail/stream_core.h>

#include <string>

#include <graphcap/detail/device_core.h>
#include <graphcap/log.h>

namespace graphcap::detail {

StreamCore::StreamCore(std::shared_ptr<DeviceCore> device, CUstream handle)
    : device_(std::move(device)),
      handle_(handle),
      device_pool_(device_->driver(), memory::SliceKind::device),
      staging_pool_(device_->driver(), memory::SliceKind::pinned_host),
      drops_(device_->driver(), handle, device_pool_, staging_pool_),
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
    if (!pool.armed() || !window_.recording()) drops_.flush(may_call);
    return pool.acquire(bytes, may_call);
  }();
  if (!slice) return std::move(slice).error();
  return std::make_shared<memory::Allocation>(
      std::static_pointer_cast<memory::SliceOwner>(shared_from_this()), *slice);
}

void StreamCore::fail_writes(const capture::Operation& op, const Error& error) {
  for (const capture::BufferUse& use : op.uses) {
    if (capture::writes(use.access)) (*use.buffer)->fail(error);
  }
}

void StreamCore::drop(const memory::Slice& slice, std::uint64_t last_use) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (closed()) return;  // the pool already gave everything back to the driver
    drops_.drop(slice, last_use);
  } catch (...) {
    log(LogLevel::error, "dropping a buffer failed unexpectedly; its memory stays reserved");
  }
}

void StreamCore::count_failed_buffer(int delta) noexcept {
  std::lock_guard lock(failed_mutex_);
  failed_buffers_ += delta;
  if (failed_buffers_ > 0) {
    gate_.set(capture::ReplayGate::kFailedBuffers);
  } else {
    gate_.clear(capture::ReplayGate::kFailedBuffers);
  }
}

void StreamCore::queue_error(const Error& error) {
  std::lock_guard lock(errors_mutex_);
  errors_.push_back(error);
  has_errors_.store(true, std::memory_order_release);
}

std::optional<Error> StreamCore::take_error() {
  if (!has_queued_error()) return std::nullopt;
  std::lock_guard lock(errors_mutex_);
  if (errors_.empty()) return std::nullopt;
  Error first = errors_.front();
  if (errors_.size() > 1) {
    first = Error(first.code(),
                  first.message() + " (and " + std::to_string(errors_.size() - 1) +
                      " later error(s) on this stream)",
                  first.driver_code());
  }
  errors_.clear();
  has_errors_.store(false, std::memory_order_release);
  return first;
}

Result<void> StreamCore::synchronize(const char* operation) {
  if (window_.recording()) {
    return Error(Errc::graph_state,
                 std::string(operation) + ": the stream is recording; waiting for it now would "
                 "invalidate the recording (end_capture first)");
  }
  std::uint64_t sequence = 0;
  {
    std::lock_guard lock(mutex_);
    sequence = drops_.last_enqueued();
  }
  {
    capture::CaptureTracker::UnsafeCall call = device_->tracker().enter_unsafe_call();
    if (!call) {
      return Error(Errc::graph_state,
                   std::string(operation) + ": a recording is open in global mode (or on this "
                   "thread); waiting for a stream now would invalidate it");
    }
    if (CUresult result = device_->driver().cuStreamSynchronize(handle_); result != CUDA_SUCCESS) {
      return Error::from_driver("cuStreamSynchronize", result).context(operation);
    }
  }
  {
    std::lock_guard lock(mutex_);
    drops_.passed(sequence);
  }
  device_->collect_deferred();
  return {};
}

void StreamCore::close() noexcept {
  gate_.set(capture::ReplayGate::kClosed);
  if (closed_.exchange(true)) return;
  try {
    // An asynchronous failure nobody synced for (e.g. of a graph destroyed just before): the
    // stream goes, so this is the last place it can be reported.
    if (std::optional<Error> queued = take_error()) {
      log(LogLevel::warn, queued->context("closing a stream with an unreported error").message());
    }
  } catch (...) {
    log(LogLevel::error, "closing a stream: reporting its queued error failed");
  }
  std::lock_guard lock(mutex_);
  drops_.destroy_events();
  device_pool_.free_all();
  staging_pool_.free_all();
  if (CUresult result = device_->driver().cuStreamDestroy(handle_); result != CUDA_SUCCESS) {
    log(LogLevel::warn, Error::from_driver("cuStreamDestroy", result).context("closing a stream")
                            .message());
  }
}

}  // namespace graphcap::detail
