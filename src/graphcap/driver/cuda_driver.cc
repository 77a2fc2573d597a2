#include <graphcap/driver/cuda_driver.h>

#include <dlfcn.h>

#include <string>
#include <utility>

#include <graphcap/try.h>
#include <graphcap/driver/error_names.h>

namespace graphcap {
namespace {

// cuGetProcAddress_v2 (cuda.h's cuGetProcAddress): the one symbol looked up with dlsym.
using GetProcAddressFn = CUresult (*)(const char* symbol, void** function, int cuda_version,
                                      cuuint64_t flags, CUdriverProcAddressQueryResult* status);
constexpr const char* kGetProcAddressSymbol = "cuGetProcAddress_v2";

// Every entry point, typed as the ABI its base name resolves to at CUDA 13.0: cudaTypedefs.h's
// newest PFN_<name>_v<version> not above 13000. Where cuda.h's plain name is a macro for a
// versioned export, the comment names that export.
struct EntryPoints {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);  // _v2
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  // At 13000 this is cuCtxSynchronize_v2, which takes the context to wait for (NULL: current).
  CUresult (*cuCtxSynchronize)(CUcontext);

  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);  // _v2
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamQuery)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuStreamBeginCapture)(CUstream, CUstreamCaptureMode);  // _v2
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*);
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*);
  CUresult (*cuStreamGetCaptureInfo)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                     const CUgraphNode**, const CUgraphEdgeData**,
                                     std::size_t*);  // _v3
  CUresult (*cuThreadExchangeStreamCaptureMode)(CUstreamCaptureMode*);

  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventDestroy)(CUevent);  // _v2
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);  // _v2

  CUresult (*cuMemGetInfo)(std::size_t*, std::size_t*);  // _v2
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t);     // _v2
  CUresult (*cuMemFree)(CUdeviceptr);                    // _v2
  CUresult (*cuMemAllocAsync)(CUdeviceptr*, std::size_t, CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuMemAllocHost)(void**, std::size_t);  // _v2
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, std::size_t, CUstream);  // _v2
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, std::size_t, CUstream);        // _v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, std::size_t, CUstream);

  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);

  CUresult (*cuGraphGetNodes)(CUgraph, CUgraphNode*, std::size_t*);
  CUresult (*cuGraphNodeGetType)(CUgraphNode, CUgraphNodeType*);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphUpload)(CUgraphExec, CUstream);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecUpdate)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*);  // _v2
  CUresult (*cuGraphDestroy)(CUgraph);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDebugDotPrint)(CUgraph, const char*, unsigned);

  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

// The dlopen handle, closed exactly once.
class Library {
 public:
  explicit Library(void* handle) noexcept : handle_(handle) {}
  Library(Library&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Library& operator=(Library&&) = delete;
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  void* get() const noexcept { return handle_; }

 private:
  void* handle_;
};

const char* query_result_name(CUdriverProcAddressQueryResult status) noexcept {
  switch (status) {
    case CU_GET_PROC_ADDRESS_SUCCESS: return "CU_GET_PROC_ADDRESS_SUCCESS";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: return "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
      return "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT";
  }
  return "an unknown CUdriverProcAddressQueryResult";
}

Error not_found(const std::string& library, const std::string& what) {
  return Error(Errc::driver_not_found, "load_cuda_driver(" + library + "): " + what);
}

// Resolves one entry point by base name at graphcap's CUDA version into `out`.
template <class Fn>
Result<void> resolve(GetProcAddressFn get_proc_address, const std::string& library,
                     const char* name, Fn& out) {
  void* function = nullptr;
  auto status = static_cast<CUdriverProcAddressQueryResult>(-1);
  const CUresult query = get_proc_address(name, &function, kCudaVersion,
                                          CU_GET_PROC_ADDRESS_DEFAULT, &status);
  const std::string entry = std::string("entry point ") + name + ": ";
  const std::string version = " (asked for CUDA " + std::to_string(kCudaVersion) + ")";
  if (query != CUDA_SUCCESS) {
    return not_found(library, entry + kGetProcAddressSymbol + " failed with " +
                                  describe_cu_result(query) + version);
  }
  if (status != CU_GET_PROC_ADDRESS_SUCCESS) {
    return not_found(library, entry + query_result_name(status) + version);
  }
  if (function == nullptr) {
    return not_found(library, entry + "resolved to NULL" + version);
  }
  // POSIX guarantees object and function pointers convert; the driver hands out the latter.
  out = reinterpret_cast<Fn>(function);
  return {};
}

// Each virtual forwards to its entry point and does nothing else: this is the replay hot path.
class CudaDriver final : public DriverApi {
 public:
  CudaDriver(Library library, const EntryPoints& entries)
      : library_(std::move(library)), fn_(entries) {}

