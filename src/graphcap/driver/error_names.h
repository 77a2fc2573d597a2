// CUDA's names and descriptions of its error codes, as cuGetErrorName/cuGetErrorString give them,
// without a driver: messages are built from these on every path, and the fake answers from them.
#pragma once

#include <string>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

// "CUDA_ERROR_INVALID_VALUE"; nullptr for a code cuda.h doesn't define.
const char* cu_result_name(CUresult code) noexcept;
// "invalid argument"; nullptr for a code cuda.h doesn't define.
const char* cu_result_string(CUresult code) noexcept;
// "CUDA_ERROR_INVALID_VALUE (invalid argument)", or "CUresult 12345" for an unknown code.
std::string describe_cu_result(CUresult code);
// "CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED"; "CUgraphExecUpdateResult 12345" for a value
// cuda.h doesn't define.
std::string exec_update_result_name(CUgraphExecUpdateResult result);
// "CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED"; "CUgraphInstantiateResult 12345" for a
// value cuda.h doesn't define.
std::string instantiate_result_name(CUgraphInstantiateResult result);
// "KERNEL", "MEMSET", ... (cuda.h's CU_GRAPH_NODE_TYPE_ suffix); "?" for an unknown type.
const char* node_type_name(CUgraphNodeType type) noexcept;

}  // namespace graphcap

namespace graphcap {
// Every code the table above names, in ascending order (the conformance suite checks each against
// the real driver's cuGetErrorName and cuGetErrorString).
std::size_t known_cu_result_count() noexcept;
CUresult known_cu_result(std::size_t index) noexcept;
}  // namespace graphcap
