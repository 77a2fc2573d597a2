// ObservingDriver: a DriverApi that forwards every call to another one and remembers the last
// executable cuGraphInstantiateWithFlags created, plus a count of calls.
//
// Why: the replay benchmarks compare Graph::replay() against cuGraphLaunch of the very same
// CUgraphExec on the very same stream, and graphcap's public API does not hand out the
// executable of a Graph. The device is opened on this driver, so it sees the instantiation.
// Both sides of the comparison call through this object (graphcap's replay reaches it through
// its DriverApi&, the raw side calls its cuGraphLaunch directly), so the forwarding costs both
// the same one indirect call.
#pragma once

#include <cstddef>

#include <graphcap/driver/driver_api.h>

namespace graphcap::bench {

class ObservingDriver final : public DriverApi {
 public:
  explicit ObservingDriver(DriverApi& inner) noexcept : inner_(&inner) {}

  DriverApi& inner() const noexcept { return *inner_; }
  // The executable of the most recent successful cuGraphInstantiateWithFlags (nullptr: none).
  CUgraphExec last_exec() const noexcept { return last_exec_; }
  // Every DriverApi call made through this object so far.
  std::size_t calls() const noexcept { return calls_; }

  const char* name() const noexcept override { return inner_->name(); }

  CUresult cuInit(unsigned flags) override { return count(), inner_->cuInit(flags); }
  CUresult cuDriverGetVersion(int* version) override {
    return count(), inner_->cuDriverGetVersion(version);
  }
  CUresult cuDeviceGetCount(int* n) override { return count(), inner_->cuDeviceGetCount(n); }
  CUresult cuDeviceGet(CUdevice* device, int ordinal) override {
    return count(), inner_->cuDeviceGet(device, ordinal);
  }
  CUresult cuDeviceGetName(char* name, int len, CUdevice device) override {
    return count(), inner_->cuDeviceGetName(name, len, device);
  }
  CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                CUdevice device) override {
    return count(), inner_->cuDeviceGetAttribute(value, attribute, device);
  }
  CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) override {
    return count(), inner_->cuDevicePrimaryCtxRetain(context, device);
  }
  CUresult cuDevicePrimaryCtxRelease(CUdevice device) override {
    return count(), inner_->cuDevicePrimaryCtxRelease(device);
  }
  CUresult cuCtxSetCurrent(CUcontext context) override {
    return count(), inner_->cuCtxSetCurrent(context);
  }
  CUresult cuCtxGetCurrent(CUcontext* context) override {
    return count(), inner_->cuCtxGetCurrent(context);
  }
  CUresult cuCtxSynchronize() override { return count(), inner_->cuCtxSynchronize(); }

  CUresult cuStreamCreate(CUstream* stream, unsigned flags) override {
    return count(), inner_->cuStreamCreate(stream, flags);
  }
  CUresult cuStreamDestroy(CUstream stream) override {
    return count(), inner_->cuStreamDestroy(stream);
  }
  CUresult cuStreamSynchronize(CUstream stream) override {
    return count(), inner_->cuStreamSynchronize(stream);
  }
  CUresult cuStreamQuery(CUstream stream) override {
    return count(), inner_->cuStreamQuery(stream);
  }
  CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) override {
    return count(), inner_->cuStreamWaitEvent(stream, event, flags);
  }
  CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) override {
    return count(), inner_->cuStreamBeginCapture(stream, mode);
  }
  CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) override {
    return count(), inner_->cuStreamEndCapture(stream, graph);
  }
  CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) override {
    return count(), inner_->cuStreamIsCapturing(stream, status);
  }
  CUresult cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                                  CUgraph* graph, const CUgraphNode** dependencies,
                                  const CUgraphEdgeData** edge_data,
                                  std::size_t* dependency_count) override {
    return count(), inner_->cuStreamGetCaptureInfo(stream, status, id, graph, dependencies,
                                                   edge_data, dependency_count);
  }
  CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) override {
    return count(), inner_->cuThreadExchangeStreamCaptureMode(mode);
  }

  CUresult cuEventCreate(CUevent* event, unsigned flags) override {
    return count(), inner_->cuEventCreate(event, flags);
  }
  CUresult cuEventDestroy(CUevent event) override {
    return count(), inner_->cuEventDestroy(event);
  }
  CUresult cuEventRecord(CUevent event, CUstream stream) override {
    return count(), inner_->cuEventRecord(event, stream);
  }
  CUresult cuEventQuery(CUevent event) override { return count(), inner_->cuEventQuery(event); }
  CUresult cuEventSynchronize(CUevent event) override {
    return count(), inner_->cuEventSynchronize(event);
  }
  CUresult cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) override {
    return count(), inner_->cuEventElapsedTime(milliseconds, start, end);
  }

  CUresult cuMemGetInfo(std::size_t* free, std::size_t* total) override {
    return count(), inner_->cuMemGetInfo(free, total);
  }
  CUresult cuMemAlloc(CUdeviceptr* pointer, std::size_t bytes) override {
    return count(), inner_->cuMemAlloc(pointer, bytes);
  }
  CUresult cuMemFree(CUdeviceptr pointer) override {
    return count(), inner_->cuMemFree(pointer);
  }
  CUresult cuMemAllocAsync(CUdeviceptr* pointer, std::size_t bytes, CUstream stream) override {
    return count(), inner_->cuMemAllocAsync(pointer, bytes, stream);
  }
  CUresult cuMemFreeAsync(CUdeviceptr pointer, CUstream stream) override {
    return count(), inner_->cuMemFreeAsync(pointer, stream);
  }
  CUresult cuMemAllocHost(void** pointer, std::size_t bytes) override {
    return count(), inner_->cuMemAllocHost(pointer, bytes);
  }
  CUresult cuMemFreeHost(void* pointer) override {
    return count(), inner_->cuMemFreeHost(pointer);
  }
  CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, std::size_t bytes,
                             CUstream stream) override {
    return count(), inner_->cuMemcpyHtoDAsync(dst, src, bytes, stream);
  }
  CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, std::size_t bytes,
                             CUstream stream) override {
    return count(), inner_->cuMemcpyDtoHAsync(dst, src, bytes, stream);
  }
  CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, std::size_t n,
                           CUstream stream) override {
    return count(), inner_->cuMemsetD8Async(dst, value, n, stream);
  }

  CUresult cuModuleLoadData(CUmodule* module, const void* image) override {
    return count(), inner_->cuModuleLoadData(module, image);
  }
  CUresult cuModuleUnload(CUmodule module) override {
    return count(), inner_->cuModuleUnload(module);
  }
  CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) override {
    return count(), inner_->cuModuleGetFunction(function, module, name);
  }
  CUresult cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                          unsigned block_x, unsigned block_y, unsigned block_z,
                          unsigned shared_bytes, CUstream stream, void** params,
                          void** extra) override {
    return count(), inner_->cuLaunchKernel(function, grid_x, grid_y, grid_z, block_x, block_y,
                                           block_z, shared_bytes, stream, params, extra);
  }

  CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, std::size_t* n) override {
    return count(), inner_->cuGraphGetNodes(graph, nodes, n);
  }
  CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) override {
    return count(), inner_->cuGraphNodeGetType(node, type);
  }
  CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                       unsigned long long flags) override {
    count();
    const CUresult result = inner_->cuGraphInstantiateWithFlags(exec, graph, flags);
    if (result == CUDA_SUCCESS && exec != nullptr) last_exec_ = *exec;
    return result;
  }
  CUresult cuGraphUpload(CUgraphExec exec, CUstream stream) override {
    return count(), inner_->cuGraphUpload(exec, stream);
  }
  CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) override {
    return count(), inner_->cuGraphLaunch(exec, stream);
  }
  CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph graph,
                             CUgraphExecUpdateResultInfo* info) override {
    return count(), inner_->cuGraphExecUpdate(exec, graph, info);
  }
  CUresult cuGraphDestroy(CUgraph graph) override {
    return count(), inner_->cuGraphDestroy(graph);
  }
  CUresult cuGraphExecDestroy(CUgraphExec exec) override {
    if (exec == last_exec_) last_exec_ = nullptr;
    return count(), inner_->cuGraphExecDestroy(exec);
  }
  CUresult cuGraphDebugDotPrint(CUgraph graph, const char* path, unsigned flags) override {
    return count(), inner_->cuGraphDebugDotPrint(graph, path, flags);
  }

  CUresult cuGetErrorName(CUresult error, const char** text) override {
    return count(), inner_->cuGetErrorName(error, text);
  }
  CUresult cuGetErrorString(CUresult error, const char** text) override {
    return count(), inner_->cuGetErrorString(error, text);
  }

 private:
  void count() noexcept { ++calls_; }

  DriverApi* inner_;
  CUgraphExec last_exec_ = nullptr;
  std::size_t calls_ = 0;  // single-threaded use: the benchmarks run on one thread
};

}  // namespace graphcap::bench
