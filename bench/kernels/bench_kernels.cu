// The benchmark kernels, written once (bench_kernels.h says what each does): nvcc builds them into
// the fatbin graphcap-bench embeds when GRAPHCAP_GPU is ON, the host compiler into the fake's
// kernels (graphcap_fake_kernels in bench/CMakeLists.txt).
#include <graphcap/kernel.h>

using graphcap::kernel::ptr;

// Does nothing: a launch of it costs only what launching costs.
GRAPHCAP_KERNEL(empty, ()) {}

// Does nothing with its scalar parameters: a launch of it costs launching plus passing them.
GRAPHCAP_KERNEL(values, (unsigned int, unsigned long long, unsigned int)) {}
// Takes one 32-bit value and does nothing with it: the per-replay parameter benchmarks set it.
GRAPHCAP_KERNEL(sink, (unsigned int)) {}

// One step's stop decision (bench_kernels.h): the host loop reads `go`, a WHILE loop reads h.
GRAPHCAP_KERNEL(countdown, (graphcap::CUgraphConditionalHandle h, ptr<unsigned int> counter,
                            ptr<unsigned int> go)) {
  if (graphcap::kernel::block_idx().x != 0 || graphcap::kernel::thread_idx().x != 0) return;
  const unsigned int left = --counter[0];
  go[0] = left > 0 ? 1u : 0u;
  if (h != 0) graphcap::kernel::set_condition(h, go[0]);
}

// A link of a programmatic chain (bench_kernels.h). The device-side PDL calls exist from sm_90 on.
GRAPHCAP_KERNEL(chain, (ptr<const unsigned int> prev, ptr<unsigned int> mine, unsigned int wait)) {
  graphcap::kernel::trigger_dependents();
  if (wait != 0) graphcap::kernel::wait_for_predecessor();
  if (graphcap::kernel::thread_idx().x == 0) {
    mine[graphcap::kernel::block_idx().x] = prev[graphcap::kernel::block_idx().x] + 1u;
  }
}

// One thread sets the conditional handle h to value.
GRAPHCAP_KERNEL(set_condition, (graphcap::CUgraphConditionalHandle h, unsigned int value)) {
  if (graphcap::kernel::block_idx().x != 0 || graphcap::kernel::thread_idx().x != 0) return;
  graphcap::kernel::set_condition(h, value);
}
