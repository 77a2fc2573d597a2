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
#pragma once

namespace graphcap::fake {
class FakeDriver;
}

namespace graphcap::testing {

inline constexpr const char* kTestKernelNames[] = {"empty", "add_one", "fill", "axpy", "copy"};

// Registers every test kernel, with its parameter sizes, on a fake driver.
void register_test_kernels(fake::FakeDriver& driver);

}  // namespace graphcap::testing
