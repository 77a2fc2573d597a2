// Proves graphcap's mirrored CUDA types (cuda_types.h) are cuda.h's: every enumerator's value,
// every enum's size, every struct's size, alignment and member offsets, and every handle type.
// And every line of entry_points.def against cudaTypedefs.h: its export is the function its
// version's PFN typedef types, and its parameters have that typedef's ABI. Compiled (never linked
// into anything) wherever the CUDA toolkit's headers exist; a mismatch fails the build.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/entry_points.h>

namespace {

// Compares values across the two unrelated enum types.
#define GRAPHCAP_SAME_VALUE(name)                                                    \
  static_assert(static_cast<long long>(graphcap::name) == static_cast<long long>(::name), \
                #name ": value differs from cuda.h")

GRAPHCAP_SAME_VALUE(CUDA_SUCCESS);
GRAPHCAP_SAME_VALUE(CU_GRAPH_COND_TYPE_IF);
GRAPHCAP_SAME_VALUE(CU_GRAPH_COND_TYPE_WHILE);
GRAPHCAP_SAME_VALUE(CU_GRAPH_COND_TYPE_SWITCH);
GRAPHCAP_SAME_VALUE(CU_STREAM_ADD_CAPTURE_DEPENDENCIES);
GRAPHCAP_SAME_VALUE(CU_STREAM_SET_CAPTURE_DEPENDENCIES);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_INVALID_VALUE);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_OUT_OF_MEMORY);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_NOT_INITIALIZED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_DEINITIALIZED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_STUB_LIBRARY);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_DEVICE_UNAVAILABLE);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_NO_DEVICE);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_INVALID_DEVICE);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_INVALID_IMAGE);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_INVALID_CONTEXT);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_NO_BINARY_FOR_GPU);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_INVALID_PTX);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_INVALID_SOURCE);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_FILE_NOT_FOUND);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_OPERATING_SYSTEM);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_INVALID_HANDLE);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_ILLEGAL_STATE);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_NOT_FOUND);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_NOT_READY);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_ILLEGAL_ADDRESS);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_LAUNCH_TIMEOUT);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_CONTEXT_IS_DESTROYED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_ASSERT);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_ILLEGAL_INSTRUCTION);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_MISALIGNED_ADDRESS);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_LAUNCH_FAILED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_NOT_PERMITTED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_NOT_SUPPORTED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_STREAM_CAPTURE_MERGE);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_CAPTURED_EVENT);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_TIMEOUT);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_UNKNOWN);
GRAPHCAP_SAME_VALUE(CU_STREAM_DEFAULT);
GRAPHCAP_SAME_VALUE(CU_STREAM_NON_BLOCKING);
GRAPHCAP_SAME_VALUE(CU_EVENT_DEFAULT);
GRAPHCAP_SAME_VALUE(CU_EVENT_BLOCKING_SYNC);
GRAPHCAP_SAME_VALUE(CU_EVENT_DISABLE_TIMING);
GRAPHCAP_SAME_VALUE(CU_EVENT_INTERPROCESS);
GRAPHCAP_SAME_VALUE(CU_EVENT_WAIT_DEFAULT);
GRAPHCAP_SAME_VALUE(CU_EVENT_WAIT_EXTERNAL);
GRAPHCAP_SAME_VALUE(CU_STREAM_CAPTURE_MODE_GLOBAL);
GRAPHCAP_SAME_VALUE(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
GRAPHCAP_SAME_VALUE(CU_STREAM_CAPTURE_MODE_RELAXED);
GRAPHCAP_SAME_VALUE(CU_STREAM_CAPTURE_STATUS_NONE);
GRAPHCAP_SAME_VALUE(CU_STREAM_CAPTURE_STATUS_ACTIVE);
GRAPHCAP_SAME_VALUE(CU_STREAM_CAPTURE_STATUS_INVALIDATED);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_KERNEL);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_MEMCPY);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_MEMSET);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_HOST);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_GRAPH);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_EMPTY);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_WAIT_EVENT);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_EVENT_RECORD);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_MEM_FREE);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
GRAPHCAP_SAME_VALUE(CU_GRAPH_NODE_TYPE_CONDITIONAL);
GRAPHCAP_SAME_VALUE(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
GRAPHCAP_SAME_VALUE(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
GRAPHCAP_SAME_VALUE(CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH);
GRAPHCAP_SAME_VALUE(CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
GRAPHCAP_SAME_VALUE(CU_GRAPH_EXEC_UPDATE_SUCCESS);
GRAPHCAP_SAME_VALUE(CU_GRAPH_EXEC_UPDATE_ERROR);
GRAPHCAP_SAME_VALUE(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
GRAPHCAP_SAME_VALUE(CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
GRAPHCAP_SAME_VALUE(CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED);
GRAPHCAP_SAME_VALUE(CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED);
GRAPHCAP_SAME_VALUE(CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED);
GRAPHCAP_SAME_VALUE(CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE);
GRAPHCAP_SAME_VALUE(CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
GRAPHCAP_SAME_VALUE(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
GRAPHCAP_SAME_VALUE(CU_MEM_HANDLE_TYPE_NONE);
GRAPHCAP_SAME_VALUE(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
GRAPHCAP_SAME_VALUE(CU_MEM_ACCESS_FLAGS_PROT_NONE);
GRAPHCAP_SAME_VALUE(CU_MEM_ACCESS_FLAGS_PROT_READ);
GRAPHCAP_SAME_VALUE(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
GRAPHCAP_SAME_VALUE(CU_MEM_LOCATION_TYPE_INVALID);
GRAPHCAP_SAME_VALUE(CU_MEM_LOCATION_TYPE_DEVICE);
GRAPHCAP_SAME_VALUE(CU_MEM_ALLOCATION_TYPE_INVALID);
GRAPHCAP_SAME_VALUE(CU_MEM_ALLOCATION_TYPE_PINNED);
GRAPHCAP_SAME_VALUE(CU_MEM_ALLOC_GRANULARITY_MINIMUM);
GRAPHCAP_SAME_VALUE(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
GRAPHCAP_SAME_VALUE(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
GRAPHCAP_SAME_VALUE(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
GRAPHCAP_SAME_VALUE(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
GRAPHCAP_SAME_VALUE(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
GRAPHCAP_SAME_VALUE(CU_FUNC_ATTRIBUTE_NUM_REGS);
GRAPHCAP_SAME_VALUE(CU_FUNC_ATTRIBUTE_PTX_VERSION);
GRAPHCAP_SAME_VALUE(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
GRAPHCAP_SAME_VALUE(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA);
GRAPHCAP_SAME_VALUE(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
GRAPHCAP_SAME_VALUE(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
GRAPHCAP_SAME_VALUE(CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE);
GRAPHCAP_SAME_VALUE(CU_GET_PROC_ADDRESS_DEFAULT);
GRAPHCAP_SAME_VALUE(CU_GET_PROC_ADDRESS_SUCCESS);
GRAPHCAP_SAME_VALUE(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
GRAPHCAP_SAME_VALUE(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
GRAPHCAP_SAME_VALUE(CUDA_ERROR_LOSSY_QUERY);
GRAPHCAP_SAME_VALUE(CUDA_GRAPH_INSTANTIATE_SUCCESS);
GRAPHCAP_SAME_VALUE(CUDA_GRAPH_INSTANTIATE_ERROR);
GRAPHCAP_SAME_VALUE(CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE);
GRAPHCAP_SAME_VALUE(CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED);
GRAPHCAP_SAME_VALUE(CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED);
GRAPHCAP_SAME_VALUE(CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED);
GRAPHCAP_SAME_VALUE(CU_GRAPH_DEPENDENCY_TYPE_DEFAULT);
GRAPHCAP_SAME_VALUE(CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC);
GRAPHCAP_SAME_VALUE(CU_LAUNCH_ATTRIBUTE_IGNORE);
GRAPHCAP_SAME_VALUE(CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW);
GRAPHCAP_SAME_VALUE(CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
GRAPHCAP_SAME_VALUE(CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY);
GRAPHCAP_SAME_VALUE(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
GRAPHCAP_SAME_VALUE(CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE);
GRAPHCAP_SAME_VALUE(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
GRAPHCAP_SAME_VALUE(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT);
GRAPHCAP_SAME_VALUE(CU_LAUNCH_ATTRIBUTE_PRIORITY);

#undef GRAPHCAP_SAME_VALUE

// Enums travel by value and through pointers (cuStreamIsCapturing, cuGraphNodeGetType,
// cuThreadExchangeStreamCaptureMode, cuGetProcAddress), so their sizes must agree too.
#define GRAPHCAP_SAME_SIZE(type) \
  static_assert(sizeof(graphcap::type) == sizeof(::type), #type ": size differs from cuda.h")

GRAPHCAP_SAME_SIZE(CUmemAllocationHandleType);
GRAPHCAP_SAME_SIZE(CUmemAccess_flags);
GRAPHCAP_SAME_SIZE(CUmemLocationType);
GRAPHCAP_SAME_SIZE(CUmemAllocationType);
GRAPHCAP_SAME_SIZE(CUmemAllocationGranularity_flags);
GRAPHCAP_SAME_SIZE(CUmemLocation);
GRAPHCAP_SAME_SIZE(CUmemAllocationProp);
GRAPHCAP_SAME_SIZE(CUmemAccessDesc);
GRAPHCAP_SAME_SIZE(CUresult);
GRAPHCAP_SAME_SIZE(CUstream_flags);
GRAPHCAP_SAME_SIZE(CUevent_flags);
GRAPHCAP_SAME_SIZE(CUevent_wait_flags);
GRAPHCAP_SAME_SIZE(CUstreamCaptureMode);
GRAPHCAP_SAME_SIZE(CUstreamCaptureStatus);
GRAPHCAP_SAME_SIZE(CUgraphNodeType);
GRAPHCAP_SAME_SIZE(CUgraphExecUpdateResult);
GRAPHCAP_SAME_SIZE(CUdevice_attribute);
GRAPHCAP_SAME_SIZE(CUfunction_attribute);
GRAPHCAP_SAME_SIZE(CUdriverProcAddressQueryResult);
GRAPHCAP_SAME_SIZE(CUgraphExecUpdateResultInfo);
GRAPHCAP_SAME_SIZE(CUgraphEdgeData);
GRAPHCAP_SAME_SIZE(CUDA_KERNEL_NODE_PARAMS);
GRAPHCAP_SAME_SIZE(CUgraphConditionalNodeType);
GRAPHCAP_SAME_SIZE(CUstreamUpdateCaptureDependencies_flags);
GRAPHCAP_SAME_SIZE(CUDA_CONDITIONAL_NODE_PARAMS);
GRAPHCAP_SAME_SIZE(CUgraphNodeParams);
GRAPHCAP_SAME_SIZE(CUgraphInstantiateResult);
GRAPHCAP_SAME_SIZE(CUDA_GRAPH_INSTANTIATE_PARAMS);
GRAPHCAP_SAME_SIZE(CUgraphDependencyType);
GRAPHCAP_SAME_SIZE(CUlaunchAttributeID);
GRAPHCAP_SAME_SIZE(CUlaunchAttributeValue);
GRAPHCAP_SAME_SIZE(CUlaunchAttribute);
GRAPHCAP_SAME_SIZE(CUlaunchConfig);

#undef GRAPHCAP_SAME_SIZE

// The instantiate flags travel as unsigned long long and the proc-address flags as cuuint64_t,
// whatever the enum's width; those parameter types are what must agree.
static_assert(std::is_same_v<graphcap::cuuint64_t, ::cuuint64_t>);
static_assert(std::is_same_v<graphcap::cuuint32_t, ::cuuint32_t>);

// Handles: the very same types, so a graphcap::CUstream is a ::CUstream.
static_assert(std::is_same_v<graphcap::CUdeviceptr, ::CUdeviceptr>);
static_assert(std::is_same_v<graphcap::CUdevice, ::CUdevice>);
static_assert(std::is_same_v<graphcap::CUcontext, ::CUcontext>);
static_assert(std::is_same_v<graphcap::CUmodule, ::CUmodule>);
static_assert(std::is_same_v<graphcap::CUfunction, ::CUfunction>);
static_assert(std::is_same_v<graphcap::CUstream, ::CUstream>);
static_assert(std::is_same_v<graphcap::CUevent, ::CUevent>);
static_assert(std::is_same_v<graphcap::CUgraph, ::CUgraph>);
static_assert(std::is_same_v<graphcap::CUgraphNode, ::CUgraphNode>);
static_assert(std::is_same_v<graphcap::CUgraphExec, ::CUgraphExec>);
static_assert(std::is_same_v<graphcap::CUkernel, ::CUkernel>);
static_assert(std::is_same_v<graphcap::CUgraphConditionalHandle, ::CUgraphConditionalHandle>);
static_assert(std::is_same_v<graphcap::CUmemGenericAllocationHandle,
                             ::CUmemGenericAllocationHandle>);

// Structs the driver writes into: same layout, member by member.
#define GRAPHCAP_SAME_MEMBER(type, member)                                                  \
  static_assert(offsetof(graphcap::type, member) == offsetof(::type, member),             \
                #type "::" #member ": offset differs from cuda.h");                        \
  static_assert(sizeof(graphcap::type::member) == sizeof(::type::member),                 \
                #type "::" #member ": size differs from cuda.h")

static_assert(alignof(graphcap::CUmemLocation) == alignof(::CUmemLocation));
GRAPHCAP_SAME_MEMBER(CUmemLocation, type);
GRAPHCAP_SAME_MEMBER(CUmemLocation, id);
static_assert(alignof(graphcap::CUmemAllocationProp) == alignof(::CUmemAllocationProp));
GRAPHCAP_SAME_MEMBER(CUmemAllocationProp, type);
GRAPHCAP_SAME_MEMBER(CUmemAllocationProp, requestedHandleTypes);
GRAPHCAP_SAME_MEMBER(CUmemAllocationProp, location);
GRAPHCAP_SAME_MEMBER(CUmemAllocationProp, win32HandleMetaData);
GRAPHCAP_SAME_MEMBER(CUmemAllocationProp, allocFlags);
static_assert(alignof(graphcap::CUmemAccessDesc) == alignof(::CUmemAccessDesc));
GRAPHCAP_SAME_MEMBER(CUmemAccessDesc, location);
GRAPHCAP_SAME_MEMBER(CUmemAccessDesc, flags);

static_assert(alignof(graphcap::CUgraphExecUpdateResultInfo) ==
              alignof(::CUgraphExecUpdateResultInfo));
GRAPHCAP_SAME_MEMBER(CUgraphExecUpdateResultInfo, result);
GRAPHCAP_SAME_MEMBER(CUgraphExecUpdateResultInfo, errorNode);
GRAPHCAP_SAME_MEMBER(CUgraphExecUpdateResultInfo, errorFromNode);
static_assert(std::is_same_v<decltype(graphcap::CUgraphExecUpdateResultInfo::errorNode),
                             decltype(::CUgraphExecUpdateResultInfo::errorNode)>);
static_assert(std::is_same_v<decltype(graphcap::CUgraphExecUpdateResultInfo::errorFromNode),
                             decltype(::CUgraphExecUpdateResultInfo::errorFromNode)>);

static_assert(alignof(graphcap::CUDA_CONDITIONAL_NODE_PARAMS) ==
              alignof(::CUDA_CONDITIONAL_NODE_PARAMS));
GRAPHCAP_SAME_MEMBER(CUDA_CONDITIONAL_NODE_PARAMS, handle);
GRAPHCAP_SAME_MEMBER(CUDA_CONDITIONAL_NODE_PARAMS, type);
GRAPHCAP_SAME_MEMBER(CUDA_CONDITIONAL_NODE_PARAMS, size);
GRAPHCAP_SAME_MEMBER(CUDA_CONDITIONAL_NODE_PARAMS, phGraph_out);
GRAPHCAP_SAME_MEMBER(CUDA_CONDITIONAL_NODE_PARAMS, ctx);
static_assert(alignof(graphcap::CUgraphNodeParams) == alignof(::CUgraphNodeParams));
GRAPHCAP_SAME_MEMBER(CUgraphNodeParams, type);
GRAPHCAP_SAME_MEMBER(CUgraphNodeParams, conditional);
GRAPHCAP_SAME_MEMBER(CUgraphNodeParams, reserved2);
static_assert(graphcap::kGraphCondAssignDefault == CU_GRAPH_COND_ASSIGN_DEFAULT);

static_assert(graphcap::kGraphKernelNodePortDefault == CU_GRAPH_KERNEL_NODE_PORT_DEFAULT);
static_assert(graphcap::kGraphKernelNodePortProgrammatic ==
              CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC);
static_assert(graphcap::kGraphKernelNodePortLaunchOrder == CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER);

static_assert(alignof(graphcap::CUDA_GRAPH_INSTANTIATE_PARAMS) ==
              alignof(::CUDA_GRAPH_INSTANTIATE_PARAMS));
GRAPHCAP_SAME_MEMBER(CUDA_GRAPH_INSTANTIATE_PARAMS, flags);
GRAPHCAP_SAME_MEMBER(CUDA_GRAPH_INSTANTIATE_PARAMS, hUploadStream);
GRAPHCAP_SAME_MEMBER(CUDA_GRAPH_INSTANTIATE_PARAMS, hErrNode_out);
GRAPHCAP_SAME_MEMBER(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out);

static_assert(alignof(graphcap::CUlaunchAttributeValue) == alignof(::CUlaunchAttributeValue));
GRAPHCAP_SAME_MEMBER(CUlaunchAttributeValue, cooperative);
GRAPHCAP_SAME_MEMBER(CUlaunchAttributeValue, programmaticStreamSerializationAllowed);
GRAPHCAP_SAME_MEMBER(CUlaunchAttributeValue, programmaticEvent);
GRAPHCAP_SAME_MEMBER(CUlaunchAttributeValue, priority);
static_assert(alignof(graphcap::CUlaunchAttribute) == alignof(::CUlaunchAttribute));
GRAPHCAP_SAME_MEMBER(CUlaunchAttribute, id);
GRAPHCAP_SAME_MEMBER(CUlaunchAttribute, value);
static_assert(alignof(graphcap::CUlaunchConfig) == alignof(::CUlaunchConfig));
GRAPHCAP_SAME_MEMBER(CUlaunchConfig, gridDimX);
GRAPHCAP_SAME_MEMBER(CUlaunchConfig, gridDimY);
GRAPHCAP_SAME_MEMBER(CUlaunchConfig, gridDimZ);
GRAPHCAP_SAME_MEMBER(CUlaunchConfig, blockDimX);
GRAPHCAP_SAME_MEMBER(CUlaunchConfig, blockDimY);
GRAPHCAP_SAME_MEMBER(CUlaunchConfig, blockDimZ);
GRAPHCAP_SAME_MEMBER(CUlaunchConfig, sharedMemBytes);
GRAPHCAP_SAME_MEMBER(CUlaunchConfig, hStream);
GRAPHCAP_SAME_MEMBER(CUlaunchConfig, attrs);
GRAPHCAP_SAME_MEMBER(CUlaunchConfig, numAttrs);

static_assert(alignof(graphcap::CUgraphEdgeData) == alignof(::CUgraphEdgeData));
GRAPHCAP_SAME_MEMBER(CUgraphEdgeData, from_port);
GRAPHCAP_SAME_MEMBER(CUgraphEdgeData, to_port);
GRAPHCAP_SAME_MEMBER(CUgraphEdgeData, type);
GRAPHCAP_SAME_MEMBER(CUgraphEdgeData, reserved);

static_assert(alignof(graphcap::CUDA_KERNEL_NODE_PARAMS) == alignof(::CUDA_KERNEL_NODE_PARAMS));
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, func);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, gridDimX);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, gridDimY);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, gridDimZ);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, blockDimX);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, blockDimY);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, blockDimZ);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, sharedMemBytes);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, kernelParams);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, extra);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, kern);
GRAPHCAP_SAME_MEMBER(CUDA_KERNEL_NODE_PARAMS, ctx);

#undef GRAPHCAP_SAME_MEMBER

// The ABI graphcap resolves entry points at must be one these headers know (a newer cuda.h keeps
// every older version's values).
static_assert(CUDA_VERSION >= graphcap::kCudaVersion, "cuda.h is older than graphcap's CUDA ABI");

// kGraphNodeTypeCount counts every node type up to and including the last one mirrored.
static_assert(graphcap::kGraphNodeTypeCount ==
              static_cast<int>(::CU_GRAPH_NODE_TYPE_CONDITIONAL) + 1);

}  // namespace

// ---- entry_points.def against cudaTypedefs.h ----------------------------------------------------

namespace graphcap {
namespace {

// Whether one of graphcap's parameter types passes as cuda.h's does: the same type (handles,
// integers), mirrored enums of one size or mirrored structs of one size and alignment (their
// values and members are checked above), or pointers to such with the same constness. The mirrored
// enums and structs are distinct types from cuda.h's, so sameness alone cannot be asked for.
// A struct or union, not an opaque handle's (two different handles' structs are a mismatch, not a
// size).
template <class T>
concept complete_class = (std::is_class_v<T> || std::is_union_v<T>) && requires { sizeof(T); };

template <class Ours, class Theirs>
constexpr bool same_abi() {
  if constexpr (std::is_same_v<Ours, Theirs>) {
    return true;
  } else if constexpr (std::is_pointer_v<Ours> && std::is_pointer_v<Theirs>) {
    using O = std::remove_pointer_t<Ours>;
    using T = std::remove_pointer_t<Theirs>;
    return std::is_const_v<O> == std::is_const_v<T> &&
           std::is_volatile_v<O> == std::is_volatile_v<T> &&
           same_abi<std::remove_cv_t<O>, std::remove_cv_t<T>>();
  } else if constexpr (std::is_enum_v<Ours> && std::is_enum_v<Theirs>) {
    return sizeof(Ours) == sizeof(Theirs);
  } else if constexpr (complete_class<Ours> && complete_class<Theirs>) {
    return sizeof(Ours) == sizeof(Theirs) && alignof(Ours) == alignof(Theirs);
  } else {
    return false;
  }
}

template <class Fn>
struct Signature;
template <class R, class... Params>
struct Signature<R (*)(Params...)> {
  using Result = R;
  using Parameters = std::tuple<Params...>;
  static constexpr std::size_t arity = sizeof...(Params);
};

template <class Ours, class Theirs>
constexpr bool same_arity() {
  return Signature<Ours>::arity == Signature<Theirs>::arity;
}

template <class Ours, class Theirs>
constexpr bool same_parameters() {
  if constexpr (!same_arity<Ours, Theirs>()) {
    return false;
  } else {
    using O = typename Signature<Ours>::Parameters;
    using T = typename Signature<Theirs>::Parameters;
    return same_abi<typename Signature<Ours>::Result, typename Signature<Theirs>::Result>() &&
           []<std::size_t... I>(std::index_sequence<I...>) {
             return (same_abi<std::tuple_element_t<I, O>, std::tuple_element_t<I, T>>() && ...);
           }(std::make_index_sequence<Signature<Ours>::arity>{});
  }
}

// Per line: the export is the function PFN_<name>_v<version> types (so the version and the export
// agree), and the line's parameters, in graphcap's types, have that typedef's count and ABI.
// (`name` is pasted and stringized only: cuda.h's macros rename it where it is expanded.)
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...)                              \
  static_assert(std::is_same_v<decltype(&::versioned), ::PFN_##name##_v##version>,              \
                #name ": cuda.h's " #versioned " is not PFN_" #name "_v" #version);             \
  static_assert(same_arity<CUresult (*)(GRAPHCAP_PARAM_TYPES(params)),                          \
                           ::PFN_##name##_v##version>(),                                        \
                #name ": the table's parameter count differs from PFN_" #name "_v" #version);   \
  static_assert(same_parameters<CUresult (*)(GRAPHCAP_PARAM_TYPES(params)),                     \
                                ::PFN_##name##_v##version>(),                                   \
                #name ": the table's parameter types differ from PFN_" #name "_v" #version);
#include <graphcap/driver/entry_points.def>

}  // namespace
}  // namespace graphcap
