// FakeDriver: forwards every call to FakeState (the lock, fault injection and the call log are
// FakeState::call's), and the observation and control methods likewise.
#include <graphcap/fake/fake_driver.h>

#include <graphcap/fake/internal/fake_state.h>
#include <graphcap/fake/internal/kernel_params.h>
#include <graphcap/fake/internal/module_image.h>

namespace graphcap::fake {

FakeDriver::FakeDriver(FakeDriverOptions options) : state_(std::make_unique<FakeState>(options)) {}

FakeDriver::~FakeDriver() = default;

void FakeDriver::register_kernel(std::string name, KernelBody body) {
  state_->register_kernel(std::move(name), false, {}, {}, std::move(body));
}

void FakeDriver::register_kernel(std::string name, std::vector<std::size_t> param_sizes,
                                 KernelBody body) {
  std::vector<std::size_t> alignments;
  alignments.reserve(param_sizes.size());
  for (std::size_t size : param_sizes) alignments.push_back(internal::natural_alignment(size));
  state_->register_kernel(std::move(name), true, std::move(param_sizes), std::move(alignments),
                          std::move(body));
}

void FakeDriver::register_kernel_layout(std::string name, std::vector<std::size_t> sizes,
                                        std::vector<std::size_t> alignments, KernelBody body) {
  state_->register_kernel(std::move(name), true, std::move(sizes), std::move(alignments),
                          std::move(body));
}

std::vector<std::byte> FakeDriver::module_image(
    std::initializer_list<std::string_view> kernels) const {
  return internal::build_module_image(kernels);
}

void FakeDriver::fail_call(std::string_view entry_point, CUresult code, int nth) {
  state_->fail_call(entry_point, code, nth);
}
void FakeDriver::fail_always(std::string_view entry_point, CUresult code) {
  state_->fail_always(entry_point, code);
}
void FakeDriver::clear_faults() { state_->clear_faults(); }

std::vector<CallRecord> FakeDriver::calls() const { return state_->calls(); }
std::size_t FakeDriver::call_count(std::string_view entry_point) const {
  return state_->call_count(entry_point);
}
std::size_t FakeDriver::total_calls() const { return state_->total_calls(); }
void FakeDriver::clear_calls() { state_->clear_calls(); }
LiveHandles FakeDriver::live_handles() const { return state_->live_handles(); }
std::size_t FakeDriver::reclaimed_handles() const { return state_->reclaimed_handles(); }
std::vector<std::string> FakeDriver::violations() const { return state_->violations(); }
void FakeDriver::clear_violations() { state_->clear_violations(); }
std::size_t FakeDriver::pending_operations(CUstream stream) const {
  return state_->pending_operations(stream);
}
void FakeDriver::run_pending() { state_->run_pending(); }
void FakeDriver::set_device_paused(bool paused) { state_->set_device_paused(paused); }
bool FakeDriver::read_device(CUdeviceptr address, std::span<std::byte> out) const {
  return state_->read_device(address, out);
}
bool FakeDriver::write_device(CUdeviceptr address, std::span<const std::byte> bytes) {
  return state_->write_device(address, bytes);
}

// ---- DriverApi ---------------------------------------------------------------------------------

CUresult FakeDriver::cuInit(unsigned flags) {
  return state_->call("cuInit", [&] { return state_->init(flags); });
}

CUresult FakeDriver::cuDriverGetVersion(int* version) {
  return state_->call("cuDriverGetVersion", [&] { return state_->driver_get_version(version); });
}

CUresult FakeDriver::cuDeviceGetCount(int* count) {
  return state_->call("cuDeviceGetCount", [&] { return state_->device_get_count(count); });
}

CUresult FakeDriver::cuDeviceGet(CUdevice* device, int ordinal) {
  return state_->call("cuDeviceGet", [&] { return state_->device_get(device, ordinal); });
}

CUresult FakeDriver::cuDeviceGetName(char* name, int len, CUdevice device) {
  return state_->call("cuDeviceGetName",
                      [&] { return state_->device_get_name(name, len, device); });
}

CUresult FakeDriver::cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                          CUdevice device) {
  return state_->call("cuDeviceGetAttribute",
                      [&] { return state_->device_get_attribute(value, attribute, device); });
}

CUresult FakeDriver::cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  return state_->call("cuDevicePrimaryCtxRetain",
                      [&] { return state_->primary_ctx_retain(context, device); });
}

CUresult FakeDriver::cuDevicePrimaryCtxRelease(CUdevice device) {
  return state_->call("cuDevicePrimaryCtxRelease",
                      [&] { return state_->primary_ctx_release(device); });
}

