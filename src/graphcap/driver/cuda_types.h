// CUDA driver types mirrored in namespace graphcap: same names, values and layouts as CUDA 13.0's
// cuda.h, so graphcap builds and links with no CUDA toolkit and its handles are cuda.h's handles
// (the opaque structs are the same global types). cuda_types_check.cc static_asserts every value
// against cuda.h where the toolkit is present.
//
// cuda.h defines some names as macros (CU_STREAM_LEGACY, CU_LAUNCH_PARAM_END, ...): those are
// deliberately not mirrored under their own names, so this header can follow cuda.h in any order.
#pragma once

#include <cstddef>
#include <cstdint>

// The opaque handle types, declared at global scope exactly as cuda.h declares them.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphNode_st;
struct CUgraphExec_st;
struct CUkern_st;

namespace graphcap {

using cuuint32_t = std::uint32_t;
using cuuint64_t = std::uint64_t;
using CUdeviceptr = unsigned long long;
using CUdevice = int;
using CUcontext = ::CUctx_st*;
using CUmodule = ::CUmod_st*;
using CUfunction = ::CUfunc_st*;
using CUstream = ::CUstream_st*;
using CUevent = ::CUevent_st*;
using CUgraph = ::CUgraph_st*;
using CUgraphNode = ::CUgraphNode_st*;
using CUgraphExec = ::CUgraphExec_st*;
using CUkernel = ::CUkern_st*;

// cuda.h's CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are macros; these are their values.
inline CUstream stream_legacy() noexcept { return reinterpret_cast<CUstream>(std::uintptr_t{0x1}); }
inline CUstream stream_per_thread() noexcept { return reinterpret_cast<CUstream>(std::uintptr_t{0x2}); }

enum CUresult : int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_SOURCE = 300,
  CUDA_ERROR_FILE_NOT_FOUND = 301,
  CUDA_ERROR_OPERATING_SYSTEM = 304,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_ILLEGAL_STATE = 401,
  CUDA_ERROR_LOSSY_QUERY = 402,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
  CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
  CUDA_ERROR_ASSERT = 710,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_PERMITTED = 800,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_STREAM_CAPTURE_MERGE = 902,
  CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903,
  CUDA_ERROR_STREAM_CAPTURE_UNJOINED = 904,
  CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905,
  CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
  CUDA_ERROR_CAPTURED_EVENT = 907,
  CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908,
  CUDA_ERROR_TIMEOUT = 909,
  CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910,
  CUDA_ERROR_UNKNOWN = 999,
};

enum CUstream_flags : unsigned {
  CU_STREAM_DEFAULT = 0x0,
  CU_STREAM_NON_BLOCKING = 0x1,
};

enum CUevent_flags : unsigned {
  CU_EVENT_DEFAULT = 0x0,
  CU_EVENT_BLOCKING_SYNC = 0x1,
  CU_EVENT_DISABLE_TIMING = 0x2,
  CU_EVENT_INTERPROCESS = 0x4,
};

enum CUevent_wait_flags : unsigned {
  CU_EVENT_WAIT_DEFAULT = 0x0,
  CU_EVENT_WAIT_EXTERNAL = 0x1,
};

enum CUstreamCaptureMode : int {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2,
};

enum CUstreamCaptureStatus : int {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
};

enum CUgraphNodeType : int {
  CU_GRAPH_NODE_TYPE_KERNEL = 0,
  CU_GRAPH_NODE_TYPE_MEMCPY = 1,
  CU_GRAPH_NODE_TYPE_MEMSET = 2,
  CU_GRAPH_NODE_TYPE_HOST = 3,
  CU_GRAPH_NODE_TYPE_GRAPH = 4,
  CU_GRAPH_NODE_TYPE_EMPTY = 5,
  CU_GRAPH_NODE_TYPE_WAIT_EVENT = 6,
  CU_GRAPH_NODE_TYPE_EVENT_RECORD = 7,
  CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL = 8,
  CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT = 9,
  CU_GRAPH_NODE_TYPE_MEM_ALLOC = 10,
  CU_GRAPH_NODE_TYPE_MEM_FREE = 11,
  CU_GRAPH_NODE_TYPE_BATCH_MEM_OP = 12,
  CU_GRAPH_NODE_TYPE_CONDITIONAL = 13,
};
inline constexpr int kGraphNodeTypeCount = 14;

enum CUgraphInstantiate_flags : unsigned long long {
  CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH = 1,
  CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD = 2,
  CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH = 4,
  CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY = 8,
};

// What cuGraphInstantiateWithParams reports in CUDA_GRAPH_INSTANTIATE_PARAMS::result_out.
enum CUgraphInstantiateResult : int {
  CUDA_GRAPH_INSTANTIATE_SUCCESS = 0,
  CUDA_GRAPH_INSTANTIATE_ERROR = 1,
  CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE = 2,
  CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED = 3,
  CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED = 4,
  CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED = 5,
};

struct CUDA_GRAPH_INSTANTIATE_PARAMS {
  cuuint64_t flags;
  CUstream hUploadStream;    // read with CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD only
  CUgraphNode hErrNode_out;  // written by the driver: the node that failed, or NULL
  CUgraphInstantiateResult result_out;  // written by the driver
};

enum CUgraphExecUpdateResult : int {
  CU_GRAPH_EXEC_UPDATE_SUCCESS = 0x0,
  CU_GRAPH_EXEC_UPDATE_ERROR = 0x1,
  CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED = 0x2,
  CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED = 0x3,
  CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED = 0x4,
  CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED = 0x5,
  CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED = 0x6,
  CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE = 0x7,
  CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED = 0x8,
};