  const char* name() const noexcept override { return "cuda"; }

  CUresult cuInit(unsigned flags) override { return fn_.cuInit(flags); }
  CUresult cuDriverGetVersion(int* version) override { return fn_.cuDriverGetVersion(version); }
  CUresult cuDeviceGetCount(int* count) override { return fn_.cuDeviceGetCount(count); }
  CUresult cuDeviceGet(CUdevice* device, int ordinal) override {
    return fn_.cuDeviceGet(device, ordinal);
  }
  CUresult cuDeviceGetName(char* name, int len, CUdevice device) override {
    return fn_.cuDeviceGetName(name, len, device);
  }
  CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                CUdevice device) override {
    return fn_.cuDeviceGetAttribute(value, attribute, device);
  }
  CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) override {
    return fn_.cuDevicePrimaryCtxRetain(context, device);
  }
  CUresult cuDevicePrimaryCtxRelease(CUdevice device) override {
    return fn_.cuDevicePrimaryCtxRelease(device);
  }
  CUresult cuCtxSetCurrent(CUcontext context) override { return fn_.cuCtxSetCurrent(context); }
  CUresult cuCtxGetCurrent(CUcontext* context) override { return fn_.cuCtxGetCurrent(context); }
  CUresult cuCtxSynchronize() override { return fn_.cuCtxSynchronize(nullptr); }

  CUresult cuStreamCreate(CUstream* stream, unsigned flags) override {
    return fn_.cuStreamCreate(stream, flags);
  }
  CUresult cuStreamDestroy(CUstream stream) override { return fn_.cuStreamDestroy(stream); }
  CUresult cuStreamSynchronize(CUstream stream) override {
    return fn_.cuStreamSynchronize(stream);
  }
  CUresult cuStreamQuery(CUstream stream) override { return fn_.cuStreamQuery(stream); }
  CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) override {
    return fn_.cuStreamWaitEvent(stream, event, flags);
  }
  CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) override {
    return fn_.cuStreamBeginCapture(stream, mode);
  }
  CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) override {
    return fn_.cuStreamEndCapture(stream, graph);
  }
  CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) override {
    return fn_.cuStreamIsCapturing(stream, status);
  }
  CUresult cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                                  CUgraph* graph, const CUgraphNode** dependencies,
                                  const CUgraphEdgeData** edge_data,
                                  std::size_t* dependency_count) override {
    return fn_.cuStreamGetCaptureInfo(stream, status, id, graph, dependencies, edge_data,
                                      dependency_count);
  }
  CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) override {
    return fn_.cuThreadExchangeStreamCaptureMode(mode);
  }

  CUresult cuEventCreate(CUevent* event, unsigned flags) override {
    return fn_.cuEventCreate(event, flags);
  }
  CUresult cuEventDestroy(CUevent event) override { return fn_.cuEventDestroy(event); }
  CUresult cuEventRecord(CUevent event, CUstream stream) override {
    return fn_.cuEventRecord(event, stream);
  }
  CUresult cuEventQuery(CUevent event) override { return fn_.cuEventQuery(event); }
  CUresult cuEventSynchronize(CUevent event) override { return fn_.cuEventSynchronize(event); }
  CUresult cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) override {
    return fn_.cuEventElapsedTime(milliseconds, start, end);
  }

  CUresult cuMemGetInfo(std::size_t* free, std::size_t* total) override {
    return fn_.cuMemGetInfo(free, total);
  }
  CUresult cuMemAlloc(CUdeviceptr* pointer, std::size_t bytes) override {
    return fn_.cuMemAlloc(pointer, bytes);
  }
  CUresult cuMemFree(CUdeviceptr pointer) override { return fn_.cuMemFree(pointer); }
  CUresult cuMemAllocAsync(CUdeviceptr* pointer, std::size_t bytes, CUstream stream) override {
    return fn_.cuMemAllocAsync(pointer, bytes, stream);
  }
  CUresult cuMemFreeAsync(CUdeviceptr pointer, CUstream stream) override {
    return fn_.cuMemFreeAsync(pointer, stream);
  }
  CUresult cuMemAllocHost(void** pointer, std::size_t bytes) override {
    return fn_.cuMemAllocHost(pointer, bytes);
  }
  CUresult cuMemFreeHost(void* pointer) override { return fn_.cuMemFreeHost(pointer); }
  CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, std::size_t bytes,
                             CUstream stream) override {
    return fn_.cuMemcpyHtoDAsync(dst, src, bytes, stream);
  }
  CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, std::size_t bytes,
                             CUstream stream) override {
    return fn_.cuMemcpyDtoHAsync(dst, src, bytes, stream);
  }
  CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, std::size_t count,
                           CUstream stream) override {
    return fn_.cuMemsetD8Async(dst, value, count, stream);
  }

  CUresult cuModuleLoadData(CUmodule* module, const void* image) override {
    return fn_.cuModuleLoadData(module, image);
  }
  CUresult cuModuleUnload(CUmodule module) override { return fn_.cuModuleUnload(module); }
  CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) override {
    return fn_.cuModuleGetFunction(function, module, name);
  }
  CUresult cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                          unsigned block_x, unsigned block_y, unsigned block_z,
                          unsigned shared_bytes, CUstream stream, void** params,
                          void** extra) override {
    return fn_.cuLaunchKernel(function, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                              shared_bytes, stream, params, extra);
  }

  CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, std::size_t* count) override {
    return fn_.cuGraphGetNodes(graph, nodes, count);
  }
  CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) override {
    return fn_.cuGraphNodeGetType(node, type);
  }
  CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                       unsigned long long flags) override {
    return fn_.cuGraphInstantiateWithFlags(exec, graph, flags);
  }
  CUresult cuGraphUpload(CUgraphExec exec, CUstream stream) override {
    return fn_.cuGraphUpload(exec, stream);
  }
  CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) override {
    return fn_.cuGraphLaunch(exec, stream);
  }
  CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph graph,
                             CUgraphExecUpdateResultInfo* info) override {
    return fn_.cuGraphExecUpdate(exec, graph, info);
  }
  CUresult cuGraphDestroy(CUgraph graph) override { return fn_.cuGraphDestroy(graph); }
  CUresult cuGraphExecDestroy(CUgraphExec exec) override { return fn_.cuGraphExecDestroy(exec); }
  CUresult cuGraphDebugDotPrint(CUgraph graph, const char* path, unsigned flags) override {
    return fn_.cuGraphDebugDotPrint(graph, path, flags);
  }

  CUresult cuGetErrorName(CUresult error, const char** name) override {
    return fn_.cuGetErrorName(error, name);
  }
  CUresult cuGetErrorString(CUresult error, const char** text) override {
    return fn_.cuGetErrorString(error, text);
  }

 private:
  Library library_;
  EntryPoints fn_;
};