CUresult FakeDriver::cuCtxSetCurrent(CUcontext context) {
  return state_->call("cuCtxSetCurrent", [&] { return state_->ctx_set_current(context); });
}

CUresult FakeDriver::cuCtxGetCurrent(CUcontext* context) {
  return state_->call("cuCtxGetCurrent", [&] { return state_->ctx_get_current(context); });
}

CUresult FakeDriver::cuCtxSynchronize() {
  return state_->call("cuCtxSynchronize", [&] { return state_->ctx_synchronize(); });
}

CUresult FakeDriver::cuStreamCreate(CUstream* stream, unsigned flags) {
  return state_->call("cuStreamCreate", [&] { return state_->stream_create(stream, flags); });
}

CUresult FakeDriver::cuStreamDestroy(CUstream stream) {
  return state_->call("cuStreamDestroy", [&] { return state_->stream_destroy(stream); });
}

CUresult FakeDriver::cuStreamSynchronize(CUstream stream) {
  return state_->call("cuStreamSynchronize", [&] { return state_->stream_synchronize(stream); });
}

CUresult FakeDriver::cuStreamQuery(CUstream stream) {
  return state_->call("cuStreamQuery", [&] { return state_->stream_query(stream); });
}

CUresult FakeDriver::cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  return state_->call(
      "cuStreamWaitEvent", [&] { return state_->stream_wait_event(stream, event, flags); },
      [&] { state_->injected_captured_operation(stream); });
}

CUresult FakeDriver::cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  return state_->call("cuStreamBeginCapture", [&] { return state_->begin_capture(stream, mode); });
}

CUresult FakeDriver::cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  return state_->call(
      "cuStreamEndCapture", [&] { return state_->end_capture(stream, graph); },
      [&] { state_->injected_end_capture(stream, graph); });
}

CUresult FakeDriver::cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  return state_->call("cuStreamIsCapturing", [&] { return state_->is_capturing(stream, status); });
}

CUresult FakeDriver::cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status,
                                            cuuint64_t* id, CUgraph* graph,
                                            const CUgraphNode** dependencies,
                                            const CUgraphEdgeData** edge_data,
                                            std::size_t* dependency_count) {
  return state_->call("cuStreamGetCaptureInfo", [&] {
    return state_->get_capture_info(stream, status, id, graph, dependencies, edge_data,
                                    dependency_count);
  });
}

CUresult FakeDriver::cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  return state_->call("cuThreadExchangeStreamCaptureMode",
                      [&] { return state_->exchange_capture_mode(mode); });
}

CUresult FakeDriver::cuEventCreate(CUevent* event, unsigned flags) {
  return state_->call("cuEventCreate", [&] { return state_->event_create(event, flags); });
}

CUresult FakeDriver::cuEventDestroy(CUevent event) {
  return state_->call("cuEventDestroy", [&] { return state_->event_destroy(event); });
}

CUresult FakeDriver::cuEventRecord(CUevent event, CUstream stream) {
  return state_->call(
      "cuEventRecord", [&] { return state_->event_record(event, stream); },
      [&] { state_->injected_captured_operation(stream); });
}

CUresult FakeDriver::cuEventQuery(CUevent event) {
  return state_->call("cuEventQuery", [&] { return state_->event_query(event); });
}

CUresult FakeDriver::cuEventSynchronize(CUevent event) {
  return state_->call("cuEventSynchronize", [&] { return state_->event_synchronize(event); });
}

CUresult FakeDriver::cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  return state_->call("cuEventElapsedTime",
                      [&] { return state_->event_elapsed_time(milliseconds, start, end); });
}

CUresult FakeDriver::cuMemGetInfo(std::size_t* free, std::size_t* total) {
  return state_->call("cuMemGetInfo", [&] { return state_->mem_get_info(free, total); });
}

CUresult FakeDriver::cuMemAlloc(CUdeviceptr* pointer, std::size_t bytes) {
  return state_->call("cuMemAlloc", [&] { return state_->mem_alloc(pointer, bytes); });
}

CUresult FakeDriver::cuMemFree(CUdeviceptr pointer) {
  return state_->call("cuMemFree", [&] { return state_->mem_free(pointer); });
}

CUresult FakeDriver::cuMemAllocAsync(CUdeviceptr* pointer, std::size_t bytes, CUstream stream) {
  return state_->call(
      "cuMemAllocAsync", [&] { return state_->mem_alloc_async(pointer, bytes, stream); },
      [&] { state_->injected_captured_operation(stream); });
}

CUresult FakeDriver::cuMemFreeAsync(CUdeviceptr pointer, CUstream stream) {
  return state_->call(
      "cuMemFreeAsync", [&] { return state_->mem_free_async(pointer, stream); },
      [&] { state_->injected_captured_operation(stream); });
}

