#include <graphcap/driver/error_names.h>

#include <iterator>

namespace graphcap {
namespace {

struct ResultName {
  CUresult code;
  const char* name;
  const char* text;
};

// Names are cuda.h's; texts are what cuGetErrorString returns (the conformance suite compares
// both with the real driver's).
constexpr ResultName kNames[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
     "peer access is not supported between these two devices"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {CUDA_ERROR_INVALID_SOURCE, "CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM",
     "OS call failed or operation not supported on this OS"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT",
     "the launch timed out and was terminated"},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
     "peer access is already enabled"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_ASSERT, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
     "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_MERGE, "CUDA_ERROR_STREAM_CAPTURE_MERGE",
     "operation would result in a merge of separate capture sequences"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
     "capture was not ended in the same stream as it began"},
    {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
     "capturing stream has unjoined work"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {CUDA_ERROR_CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT",
     "operation not permitted on an event last recorded in a capturing stream"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_TIMEOUT, "CUDA_ERROR_TIMEOUT", "wait operation timed out"},
    {CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
     "the graph update was not performed because it included changes which violated "
     "constraints specific to instantiated graph update"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ResultName* find(CUresult code) noexcept {
  for (const auto& entry : kNames) {
    if (entry.code == code) return &entry;
  }
  return nullptr;
}

}  // namespace

const char* cu_result_name(CUresult code) noexcept {
  const ResultName* entry = find(code);
  return entry ? entry->name : nullptr;
}

const char* cu_result_string(CUresult code) noexcept {
  const ResultName* entry = find(code);
  return entry ? entry->text : nullptr;
}

std::string describe_cu_result(CUresult code) {
  const ResultName* entry = find(code);
  if (entry == nullptr) return "CUresult " + std::to_string(static_cast<int>(code));
  return std::string(entry->name) + " (" + entry->text + ")";
}

}  // namespace graphcap

namespace graphcap {
std::size_t known_cu_result_count() noexcept { return std::size(kNames); }
CUresult known_cu_result(std::size_t index) noexcept { return kNames[index].code; }
}  // namespace graphcap

namespace graphcap {

std::string exec_update_result_name(CUgraphExecUpdateResult result) {
  switch (result) {
    case CU_GRAPH_EXEC_UPDATE_SUCCESS: return "CU_GRAPH_EXEC_UPDATE_SUCCESS";
    case CU_GRAPH_EXEC_UPDATE_ERROR: return "CU_GRAPH_EXEC_UPDATE_ERROR";
    case CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED:
      return "CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED";
    case CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED:
      return "CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED";
    case CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED:
      return "CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED";
    case CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED:
      return "CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED";
    case CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED: return "CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED";
    case CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE:
      return "CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE";
    case CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED:
      return "CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED";
  }
  return "CUgraphExecUpdateResult " + std::to_string(static_cast<int>(result));
}

std::string instantiate_result_name(CUgraphInstantiateResult result) {
  switch (result) {
    case CUDA_GRAPH_INSTANTIATE_SUCCESS: return "CUDA_GRAPH_INSTANTIATE_SUCCESS";
    case CUDA_GRAPH_INSTANTIATE_ERROR: return "CUDA_GRAPH_INSTANTIATE_ERROR";
    case CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE: return "CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE";
    case CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED:
      return "CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED";
    case CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED:
      return "CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED";
    case CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED:
      return "CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED";
  }
  return "CUgraphInstantiateResult " + std::to_string(static_cast<int>(result));
}

const char* node_type_name(CUgraphNodeType type) noexcept {
  static constexpr const char* kNames[kGraphNodeTypeCount] = {
      "KERNEL",      "MEMCPY",       "MEMSET",           "HOST",
      "GRAPH",       "EMPTY",        "WAIT_EVENT",       "EVENT_RECORD",
      "EXT_SEMAS_SIGNAL", "EXT_SEMAS_WAIT", "MEM_ALLOC", "MEM_FREE",
      "BATCH_MEM_OP", "CONDITIONAL"};
  const int index = static_cast<int>(type);
  return index >= 0 && index < kGraphNodeTypeCount ? kNames[index] : "?";
}

}  // namespace graphcap
