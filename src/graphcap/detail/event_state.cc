#include <graphcap/detail/event_state.h>

#include <graphcap/detail/device_core.h>
#include <graphcap/log.h>

namespace graphcap::detail {

EventState::~EventState() {
  if (released_.exchange(true)) return;
  if (!device_->is_open()) return;  // closing the device destroyed every live event
  if (Result<void> bound = device_->bind_thread(); !bound) {
    log(LogLevel::warn, bound.error().context("destroying an event").message());
  }
  if (CUresult result = device_->driver().cuEventDestroy(handle_); result != CUDA_SUCCESS) {
    log(LogLevel::warn, Error::from_driver("cuEventDestroy", result).message());
  }
}

void EventState::release() noexcept {
  if (released_.exchange(true)) return;
  if (CUresult result = device_->driver().cuEventDestroy(handle_); result != CUDA_SUCCESS) {
    log(LogLevel::warn, Error::from_driver("cuEventDestroy", result).context("closing the device")
                            .message());
  }
}

}  // namespace graphcap::detail
