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
constexpr std::size_t kPointer = sizeof(std::uint64_t);  // a CUdeviceptr parameter
constexpr std::size_t kU32 = sizeof(std::uint32_t);

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
  driver.register_kernel("empty", {}, [](KernelContext&) {});
  driver.register_kernel("add_one", {kPointer, kPointer, kU32}, add_one);
  driver.register_kernel("fill", {kPointer, kU32, kU32}, fill);
  driver.register_kernel("axpy", {kPointer, kPointer, kPointer, kU32, kU32}, axpy);
  driver.register_kernel("copy", {kPointer, kPointer, kU32}, copy);
}

}  // namespace graphcap::testing
