// Must not compile in the host build: __syncthreads needs every thread of a block at once.
#include <graphcap/kernel.h>

GRAPHCAP_KERNEL(block_sum, (graphcap::kernel::ptr<float> x)) {
  x[0] = 1.0f;
  __syncthreads();
}