CUresult FakeDriver::cuMemAllocHost(void** pointer, std::size_t bytes) {
  return state_->call("cuMemAllocHost", [&] { return state_->mem_alloc_host(pointer, bytes); });
}

CUresult FakeDriver::cuMemFreeHost(void* pointer) {
  return state_->call("cuMemFreeHost", [&] { return state_->mem_free_host(pointer); });
}

CUresult FakeDriver::cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, std::size_t bytes,
                                       CUstream stream) {
  return state_->call(
      "cuMemcpyHtoDAsync", [&] { return state_->memcpy_htod(dst, src, bytes, stream); },
      [&] { state_->injected_captured_operation(stream); });
}

CUresult FakeDriver::cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, std::size_t bytes,
                                       CUstream stream) {
  return state_->call(
      "cuMemcpyDtoHAsync", [&] { return state_->memcpy_dtoh(dst, src, bytes, stream); },
      [&] { state_->injected_captured_operation(stream); });
}

CUresult FakeDriver::cuMemsetD8Async(CUdeviceptr dst, unsigned char value, std::size_t count,
                                     CUstream stream) {
  return state_->call(
      "cuMemsetD8Async", [&] { return state_->memset_d8(dst, value, count, stream); },
      [&] { state_->injected_captured_operation(stream); });
}

CUresult FakeDriver::cuModuleLoadData(CUmodule* module, const void* image) {
  return state_->call("cuModuleLoadData", [&] { return state_->module_load(module, image); });
}

CUresult FakeDriver::cuModuleUnload(CUmodule module) {
  return state_->call("cuModuleUnload", [&] { return state_->module_unload(module); });
}

CUresult FakeDriver::cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  return state_->call("cuModuleGetFunction",
                      [&] { return state_->module_get_function(function, module, name); });
}

CUresult FakeDriver::cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y,
                                    unsigned grid_z, unsigned block_x, unsigned block_y,
                                    unsigned block_z, unsigned shared_bytes, CUstream stream,
                                    void** params, void** extra) {
  const LaunchDims dims{{grid_x, grid_y, grid_z}, {block_x, block_y, block_z}, shared_bytes};
  return state_->call(
      "cuLaunchKernel",
      [&] { return state_->launch_kernel(function, dims, stream, params, extra); },
      [&] { state_->injected_captured_operation(stream); });
}

CUresult FakeDriver::cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, std::size_t* count) {
  return state_->call("cuGraphGetNodes",
                      [&] { return state_->graph_get_nodes(graph, nodes, count); });
}

CUresult FakeDriver::cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  return state_->call("cuGraphNodeGetType",
                      [&] { return state_->graph_node_get_type(node, type); });
}

CUresult FakeDriver::cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                                 unsigned long long flags) {
  return state_->call("cuGraphInstantiateWithFlags",
                      [&] { return state_->graph_instantiate(exec, graph, flags); });
}

CUresult FakeDriver::cuGraphUpload(CUgraphExec exec, CUstream stream) {
  return state_->call(
      "cuGraphUpload", [&] { return state_->graph_upload(exec, stream); },
      [&] { state_->injected_captured_operation(stream); });
}

CUresult FakeDriver::cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  return state_->call(
      "cuGraphLaunch", [&] { return state_->graph_launch(exec, stream); },
      [&] { state_->injected_captured_operation(stream); });
}

CUresult FakeDriver::cuGraphExecUpdate(CUgraphExec exec, CUgraph graph,
                                       CUgraphExecUpdateResultInfo* info) {
  return state_->call("cuGraphExecUpdate",
                      [&] { return state_->graph_exec_update(exec, graph, info); });
}

CUresult FakeDriver::cuGraphDestroy(CUgraph graph) {
  return state_->call("cuGraphDestroy", [&] { return state_->graph_destroy(graph); });
}

CUresult FakeDriver::cuGraphExecDestroy(CUgraphExec exec) {
  return state_->call("cuGraphExecDestroy", [&] { return state_->graph_exec_destroy(exec); });
}

CUresult FakeDriver::cuGraphDebugDotPrint(CUgraph graph, const char* path, unsigned flags) {
  return state_->call("cuGraphDebugDotPrint",
                      [&] { return state_->graph_dot_print(graph, path, flags); });
}

CUresult FakeDriver::cuGetErrorName(CUresult error, const char** name) {
  return state_->call("cuGetErrorName", [&] { return state_->get_error_name(error, name); });
}

CUresult FakeDriver::cuGetErrorString(CUresult error, const char** text) {
  return state_->call("cuGetErrorString", [&] { return state_->get_error_string(error, text); });
}

}  // namespace graphcap::fake
