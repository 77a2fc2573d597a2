// The test kernels. Each exists twice with the same name, parameters and effect: CUDA source in
// test_kernels.cu (built by nvcc in the gpu preset, embedded as a fatbin) and a fake body in
// fake_test_kernels.cc. All are extern "C", grid-stride, and correct for any launch shape.
//
//   empty()                                                     does nothing
//   add_one(const uint32_t* src, uint32_t* dst, uint32_t n)     dst[i] = src[i] + 1
//   fill(uint32_t* dst, uint32_t value, uint32_t n)             dst[i] = value
//   axpy(const uint32_t* x, const uint32_t* y, uint32_t* out, uint32_t a, uint32_t n)
//                                                               out[i] = a * x[i] + y[i]
//   copy(const uint32_t* src, uint32_t* dst, uint32_t n)        dst[i] = src[i]
//   mixed(char c, double d, short s, uint32_t* out, unsigned long long n)
//                                                               out[i] = c + uint32_t(d) + s
//                    (mixed sizes and alignments: offsets 0, 8, 16, 24, 32; the facts file's row)
//   affine(Affine p, uint32_t* out)                             out[i] = p.scale * i + p.offset
//                                                               for i < p.n (a struct by value)
//   countdown(handle h, uint32_t* counter, uint32_t* iterations)
//                                 one thread: --counter[0], ++iterations[0], then sets the WHILE
//                                 condition h to (counter[0] > 0): a loop body that runs
//                                 counter[0] times (the conditional handle is 8 bytes)
//   set_condition(handle h, uint32_t value)                     sets condition h to value
//   pdl_add_one(const uint32_t* src, uint32_t* dst, uint32_t n, uint32_t wait)
//                                 dst[i] = src[i] + 1 for a programmatic dependent launch: lets
//                                 its own dependent begin at once, then (wait != 0) waits for its
//                                 predecessor (cudaGridDependencySynchronize;
//                                 KernelContext::wait_for_predecessor on the fake) before reading
//
// Both sides declare the same layout: the CUDA side by its signature, the fake side by
// register_typed_kernel's parameter types (cuFuncGetParamInfo answers from either).
#pragma once

#include <cstdint>

namespace graphcap::fake {
class FakeDriver;
}

// affine's parameter, passed by value: 24 bytes (4 of them padding after n), 8-byte aligned.
struct Affine {
  std::uint32_t scale;
  std::uint64_t offset;
  std::uint32_t n;
};
static_assert(sizeof(Affine) == 24 && alignof(Affine) == 8);

namespace graphcap::testing {

inline constexpr const char* kTestKernelNames[] = {"empty",  "add_one",   "fill",
                                                   "axpy",   "copy",      "mixed",
                                                   "affine", "countdown", "set_condition",
                                                   "pdl_add_one"};

// Registers every test kernel, with its parameter sizes, on a fake driver.
void register_test_kernels(fake::FakeDriver& driver);

}  // namespace graphcap::testing
