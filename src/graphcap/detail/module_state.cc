#include <graphcap/detail/module_state.h>

#include <graphcap/detail/device_core.h>
#include <graphcap/log.h>

namespace graphcap::detail {

ModuleState::~ModuleState() {
  if (released_.exchange(true)) return;
  if (!device_->is_open()) return;  // closing the device unloaded every live module
  if (device_->unsafe_calls_forbidden()) {
    device_->defer_unload(module_);  // unloading now would invalidate an open recording
    return;
  }
  if (Result<void> bound = device_->bind_thread(); !bound) {
    log(LogLevel::warn, bound.error().context("unloading a module").message());
  }
  if (CUresult result = device_->driver().cuModuleUnload(module_); result != CUDA_SUCCESS) {
    log(LogLevel::warn, Error::from_driver("cuModuleUnload", result).message());
  }
}

void ModuleState::release() noexcept {
  if (released_.exchange(true)) return;
  if (CUresult result = device_->driver().cuModuleUnload(module_); result != CUDA_SUCCESS) {
    log(LogLevel::warn, Error::from_driver("cuModuleUnload", result).message());
  }
}

}  // namespace graphcap::detail
