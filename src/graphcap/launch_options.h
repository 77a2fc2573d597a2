// LaunchOptions: launch attributes of one kernel launch (Device::launch's overload taking them),
// passed to the driver through cuLaunchKernelEx.
//
// programmatic: programmatic dependent launch (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
//   SERIALIZATION). The kernel may begin before the kernel launched before it on the stream has
//   finished; it must wait for that kernel with the device-side grid dependency sync
//   (cudaGridDependencySynchronize(); KernelContext::wait_for_predecessor() on the fake; in a
//   GRAPHCAP_KERNEL, graphcap::kernel::wait_for_predecessor() is either) before it touches
//   anything that kernel writes. The predecessor may let it begin early with
//   cudaTriggerProgrammaticLaunchCompletion() (graphcap::kernel::trigger_dependents()). In a
//   recording the launch becomes a programmatic
//   edge from a kernel predecessor (an ordinary edge from any other node, as measured on the
//   H200: docs/cuda-driver-facts.md, "Programmatic dependent launch and priorities"). A kernel
//   that reads early reads stale data on the GPU; the fake reports it as a violation.
// priority: CU_LAUNCH_ATTRIBUTE_PRIORITY (lower numbers are higher priorities; the driver clamps
//   the value to the device's range, least 0 and greatest -5 on the H200). A recording that holds
//   a launch with a priority is instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY
//   (GraphReport::node_priorities); re-recording it with another priority re-instantiates (an
//   exec update refuses it: ATTRIBUTES_CHANGED).
#pragma once

#include <optional>

namespace graphcap {

struct LaunchOptions {
  bool programmatic = false;
  std::optional<int> priority;
  friend bool operator==(const LaunchOptions&, const LaunchOptions&) = default;
};

}  // namespace graphcap
