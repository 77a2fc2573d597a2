// The test kernels, written once (test_kernels.h says what each does). nvcc builds this file into
// the fatbin graphcap_tests_cuda embeds (gpu preset); the host compiler builds it into the fake's
// kernels (graphcap_fake_kernels in tests/CMakeLists.txt), so the GPU and the fake run the same
// source. Every kernel is a grid-stride loop, so any launch shape covers all n elements.
#include <cstdint>

#include <graphcap/kernel.h>

#include "test_kernels.h"

using graphcap::kernel::first_index;
using graphcap::kernel::grid_stride;
using graphcap::kernel::ptr;

namespace {

GRAPHCAP_DEVICE bool first_thread() {
  return graphcap::kernel::block_idx().x == 0 && graphcap::kernel::thread_idx().x == 0;
}

}  // namespace

GRAPHCAP_KERNEL(empty, ()) {}

GRAPHCAP_KERNEL(add_one, (ptr<const std::uint32_t> src, ptr<std::uint32_t> dst, std::uint32_t n)) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) dst[i] = src[i] + 1u;
}

GRAPHCAP_KERNEL(fill, (ptr<std::uint32_t> dst, std::uint32_t value, std::uint32_t n)) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) dst[i] = value;
}

GRAPHCAP_KERNEL(axpy, (ptr<const std::uint32_t> x, ptr<const std::uint32_t> y,
                       ptr<std::uint32_t> out, std::uint32_t a, std::uint32_t n)) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = a * x[i] + y[i];
}

GRAPHCAP_KERNEL(copy, (ptr<const std::uint32_t> src, ptr<std::uint32_t> dst, std::uint32_t n)) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) dst[i] = src[i];
}

GRAPHCAP_KERNEL(mixed, (char c, double d, short s, ptr<std::uint32_t> out, unsigned long long n)) {
  const std::uint32_t value = static_cast<std::uint32_t>(c) + static_cast<std::uint32_t>(d) +
                              static_cast<std::uint32_t>(s);
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = value;
}

GRAPHCAP_KERNEL(affine, (Affine p, ptr<std::uint32_t> out)) {
  for (std::uint64_t i = first_index(); i < p.n; i += grid_stride()) {
    out[i] = p.scale * static_cast<std::uint32_t>(i) + static_cast<std::uint32_t>(p.offset);
  }
}

// Conditional nodes: graphcap::kernel::set_condition is cudaGraphSetConditional on the GPU, a
// device-runtime builtin that needs no relocatable device code (docs/cuda-driver-facts.md,
// "Conditional nodes").
GRAPHCAP_KERNEL(countdown, (graphcap::CUgraphConditionalHandle h, ptr<std::uint32_t> counter,
                            ptr<std::uint32_t> iterations)) {
  if (!first_thread()) return;
  const std::uint32_t left = --counter[0];
  ++iterations[0];
  graphcap::kernel::set_condition(h, left > 0 ? 1u : 0u);
}

GRAPHCAP_KERNEL(set_condition, (graphcap::CUgraphConditionalHandle h, std::uint32_t value)) {
  if (!first_thread()) return;
  graphcap::kernel::set_condition(h, value);
}

// Block-wide atomics: every thread of the grid adds 1 to counter[0] (one count per thread).
GRAPHCAP_KERNEL(count_threads, (ptr<std::uint32_t> counter)) {
  graphcap::kernel::atomic_add(&counter[0], 1u);
}

// Programmatic dependent launch (sm_90 and later; on older architectures it is a plain add_one):
// the trigger lets the next programmatic launch begin at once; the wait makes this kernel see what
// its predecessor wrote (docs/cuda-driver-facts.md, P03). On the fake, reading src before the wait
// when src is what a programmatic predecessor writes is a violation (KernelContext::
// wait_for_predecessor).
GRAPHCAP_KERNEL(pdl_add_one, (ptr<const std::uint32_t> src, ptr<std::uint32_t> dst,
                              std::uint32_t n, std::uint32_t wait)) {
  graphcap::kernel::trigger_dependents();
  if (wait != 0) graphcap::kernel::wait_for_predecessor();
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) dst[i] = src[i] + 1u;
}