Result<EntryPoints> resolve_all(GetProcAddressFn get, const std::string& library) {
  EntryPoints entries{};
  // The string is the member's name: one list, no way for a name and a slot to drift apart.
#define GRAPHCAP_RESOLVE(entry) GRAPHCAP_TRY(resolve(get, library, #entry, entries.entry))
  GRAPHCAP_RESOLVE(cuInit);
  GRAPHCAP_RESOLVE(cuDriverGetVersion);
  GRAPHCAP_RESOLVE(cuDeviceGetCount);
  GRAPHCAP_RESOLVE(cuDeviceGet);
  GRAPHCAP_RESOLVE(cuDeviceGetName);
  GRAPHCAP_RESOLVE(cuDeviceGetAttribute);
  GRAPHCAP_RESOLVE(cuDevicePrimaryCtxRetain);
  GRAPHCAP_RESOLVE(cuDevicePrimaryCtxRelease);
  GRAPHCAP_RESOLVE(cuCtxSetCurrent);
  GRAPHCAP_RESOLVE(cuCtxGetCurrent);
  GRAPHCAP_RESOLVE(cuCtxSynchronize);
  GRAPHCAP_RESOLVE(cuStreamCreate);
  GRAPHCAP_RESOLVE(cuStreamDestroy);
  GRAPHCAP_RESOLVE(cuStreamSynchronize);
  GRAPHCAP_RESOLVE(cuStreamQuery);
  GRAPHCAP_RESOLVE(cuStreamWaitEvent);
  GRAPHCAP_RESOLVE(cuStreamBeginCapture);
  GRAPHCAP_RESOLVE(cuStreamEndCapture);
  GRAPHCAP_RESOLVE(cuStreamIsCapturing);
  GRAPHCAP_RESOLVE(cuStreamGetCaptureInfo);
  GRAPHCAP_RESOLVE(cuThreadExchangeStreamCaptureMode);
  GRAPHCAP_RESOLVE(cuEventCreate);
  GRAPHCAP_RESOLVE(cuEventDestroy);
  GRAPHCAP_RESOLVE(cuEventRecord);
  GRAPHCAP_RESOLVE(cuEventQuery);
  GRAPHCAP_RESOLVE(cuEventSynchronize);
  GRAPHCAP_RESOLVE(cuEventElapsedTime);
  GRAPHCAP_RESOLVE(cuMemGetInfo);
  GRAPHCAP_RESOLVE(cuMemAlloc);
  GRAPHCAP_RESOLVE(cuMemFree);
  GRAPHCAP_RESOLVE(cuMemAllocAsync);
  GRAPHCAP_RESOLVE(cuMemFreeAsync);
  GRAPHCAP_RESOLVE(cuMemAllocHost);
  GRAPHCAP_RESOLVE(cuMemFreeHost);
  GRAPHCAP_RESOLVE(cuMemcpyHtoDAsync);
  GRAPHCAP_RESOLVE(cuMemcpyDtoHAsync);
  GRAPHCAP_RESOLVE(cuMemsetD8Async);
  GRAPHCAP_RESOLVE(cuModuleLoadData);
  GRAPHCAP_RESOLVE(cuModuleUnload);
  GRAPHCAP_RESOLVE(cuModuleGetFunction);
  GRAPHCAP_RESOLVE(cuLaunchKernel);
  GRAPHCAP_RESOLVE(cuGraphGetNodes);
  GRAPHCAP_RESOLVE(cuGraphNodeGetType);
  GRAPHCAP_RESOLVE(cuGraphInstantiateWithFlags);
  GRAPHCAP_RESOLVE(cuGraphUpload);
  GRAPHCAP_RESOLVE(cuGraphLaunch);
  GRAPHCAP_RESOLVE(cuGraphExecUpdate);
  GRAPHCAP_RESOLVE(cuGraphDestroy);
  GRAPHCAP_RESOLVE(cuGraphExecDestroy);
  GRAPHCAP_RESOLVE(cuGraphDebugDotPrint);
  GRAPHCAP_RESOLVE(cuGetErrorName);
  GRAPHCAP_RESOLVE(cuGetErrorString);
#undef GRAPHCAP_RESOLVE
  return entries;
}

}  // namespace

