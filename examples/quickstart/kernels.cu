// The quickstart's kernels, written once: nvcc builds them into a fatbin for the GPU
// (graphcap_embed_kernels), the host compiler into fake kernels (graphcap_fake_kernels).
#include <graphcap/kernel.h>

using graphcap::kernel::ptr;

GRAPHCAP_DEVICE unsigned global_index() {
  return graphcap::kernel::block_idx().x * graphcap::kernel::block_dim().x +
         graphcap::kernel::thread_idx().x;
}

// y[i] = a * x[i]
GRAPHCAP_KERNEL(scale, (ptr<const float> x, ptr<float> y, float a, unsigned n)) {
  if (const unsigned i = global_index(); i < n) y[i] = a * x[i];
}

// y[i] += x[i]
GRAPHCAP_KERNEL(add, (ptr<const float> x, ptr<float> y, unsigned n)) {
  if (const unsigned i = global_index(); i < n) y[i] += x[i];
}
