// The decode loop's kernels, written once in decode_kernels.cu with GRAPHCAP_KERNEL: nvcc builds
// them for the GPU (embedded as a fatbin when GRAPHCAP_GPU is ON), the host compiler for the fake.
// All are extern "C" on the GPU, grid-stride, on uint32_t with wrap-around arithmetic, so the
// GPU, the fake and the host reference agree bit for bit.
//
//   embed(const u32* token, const u32* state, u32* out, u32 n)   out[i] = 31 * state[i] + token[i]
//   mix(const u32* src, u32* dst, u32 salt, u32 n)
//       dst[i] = rotl(src[i] ^ salt, 5) * 0x9E3779B1 + src[(i + 1) % n]   (reads a neighbour:
//       src and dst must differ, hence the ping-pong buffers)
//   axpy(const u32* x, const u32* y, u32* out, u32 a, u32 n)    out[i] = a * x[i] + y[i]
//   copy(const u32* src, u32* dst, u32 n)                        dst[i] = src[i]
//   next_token(const u32* state, u32* token, u32* left, u32* go, handle h, u32 n)
//       token[i] = next_token_one(state[i], state[0]); one thread: --left[0], go[0] = the step
//       loop goes on (stop_after(state[0], left[0]) is false), and when h is not 0 it sets the
//       WHILE condition h to go[0]: the decode loop's device-side stop (--until-device-stop)
//   decide(const u32* state, u32* taken, handle h)
//       one thread: v = refine_after(state[0]); taken[0] += v; sets the IF condition h to v: the
//       step's optional refinement, decided on the device (--skip-by-device)
#pragma once

#include <cstdint>

// The stop rule is shared by the CUDA kernel, the fake body and the host reference.
#ifdef __CUDACC__
#define DECODE_HOST_DEVICE __host__ __device__
#else
#define DECODE_HOST_DEVICE
#endif

namespace decode {

inline constexpr const char* kKernelNames[] = {"embed", "mix",        "axpy",
                                               "copy",  "next_token", "decide"};

// The host versions, for the reference result (the same arithmetic as the kernels).
inline std::uint32_t embed_one(std::uint32_t token, std::uint32_t state) {
  return 31u * state + token;
}
inline std::uint32_t mix_one(std::uint32_t self, std::uint32_t neighbour, std::uint32_t salt) {
  const std::uint32_t x = self ^ salt;
  return ((x << 5) | (x >> 27)) * 0x9E3779B1u + neighbour;
}
inline std::uint32_t axpy_one(std::uint32_t a, std::uint32_t x, std::uint32_t y) {
  return a * x + y;
}

// The next token from the new state, and whether decoding stops: the "end of sequence" token
// (the low 8 bits of state[0] are 0xA5) or no steps left.
DECODE_HOST_DEVICE inline std::uint32_t next_token_one(std::uint32_t state, std::uint32_t first) {
  return state * 0x01000193u + first;
}
DECODE_HOST_DEVICE inline bool stop_after(std::uint32_t first, std::uint32_t left) {
  return (first & 0xFFu) == 0xA5u || left == 0;
}

// Whether a step's state asks for one more refining layer (--skip-by-device): bit 3 of
// state[0], so about half the steps skip it.
DECODE_HOST_DEVICE inline bool refine_after(std::uint32_t first) { return ((first >> 3) & 1u) != 0; }

}  // namespace decode
