#include <graphcap/capture/executable.h>

#include <graphcap/log.h>

namespace graphcap::capture {

Result<void> Executable::destroy() noexcept {
  if (exec_ == nullptr) return {};
  CUgraphExec exec = std::exchange(exec_, nullptr);
  if (CUresult result = driver_->cuGraphExecDestroy(exec); result != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphExecDestroy", result);
  }
  return {};
}

void Executable::reset() noexcept {
  if (Result<void> destroyed = destroy(); !destroyed) {
    log(LogLevel::warn, destroyed.error().message());
  }
}

}  // namespace graphcap::capture