struct CUgraphExecUpdateResultInfo {
  CUgraphExecUpdateResult result;
  CUgraphNode errorNode;
  CUgraphNode errorFromNode;
};

// cuda.h's CUDA_KERNEL_NODE_PARAMS (its _v2 layout, what cuGraphExecKernelNodeSetParams_v2 reads).
struct CUDA_KERNEL_NODE_PARAMS {
  CUfunction func;
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  void** kernelParams;
  void** extra;
  CUkernel kern;
  CUcontext ctx;
};

struct CUgraphEdgeData {
  unsigned char from_port;
  unsigned char to_port;
  unsigned char type;
  unsigned char reserved[5];
};

enum CUgraphDependencyType : int {
  CU_GRAPH_DEPENDENCY_TYPE_DEFAULT = 0,
  CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC = 1,
};
// cuda.h's CU_GRAPH_KERNEL_NODE_PORT_* (macros there): a kernel node's outgoing ports.
inline constexpr unsigned char kGraphKernelNodePortDefault = 0;
inline constexpr unsigned char kGraphKernelNodePortProgrammatic = 1;
inline constexpr unsigned char kGraphKernelNodePortLaunchOrder = 2;

// Launch attributes (cuLaunchKernelEx, cuGraphKernelNodeGetAttribute): graphcap uses programmatic
// stream serialization and priority; the other IDs are listed so their values are checked.
enum CUlaunchAttributeID : int {
  CU_LAUNCH_ATTRIBUTE_IGNORE = 0,
  CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1,
  CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
  CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY = 3,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT = 7,
  CU_LAUNCH_ATTRIBUTE_PRIORITY = 8,
};

// cuda.h's CUlaunchAttributeValue, with the members graphcap reads or writes (the rest is the
// 64 bytes of padding every value has).
union CUlaunchAttributeValue {
  char pad[64];
  int cooperative;
  int programmaticStreamSerializationAllowed;
  struct {
    CUevent event;
    int flags;
    int triggerAtBlockStart;
  } programmaticEvent;
  int priority;
};

struct CUlaunchAttribute {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];
  CUlaunchAttributeValue value;
};

struct CUlaunchConfig {
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;  // may be NULL when numAttrs is 0
  unsigned int numAttrs;
};

// Conditional nodes (a WHILE loop recorded inside a capture).
using CUgraphConditionalHandle = cuuint64_t;

enum CUgraphConditionalNodeType : int {
  CU_GRAPH_COND_TYPE_IF = 0,
  CU_GRAPH_COND_TYPE_WHILE = 1,
  CU_GRAPH_COND_TYPE_SWITCH = 2,
};
// cuda.h's CU_GRAPH_COND_ASSIGN_DEFAULT (a macro there): the default value is assigned at the
// start of every launch of the executable.
inline constexpr unsigned kGraphCondAssignDefault = 0x1;

enum CUstreamUpdateCaptureDependencies_flags : unsigned {
  CU_STREAM_ADD_CAPTURE_DEPENDENCIES = 0x0,
  CU_STREAM_SET_CAPTURE_DEPENDENCIES = 0x1,
};

struct CUDA_CONDITIONAL_NODE_PARAMS {
  CUgraphConditionalHandle handle;
  CUgraphConditionalNodeType type;
  unsigned int size;
  CUgraph* phGraph_out;  // written by the driver: the node's body graphs, owned by the node
  CUcontext ctx;
};

// cuda.h's CUgraphNodeParams, with the one union member graphcap fills (the rest is padding that
// must be zero).
struct CUgraphNodeParams {
  CUgraphNodeType type;
  int reserved0[3];
  union {
    long long reserved1[29];
    CUDA_CONDITIONAL_NODE_PARAMS conditional;
  };
  long long reserved2;
};

// Virtual memory management: a reserved address range, physical allocations created apart and
// mapped into it (graph pools, docs/cuda-driver-facts.md "Virtual memory management").
using CUmemGenericAllocationHandle = unsigned long long;

enum CUmemAllocationHandleType : int {
  CU_MEM_HANDLE_TYPE_NONE = 0x0,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
};

enum CUmemAccess_flags : int {
  CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
  CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
};

enum CUmemLocationType : int {
  CU_MEM_LOCATION_TYPE_INVALID = 0x0,
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
};

enum CUmemAllocationType : int {
  CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
  CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
};

enum CUmemAllocationGranularity_flags : int {
  CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1,
};

struct CUmemLocation {
  CUmemLocationType type;
  int id;  // the device ordinal, for CU_MEM_LOCATION_TYPE_DEVICE
};

struct CUmemAllocationProp {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;  // must be NULL off Windows
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};

struct CUmemAccessDesc {
  CUmemLocation location;
  CUmemAccess_flags flags;
};

enum CUdevice_attribute : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
};

enum CUfunction_attribute : int {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
  CU_FUNC_ATTRIBUTE_CACHE_MODE_CA = 7,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
};

enum CUgraphDebugDot_flags : unsigned {
  CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE = 1 << 0,
};

enum CUdriverProcAddress_flags : unsigned long long {
  CU_GET_PROC_ADDRESS_DEFAULT = 0,
};

enum CUdriverProcAddressQueryResult : int {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

// The oldest CUDA driver graphcap accepts (load_cuda_driver refuses older ones), and the newest
// version any entry point is asked for at (entry_points.def's version column never exceeds it).
inline constexpr int kCudaVersion = 13000;

}  // namespace graphcap
