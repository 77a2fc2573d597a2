// Module: a loaded image (cubin, fatbin or PTX; a FakeDriver image on the fake). Kernel: one of its
// functions. Both are shared handles: a Kernel keeps its Module loaded, and so does every graph
// that recorded a launch of it, for as long as the graph lives.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/result.h>

namespace graphcap {

namespace detail {
class ModuleState;
class KernelState;
}
struct HandleAccess;

class Kernel {
 public:
  Kernel() = default;  // empty: launching it is Errc::invalid_argument

  explicit operator bool() const noexcept { return state_ != nullptr; }
  // The function's name; empty for an empty Kernel.
  const std::string& name() const noexcept;
  // The driver's function, for interop; nullptr for an empty Kernel.
  CUfunction native_handle() const noexcept;
  // The old name of native_handle() (every wrapper's driver handle is native_handle()).
  [[deprecated("use native_handle()")]] CUfunction function() const noexcept {
    return native_handle();
  }

  // The kernel's own signature, as the driver reported it when Module::kernel looked the kernel
  // up (cuFuncGetParamInfo). Device::launch checks every launch's arguments against it. False
  // where the driver could not report it (then launches go unchecked, as a warning said once)
  // and for an empty Kernel; the three below are then 0.
  bool has_param_layout() const noexcept;
  // The number of parameters the kernel takes.
  std::size_t param_count() const noexcept;
  // Parameter `index`'s size in bytes (8 for a pointer); 0 past the count.
  std::size_t param_size(std::size_t index) const noexcept;
  // Parameter `index`'s offset in the kernel's parameter buffer (CUDA's natural alignment);
  // 0 past the count.
  std::size_t param_offset(std::size_t index) const noexcept;

 private:
  friend struct HandleAccess;
  explicit Kernel(std::shared_ptr<detail::KernelState> state) noexcept : state_(std::move(state)) {}

  std::shared_ptr<detail::KernelState> state_;
};

class Module {
 public:
  Module() = default;

  explicit operator bool() const noexcept { return state_ != nullptr; }
  // The driver's module, for interop; nullptr for an empty Module or one whose device closed.
  // graphcap still owns it (it is unloaded when the last Module and Kernel of it go).
  CUmodule native_handle() const noexcept;
  // The named function; Errc::invalid_argument with CUDA_ERROR_NOT_FOUND when it isn't there.
  // Reads the function's parameter layout once (see Kernel::param_count); where the driver can't
  // report it, warns once per device and returns a Kernel whose launches go unchecked.
  Result<Kernel> kernel(std::string_view name) const;

 private:
  friend struct HandleAccess;
  explicit Module(std::shared_ptr<detail::ModuleState> state) noexcept : state_(std::move(state)) {}

  std::shared_ptr<detail::ModuleState> state_;
};

}  // namespace graphcap
