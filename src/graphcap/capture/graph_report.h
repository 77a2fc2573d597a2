// GraphReport: what closing a recording produced: node counts by type, the memory pinned for the
// graph's lifetime, and how long each step of closing took.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

struct GraphReport {
  std::array<std::size_t, kGraphNodeTypeCount> nodes_by_type{};  // indexed by CUgraphNodeType
  std::size_t node_count = 0;
  std::size_t pinned_slices = 0;  // device and staging slices held for the graph's lifetime
  std::size_t pinned_bytes = 0;
  std::chrono::nanoseconds end_time{};          // cuStreamEndCapture
  std::chrono::nanoseconds instantiate_time{};  // node checks + cuGraphInstantiateWithFlags
  std::chrono::nanoseconds upload_time{};       // cuGraphUpload
  bool uploaded = false;                        // false when the pre-upload failed (warned)
  bool external_work = false;  // the recording holds work declared by record_external, whose
                               // nodes were counted from the graph itself

  std::size_t nodes(CUgraphNodeType type) const noexcept {
    return static_cast<std::size_t>(type) < nodes_by_type.size() ? nodes_by_type[type] : 0;
  }
};

}  // namespace graphcap
