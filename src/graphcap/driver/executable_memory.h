// The device memory the CUDA driver takes for an instantiated executable, as measured on the
// H200 (docs/cuda-driver-facts.md, "Device memory the driver holds per executable"; raw log
// docs/measurements/2026-12-03-probes-graph-memory.txt). One model for both of its users: the
// fake takes this much at cuGraphInstantiateWithFlags, and Graph::report() quotes it where
// cuMemGetInfo can't measure the executable.
//
// What the H200 did: instantiate takes all of it (upload and launch took 0 bytes in every case),
// from 2 MiB chunks that several executables share; destroying executables gives nothing back,
// and later executables reuse what the driver kept (a per-process high-water mark).
#pragma once

#include <cstddef>

namespace graphcap {

// The driver takes its executables' memory in chunks of this many bytes.
inline constexpr std::size_t kDriverMemoryChunk = std::size_t{2} << 20;

// What one executable's nodes cost the driver.
struct ExecutableNodes {
  std::size_t kernels = 0;       // kernel and memcpy nodes (a memcpy costs what a kernel does),
                                 // conditional bodies included
  std::size_t conditionals = 0;  // IF, WHILE and SWITCH nodes
  std::size_t others = 0;        // memset, event record and wait, host nodes (empty nodes cost
                                 // nothing: not counted)
};

namespace detail {

// Bytes per executable of n empty-kernel nodes (n >= 1), measured: 256 executables of 1 and of
// 10 nodes, 64 of 100, 8 of 1000, 3000 and 10000 (M.kernel.*). Linear between the points; past
// the last, the last segment's slope.
struct ExecutablePoint {
  std::size_t nodes;
  std::size_t bytes;
};
inline constexpr ExecutablePoint kKernelExecutable[] = {
    {1, std::size_t{112} << 10},     {10, std::size_t{128} << 10},
    {100, std::size_t{288} << 10},   {1000, std::size_t{2304} << 10},
    {3000, std::size_t{7680} << 10}, {10000, std::size_t{23552} << 10},
};
// Each conditional node with a one-kernel body, beyond the kernels counted: 938 MiB for 8
// executables of 1000 WHILE nodes, 2806 MiB for 3000, 1168 MiB for one of 10000 (M.while.*.sep;
// IF measured the same): 112-118 KiB a node once its body's kernel is counted as a kernel.
inline constexpr std::size_t kConditionalBytes = std::size_t{117} << 10;

constexpr std::size_t kernel_executable_bytes(std::size_t nodes) noexcept {
  constexpr std::size_t count = sizeof(kKernelExecutable) / sizeof(kKernelExecutable[0]);
  if (nodes <= kKernelExecutable[0].nodes) return kKernelExecutable[0].bytes;
  for (std::size_t i = 1; i < count; ++i) {
    const ExecutablePoint& lo = kKernelExecutable[i - 1];
    const ExecutablePoint& hi = kKernelExecutable[i];
    if (nodes <= hi.nodes || i + 1 == count) {
      // Within [lo, hi], or past the last point on that segment's slope.
      return lo.bytes + (nodes - lo.nodes) * (hi.bytes - lo.bytes) / (hi.nodes - lo.nodes);
    }
  }
  return kKernelExecutable[count - 1].bytes;
}

}  // namespace detail

// The driver's own bytes for one executable of `nodes`: 0 when it counts none (an executable of
// empty nodes only: M.empty.*, 0 bytes for 256 of them); else what one of max(kernels, 1) kernel nodes takes
// (memset and event nodes cost under 26 bytes each over that: M.memset.*, M.event.*), plus each
// conditional node's. An estimate of the driver's own (unpublished) allocator: within the 2 MiB
// chunking of the measurements it is what the H200 took at every measured size.
constexpr std::size_t executable_driver_bytes(const ExecutableNodes& nodes) noexcept {
  if (nodes.kernels == 0 && nodes.conditionals == 0 && nodes.others == 0) return 0;
  return detail::kernel_executable_bytes(nodes.kernels == 0 ? 1 : nodes.kernels) +
         nodes.conditionals * detail::kConditionalBytes;
}

}  // namespace graphcap
