// Module: a loaded image (cubin, fatbin or PTX; a FakeDriver image on the fake). Kernel: one of its
// functions. Both are shared handles: a Kernel keeps its Module loaded, and so does every graph
// that recorded a launch of it, for as long as the graph lives.
#pragma once

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
  CUfunction function() const noexcept;

 private:
  friend struct HandleAccess;
  explicit Kernel(std::shared_ptr<detail::KernelState> state) noexcept : state_(std::move(state)) {}

  std::shared_ptr<detail::KernelState> state_;
};

class Module {
 public:
  Module() = default;

  explicit operator bool() const noexcept { return state_ != nullptr; }
  // The named function; Errc::invalid_argument with CUDA_ERROR_NOT_FOUND when it isn't there.
  Result<Kernel> kernel(std::string_view name) const;

 private:
  friend struct HandleAccess;
  explicit Module(std::shared_ptr<detail::ModuleState> state) noexcept : state_(std::move(state)) {}

  std::shared_ptr<detail::ModuleState> state_;
};

}  // namespace graphcap
