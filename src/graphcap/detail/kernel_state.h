// KernelState: one function of a loaded module, shared by every Kernel handle of it and by the
// graphs that recorded launches of it (which keeps its module loaded while they replay).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include <graphcap/detail/module_state.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/result.h>

namespace graphcap::detail {

class KernelState {
 public:
  KernelState(std::shared_ptr<ModuleState> module, CUfunction function, std::string name)
      : module_(std::move(module)), function_(function), name_(std::move(name)) {}
  KernelState(const KernelState&) = delete;
  KernelState& operator=(const KernelState&) = delete;

  const std::shared_ptr<ModuleState>& module() const noexcept { return module_; }
  CUfunction function() const noexcept { return function_; }
  const std::string& name() const noexcept { return name_; }

  // Dynamic shared memory above the device's default (48 KiB) must be enabled per function
  // (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) before a launch may use it. Enables at
  // least `bytes` once; later launches up to the enabled size cost one atomic load.
  Result<void> enable_dynamic_shared(DriverApi& driver, unsigned bytes);
  unsigned dynamic_shared_enabled() const noexcept {
    return dynamic_shared_enabled_.load(std::memory_order_acquire);
  }

 private:
  std::shared_ptr<ModuleState> module_;
  CUfunction function_;
  std::string name_;
  std::atomic<unsigned> dynamic_shared_enabled_{0};
  std::mutex attribute_mutex_;
};

}  // namespace graphcap::detail
