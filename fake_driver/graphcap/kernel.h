// <graphcap/kernel.h>: a kernel written once, for both drivers.
//
//   #include <graphcap/kernel.h>
//   using graphcap::kernel::ptr;
//
//   GRAPHCAP_KERNEL(scale, (ptr<const float> x, ptr<float> y, float a, unsigned n)) {
//     const unsigned i = graphcap::kernel::block_idx().x * graphcap::kernel::block_dim().x +
//                        graphcap::kernel::thread_idx().x;
//     if (i < n) y[i] = a * x[i];
//   }
//
// Compiled by nvcc it is `extern "C" __global__ void scale(const float* x, float* y, float a,
// unsigned n)`: ptr<T> is T*, the index functions are CUDA's built-ins, so the same source goes
// into a fatbin (graphcap_embed_kernels) and runs on the GPU. Compiled by the host compiler it is
// a fake kernel (graphcap/fake/compiled_kernel.h): its parameter layout comes from the signature
// (a ptr<T> is an 8-byte device pointer, a value is passed by value at its alignof, as CUDA lays
// them out), its body runs once per thread of the launch's grid, and every access through a
// ptr<T> is checked against the Buffer (or allocation) the parameter points into: an access
// outside it is a violation, which under FakeDriverOptions::strict fails the launch's stream as
// the GPU's fault would. graphcap::fake::register_compiled_kernels(driver) registers every
// GRAPHCAP_KERNEL linked into the program.
//
// Pointer parameters are ptr<T>, not T*: the fake can check a ptr<T>'s every access, and a raw
// pointer's none, so a raw pointer parameter does not compile in the host build. Inside the body,
// `&p[i]` is a plain T* (a device pointer on the GPU, host memory on the fake): what it reaches
// is not checked further.
//
// What a per-thread loop cannot run does not compile in the host build: __syncthreads() and its
// variants, __shared__ memory and warp intrinsics (__shfl_sync, __ballot_sync, ...): a kernel
// that needs block-level cooperation gets a hand-written fake body instead (register_typed_kernel
// under `#ifndef __CUDACC__`; docs/testing-on-the-fake.md shows how).
#pragma once

#include <cstdint>
#include <type_traits>

#include <graphcap/driver/cuda_types.h>

#if defined(__CUDACC__)

// A function the kernels call (a __device__ function on the GPU, a plain one on the fake).
#define GRAPHCAP_DEVICE __device__
// A kernel: `extern "C"` keeps the name cuModuleGetFunction looks up unmangled.
#define GRAPHCAP_KERNEL(name, params) extern "C" __global__ void name params

namespace graphcap::kernel {

struct Index3 {
  unsigned x, y, z;
};

__device__ inline Index3 thread_idx() { return {threadIdx.x, threadIdx.y, threadIdx.z}; }
__device__ inline Index3 block_idx() { return {blockIdx.x, blockIdx.y, blockIdx.z}; }
__device__ inline Index3 block_dim() { return {blockDim.x, blockDim.y, blockDim.z}; }
__device__ inline Index3 grid_dim() { return {gridDim.x, gridDim.y, gridDim.z}; }

template <class T>
using ptr = T*;

// atomicAdd: returns the old value.
template <class T>
__device__ inline T atomic_add(T* address, std::type_identity_t<T> value) {
  return atomicAdd(address, value);
}

// cudaGraphSetConditional: the conditional handle a kernel of a graph sets (Arg::condition).
__device__ inline void set_condition(CUgraphConditionalHandle handle, unsigned value) {
  cudaGraphSetConditional(handle, value);
}

// Programmatic dependent launch (LaunchOptions::programmatic; the device side exists from sm_90
// on, and on older architectures both are nothing, as the launch is then an ordinary one).
// wait_for_predecessor: cudaGridDependencySynchronize, after which what the kernel predecessor
// wrote may be read (KernelContext::wait_for_predecessor on the fake, which checks that nothing
// the predecessor may write is touched before it). trigger_dependents:
// cudaTriggerProgrammaticLaunchCompletion, letting the next programmatic launch begin (nothing on
// the fake, whose device runs one kernel after another).
__device__ inline void wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}
__device__ inline void trigger_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

}  // namespace graphcap::kernel

