// Must not compile in the host build: __shared__ memory is the block's, not a thread's.
#include <graphcap/kernel.h>

GRAPHCAP_KERNEL(tile, (graphcap::kernel::ptr<float> x)) {
  __shared__ float tile[256];
  tile[graphcap::kernel::thread_idx().x] = x[0];
}
