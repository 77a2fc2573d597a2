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

void mixed(KernelContext& k) {
  const auto c = k.value<char>(0);
  const auto d = k.value<double>(1);
  const auto s = k.value<short>(2);
  const auto n = k.value<unsigned long long>(4);
  const std::uint32_t value = static_cast<std::uint32_t>(c) + static_cast<std::uint32_t>(d) +
                              static_cast<std::uint32_t>(s);
  for (std::uint32_t& element : k.buffer<std::uint32_t>(3, n)) element = value;
}

void affine(KernelContext& k) {
  const auto p = k.value<Affine>(0);
  auto out = k.buffer<std::uint32_t>(1, p.n);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = p.scale * static_cast<std::uint32_t>(i) + static_cast<std::uint32_t>(p.offset);
  }
}

void countdown(KernelContext& k) {
  auto counter = k.buffer<std::uint32_t>(1, 1);
  auto iterations = k.buffer<std::uint32_t>(2, 1);
  if (counter.empty() || iterations.empty()) return;
  const std::uint32_t left = --counter[0];
  ++iterations[0];
  k.set_condition(0, left > 0 ? 1u : 0u);
}

void set_condition(KernelContext& k) { k.set_condition(0, k.value<std::uint32_t>(1)); }

void pdl_add_one(KernelContext& k) {
  if (k.value<std::uint32_t>(3) != 0) k.wait_for_predecessor();
  const auto n = k.value<std::uint32_t>(2);
  auto src = k.buffer<const std::uint32_t>(0, n);
  auto dst = k.buffer<std::uint32_t>(1, n);
  for (std::size_t i = 0; i < dst.size() && i < src.size(); ++i) dst[i] = src[i] + 1;
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
  driver.register_typed_kernel<char, double, short, CUdeviceptr, unsigned long long>("mixed",
                                                                                   mixed);
  driver.register_typed_kernel<Affine, CUdeviceptr>("affine", affine);
  driver.register_typed_kernel<CUgraphConditionalHandle, CUdeviceptr, CUdeviceptr>("countdown",
                                                                                  countdown);
  driver.register_typed_kernel<CUgraphConditionalHandle, uint32_t>("set_condition", set_condition);
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, uint32_t, uint32_t>("pdl_add_one",
                                                                            pdl_add_one);
}

}  // namespace graphcap::testing
