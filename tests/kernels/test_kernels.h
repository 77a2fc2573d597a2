// The test kernels, written once in test_kernels.cu with GRAPHCAP_KERNEL (<graphcap/kernel.h>):
// nvcc builds them for the GPU (gpu preset, embedded as a fatbin), the host compiler for the
// fake, so both drivers run the same source. All are extern "C" on the GPU, grid-stride, and
// correct for any launch shape.
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
//   count_threads(uint32_t* counter)         every thread of the grid adds 1 (an atomic add)
//   pdl_add_one(const uint32_t* src, uint32_t* dst, uint32_t n, uint32_t wait)
//                                 dst[i] = src[i] + 1 for a programmatic dependent launch: lets
//                                 its own dependent begin at once, then (wait != 0) waits for its
//                                 predecessor (cudaGridDependencySynchronize;
//                                 KernelContext::wait_for_predecessor on the fake) before reading
//
// (A pointer parameter is graphcap::kernel::ptr<T> in the source: T* under nvcc, a checked
// device pointer on the fake.)
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

inline constexpr const char* kTestKernelNames[] = {
    "empty",     "add_one",       "fill",          "axpy",       "copy",       "mixed",
    "affine",    "countdown",     "set_condition", "count_threads", "pdl_add_one"};

// Registers every test kernel on a fake driver (register_compiled_kernels: the kernels of
// test_kernels.cu, linked whole from their static library).
void register_test_kernels(fake::FakeDriver& driver);

}  // namespace graphcap::testing
