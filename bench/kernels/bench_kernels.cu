// The benchmark kernels' CUDA source; bench_kernels.h says what each does and
// fake_bench_kernels.cc holds the same kernels as fake bodies. nvcc builds this into the fatbin
// graphcap-bench embeds when GRAPHCAP_GPU is ON. extern "C": cuModuleGetFunction looks the names
// up unmangled.

// Does nothing: a launch of it costs only what launching costs.
extern "C" __global__ void empty() {}

// Does nothing with its scalar parameters: a launch of it costs launching plus passing them.
extern "C" __global__ void values(unsigned int, unsigned long long, unsigned int) {}
// Takes one 32-bit value and does nothing with it: the per-replay parameter benchmarks set it.
extern "C" __global__ void sink(unsigned int) {}

// One step's stop decision (bench_kernels.h): the host loop reads `go`, a WHILE loop reads h.
extern "C" __global__ void countdown(cudaGraphConditionalHandle h, unsigned int* counter,
                                     unsigned int* go) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const unsigned int left = --counter[0];
  go[0] = left > 0 ? 1u : 0u;
  if (h != 0) cudaGraphSetConditional(h, go[0]);
}

// A link of a programmatic chain (bench_kernels.h). The device-side PDL calls exist from sm_90 on.
extern "C" __global__ void chain(const unsigned int* prev, unsigned int* mine, unsigned int wait) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
  if (wait != 0) cudaGridDependencySynchronize();
#else
  (void)wait;
#endif
  if (threadIdx.x == 0) mine[blockIdx.x] = prev[blockIdx.x] + 1u;
}

extern "C" __global__ void set_condition(cudaGraphConditionalHandle h, unsigned int value) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  cudaGraphSetConditional(h, value);
}
