// How the loader tests steer the stub driver (stub_cuda_driver.cc), a shared library exporting
// cuGetProcAddress_v2 that hands out a stub for every entry point graphcap resolves. Each variable
// is read on every query, so a test sets it, loads, and unsets it.
#pragma once

#include <array>
#include <string_view>

namespace graphcap::testing::stub {

// The named entry point is unknown: CUDA_SUCCESS, NULL, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND.
inline constexpr const char* kMissingVar = "GRAPHCAP_STUB_MISSING";
// The named entry point needs a newer CUDA: CUDA_SUCCESS, NULL,
// CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT.
inline constexpr const char* kTooNewVar = "GRAPHCAP_STUB_TOO_NEW";
// The query for the named entry point itself fails: CUDA_ERROR_INVALID_VALUE.
inline constexpr const char* kQueryFailsVar = "GRAPHCAP_STUB_QUERY_FAILS";
// The named entry point "resolves" to NULL with a success status (a broken driver).
inline constexpr const char* kNullVar = "GRAPHCAP_STUB_NULL";
// What the stub's cuDriverGetVersion reports (13000 when unset).
inline constexpr const char* kDriverVersionVar = "GRAPHCAP_STUB_DRIVER_VERSION";

// What the stub's cuDriverGetVersion reports by default, and the only version (with flags 0) its
// cuGetProcAddress_v2 answers: a loader asking for anything else gets VERSION_NOT_SUFFICIENT.
inline constexpr int kStubVersion = 13000;
// What the stub's cuDeviceGet writes: the ordinal plus this, so forwarding of arguments shows.
inline constexpr int kDeviceOffset = 100;

// Exported by the stub (look up with dlsym): the base name of the last stub entry point called.
inline constexpr const char* kLastEntrySymbol = "graphcap_stub_last_entry";
using LastEntryFn = const char* (*)();

// Every entry point DriverApi declares, by cuda.h base name. The stub serves exactly these.
inline constexpr std::array<std::string_view, 52> kEntryPoints = {
    "cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName",
    "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease",
    "cuCtxSetCurrent", "cuCtxGetCurrent", "cuCtxSynchronize",
    "cuStreamCreate", "cuStreamDestroy", "cuStreamSynchronize", "cuStreamQuery",
    "cuStreamWaitEvent", "cuStreamBeginCapture", "cuStreamEndCapture", "cuStreamIsCapturing",
    "cuStreamGetCaptureInfo", "cuThreadExchangeStreamCaptureMode",
    "cuEventCreate", "cuEventDestroy", "cuEventRecord", "cuEventQuery", "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuMemGetInfo", "cuMemAlloc", "cuMemFree", "cuMemAllocAsync", "cuMemFreeAsync",
    "cuMemAllocHost", "cuMemFreeHost", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync",
    "cuMemsetD8Async",
    "cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction", "cuLaunchKernel",
    "cuGraphGetNodes", "cuGraphNodeGetType", "cuGraphInstantiateWithFlags", "cuGraphUpload",
    "cuGraphLaunch", "cuGraphExecUpdate", "cuGraphDestroy", "cuGraphExecDestroy",
    "cuGraphDebugDotPrint",
    "cuGetErrorName", "cuGetErrorString",
};

}  // namespace graphcap::testing::stub