#else  // the host compiler: a fake kernel

#include <graphcap/fake/compiled_kernel.h>

#define GRAPHCAP_DEVICE
// A function named as the kernel's body (called once per thread), and its registration: a
// static CompiledKernel in the program's list, which register_compiled_kernels walks.
#define GRAPHCAP_KERNEL(name, params)                                                   \
  static void graphcap_kernel_body_##name params;                                       \
  static ::graphcap::fake::CompiledKernel graphcap_compiled_kernel_##name{              \
      #name, #params, &::graphcap::fake::detail::register_compiled<&graphcap_kernel_body_##name>}; \
  [[maybe_unused]] static const bool graphcap_kernel_listed_##name =                   \
      ::graphcap::fake::detail::list_compiled_kernel(graphcap_compiled_kernel_##name);  \
  static void graphcap_kernel_body_##name params

// CUDA's block-level and warp-level operations: a kernel using them needs a hand-written fake
// body. Each fails to compile with a message saying so.
#ifndef __shared__
#define __shared__                                                                          \
  ;                                                                                         \
  static_assert(false,                                                                      \
                "GRAPHCAP_KERNEL: __shared__ memory is shared by a block's threads, which the " \
                "fake runs one after another: write this kernel's fake body by hand "       \
                "(register_typed_kernel under #ifndef __CUDACC__; docs/testing-on-the-fake.md)");
#endif

namespace graphcap::kernel::detail {
template <class...>
inline constexpr bool kNotOnTheFake = false;
}  // namespace graphcap::kernel::detail

#define GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(name, what)                                          \
  template <class... Args>                                                                   \
  void name(Args&&...) {                                                                     \
    static_assert(::graphcap::kernel::detail::kNotOnTheFake<Args...>,                        \
                  "GRAPHCAP_KERNEL: " #name " " what ", which the fake's per-thread host loop " \
                  "cannot run: write this kernel's fake body by hand (register_typed_kernel "   \
                  "under #ifndef __CUDACC__; docs/testing-on-the-fake.md)");                   \
  }

GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__syncthreads, "waits for every thread of the block")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__syncthreads_count, "waits for every thread of the block")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__syncthreads_and, "waits for every thread of the block")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__syncthreads_or, "waits for every thread of the block")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__syncwarp, "waits for the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__shfl_sync, "exchanges values between the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__shfl_up_sync, "exchanges values between the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__shfl_down_sync,
                                "exchanges values between the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__shfl_xor_sync, "exchanges values between the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__ballot_sync, "combines values of the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__any_sync, "combines values of the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__all_sync, "combines values of the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__match_any_sync, "combines values of the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__match_all_sync, "combines values of the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__reduce_add_sync, "combines values of the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__reduce_min_sync, "combines values of the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__reduce_max_sync, "combines values of the threads of a warp")
GRAPHCAP_KERNEL_NOT_ON_THE_FAKE(__activemask, "asks which threads of a warp run together")

#undef GRAPHCAP_KERNEL_NOT_ON_THE_FAKE

#endif

namespace graphcap::kernel {

// A grid-stride loop over n elements, which any launch shape covers:
//   for (std::uint64_t i = first_index(); i < n; i += grid_stride()) ...
// 64-bit, so the loop cannot wrap for n close to 2^32.
GRAPHCAP_DEVICE inline std::uint64_t first_index() {
  return static_cast<std::uint64_t>(block_idx().x) * block_dim().x + thread_idx().x;
}
GRAPHCAP_DEVICE inline std::uint64_t grid_stride() {
  return static_cast<std::uint64_t>(grid_dim().x) * block_dim().x;
}

}  // namespace graphcap::kernel
