// DriverApi: every CUDA driver entry point graphcap uses, one pure virtual each, named as in cuda.h
// without version suffixes and taking cuda.h's arguments (the CUDA 13.0 ABI of each). The real
// driver (load_cuda_driver) forwards to libcuda; graphcap::fake::FakeDriver simulates it. Nothing in
// graphcap calls CUDA any other way, so every test runs against either.
#pragma once

#include <cstddef>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

class DriverApi {
 public:
  virtual ~DriverApi() = default;

  // A short name for messages and test names: "cuda" or "fake".
  virtual const char* name() const noexcept = 0;

  // Initialization, devices, contexts.
  virtual CUresult cuInit(unsigned flags) = 0;
  virtual CUresult cuDriverGetVersion(int* version) = 0;
  virtual CUresult cuDeviceGetCount(int* count) = 0;
  virtual CUresult cuDeviceGet(CUdevice* device, int ordinal) = 0;
  virtual CUresult cuDeviceGetName(char* name, int len, CUdevice device) = 0;
  virtual CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                        CUdevice device) = 0;
  virtual CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) = 0;
  virtual CUresult cuDevicePrimaryCtxRelease(CUdevice device) = 0;
  virtual CUresult cuCtxSetCurrent(CUcontext context) = 0;
  virtual CUresult cuCtxGetCurrent(CUcontext* context) = 0;
  virtual CUresult cuCtxSynchronize() = 0;

  // Streams and capture.
  virtual CUresult cuStreamCreate(CUstream* stream, unsigned flags) = 0;
  virtual CUresult cuStreamDestroy(CUstream stream) = 0;
  virtual CUresult cuStreamSynchronize(CUstream stream) = 0;
  virtual CUresult cuStreamQuery(CUstream stream) = 0;
  virtual CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) = 0;
  virtual CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) = 0;
  virtual CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) = 0;
  virtual CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) = 0;
  virtual CUresult cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status,
                                          cuuint64_t* id, CUgraph* graph,
                                          const CUgraphNode** dependencies,
                                          const CUgraphEdgeData** edge_data,
                                          std::size_t* dependency_count) = 0;
  virtual CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) = 0;

  // Events.
  virtual CUresult cuEventCreate(CUevent* event, unsigned flags) = 0;
  virtual CUresult cuEventDestroy(CUevent event) = 0;
  virtual CUresult cuEventRecord(CUevent event, CUstream stream) = 0;
  virtual CUresult cuEventQuery(CUevent event) = 0;
  virtual CUresult cuEventSynchronize(CUevent event) = 0;
  virtual CUresult cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) = 0;

  // Memory.
  virtual CUresult cuMemGetInfo(std::size_t* free, std::size_t* total) = 0;
  virtual CUresult cuMemAlloc(CUdeviceptr* pointer, std::size_t bytes) = 0;
  virtual CUresult cuMemFree(CUdeviceptr pointer) = 0;
  virtual CUresult cuMemAllocAsync(CUdeviceptr* pointer, std::size_t bytes, CUstream stream) = 0;
  virtual CUresult cuMemFreeAsync(CUdeviceptr pointer, CUstream stream) = 0;
  virtual CUresult cuMemAllocHost(void** pointer, std::size_t bytes) = 0;
  virtual CUresult cuMemFreeHost(void* pointer) = 0;
  virtual CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, std::size_t bytes,
                                     CUstream stream) = 0;
  virtual CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, std::size_t bytes,
                                     CUstream stream) = 0;
  virtual CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, std::size_t count,
                                   CUstream stream) = 0;

  // Modules and launches.
  virtual CUresult cuModuleLoadData(CUmodule* module, const void* image) = 0;
  virtual CUresult cuModuleUnload(CUmodule module) = 0;
  virtual CUresult cuModuleGetFunction(CUfunction* function, CUmodule module,
                                       const char* name) = 0;
  virtual CUresult cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y,
                                  unsigned grid_z, unsigned block_x, unsigned block_y,
                                  unsigned block_z, unsigned shared_bytes, CUstream stream,
                                  void** params, void** extra) = 0;

  // Graphs.
  virtual CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, std::size_t* count) = 0;
  virtual CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) = 0;
  virtual CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                               unsigned long long flags) = 0;
  virtual CUresult cuGraphUpload(CUgraphExec exec, CUstream stream) = 0;
  virtual CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) = 0;
  virtual CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph graph,
                                     CUgraphExecUpdateResultInfo* info) = 0;
  virtual CUresult cuGraphDestroy(CUgraph graph) = 0;
  virtual CUresult cuGraphExecDestroy(CUgraphExec exec) = 0;
  virtual CUresult cuGraphDebugDotPrint(CUgraph graph, const char* path, unsigned flags) = 0;

  // Errors.
  virtual CUresult cuGetErrorName(CUresult error, const char** name) = 0;
  virtual CUresult cuGetErrorString(CUresult error, const char** text) = 0;
};

}  // namespace graphcap
