// The fake bodies of the test kernels (tests/kernels/test_kernels.h). Each has the effect of its
// CUDA twin in test_kernels.cu for any launch shape: the grid-stride loop there covers every
// element once, so here one loop does.
#include <cstddef>
#include <cstdint>

#include <graphcap/fake/fake_driver.h>

#include "kernels/test_kernels.h"

namespace graphcap::testing {
namespace {

using fake::KernelContext;
using std::uint32_t;

void add_one(KernelContext& k) {
  const auto n = k.value<std::uint32_t>(2);
  auto src = k.buffer<const std::uint32_t>(0, n);
  auto dst = k.buffer<std::uint32_t>(1, n);
  for (std::size_t i = 0; i < dst.size() && i < src.size(); ++i) dst[i] = src[i] + 1;
}

void fill(KernelContext& k) {
  const auto value = k.value<std::uint32_t>(1);
  const auto n = k.value<std::uint32_t>(2);
  for (std::uint32_t& element : k.buffer<std::uint32_t>(0, n)) element = value;
}

void axpy(KernelContext& k) {
  const auto a = k.value<std::uint32_t>(3);
  const auto n = k.value<std::uint32_t>(4);
  auto x = k.buffer<const std::uint32_t>(0, n);
  auto y = k.buffer<const std::uint32_t>(1, n);
  auto out = k.buffer<std::uint32_t>(2, n);
  for (std::size_t i = 0; i < out.size() && i < x.size() && i < y.size(); ++i) {
    out[i] = a * x[i] + y[i];
  }
}

void copy(KernelContext& k) {
  const auto n = k.value<std::uint32_t>(2);
  auto src = k.buffer<const std::uint32_t>(0, n);
  auto dst = k.buffer<std::uint32_t>(1, n);
  for (std::size_t i = 0; i < dst.size() && i < src.size(); ++i) dst[i] = src[i];
}

}  // namespace

void register_test_kernels(fake::FakeDriver& driver) {
  // The parameter lists of test_kernels.cu, a device pointer as CUdeviceptr.
  driver.register_typed_kernel<>("empty", [](KernelContext&) {});
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, uint32_t>("add_one", add_one);
  driver.register_typed_kernel<CUdeviceptr, uint32_t, uint32_t>("fill", fill);
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, CUdeviceptr, uint32_t, uint32_t>("axpy",
                                                                                        axpy);
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, uint32_t>("copy", copy);
}

}  // namespace graphcap::testing
