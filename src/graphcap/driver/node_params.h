// The node structures of the driver's graph API, filled alike by graphcap and by the tests, tools
// and benchmarks that build graphs directly: a kernel node's CUDA_KERNEL_NODE_PARAMS over a
// LaunchDims, and a conditional node's CUgraphNodeParams.
#pragma once

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/launch_config.h>
#include <graphcap/driver/launch_dims.h>

namespace graphcap {

// A kernel node running `function` over `dims` with `params`.
inline CUDA_KERNEL_NODE_PARAMS kernel_node_params(CUfunction function, const LaunchDims& dims, void** params) {
  CUDA_KERNEL_NODE_PARAMS node{};
  node.func = function;
  set_launch_shape(node, dims);
  node.kernelParams = params;
  return node;
}

// A conditional node of `type` with `size` bodies (a SWITCH's cases; 1 otherwise), steered by
// `handle`, in `context`. cuGraphAddNode returns the bodies in conditional.phGraph_out.
inline CUgraphNodeParams conditional_node_params(CUgraphConditionalHandle handle, CUgraphConditionalNodeType type,
                                                 unsigned size, CUcontext context) {
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = size;
  params.conditional.ctx = context;
  return params;
}

}  // namespace graphcap
