// The decode loop's kernels, written once (decode_kernels.h says what each does): nvcc builds them
// into the fatbin decode_loop embeds when GRAPHCAP_GPU is ON, the host compiler into the fake's
// kernels (graphcap_fake_kernels in examples/CMakeLists.txt). Grid-stride loops: any launch shape
// covers all n elements.
#include <cstdint>

#include <graphcap/kernel.h>

#include "decode_kernels.h"

using graphcap::kernel::first_index;
using graphcap::kernel::grid_stride;
using graphcap::kernel::ptr;

GRAPHCAP_KERNEL(embed, (ptr<const std::uint32_t> token, ptr<const std::uint32_t> state,
                        ptr<std::uint32_t> out, std::uint32_t n)) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) {
    out[i] = 31u * state[i] + token[i];
  }
}

GRAPHCAP_KERNEL(mix, (ptr<const std::uint32_t> src, ptr<std::uint32_t> dst, std::uint32_t salt,
                      std::uint32_t n)) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) {
    const std::uint32_t x = src[i] ^ salt;
    dst[i] = ((x << 5) | (x >> 27)) * 0x9E3779B1u + src[(i + 1) % n];
  }
}

GRAPHCAP_KERNEL(axpy, (ptr<const std::uint32_t> x, ptr<const std::uint32_t> y,
                       ptr<std::uint32_t> out, std::uint32_t a, std::uint32_t n)) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = a * x[i] + y[i];
}

GRAPHCAP_KERNEL(copy, (ptr<const std::uint32_t> src, ptr<std::uint32_t> dst, std::uint32_t n)) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) dst[i] = src[i];
}

GRAPHCAP_KERNEL(next_token, (ptr<const std::uint32_t> state, ptr<std::uint32_t> token,
                             ptr<std::uint32_t> left, ptr<std::uint32_t> go,
                             graphcap::CUgraphConditionalHandle h, std::uint32_t n)) {
  const std::uint32_t first = state[0];
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) {
    token[i] = decode::next_token_one(state[i], first);
  }
  if (graphcap::kernel::block_idx().x == 0 && graphcap::kernel::thread_idx().x == 0) {
    const std::uint32_t remaining = --left[0];
    go[0] = decode::stop_after(first, remaining) ? 0u : 1u;
    if (h != 0) graphcap::kernel::set_condition(h, go[0]);
  }
}

GRAPHCAP_KERNEL(decide, (ptr<const std::uint32_t> state, ptr<std::uint32_t> taken,
                         graphcap::CUgraphConditionalHandle h)) {
  if (graphcap::kernel::block_idx().x != 0 || graphcap::kernel::thread_idx().x != 0) return;
  const std::uint32_t refine = decode::refine_after(state[0]) ? 1u : 0u;
  taken[0] += refine;
  graphcap::kernel::set_condition(h, refine);
}
