// Module: a loaded image (cubin, fatbin or PTX; a FakeDriver image on the fake). Kernel: one of its
// functions. Both are shared handles: a Kernel keeps its Module loaded.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/result.h>

namespace graphcap {

namespace detail {
class ModuleState;
}

class Kernel {
 public:
  Kernel() = default;
  Kernel(std::shared_ptr<detail::ModuleState> module, CUfunction function, std::string name)
      : module_(std::move(module)), function_(function), name_(std::move(name)) {}

  explicit operator bool() const noexcept { return function_ != nullptr; }
  const std::string& name() const noexcept { return name_; }
  CUfunction function() const noexcept { return function_; }
  const std::shared_ptr<detail::ModuleState>& module() const noexcept { return module_; }

 private:
  std::shared_ptr<detail::ModuleState> module_;
  CUfunction function_ = nullptr;
  std::string name_;
};

class Module {
 public:
  Module() = default;
  explicit Module(std::shared_ptr<detail::ModuleState> state) : state_(std::move(state)) {}

  explicit operator bool() const noexcept { return state_ != nullptr; }
  // The named function; Errc::invalid_argument with CUDA_ERROR_NOT_FOUND when it isn't there.
  Result<Kernel> kernel(std::string_view name) const;

  const std::shared_ptr<detail::ModuleState>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::ModuleState> state_;
};

}  // namespace graphcap
