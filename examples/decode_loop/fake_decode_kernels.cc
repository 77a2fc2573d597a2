// The fake bodies of the decode loop's kernels (decode_kernels.h): the same arithmetic as the
// CUDA source, over every element at once.
#include <cstddef>
#include <cstdint>

#include <graphcap/fake/fake_driver.h>

#include "decode_kernels.h"

namespace decode {
namespace {

using graphcap::CUdeviceptr;
using graphcap::fake::KernelContext;
using std::uint32_t;

void embed(KernelContext& k) {
  const auto n = k.value<std::uint32_t>(3);
  auto token = k.buffer<const std::uint32_t>(0, n);
  auto state = k.buffer<const std::uint32_t>(1, n);
  auto out = k.buffer<std::uint32_t>(2, n);
  for (std::size_t i = 0; i < out.size() && i < token.size() && i < state.size(); ++i) {
    out[i] = embed_one(token[i], state[i]);
  }
}

void mix(KernelContext& k) {
  const auto salt = k.value<std::uint32_t>(2);
  const auto n = k.value<std::uint32_t>(3);
  auto src = k.buffer<const std::uint32_t>(0, n);
  auto dst = k.buffer<std::uint32_t>(1, n);
  if (src.size() != n || dst.size() != n) return;  // a violation the fake has recorded
  for (std::size_t i = 0; i < n; ++i) dst[i] = mix_one(src[i], src[(i + 1) % n], salt);
}

void axpy(KernelContext& k) {
  const auto a = k.value<std::uint32_t>(3);
  const auto n = k.value<std::uint32_t>(4);
  auto x = k.buffer<const std::uint32_t>(0, n);
  auto y = k.buffer<const std::uint32_t>(1, n);
  auto out = k.buffer<std::uint32_t>(2, n);
  for (std::size_t i = 0; i < out.size() && i < x.size() && i < y.size(); ++i) {
    out[i] = axpy_one(a, x[i], y[i]);
  }
}

void copy(KernelContext& k) {
  const auto n = k.value<std::uint32_t>(2);
  auto src = k.buffer<const std::uint32_t>(0, n);
  auto dst = k.buffer<std::uint32_t>(1, n);
  for (std::size_t i = 0; i < dst.size() && i < src.size(); ++i) dst[i] = src[i];
}

void next_token(KernelContext& k) {
  const auto n = k.value<std::uint32_t>(5);
  auto state = k.buffer<const std::uint32_t>(0, n);
  auto token = k.buffer<std::uint32_t>(1, n);
  auto left = k.buffer<std::uint32_t>(2, 1);
  auto go = k.buffer<std::uint32_t>(3, 1);
  if (state.empty() || left.empty() || go.empty()) return;
  for (std::size_t i = 0; i < token.size(); ++i) token[i] = next_token_one(state[i], state[0]);
  const std::uint32_t remaining = --left[0];
  go[0] = stop_after(state[0], remaining) ? 0u : 1u;
  if (k.value<graphcap::CUgraphConditionalHandle>(4) != 0) k.set_condition(4, go[0]);
}

void decide(KernelContext& k) {
  auto state = k.buffer<const std::uint32_t>(0, 1);
  auto taken = k.buffer<std::uint32_t>(1, 1);
  if (state.empty() || taken.empty()) return;
  const std::uint32_t refine = refine_after(state[0]) ? 1u : 0u;
  taken[0] += refine;
  k.set_condition(2, refine);
}

}  // namespace

void register_fake_kernels(graphcap::fake::FakeDriver& driver) {
  // The parameter lists of decode_kernels.cu, a device pointer as CUdeviceptr.
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, CUdeviceptr, uint32_t>("embed", embed);
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, uint32_t, uint32_t>("mix", mix);
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, CUdeviceptr, uint32_t, uint32_t>("axpy",
                                                                                        axpy);
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, uint32_t>("copy", copy);
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, CUdeviceptr, CUdeviceptr,
                               graphcap::CUgraphConditionalHandle, uint32_t>("next_token",
                                                                            next_token);
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, graphcap::CUgraphConditionalHandle>(
      "decide", decide);
}

}  // namespace decode
