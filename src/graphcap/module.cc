#include <graphcap/module.h>

#include <optional>
#include <string>
#include <utility>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/kernel_state.h>
#include <graphcap/detail/module_state.h>
#include <graphcap/handle_access.h>
#include <graphcap/log.h>

namespace graphcap {

const std::string& Kernel::name() const noexcept {
  static const std::string kEmpty;
  return state_ ? state_->name() : kEmpty;
}

CUfunction Kernel::native_handle() const noexcept { return state_ ? state_->function() : nullptr; }

CUmodule Module::native_handle() const noexcept {
  return state_ && !state_->released() ? state_->handle() : nullptr;
}

bool Kernel::has_param_layout() const noexcept { return state_ && state_->layout() != nullptr; }

std::size_t Kernel::param_count() const noexcept {
  const detail::ParamLayout* layout = state_ ? state_->layout() : nullptr;
  return layout ? layout->count() : 0;
}

std::size_t Kernel::param_size(std::size_t index) const noexcept {
  const detail::ParamLayout* layout = state_ ? state_->layout() : nullptr;
  return layout && index < layout->count() ? layout->sizes[index] : 0;
}

std::size_t Kernel::param_offset(std::size_t index) const noexcept {
  const detail::ParamLayout* layout = state_ ? state_->layout() : nullptr;
  return layout && index < layout->count() ? layout->offsets[index] : 0;
}

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
  // The kernel's own signature, for checking launches. A driver that can't report it (the query
  // fails) costs the check, not the kernel: say so once per device and launch unchecked.
  std::optional<detail::ParamLayout> layout;
  if (Result<detail::ParamLayout> queried = detail::query_param_layout(device.driver(), function)) {
    layout = std::move(*queried);
  } else if (device.first_unchecked_kernel()) {
    log(LogLevel::warn, quoted + ": the driver can't report its parameter layout (" +
                            queried.error().message() +
                            "); launches of it, and of any other kernel on this device whose "
                            "layout is unknown, go unchecked (this is said once per device)");
  }
  return HandleAccess::kernel(
      std::make_shared<detail::KernelState>(state_, function, key, std::move(layout)));
}

}  // namespace graphcap
