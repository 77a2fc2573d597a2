#include <graphcap/detail/kernel_state.h>

#include <string>

#include <graphcap/driver/driver_api.h>

namespace graphcap::detail {

Result<ParamLayout> query_param_layout(DriverApi& driver, CUfunction function) {
  // CUDA's parameter buffer holds at most 32764 bytes, and every parameter has at least one: the
  // bound only stops a driver that never answers CUDA_ERROR_INVALID_VALUE.
  constexpr std::size_t kMaxParams = 32764;
  ParamLayout layout;
  for (std::size_t index = 0; index <= kMaxParams; ++index) {
    std::size_t offset = 0;
    std::size_t size = 0;
    const CUresult result = driver.cuFuncGetParamInfo(function, index, &offset, &size);
    if (result == CUDA_ERROR_INVALID_VALUE) return layout;  // index == the parameter count
    if (result != CUDA_SUCCESS) {
      return Error::from_driver("cuFuncGetParamInfo", result)
          .context("the layout of parameter " + std::to_string(index));
    }
    layout.offsets.push_back(offset);
    layout.sizes.push_back(size);
  }
  return Error(Errc::driver, "cuFuncGetParamInfo: reported more than " +
                                 std::to_string(kMaxParams) + " parameters");
}

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
