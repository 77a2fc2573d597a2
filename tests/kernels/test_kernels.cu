// The test kernels' CUDA source (see test_kernels.h for what each does; fake_test_kernels.cc holds
// the same kernels as fake bodies). Built by nvcc into a fatbin that graphcap_tests_cuda embeds.
// extern "C" keeps the names cuModuleGetFunction looks up unmangled; every kernel is a grid-stride
// loop, so any launch shape covers all n elements.
#include <cstdint>

#include "test_kernels.h"

namespace {

// The first element this thread handles, and the distance to its next one. 64-bit, so the loop
// cannot wrap for n close to 2^32.
__device__ std::uint64_t first_index() {
  return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::uint64_t grid_stride() {
  return static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
}

}  // namespace

extern "C" __global__ void empty() {}

extern "C" __global__ void add_one(const std::uint32_t* src, std::uint32_t* dst, std::uint32_t n) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) dst[i] = src[i] + 1u;
}

extern "C" __global__ void fill(std::uint32_t* dst, std::uint32_t value, std::uint32_t n) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) dst[i] = value;
}

extern "C" __global__ void axpy(const std::uint32_t* x, const std::uint32_t* y, std::uint32_t* out,
                                std::uint32_t a, std::uint32_t n) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = a * x[i] + y[i];
}

extern "C" __global__ void copy(const std::uint32_t* src, std::uint32_t* dst, std::uint32_t n) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) dst[i] = src[i];
}

extern "C" __global__ void mixed(char c, double d, short s, std::uint32_t* out,
                                 unsigned long long n) {
  const std::uint32_t value = static_cast<std::uint32_t>(c) + static_cast<std::uint32_t>(d) +
                              static_cast<std::uint32_t>(s);
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = value;
}

extern "C" __global__ void affine(Affine p, std::uint32_t* out) {
  for (std::uint64_t i = first_index(); i < p.n; i += grid_stride()) {
    out[i] = p.scale * static_cast<std::uint32_t>(i) + static_cast<std::uint32_t>(p.offset);
  }
}

// Conditional nodes: cudaGraphSetConditional is a device-runtime builtin; it needs no relocatable
// device code (docs/cuda-driver-facts.md, "Conditional nodes").
extern "C" __global__ void countdown(cudaGraphConditionalHandle h, std::uint32_t* counter,
                                     std::uint32_t* iterations) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const std::uint32_t left = --counter[0];
  ++iterations[0];
  cudaGraphSetConditional(h, left > 0 ? 1u : 0u);
}

extern "C" __global__ void set_condition(cudaGraphConditionalHandle h, std::uint32_t value) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  cudaGraphSetConditional(h, value);
}

// Programmatic dependent launch (sm_90 and later; on older architectures it is a plain add_one):
// the trigger lets the next programmatic launch begin at once; the wait makes this kernel see what
// its predecessor wrote (docs/cuda-driver-facts.md, P03).
extern "C" __global__ void pdl_add_one(const std::uint32_t* src, std::uint32_t* dst,
                                       std::uint32_t n, std::uint32_t wait) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
  if (wait != 0) cudaGridDependencySynchronize();
#else
  (void)wait;
#endif
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) dst[i] = src[i] + 1u;
}
