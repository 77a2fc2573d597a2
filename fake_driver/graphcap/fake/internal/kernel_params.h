// A fake kernel's parameter layout, and how cuLaunchKernel's parameters are read by it: exactly
// the declared parameters, from kernelParams (one pointer per parameter, no terminator, as on
// CUDA) or from the `extra` buffer (each parameter at its offset). A kernel registered without a
// layout is never read at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/fake/internal/work.h>

namespace graphcap::fake::internal {

// cuda.h's CU_LAUNCH_PARAM_* values (macros there, so not mirrored by cuda_types.h).
inline constexpr std::uintptr_t kLaunchParamEnd = 0x0;
inline constexpr std::uintptr_t kLaunchParamBufferPointer = 0x1;
inline constexpr std::uintptr_t kLaunchParamBufferSize = 0x2;

// The natural alignment of a parameter of `size` bytes: its largest power-of-two divisor, <= 8.
std::size_t natural_alignment(std::size_t size);

// CUDA's layout: each parameter at the next multiple of its alignment after the previous one.
// `alignments` has one entry per size. Sets def->declared, def->params and def->param_bytes.
void lay_out_params(std::span<const std::size_t> sizes, std::span<const std::size_t> alignments,
                    KernelDef* def);

// What a launch of a kernel registered without a layout is refused with, as a sentence.
std::string undeclared_layout_message(const KernelDef& kernel);

// Fills *buffer with the launch's parameter buffer (kernel.param_bytes, padding zero).
// CUDA_SUCCESS, or CUDA_ERROR_INVALID_VALUE for parameters that can't be read: an undeclared
// layout, both or (with parameters declared) neither of params and extra, a NULL entry among the
// declared params, a malformed `extra` or a buffer smaller than the layout.
CUresult copy_launch_params(const KernelDef& kernel, void** params, void** extra,
                            std::vector<std::byte>* buffer);

}  // namespace graphcap::fake::internal
