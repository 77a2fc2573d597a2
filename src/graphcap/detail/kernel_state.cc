#include <graphcap/detail/kernel_state.h>

#include <string>

#include <graphcap/driver/driver_api.h>

namespace graphcap::detail {

Result<void> KernelState::enable_dynamic_shared(DriverApi& driver, unsigned bytes) {
  std::lock_guard lock(attribute_mutex_);
  if (dynamic_shared_enabled_.load(std::memory_order_relaxed) >= bytes) return {};
  if (CUresult result = driver.cuFuncSetAttribute(
          function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes));
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuFuncSetAttribute", result)
        .context("enabling " + std::to_string(bytes) + " bytes of dynamic shared memory");
  }
  dynamic_shared_enabled_.store(bytes, std::memory_order_release);
  return {};
}

}  // namespace graphcap::detail
