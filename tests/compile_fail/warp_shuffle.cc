// Must not compile in the host build: a warp shuffle reads other threads' registers.
#include <graphcap/kernel.h>

GRAPHCAP_KERNEL(warp_sum, (graphcap::kernel::ptr<float> x)) {
  x[0] = __shfl_down_sync(0xffffffffu, x[0], 16);
}
