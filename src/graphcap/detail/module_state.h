// ModuleState: a loaded CUmodule, unloaded exactly once: when the last Module/Kernel handle goes,
// or when its device closes, whichever comes first.
#pragma once

#include <atomic>
#include <memory>

#include <graphcap/driver/cuda_types.h>

namespace graphcap::detail {

class DeviceCore;

class ModuleState {
 public:
  ModuleState(std::shared_ptr<DeviceCore> device, CUmodule module) noexcept
      : device_(std::move(device)), module_(module) {}
  ModuleState(const ModuleState&) = delete;
  ModuleState& operator=(const ModuleState&) = delete;
  ~ModuleState();

  DeviceCore& device() const noexcept { return *device_; }
  CUmodule handle() const noexcept { return module_; }
  bool released() const noexcept { return released_.load(std::memory_order_acquire); }

  // Unload now (the device is closing). Idempotent.
  void release() noexcept;

 private:
  std::shared_ptr<DeviceCore> device_;
  CUmodule module_;
  std::atomic<bool> released_{false};
};

}  // namespace graphcap::detail
