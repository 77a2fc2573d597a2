// The benchmark kernels, written once in bench_kernels.cu with GRAPHCAP_KERNEL: nvcc builds them
// for the GPU (embedded as a fatbin when GRAPHCAP_GPU is ON), the host compiler for the fake
// (register_compiled_kernels registers them there).
//
//   empty()    does nothing; the benchmarks measure launch and replay costs, not kernels
//   values(uint32_t a, uint64_t b, uint32_t c)
//              does nothing either; its three scalar parameters (4, 8, 4 bytes at 0, 8, 16) give
//              Device::launch's argument check against the kernel's signature something to compare
//   sink(v)    takes one 32-bit value and does nothing with it (the per-replay parameter
//              benchmarks set it)
//   countdown(handle h, uint32_t* counter, uint32_t* go)
//              one thread: --counter[0]; go[0] = counter[0] > 0; and, when h is not 0, sets the
//              WHILE condition h to go[0] (the device-side loop benchmarks' stop decision)
//   chain(const uint32_t* prev, uint32_t* mine, uint32_t wait)
//              one link of a programmatic chain: lets the next programmatic launch
//              begin at once (cudaTriggerProgrammaticLaunchCompletion), waits for its predecessor
//              when wait is not 0 (cudaGridDependencySynchronize; KernelContext::
//              wait_for_predecessor on the fake), then thread 0 of block b writes
//              mine[b] = prev[b] + 1 (128 threads a block, at most 256 blocks)
//   set_condition(handle h, uint32_t value)   one thread sets the conditional handle h to value
#pragma once

#include <span>
#include <string_view>

namespace graphcap::bench {

inline constexpr std::string_view kEmptyKernel = "empty";
inline constexpr std::string_view kValuesKernel = "values";
inline constexpr std::string_view kSinkKernel = "sink";
inline constexpr std::string_view kCountdownKernel = "countdown";
inline constexpr std::string_view kChainKernel = "chain";
inline constexpr std::string_view kSetConditionKernel = "set_condition";

}  // namespace graphcap::bench
