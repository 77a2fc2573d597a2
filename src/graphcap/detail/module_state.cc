#include <graphcap/detail/module_state.h>

#include <graphcap/detail/device_core.h>
#include <graphcap/log.h>

namespace graphcap::detail {

ModuleState::~ModuleState() {
  if (released_.exchange(true)) return;
  if (!device_->is_open()) return;  // closing the device unloaded every live module
  {
    // Unloading is an unsafe call: while a recording forbids it, the device unloads it later.
    capture::CaptureTracker::UnsafeCall call = device_->tracker().enter_unsafe_call();
    if (call) {
      if (Result<void> bound = device_->bind_thread(); !bound) {
        log(LogLevel::warn, bound.error().context("unloading a module").message());
      }
      if (CUresult result = device_->driver().cuModuleUnload(module_); result != CUDA_SUCCESS) {
        log(LogLevel::warn, Error::from_driver("cuModuleUnload", result).message());
      }
      return;
    }
  }
  device_->defer_unload(module_);
}

void ModuleState::release() noexcept {
  if (released_.exchange(true)) return;
  if (CUresult result = device_->driver().cuModuleUnload(module_); result != CUDA_SUCCESS) {
    log(LogLevel::warn, Error::from_driver("cuModuleUnload", result).message());
  }
}

}  // namespace graphcap::detail
