#include <graphcap/detail/graph_state.h>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/log.h>

namespace graphcap::detail {

GraphState::GraphState(std::shared_ptr<StreamCore> stream, capture::Recording recording) noexcept
    : stream_(std::move(stream)), recording_(std::move(recording)) {
  hot_.driver = &stream_->device().driver();
  hot_.exec = recording_.executable.get();
  hot_.stream = stream_->handle();
  hot_.gate = &stream_->gate();
  hot_.device_id = stream_->device().id();
}

bool GraphState::try_release() noexcept {
  std::lock_guard lock(mutex_);
  if (released()) return true;
  std::uint64_t sequence = 0;
  {
    std::lock_guard stream_lock(stream_->mutex());
    sequence = stream_->drops().last_enqueued();
  }
  DriverApi& driver = stream_->device().driver();
  {
    // Waiting and destroying the executable are unsafe calls: not while a recording forbids them.
    capture::CaptureTracker::UnsafeCall call = stream_->device().tracker().enter_unsafe_call();
    if (!call) return false;
    hot_.released.store(true, std::memory_order_release);
    // A replay may still be running: wait for it before the memory it uses can be reused.
    if (CUresult result = driver.cuStreamSynchronize(stream_->handle()); result != CUDA_SUCCESS) {
      // The stream already faulted: destroy anyway, and let the next sync report it.
      stream_->queue_error(
          Error::from_driver("cuStreamSynchronize", result).context("destroying a graph"));
      sequence = 0;
    }
    if (Result<void> destroyed = recording_.executable.destroy(); !destroyed) {
      log(LogLevel::warn, destroyed.error().context("destroying a graph").message());
    }
  }
  if (sequence != 0) {
    std::lock_guard stream_lock(stream_->mutex());
    stream_->drops().passed(sequence);
  }
  // Unpin: back through the drop queue, already behind the stream. The modules stay loaded until
  // this state goes (the device may be closing, and unloads them after its graphs).
  recording_.pins.clear();
  return true;
}

void GraphState::release() noexcept {
  std::lock_guard lock(mutex_);
  if (hot_.released.exchange(true)) return;
  DriverApi& driver = stream_->device().driver();
  if (CUresult result = driver.cuStreamSynchronize(stream_->handle()); result != CUDA_SUCCESS) {
    stream_->queue_error(
        Error::from_driver("cuStreamSynchronize", result).context("destroying a graph"));
  }
  if (Result<void> destroyed = recording_.executable.destroy(); !destroyed) {
    log(LogLevel::warn, destroyed.error().context("destroying a graph").message());
  }
  recording_.pins.clear();
}

}  // namespace graphcap::detail
