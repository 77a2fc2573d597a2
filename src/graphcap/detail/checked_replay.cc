// GraphState::replay_checked (Graph::replay_checked): the recording's operations issued again one
// by one, eagerly, each followed by a wait, so the first that fails is named: what
// CUDA_LAUNCH_BLOCKING does for eager work, for a graph, with graphcap's names for its nodes.
// Everything it issues comes from the recording's own record of each node (its label: the
// kernel's function and arguments as passed, a copy's or fill's addresses and ranges; the param
// nodes' bytes, which hold the values Graph::set gave the graph).
#include <graphcap/capture/operation_label.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/graph_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device_limits.h>
#include <graphcap/driver/error_names.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace graphcap::detail {
namespace {

using capture::OperationLabel;
// How a node is issued again, eagerly, from its record: derived from its node type and label,
// not stored with every recorded node (a field written on every recorded launch for this rare
// path cost the recording and eager paths instructions; docs/performance.md).
enum class Reissue : std::uint8_t {
  none,        // can't: external work, a conditional node
  launch,      // cuLaunchKernel: function in numbers[0], dims, every argument in order
  copy,        // cuMemcpyDtoDAsync: copy_label's numbers, arguments 0 (source), 1 (destination)
  fill,        // cuMemsetD8/D32Async: fill_label's numbers, argument 0 (destination)
  host_write,  // cuMemcpyHtoDAsync: bytes, staging host address, offset; argument 0
};

// graphcap records a kernel node only for a launch, a memset node only for a fill, and a memcpy
// node for a copy (which names its source and destination) or a write from the host (which
// names only its destination). A node without a rendered label (external work's text) has no
// record to issue from.
Reissue reissue_of(const capture::RecordedNode& node, const OperationLabel& label) {
  if (label.renderer() == nullptr) return Reissue::none;
  switch (node.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return Reissue::launch;
    case CU_GRAPH_NODE_TYPE_MEMSET: return Reissue::fill;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return label.buffer_args().size() == 2 ? Reissue::copy : Reissue::host_write;
    default: return Reissue::none;
  }
}


// "; arg 2 launched with 1040 (0x410)" for each argument of a param node bound to a param: the
// value Graph::set gave the graph (the label shows the one recorded).
std::string launched_values(const capture::ParamNode& node) {
  std::string text;
  for (const capture::ParamNode::Binding& binding : node.bindings) {
    const std::size_t size = node.sizes[binding.arg];
    if (size > sizeof(std::uint64_t)) continue;
    std::uint64_t value = 0;
    std::memcpy(&value, node.bytes.data() + node.offsets[binding.arg], size);
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(value));
    text += "; arg " + std::to_string(binding.arg) + " launched with " + std::to_string(value) +
            " (" + hex + ")";
  }
  return text;
}

// The node as a message names it: its label's lines on one line ("kernel fill at model.cc:42
// (grid (1, 1, 1) block (256, 1, 1); arg 0: out 256 B "kv")").
std::string described(const capture::RecordedNode& node, const OperationLabel& label,
                      const capture::ParamNode* params) {
  if (node.label.empty()) return node_type_name(node.type);
  OperationLabel bare = label;  // its text without the "at file:line" line first_line has
  bare.where = {};
  std::string facts = bare.text();
  const std::size_t first_end = facts.find('\n');
  if (first_end == std::string::npos) return label.first_line();
  facts.erase(0, first_end + 1);
  for (std::size_t at = facts.find('\n'); at != std::string::npos; at = facts.find('\n', at)) {
    facts.replace(at, 1, "; ");
  }
  if (params != nullptr) facts += launched_values(*params);
  return label.first_line() + " (" + facts + ")";
}

