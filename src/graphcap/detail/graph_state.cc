#include <graphcap/detail/graph_state.h>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/log.h>

namespace graphcap::detail {

GraphState::GraphState(std::shared_ptr<StreamCore> stream, capture::Executable executable,
                       std::vector<std::shared_ptr<Allocation>> pins, capture::BufferRoles buffers,
                       GraphReport report) noexcept
    : stream_(std::move(stream)), executable_(std::move(executable)), pins_(std::move(pins)),
      buffers_(std::move(buffers)), report_(report) {
  hot_.driver = &stream_->device().driver();
  hot_.exec = executable_.get();
  hot_.stream = stream_->handle();
  hot_.gate = &stream_->gate();
  hot_.device_id = stream_->device().id();
}

void GraphState::release() noexcept {
  std::lock_guard lock(mutex_);
  if (hot_.released.exchange(true)) return;
  DriverApi& driver = stream_->device().driver();
  std::uint64_t sequence = 0;
  {
    std::lock_guard stream_lock(stream_->mutex());
    sequence = stream_->drops().last_enqueued();
  }
  // A replay may still be running: wait for it before the memory it uses can be reused.
  if (CUresult result = driver.cuStreamSynchronize(stream_->handle()); result != CUDA_SUCCESS) {
    // The stream already faulted: destroy anyway, and let the next sync report it.
    stream_->queue_error(
        Error::from_driver("cuStreamSynchronize", result).context("destroying a graph"));
  } else {
    std::lock_guard stream_lock(stream_->mutex());
    stream_->drops().passed(sequence);
  }
  if (Result<void> destroyed = executable_.destroy(); !destroyed) {
    log(LogLevel::warn, destroyed.error().context("destroying a graph").message());
  }
  pins_.clear();  // unpin: back through the drop queue, already behind the stream
}

}  // namespace graphcap::detail
