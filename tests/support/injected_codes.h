// The error an injected fault returns, per entry point: one the real entry point can return (the
// fault sweep's choice, tests/reliability/fault_sweep_test.cc, whose own table holds the same
// codes; it can switch to this one). A fault test that fails an entry point missing here picks a
// code deliberately first.
#pragma once

#include <map>
#include <optional>
#include <string_view>

#include <graphcap/driver/cuda_types.h>

namespace graphcap::testing {

inline std::optional<CUresult> injected_code(std::string_view entry) {
  static const std::map<std::string_view, CUresult> codes = {
      {"cuStreamSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS},
      {"cuStreamBeginCapture", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED},
      {"cuStreamEndCapture", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED},
      {"cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY},
      {"cuEventDestroy", CUDA_ERROR_INVALID_HANDLE},
      {"cuEventRecord", CUDA_ERROR_INVALID_HANDLE},
      {"cuEventQuery", CUDA_ERROR_ILLEGAL_ADDRESS},
      {"cuEventSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS},
      {"cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY},
      {"cuMemAllocHost", CUDA_ERROR_OUT_OF_MEMORY},
      {"cuMemFree", CUDA_ERROR_INVALID_VALUE},
      {"cuMemFreeHost", CUDA_ERROR_INVALID_VALUE},
      {"cuMemcpyHtoDAsync", CUDA_ERROR_INVALID_VALUE},
      {"cuMemcpyDtoHAsync", CUDA_ERROR_ILLEGAL_ADDRESS},
      {"cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES},
      {"cuGraphGetNodes", CUDA_ERROR_INVALID_VALUE},
      {"cuGraphNodeGetType", CUDA_ERROR_INVALID_VALUE},
      {"cuGraphInstantiateWithFlags", CUDA_ERROR_INVALID_VALUE},
      {"cuGraphUpload", CUDA_ERROR_OUT_OF_MEMORY},
      {"cuGraphLaunch", CUDA_ERROR_INVALID_VALUE},
      {"cuGraphDestroy", CUDA_ERROR_INVALID_VALUE},
      {"cuGraphExecDestroy", CUDA_ERROR_INVALID_VALUE},
      {"cuGraphExecUpdate", CUDA_ERROR_INVALID_VALUE},
      {"cuStreamGetCaptureInfo", CUDA_ERROR_INVALID_VALUE},
      {"cuGraphExecKernelNodeSetParams", CUDA_ERROR_INVALID_VALUE},
      {"cuMemcpyDtoDAsync", CUDA_ERROR_INVALID_VALUE},
      {"cuMemsetD8Async", CUDA_ERROR_INVALID_VALUE},
      {"cuMemsetD32Async", CUDA_ERROR_INVALID_VALUE},
      {"cuStreamWaitEvent", CUDA_ERROR_INVALID_HANDLE},
  };
  auto it = codes.find(entry);
  if (it == codes.end()) return std::nullopt;
  return it->second;
}

}  // namespace graphcap::testing