// A kernel node's launch: from its param node when it took params (the values Graph::set gave
// the graph), else from its label (every argument as recorded).
CUresult launch_again(DriverApi& driver, CUstream stream, const OperationLabel& label,
                      const capture::ParamNode* params) {
  std::array<void*, kMaxLaunchArgs> pointers{};
  std::array<std::array<std::byte, kMaxArgBytes>, kMaxLaunchArgs> values{};
  CUfunction function = nullptr;
  LaunchDims dims;
  if (params != nullptr) {
    function = params->function;
    dims = params->dims;
    for (std::size_t i = 0; i < params->offsets.size() && i < kMaxLaunchArgs; ++i) {
      pointers[i] = const_cast<std::byte*>(params->bytes.data() + params->offsets[i]);
    }
  } else {
    function = reinterpret_cast<CUfunction>(static_cast<std::uintptr_t>(label.numbers[0]));
    dims = label.dims;
    std::size_t i = 0;
    for (const OperationLabel::BufferArg& arg : label.buffer_args()) {
      if (i == kMaxLaunchArgs) break;
      std::array<std::byte, kMaxArgBytes>& value = values[i];
      if (arg.value_size == 0) {  // a buffer: its address
        std::memcpy(value.data(), &arg.address, sizeof arg.address);
      } else if (arg.value_size <= sizeof arg.bytes) {
        std::memcpy(value.data(), &arg.bytes, arg.value_size);
      } else if (arg.label && arg.label->size() <= value.size()) {  // kept whole
        std::memcpy(value.data(), arg.label->data(), arg.label->size());
      }
      pointers[i++] = value.data();
    }
  }
  return driver.cuLaunchKernel(function, dims.grid.x, dims.grid.y, dims.grid.z, dims.block.x,
                               dims.block.y, dims.block.z, dims.shared_bytes, stream,
                               pointers.data(), nullptr);
}

// Issues the node again on `stream`; the driver's answer, and the entry point it named.
CUresult issue_again(DriverApi& driver, CUstream stream, Reissue reissue,
                     const OperationLabel& label, const capture::ParamNode* params,
                     const char** entry) {
  const auto& n = label.numbers;
  const std::span<const OperationLabel::BufferArg> args = label.buffer_args();
  switch (reissue) {
    case Reissue::launch:
      *entry = "cuLaunchKernel";
      return launch_again(driver, stream, label, params);
    case Reissue::copy:  // numbers: bytes, source offset and size, destination offset and size
      *entry = "cuMemcpyDtoDAsync";
      return driver.cuMemcpyDtoDAsync(args[1].address + n[3], args[0].address + n[1], n[0], stream);
    case Reissue::fill:  // numbers: bytes, element size, value, offset, buffer size
      if (n[1] == 4) {
        *entry = "cuMemsetD32Async";
        return driver.cuMemsetD32Async(args[0].address + n[3], static_cast<unsigned>(n[2]),
                                       n[0] / 4, stream);
      }
      *entry = "cuMemsetD8Async";
      return driver.cuMemsetD8Async(args[0].address + n[3], static_cast<unsigned char>(n[2]), n[0],
                                    stream);
    case Reissue::host_write:  // numbers: bytes, the pinned staging's host address, offset
      *entry = "cuMemcpyHtoDAsync";
      return driver.cuMemcpyHtoDAsync(
          args[0].address + n[2], reinterpret_cast<const void*>(static_cast<std::uintptr_t>(n[1])),
          n[0], stream);
    case Reissue::none:
      break;
  }
  *entry = "replay_checked";
  return CUDA_ERROR_NOT_SUPPORTED;  // refused before anything ran (see replay_checked)
}

