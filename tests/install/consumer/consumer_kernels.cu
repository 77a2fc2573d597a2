// The consumer's kernels, written once: the host compiler builds them into fake kernels here
// (graphcap_fake_kernels); nvcc would build the same file into a fatbin (graphcap_embed_kernels).
#include <graphcap/kernel.h>

using graphcap::kernel::ptr;

// out[i] = a * x[i] + y[i], grid-stride.
GRAPHCAP_KERNEL(saxpy, (float a, ptr<const float> x, ptr<const float> y, ptr<float> out,
                        unsigned n)) {
  const unsigned stride = graphcap::kernel::grid_dim().x * graphcap::kernel::block_dim().x;
  for (unsigned i = graphcap::kernel::block_idx().x * graphcap::kernel::block_dim().x +
                    graphcap::kernel::thread_idx().x;
       i < n; i += stride) {
    out[i] = a * x[i] + y[i];
  }
}

// histogram[v % bins] += 1 for every v of values: threads meet at the same bins.
GRAPHCAP_KERNEL(histogram, (ptr<const unsigned> values, ptr<unsigned> bins, unsigned count,
                            unsigned nbins)) {
  const unsigned i = graphcap::kernel::block_idx().x * graphcap::kernel::block_dim().x +
                     graphcap::kernel::thread_idx().x;
  if (i < count) graphcap::kernel::atomic_add(&bins[values[i] % nbins], 1u);
}

// Writes one value past what a Buffer of n words holds when asked to: a bug the strict fake
// catches at the next sync.
GRAPHCAP_KERNEL(overrun, (ptr<unsigned> out, unsigned n)) {
  if (graphcap::kernel::thread_idx().x == 0) out[n] = 1;
}