Result<std::unique_ptr<DriverApi>> load_cuda_driver() {
  return load_cuda_driver(kCudaDriverLibrary);
}

Result<std::unique_ptr<DriverApi>> load_cuda_driver(const std::string& library) {
  dlerror();  // clear any stale error, so the one reported is this call's
  Library handle(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (handle.get() == nullptr) {
    const char* reason = dlerror();
    return not_found(library, std::string("cannot open ") + library + ": " +
                                  (reason != nullptr ? reason : "dlopen failed"));
  }

  void* symbol = dlsym(handle.get(), kGetProcAddressSymbol);
  if (symbol == nullptr) {
    return not_found(library, std::string(kGetProcAddressSymbol) +
                                  " not found: not a CUDA driver of CUDA 12.0 or newer");
  }
  const auto get_proc_address = reinterpret_cast<GetProcAddressFn>(symbol);

  GRAPHCAP_ASSIGN_OR_RETURN(const EntryPoints entries, resolve_all(get_proc_address, library));

  // An older driver hands out older ABIs for some names (cuCtxSynchronize, cuStreamGetCaptureInfo)
  // than the ones typed above; refuse it rather than call through a mismatched signature.
  int version = 0;
  if (const CUresult status = entries.cuDriverGetVersion(&version); status != CUDA_SUCCESS) {
    return not_found(library, "cuDriverGetVersion failed with " + describe_cu_result(status));
  }
  if (version < kCudaVersion) {
    return not_found(library, "the driver supports CUDA " + std::to_string(version) +
                                  "; graphcap needs CUDA " + std::to_string(kCudaVersion) +
                                  " or newer");
  }

  return std::unique_ptr<DriverApi>(std::make_unique<CudaDriver>(std::move(handle), entries));
}

}  // namespace graphcap
