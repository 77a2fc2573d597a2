// cuLaunchKernelEx's CUlaunchConfig filled from a LaunchDims, with its attributes (programmatic
// stream serialization, a priority): written once for graphcap's launches and for the tests,
// tools and benchmarks that call the driver directly.
#pragma once

#include <array>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/launch_dims.h>

namespace graphcap {

// Up to two launch attributes, in the order they are added.
struct LaunchAttributeList {
  std::array<CUlaunchAttribute, 2> list{};
  unsigned count = 0;

  LaunchAttributeList& programmatic() {
    list[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    list[count++].value.programmaticStreamSerializationAllowed = 1;
    return *this;
  }
  LaunchAttributeList& priority(int priority) {
    list[count].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    list[count++].value.priority = priority;
    return *this;
  }
};

// The grid, block and shared memory of `dims` into a driver structure that names them as cuda.h
// does (CUlaunchConfig, CUDA_KERNEL_NODE_PARAMS).
template <class Launch>
void set_launch_shape(Launch& launch, const LaunchDims& dims) {
  launch.gridDimX = dims.grid.x;
  launch.gridDimY = dims.grid.y;
  launch.gridDimZ = dims.grid.z;
  launch.blockDimX = dims.block.x;
  launch.blockDimY = dims.block.y;
  launch.blockDimZ = dims.block.z;
  launch.sharedMemBytes = dims.shared_bytes;
}

// A launch of `dims` on `stream` with `attributes` (nullptr: no list at all).
inline CUlaunchConfig launch_config(const LaunchDims& dims, CUstream stream, LaunchAttributeList* attributes) {
  CUlaunchConfig config{};
  set_launch_shape(config, dims);
  config.hStream = stream;
  config.attrs = attributes != nullptr ? attributes->list.data() : nullptr;
  config.numAttrs = attributes != nullptr ? attributes->count : 0;
  return config;
}

}  // namespace graphcap
