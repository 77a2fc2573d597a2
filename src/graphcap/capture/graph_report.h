// GraphReport: what closing a recording produced: node counts by type, the memory pinned for the
// graph's lifetime, the device memory the graph accounts for, and how long each step of closing
// took.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

// Where GraphMemory::driver_bytes comes from.
enum class DriverBytesSource : unsigned char {
  none,      // no executable (an empty report)
  measured,  // the drop of the device's free memory (cuMemGetInfo) across cuGraphInstantiate
  model,     // executable_driver_bytes() of the graph's nodes: the per-node model measured on the
             // H200 (src/graphcap/driver/executable_memory.h), where cuMemGetInfo can't measure it
};

// The device memory a graph accounts for (docs/capture-lifecycle.md, "The device memory a graph
// accounts for"): its own buffers, its share of its pool, and the driver's memory for its
// executable. GraphCache's byte budget counts all of it, a shared pool once.
struct GraphMemory {
  std::size_t own_bytes = 0;   // device memory pinned for the graph that is not its pool's (its
                               // outputs and state, buffers from before the window)
  std::size_t pool_bytes = 0;  // its share of its pool: the pool memory its intermediates take
                               // (other graphs of the pool use it too)
  std::size_t host_bytes = 0;  // pinned host staging it replays from (host memory, not device)
  std::size_t driver_bytes = 0;  // the driver's own memory for the executable
  DriverBytesSource driver_source = DriverBytesSource::none;
  std::size_t driver_model_bytes = 0;  // the model's figure for the executable's nodes
  // cuMemGetInfo's drop across instantiate, when it was asked (driver_taken_known: for an
  // executable the model puts at one 2 MiB chunk or more): 0 where the driver fitted it into
  // memory it already held (memory destroyed executables left: the driver keeps it).
  std::size_t driver_taken_bytes = 0;
  bool driver_taken_known = false;

  // Device memory: own + pool share + driver.
  std::size_t device_bytes() const noexcept { return own_bytes + pool_bytes + driver_bytes; }
};

// Graph::report(), filled when the recording closes (docs/recording.md has every field in a table).
struct GraphReport {
  // The graph's nodes by CUgraphNodeType (kernel, memcpy, memset, conditional, ...), the nodes of
  // conditional bodies included; nodes(type) reads one.
  std::array<std::size_t, kGraphNodeTypeCount> nodes_by_type{};
  std::size_t node_count = 0;  // all of them
  // The device and pinned host staging slices held for the graph's lifetime (what its replays
  // read and write), and their bytes.
  std::size_t pinned_slices = 0;
  std::size_t pinned_bytes = 0;
  std::chrono::nanoseconds end_time{};          // cuStreamEndCapture
  std::chrono::nanoseconds instantiate_time{};  // node checks + cuGraphInstantiateWithParams
  std::chrono::nanoseconds upload_time{};       // cuGraphUpload
  // The executable was pre-uploaded at end_capture; false when cuGraphUpload failed (a warning
  // said so): the first replay uploads on demand.
  bool uploaded = false;
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
  // The device memory the graph accounts for (filled at end_capture; an exec update keeps the
  // executable's driver bytes).
  GraphMemory memory;

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
