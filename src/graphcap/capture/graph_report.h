// GraphReport: what closing a recording produced: node counts by type, the memory pinned for the
// graph's lifetime, and how long each step of closing took.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

struct GraphReport {
  std::array<std::size_t, kGraphNodeTypeCount> nodes_by_type{};  // indexed by CUgraphNodeType
  std::size_t node_count = 0;
  std::size_t pinned_slices = 0;  // device and staging slices held for the graph's lifetime
  std::size_t pinned_bytes = 0;
  std::chrono::nanoseconds end_time{};          // cuStreamEndCapture
  std::chrono::nanoseconds instantiate_time{};  // node checks + cuGraphInstantiateWithParams
  std::chrono::nanoseconds upload_time{};       // cuGraphUpload
  bool uploaded = false;                        // false when the pre-upload failed (warned)
  bool external_work = false;  // the recording holds work declared by record_external, whose
                               // nodes were counted from the graph itself
  // A recorded launch asked for a priority (LaunchOptions::priority): the executable was
  // instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY, so its nodes run with theirs.
  bool node_priorities = false;
  // Recorded launches with LaunchOptions::programmatic whose predecessor was a kernel: the
  // programmatic edges of the graph (its bodies included).
  std::size_t programmatic_edges = 0;
  // Recorded into a graph pool (CaptureOptions::pool): the bytes of pinned_bytes that are the
  // pool's shared intermediate memory (used by other graphs of the pool too).
  std::size_t pool_shared_bytes = 0;

  // Re-recording into an existing graph (Device::end_capture(s, into)). `updated`: the graph's
  // executable took the new recording in place (cuGraphExecUpdate); false: it was re-instantiated
  // (or this report is of a first recording). When an update was tried and refused,
  // update_result is the driver's CUgraphExecUpdateResult, update_refusal says why in words (the
  // result by name, the driver's error, the node), and update_error_node is the index of the
  // node the driver named (in the order cuGraphGetNodes lists the new recording), if it named one.
  bool rerecorded = false;  // this report is of a re-recording into an existing graph
  bool updated = false;
  CUgraphExecUpdateResult update_result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  std::string update_refusal;
  std::optional<std::size_t> update_error_node;
  CUgraphNodeType update_error_node_type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::chrono::nanoseconds update_time{};  // cuGraphExecUpdate (whether it succeeded or not)

  std::size_t nodes(CUgraphNodeType type) const noexcept {
    return static_cast<std::size_t>(type) < nodes_by_type.size() ? nodes_by_type[type] : 0;
  }
};

}  // namespace graphcap
