// checked_replay's kernels, written once: nvcc builds them into a fatbin for the GPU
// (graphcap_embed_kernels), the host compiler into fake kernels (graphcap_fake_kernels).
#include <cstdint>

#include <graphcap/kernel.h>

using graphcap::kernel::first_index;
using graphcap::kernel::grid_stride;
using graphcap::kernel::ptr;

// y[i] = x[i] + 1 for i < n
GRAPHCAP_KERNEL(increment, (ptr<const float> x, ptr<float> y, std::uint32_t n)) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) y[i] = x[i] + 1.0f;
}

// y[i] = v for i < n: the example's bug passes an n past y's end
GRAPHCAP_KERNEL(splat, (ptr<float> y, float v, std::uint32_t n)) {
  for (std::uint64_t i = first_index(); i < n; i += grid_stride()) y[i] = v;
}
