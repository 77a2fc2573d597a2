// How cuLaunchKernel's parameters are read for a fake kernel: from kernelParams (8 bytes each up
// to a nullptr for a kernel without declared sizes; exactly the declared sizes otherwise) or from
// the `extra` buffer (declared sizes, each at its natural alignment up to 8).
#pragma once

#include <cstddef>
#include <vector>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/fake/internal/work.h>

namespace graphcap::fake::internal {

// cuda.h's CU_LAUNCH_PARAM_* values (macros there, so not mirrored by cuda_types.h).
inline constexpr std::uintptr_t kLaunchParamEnd = 0x0;
inline constexpr std::uintptr_t kLaunchParamBufferPointer = 0x1;
inline constexpr std::uintptr_t kLaunchParamBufferSize = 0x2;

// CUDA_SUCCESS, or CUDA_ERROR_INVALID_VALUE for parameters that can't be read.
CUresult copy_launch_params(const KernelDef& kernel, void** params, void** extra,
                            std::vector<std::vector<std::byte>>* out);

}  // namespace graphcap::fake::internal
