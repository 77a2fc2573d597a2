#include <graphcap/module.h>

#include <string>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/kernel_state.h>
#include <graphcap/detail/module_state.h>
#include <graphcap/handle_access.h>

namespace graphcap {

const std::string& Kernel::name() const noexcept {
  static const std::string kEmpty;
  return state_ ? state_->name() : kEmpty;
}

CUfunction Kernel::function() const noexcept { return state_ ? state_->function() : nullptr; }

Result<Kernel> Module::kernel(std::string_view name) const {
  if (!state_) return Error(Errc::invalid_argument, "kernel: an empty Module");
  const std::string quoted = "kernel \"" + std::string(name) + "\"";
  if (name.empty() || name.find('\0') != std::string_view::npos) {
    return Error(Errc::invalid_argument, quoted + ": not a valid kernel name");
  }
  detail::DeviceCore& device = state_->device();
  if (!device.is_open() || state_->released()) {
    return Error(Errc::graph_state, quoted + ": the module's device is closed");
  }
  if (Result<void> bound = device.bind_thread(); !bound) return bound.error();
  CUfunction function = nullptr;
  const std::string key(name);
  const CUresult result = device.driver().cuModuleGetFunction(&function, state_->handle(), key.c_str());
  if (result == CUDA_ERROR_NOT_FOUND) {
    return Error(Errc::invalid_argument,
                 quoted + ": not in the module (" +
                     Error::from_driver("cuModuleGetFunction", result).message() + ")",
                 result);
  }
  if (result != CUDA_SUCCESS) {
    return Error::from_driver("cuModuleGetFunction", result).context(quoted);
  }
  return HandleAccess::kernel(std::make_shared<detail::KernelState>(state_, function, key));
}

}  // namespace graphcap