// What replay_checked can't issue again: its refusal, before anything runs.
std::optional<Error> unsupported(const capture::Recording& recording) {
  for (std::size_t i = 0; i < recording.nodes.size(); ++i) {
    const capture::RecordedNode& node = recording.nodes[i];
    const OperationLabel label = recording.label(i);
    if (node.type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
      return Error(Errc::graph_state,
                   "replay_checked: node " + std::to_string(i) + " (" + label.first_line() +
                       ") is a conditional node: which of its bodies a replay runs, and how "
                       "often, is decided on the device by a kernel that sets its condition, "
                       "which graphcap can't know, so it can't run the graph's operations as a "
                       "replay would; nothing was run");
    }
    if (reissue_of(node, label) == Reissue::none) {
      return Error(
          Errc::graph_state,
          "replay_checked: node " + std::to_string(i) + " (" +
              (label.empty() ? std::string(node_type_name(node.type)) : label.first_line()) +
              ") is work graphcap did not issue (Device::record_external), so it can't "
              "issue it again; nothing was run");
    }
  }
  return std::nullopt;
}

}  // namespace

Result<void> GraphState::replay_checked() {
  std::lock_guard lock(mutex_);
  const unsigned gate = hot_.gate->bits();
  if (released() || (gate & capture::ReplayGate::kClosed) != 0) {
    return Error(Errc::graph_state,
                 "replay_checked: the graph is destroyed or its device is closed");
  }
  if ((gate & capture::ReplayGate::kRecording) != 0) {
    return Error(Errc::graph_state,
                 "replay_checked: its stream is recording (its operations would be recorded, "
                 "and its waits would invalidate the recording)");
  }
  const capture::Recording& recording = *recording_;
  if (std::optional<Error> refused = unsupported(recording)) return *refused;
  // As a replay: one that reads a buffer carrying a failure is skipped, its outputs marked.
  if (std::optional<Error> failure = recording.buffers.first_failed_read()) {
    Error error(Errc::failed_buffer,
                "replay_checked: a buffer the graph reads carries an error, so nothing was run: " +
                    failure->message(),
                failure->driver_code());
    recording.buffers.fail_writes(error);
    return error;
  }
  // As a replay: after other streams' uses of its buffers (checked only when there were some).
  if ((hot_.flags.load(std::memory_order_acquire) &
       (memory::ReplayChecks::kUsedElsewhere | memory::ReplayChecks::kShared)) != 0) {
    if (Result<void> ordered = check_replay_order(); !ordered) {
      return std::move(ordered).error().context("replay_checked");
    }
  }
  if (Result<void> bound = stream_->device().bind_thread(); !bound) {
    return bound.error().context("replay_checked");
  }
  // The work enqueued before it finishes first: a fault found from here on is the graph's.
  if (Result<void> before = stream_->synchronize("replay_checked"); !before) {
    return Error(before.error().code(),
                 before.error().message() +
                     " (before the graph's first node: the stream had "
                     "faulted already)",
                 before.error().driver_code());
  }
  std::vector<const capture::ParamNode*> params(recording.nodes.size(), nullptr);
  for (const capture::ParamNode& node : recording.param_nodes) {
    if (node.recorded < params.size()) params[node.recorded] = &node;
  }
  DriverApi& driver = *hot_.driver;
  const std::size_t count = recording.nodes.size();
  hot_.mark_replay();  // its buffers' uses, as a replay's
  // Recording order is a topological order of the nodes: each depends on nodes recorded before.
  for (std::size_t i = 0; i < count; ++i) {
    const OperationLabel label = recording.label(i);
    const char* entry = "";
    std::optional<Error> failed;
    const Reissue reissue = reissue_of(recording.nodes[i], label);
    if (const CUresult result = issue_again(driver, hot_.stream, reissue, label, params[i], &entry);
        result != CUDA_SUCCESS) {
      failed = Error::from_driver(entry, result);
    } else if (Result<void> done = stream_->synchronize("waiting for it"); !done) {
      failed = done.error();
    }
    if (failed) {
      Error error(failed->code(),
                  "replay_checked: node " + std::to_string(i) + " of " + std::to_string(count) +
                      " failed: " + described(recording.nodes[i], label, params[i]) + ": " +
                      failed->message(),
                  failed->driver_code());
      recording.buffers.fail_writes(error);  // what they hold now no replay produced
      return error;
    }
  }
  recording.buffers.clear_produced();
  return {};
}

}  // namespace graphcap::detail
