// The engine's kernels, written once: the host compiler builds them into fake kernels here
// (graphcap_fake_kernels); nvcc builds the same file into a fatbin for the GPU.
#include <graphcap/kernel.h>

using graphcap::kernel::ptr;

// h[i] = a * x[i], grid-stride.
GRAPHCAP_KERNEL(scale, (ptr<const float> x, ptr<float> h, float a, unsigned n)) {
  const unsigned stride = graphcap::kernel::grid_dim().x * graphcap::kernel::block_dim().x;
  for (unsigned i = graphcap::kernel::block_idx().x * graphcap::kernel::block_dim().x +
                    graphcap::kernel::thread_idx().x;
       i < n; i += stride) {
    h[i] = a * x[i];
  }
}

// y[i] = h[i] + x[i], grid-stride.
GRAPHCAP_KERNEL(add, (ptr<const float> h, ptr<const float> x, ptr<float> y, unsigned n)) {
  const unsigned stride = graphcap::kernel::grid_dim().x * graphcap::kernel::block_dim().x;
  for (unsigned i = graphcap::kernel::block_idx().x * graphcap::kernel::block_dim().x +
                    graphcap::kernel::thread_idx().x;
       i < n; i += stride) {
    y[i] = h[i] + x[i];
  }
}

// A bug: writes one element past the n the Buffer holds.
GRAPHCAP_KERNEL(write_past, (ptr<float> y, unsigned n)) {
  if (graphcap::kernel::thread_idx().x == 0) y[n] = 1.0f;
}
