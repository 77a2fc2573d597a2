// A stand-in for libcuda, loaded by the loader tests: it exports cuGetProcAddress_v2 (and nothing
// else a loader may use) and answers for every entry point graphcap resolves with a stub that
// records its name and returns CUDA_SUCCESS. Environment variables (stub_driver_control.h) make one
// entry missing, too new, NULL or failing, so each of the loader's refusals can be provoked.
// Links no CUDA library; uses graphcap's mirrored types for the ABI.
#include <atomic>
#include <cstdlib>
#include <string_view>

#include <graphcap/driver/cuda_types.h>

#include "stub_driver_control.h"

namespace {

using namespace graphcap;  // the mirrored CUDA types, as cuda.h would spell them
namespace control = graphcap::testing::stub;

std::atomic<const char*> last_entry{""};

// Most stubs only record that they were called; the parameters are unnamed on purpose.
#define GRAPHCAP_STUB(entry, ...)       \
  CUresult entry(__VA_ARGS__) {         \
    last_entry.store(#entry);           \
    return CUDA_SUCCESS;                \
  }

GRAPHCAP_STUB(cuInit, unsigned)
GRAPHCAP_STUB(cuDeviceGetCount, int*)
GRAPHCAP_STUB(cuDeviceGetName, char*, int, CUdevice)
GRAPHCAP_STUB(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)
GRAPHCAP_STUB(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)
GRAPHCAP_STUB(cuDevicePrimaryCtxRelease, CUdevice)
GRAPHCAP_STUB(cuCtxSetCurrent, CUcontext)
GRAPHCAP_STUB(cuCtxGetCurrent, CUcontext*)
GRAPHCAP_STUB(cuStreamCreate, CUstream*, unsigned)
GRAPHCAP_STUB(cuStreamDestroy, CUstream)
GRAPHCAP_STUB(cuStreamSynchronize, CUstream)
GRAPHCAP_STUB(cuStreamQuery, CUstream)
GRAPHCAP_STUB(cuStreamWaitEvent, CUstream, CUevent, unsigned)
GRAPHCAP_STUB(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)
GRAPHCAP_STUB(cuStreamEndCapture, CUstream, CUgraph*)
GRAPHCAP_STUB(cuStreamIsCapturing, CUstream, CUstreamCaptureStatus*)
GRAPHCAP_STUB(cuStreamGetCaptureInfo, CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
              const CUgraphNode**, const CUgraphEdgeData**, std::size_t*)
GRAPHCAP_STUB(cuThreadExchangeStreamCaptureMode, CUstreamCaptureMode*)
GRAPHCAP_STUB(cuEventCreate, CUevent*, unsigned)
GRAPHCAP_STUB(cuEventDestroy, CUevent)
GRAPHCAP_STUB(cuEventRecord, CUevent, CUstream)
GRAPHCAP_STUB(cuEventQuery, CUevent)
GRAPHCAP_STUB(cuEventSynchronize, CUevent)
GRAPHCAP_STUB(cuEventElapsedTime, float*, CUevent, CUevent)
GRAPHCAP_STUB(cuMemGetInfo, std::size_t*, std::size_t*)
GRAPHCAP_STUB(cuMemAlloc, CUdeviceptr*, std::size_t)
GRAPHCAP_STUB(cuMemFree, CUdeviceptr)
GRAPHCAP_STUB(cuMemAllocAsync, CUdeviceptr*, std::size_t, CUstream)
GRAPHCAP_STUB(cuMemFreeAsync, CUdeviceptr, CUstream)
GRAPHCAP_STUB(cuMemAllocHost, void**, std::size_t)
GRAPHCAP_STUB(cuMemFreeHost, void*)
GRAPHCAP_STUB(cuMemcpyHtoDAsync, CUdeviceptr, const void*, std::size_t, CUstream)
GRAPHCAP_STUB(cuMemcpyDtoHAsync, void*, CUdeviceptr, std::size_t, CUstream)
GRAPHCAP_STUB(cuMemsetD8Async, CUdeviceptr, unsigned char, std::size_t, CUstream)
GRAPHCAP_STUB(cuModuleLoadData, CUmodule*, const void*)
GRAPHCAP_STUB(cuModuleUnload, CUmodule)
GRAPHCAP_STUB(cuModuleGetFunction, CUfunction*, CUmodule, const char*)
GRAPHCAP_STUB(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
              unsigned, unsigned, CUstream, void**, void**)
GRAPHCAP_STUB(cuGraphGetNodes, CUgraph, CUgraphNode*, std::size_t*)
GRAPHCAP_STUB(cuGraphNodeGetType, CUgraphNode, CUgraphNodeType*)
GRAPHCAP_STUB(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)
GRAPHCAP_STUB(cuGraphUpload, CUgraphExec, CUstream)
GRAPHCAP_STUB(cuGraphLaunch, CUgraphExec, CUstream)
GRAPHCAP_STUB(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*)
GRAPHCAP_STUB(cuGraphDestroy, CUgraph)
GRAPHCAP_STUB(cuGraphExecDestroy, CUgraphExec)
GRAPHCAP_STUB(cuGraphDebugDotPrint, CUgraph, const char*, unsigned)
GRAPHCAP_STUB(cuGetErrorName, CUresult, const char**)
GRAPHCAP_STUB(cuGetErrorString, CUresult, const char**)

#undef GRAPHCAP_STUB

// The stubs whose outputs the tests read back.
CUresult cuDriverGetVersion(int* version) {
  last_entry.store("cuDriverGetVersion");
  const char* text = std::getenv(control::kDriverVersionVar);
  *version = text != nullptr ? std::atoi(text) : control::kStubVersion;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  last_entry.store("cuDeviceGet");
  *device = ordinal + control::kDeviceOffset;
  return CUDA_SUCCESS;
}

// The CUDA 13.0 ABI (cuCtxSynchronize_v2) takes the context; graphcap passes NULL (the current).
CUresult cuCtxSynchronize(CUcontext context) {
  last_entry.store("cuCtxSynchronize");
  return context == nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

struct Entry {
  std::string_view name;
  void* function;
};

template <class Fn>
void* address(Fn* function) {
  return reinterpret_cast<void*>(function);
}

const Entry kEntries[] = {
    {"cuInit", address(&cuInit)},
    {"cuDriverGetVersion", address(&cuDriverGetVersion)},
    {"cuDeviceGetCount", address(&cuDeviceGetCount)},
    {"cuDeviceGet", address(&cuDeviceGet)},
    {"cuDeviceGetName", address(&cuDeviceGetName)},
    {"cuDeviceGetAttribute", address(&cuDeviceGetAttribute)},
    {"cuDevicePrimaryCtxRetain", address(&cuDevicePrimaryCtxRetain)},
    {"cuDevicePrimaryCtxRelease", address(&cuDevicePrimaryCtxRelease)},
    {"cuCtxSetCurrent", address(&cuCtxSetCurrent)},
    {"cuCtxGetCurrent", address(&cuCtxGetCurrent)},
    {"cuCtxSynchronize", address(&cuCtxSynchronize)},
    {"cuStreamCreate", address(&cuStreamCreate)},
    {"cuStreamDestroy", address(&cuStreamDestroy)},
    {"cuStreamSynchronize", address(&cuStreamSynchronize)},
    {"cuStreamQuery", address(&cuStreamQuery)},
    {"cuStreamWaitEvent", address(&cuStreamWaitEvent)},
    {"cuStreamBeginCapture", address(&cuStreamBeginCapture)},
    {"cuStreamEndCapture", address(&cuStreamEndCapture)},
    {"cuStreamIsCapturing", address(&cuStreamIsCapturing)},
    {"cuStreamGetCaptureInfo", address(&cuStreamGetCaptureInfo)},
    {"cuThreadExchangeStreamCaptureMode", address(&cuThreadExchangeStreamCaptureMode)},
    {"cuEventCreate", address(&cuEventCreate)},
    {"cuEventDestroy", address(&cuEventDestroy)},
    {"cuEventRecord", address(&cuEventRecord)},
    {"cuEventQuery", address(&cuEventQuery)},
    {"cuEventSynchronize", address(&cuEventSynchronize)},
    {"cuEventElapsedTime", address(&cuEventElapsedTime)},
    {"cuMemGetInfo", address(&cuMemGetInfo)},
    {"cuMemAlloc", address(&cuMemAlloc)},
    {"cuMemFree", address(&cuMemFree)},
    {"cuMemAllocAsync", address(&cuMemAllocAsync)},
    {"cuMemFreeAsync", address(&cuMemFreeAsync)},
    {"cuMemAllocHost", address(&cuMemAllocHost)},
    {"cuMemFreeHost", address(&cuMemFreeHost)},
    {"cuMemcpyHtoDAsync", address(&cuMemcpyHtoDAsync)},
    {"cuMemcpyDtoHAsync", address(&cuMemcpyDtoHAsync)},
    {"cuMemsetD8Async", address(&cuMemsetD8Async)},
    {"cuModuleLoadData", address(&cuModuleLoadData)},
    {"cuModuleUnload", address(&cuModuleUnload)},
    {"cuModuleGetFunction", address(&cuModuleGetFunction)},
    {"cuLaunchKernel", address(&cuLaunchKernel)},
    {"cuGraphGetNodes", address(&cuGraphGetNodes)},
    {"cuGraphNodeGetType", address(&cuGraphNodeGetType)},
    {"cuGraphInstantiateWithFlags", address(&cuGraphInstantiateWithFlags)},
    {"cuGraphUpload", address(&cuGraphUpload)},
    {"cuGraphLaunch", address(&cuGraphLaunch)},
    {"cuGraphExecUpdate", address(&cuGraphExecUpdate)},
    {"cuGraphDestroy", address(&cuGraphDestroy)},
    {"cuGraphExecDestroy", address(&cuGraphExecDestroy)},
    {"cuGraphDebugDotPrint", address(&cuGraphDebugDotPrint)},
    {"cuGetErrorName", address(&cuGetErrorName)},
    {"cuGetErrorString", address(&cuGetErrorString)},
};

bool named_by(const char* variable, std::string_view symbol) {
  const char* value = std::getenv(variable);
  return value != nullptr && symbol == value;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** function, int cuda_version, cuuint64_t flags,
    CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *function = nullptr;
  const std::string_view name(symbol);
  if (named_by(control::kQueryFailsVar, name)) return CUDA_ERROR_INVALID_VALUE;

  // As the real driver does, an unknown name or a too-old version is a status, not an error.
  CUdriverProcAddressQueryResult result = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  for (const Entry& entry : kEntries) {
    if (entry.name != name || named_by(control::kMissingVar, name)) continue;
    if (cuda_version != control::kStubVersion || flags != CU_GET_PROC_ADDRESS_DEFAULT ||
        named_by(control::kTooNewVar, name)) {
      result = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    } else {
      result = CU_GET_PROC_ADDRESS_SUCCESS;
      if (!named_by(control::kNullVar, name)) *function = entry.function;
    }
  }
  if (status != nullptr) *status = result;
  return CUDA_SUCCESS;
}

extern "C" __attribute__((visibility("default"))) const char* graphcap_stub_last_entry() {
  return last_entry.load();
}
