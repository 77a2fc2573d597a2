// The decode loop's kernels. Each exists twice with the same name, parameters and effect: CUDA
// source in decode_kernels.cu (embedded as a fatbin when GRAPHCAP_GPU is ON) and a fake body in
// fake_decode_kernels.cc. All are extern "C", grid-stride, on uint32_t with wrap-around
// arithmetic, so the GPU, the fake and the host reference agree bit for bit.
//
//   embed(const u32* token, const u32* state, u32* out, u32 n)   out[i] = 31 * state[i] + token[i]
//   mix(const u32* src, u32* dst, u32 salt, u32 n)
//       dst[i] = rotl(src[i] ^ salt, 5) * 0x9E3779B1 + src[(i + 1) % n]   (reads a neighbour:
//       src and dst must differ, hence the ping-pong buffers)
//   axpy(const u32* x, const u32* y, u32* out, u32 a, u32 n)    out[i] = a * x[i] + y[i]
//   copy(const u32* src, u32* dst, u32 n)                        dst[i] = src[i]
#pragma once

#include <cstdint>

namespace graphcap::fake {
class FakeDriver;
}

namespace decode {

inline constexpr const char* kKernelNames[] = {"embed", "mix", "axpy", "copy"};

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

// Registers the fake bodies of every kernel above on a fake driver.
void register_fake_kernels(graphcap::fake::FakeDriver& driver);

}  // namespace decode
