// KernelState: one function of a loaded module, shared by every Kernel handle of it and by the
// graphs that recorded launches of it (which keeps its module loaded while they replay).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <graphcap/detail/module_state.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/result.h>

namespace graphcap::detail {

// A kernel's parameters as the driver reports them (cuFuncGetParamInfo): count, and each one's
// offset and size in the kernel's parameter buffer.
struct ParamLayout {
  std::vector<std::size_t> offsets;
  std::vector<std::size_t> sizes;
  std::size_t count() const noexcept { return sizes.size(); }
};

// Asks the driver for `function`'s parameter layout: indices 0, 1, ... until the query answers
// CUDA_ERROR_INVALID_VALUE, which marks the count. Any other failure means the driver can't tell
// (the error is returned, naming the parameter index asked about).
Result<ParamLayout> query_param_layout(DriverApi& driver, CUfunction function);

class KernelState {
 public:
  KernelState(std::shared_ptr<ModuleState> module, CUfunction function, std::string name)
      : module_(std::move(module)), function_(function), name_(std::move(name)) {}
  // With the parameter layout the driver reported: launches are checked against it.
  KernelState(std::shared_ptr<ModuleState> module, CUfunction function, std::string name,
              std::optional<ParamLayout> layout)
      : module_(std::move(module)), function_(function), name_(std::move(name)),
        layout_(std::move(layout)) {}
  KernelState(const KernelState&) = delete;
  KernelState& operator=(const KernelState&) = delete;

  const std::shared_ptr<ModuleState>& module() const noexcept { return module_; }
  CUfunction function() const noexcept { return function_; }
  const std::string& name() const noexcept { return name_; }
  // The parameter layout, read once when the Kernel was looked up; nullptr where the driver could
  // not report it (launches go unchecked).
  const ParamLayout* layout() const noexcept { return layout_ ? &*layout_ : nullptr; }

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
  std::optional<ParamLayout> layout_;  // immutable after construction
  std::atomic<unsigned> dynamic_shared_enabled_{0};
  std::mutex attribute_mutex_;
};

}  // namespace graphcap::detail
