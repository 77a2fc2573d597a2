// Executable: an instantiated CUDA graph (CUgraphExec), destroyed exactly once.
#pragma once

#include <utility>

#include <graphcap/driver/driver_api.h>
#include <graphcap/result.h>

namespace graphcap::capture {

class Executable {
 public:
  Executable() = default;
  Executable(DriverApi& driver, CUgraphExec exec) noexcept : driver_(&driver), exec_(exec) {}
  Executable(Executable&& other) noexcept
      : driver_(other.driver_), exec_(std::exchange(other.exec_, nullptr)) {}
  Executable& operator=(Executable&& other) noexcept {
    if (this != &other) {
      reset();
      driver_ = other.driver_;
      exec_ = std::exchange(other.exec_, nullptr);
    }
    return *this;
  }
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;
  ~Executable() { reset(); }

  explicit operator bool() const noexcept { return exec_ != nullptr; }
  CUgraphExec get() const noexcept { return exec_; }

  // One replay: cuGraphLaunch on `stream`. The hot path: nothing else happens here.
  CUresult launch(CUstream stream) const noexcept { return driver_->cuGraphLaunch(exec_, stream); }

  // Destroy now; the error of cuGraphExecDestroy, if any. Idempotent.
  Result<void> destroy() noexcept;

 private:
  void reset() noexcept;

  DriverApi* driver_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace graphcap::capture
