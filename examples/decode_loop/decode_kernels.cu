// The decode loop's kernels (decode_kernels.h says what each does; fake_decode_kernels.cc holds
// the same as fake bodies). Built by nvcc into the fatbin decode_loop embeds when GRAPHCAP_GPU is
// ON. Grid-stride loops: any launch shape covers all n elements.
#include <cstdint>

#include "decode_kernels.h"

namespace {

__device__ std::uint64_t first_index() {
  return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::uint64_t grid_stride() {
  return static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
}

}  // namespace

extern "C" __global__ void embed(const std::uint32_t* token, const std::uint32_t* state,
                                 std::uint32_t* out, std::uint32_t n) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) {
    out[i] = 31u * state[i] + token[i];
  }
}

extern "C" __global__ void mix(const std::uint32_t* src, std::uint32_t* dst, std::uint32_t salt,
                               std::uint32_t n) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) {
    const std::uint32_t x = src[i] ^ salt;
    dst[i] = ((x << 5) | (x >> 27)) * 0x9E3779B1u + src[(i + 1) % n];
  }
}

extern "C" __global__ void axpy(const std::uint32_t* x, const std::uint32_t* y, std::uint32_t* out,
                                std::uint32_t a, std::uint32_t n) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = a * x[i] + y[i];
}

extern "C" __global__ void copy(const std::uint32_t* src, std::uint32_t* dst, std::uint32_t n) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) dst[i] = src[i];
}

extern "C" __global__ void next_token(const std::uint32_t* state, std::uint32_t* token,
                                      std::uint32_t* left, std::uint32_t* go,
                                      cudaGraphConditionalHandle h, std::uint32_t n) {
  const std::uint32_t first = state[0];
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) {
    token[i] = decode::next_token_one(state[i], first);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const std::uint32_t remaining = --left[0];
    go[0] = decode::stop_after(first, remaining) ? 0u : 1u;
    if (h != 0) cudaGraphSetConditional(h, go[0]);
  }
}

extern "C" __global__ void decide(const std::uint32_t* state, std::uint32_t* taken,
                                  cudaGraphConditionalHandle h) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const std::uint32_t refine = decode::refine_after(state[0]) ? 1u : 0u;
  taken[0] += refine;
  cudaGraphSetConditional(h, refine);
}
