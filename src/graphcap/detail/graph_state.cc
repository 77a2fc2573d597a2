#include <graphcap/detail/graph_state.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <graphcap/detail/buffer_order.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device_limits.h>
#include <graphcap/log.h>

namespace graphcap::detail {

GraphState::GraphState(std::shared_ptr<StreamCore> stream,
                       std::unique_ptr<capture::Recording> recording) noexcept
    : stream_(std::move(stream)), recording_(std::move(recording)) {
  hot_.driver = &stream_->device().driver();
  hot_.exec = recording_->executable.get();
  hot_.stream = stream_->handle();
  hot_.gate = &stream_->gate();
  hot_.device_id = stream_->device().id();
  hot_.position = &stream_->drops().position();
  tell_other_devices();
  try {
    current_ = buffers_of(*recording_);
  } catch (...) {
    hot_.flags.fetch_or(memory::ReplayChecks::kShared, std::memory_order_acq_rel);
  }
  watch_buffers();
}

GraphState::~GraphState() { forget_buffers(); }

namespace {

// The same buffers in the same roles and order (a re-recording of the same step): compared by
// identity, without taking a reference to any.
bool same_buffers(const capture::BufferRoles& a, const capture::BufferRoles& b) noexcept {
  auto same = [](const std::vector<std::weak_ptr<memory::BufferState>>& x,
                 const std::vector<std::weak_ptr<memory::BufferState>>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const auto& p, const auto& q) {
      return !p.owner_before(q) && !q.owner_before(p);
    });
  };
  return same(a.reads, b.reads) && same(a.writes, b.writes) && same(a.produces, b.produces);
}

}  // namespace

std::vector<GraphState::Watched> GraphState::buffers_of(const capture::Recording& recording) {
  std::vector<Watched> all;
  const capture::BufferRoles& roles = recording.buffers;
  all.reserve(roles.writes.size() + roles.produces.size() + roles.reads.size());
  auto note = [&](const std::vector<std::weak_ptr<memory::BufferState>>& role, bool writes) {
    for (const auto& weak : role) {
      if (std::shared_ptr<memory::BufferState> buffer = weak.lock()) {
        all.push_back({std::move(buffer), writes});
      }
    }
  };
  note(roles.writes, true);
  note(roles.produces, true);
  note(roles.reads, false);
  // Once each, by address; written when any role writes it.
  std::sort(all.begin(), all.end(), [](const Watched& a, const Watched& b) {
    return a.buffer != b.buffer ? a.buffer < b.buffer : a.writes > b.writes;
  });
  all.erase(std::unique(all.begin(), all.end(),
                        [](const Watched& a, const Watched& b) { return a.buffer == b.buffer; }),
            all.end());
  return all;
}

void GraphState::watch_buffers() noexcept {
  std::erase_if(told_, [](const auto& buffer) { return buffer.expired(); });
  try {
    for (const Watched& watched : current_) {
      const std::shared_ptr<memory::BufferState>& buffer = watched.buffer;
      buffer->replays().add({this, stream_.get(), &hot_.replayed_at, 0, &hot_.flags, watched.writes},
                            buffer->owner());
      told_.push_back(watched.buffer);
      // (After add: a failure from now on sets the bit itself.)
      if (buffer->failed()) {
        hot_.flags.fetch_or(memory::ReplayChecks::kCarriesFailure, std::memory_order_acq_rel);
      }
    }
  } catch (...) {
    // Out of memory: without its uses the graph's replays can't be checked against other
    // streams; check every replay's order instead (the buffers it told keep its uses).
    hot_.flags.fetch_or(memory::ReplayChecks::kShared, std::memory_order_acq_rel);
  }
}

void GraphState::freeze_buffers() noexcept {
  for (const Watched& watched : current_) watched.buffer->replays().freeze(this);
}

void GraphState::forget_buffers() noexcept {
  for (const auto& weak : told_) {
    if (std::shared_ptr<memory::BufferState> buffer = weak.lock()) buffer->replays().forget(this);
  }
  told_.clear();
  current_.clear();
}

void GraphState::note_failures() noexcept {
  for (const Watched& watched : current_) {
    if (watched.buffer->failed()) {
      hot_.flags.fetch_or(memory::ReplayChecks::kCarriesFailure, std::memory_order_acq_rel);
      return;
    }
  }
}

Result<void> GraphState::check_replay_order() {
  // Cleared first: a use elsewhere while this checks sets it again for the next replay.
  hot_.flags.fetch_and(~memory::ReplayChecks::kUsedElsewhere, std::memory_order_acq_rel);
  for (const Watched& watched : current_) {
    const memory::BufferState& buffer = *watched.buffer;
    const char* what = watched.writes ? "a buffer the graph writes" : "a buffer the graph reads";
    if (Result<void> ordered = check_buffer_order(buffer, *stream_, what, watched.writes);
        !ordered) {
      hot_.flags.fetch_or(memory::ReplayChecks::kUsedElsewhere, std::memory_order_acq_rel);
      Error error = std::move(ordered).error();
      if (std::shared_ptr<const std::string> label = buffer.label()) {
        error = Error(error.code(), "(" + *label + ") " + error.message(), error.driver_code());
      }
      return error;
    }
  }
  return {};
}

void GraphState::tell_other_devices() const {
  // A peer copy's memory belongs to another device: it keeps it past its own close while this
  // graph pins it (a graph keeps alive everything it replays against).
  try {
    for (const auto& pin : recording_->pins) {
      DeviceCore& owner = static_cast<StreamCore&>(pin->owner()).device();
      if (&owner != &stream_->device()) owner.pinned_by_other_device(pin);
    }
  } catch (...) {
    log(LogLevel::error, "a graph could not tell another device it pins its memory: closing "
                         "that device first frees memory the graph replays against");
  }
}

std::unique_ptr<capture::Recording> GraphState::adopt(
    std::unique_ptr<capture::Recording> recording) noexcept {
  std::lock_guard lock(mutex_);
  capture::Recording& old = *recording_;
  if (!recording->executable) {
    recording->executable = std::move(old.executable);
    recording->report.uploaded = old.report.uploaded;
    // The executable's memory is the driver's from its instantiate: an update takes none.
    GraphMemory& memory = recording->report.memory;
    const GraphMemory& kept = old.report.memory;
    memory.driver_bytes = kept.driver_bytes;
    memory.driver_source = kept.driver_source;
    memory.driver_model_bytes = kept.driver_model_bytes;
    memory.driver_taken_bytes = kept.driver_taken_bytes;
    memory.driver_taken_known = kept.driver_taken_known;
    // Replays already enqueued still run the old nodes: the modules of their kernels stay loaded
    // as long as this graph (unloading one under a running kernel is not safe).
    // Both lists are sorted and unique (the close dedupes them); a re-recording of the same
    // step usually keeps the same modules: then there is nothing to merge (and nothing to
    // allocate).
    auto& keep = recording->keep_alive;
    if (!std::includes(keep.begin(), keep.end(), old.keep_alive.begin(), old.keep_alive.end())) {
      keep.insert(keep.end(), old.keep_alive.begin(), old.keep_alive.end());
      std::sort(keep.begin(), keep.end());
      keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    }
    old.keep_alive.clear();
    // Its nodes are still the executable's names for param nodes (mapped onto them).
    recording->source = std::move(old.source);
    recording->source_nodes = std::move(old.source_nodes);
  }
  // The buffers it replays with from now on. A re-recording of the same step over the same
  // buffers changes nothing; otherwise replays of the old executable may still be queued, so the
  // old buffers keep its last position.
  const bool changed = !same_buffers(old.buffers, recording->buffers);
  std::vector<Watched> now;
  if (changed) {
    try {
      now = buffers_of(*recording);
    } catch (...) {
      hot_.flags.fetch_or(memory::ReplayChecks::kShared, std::memory_order_acq_rel);
    }
  }
  recording_.swap(recording);  // `recording` is the replaced one now
  hot_.exec = recording_->executable.get();
  tell_other_devices();
  if (changed) {
    freeze_buffers();
    current_ = std::move(now);
    watch_buffers();
  }
  return recording;
}

namespace {

CUresult set_node(DriverApi& driver, CUgraphExec exec, capture::ParamNode& node) {
  std::array<void*, kMaxLaunchArgs> args;
  const std::size_t count = std::min(node.offsets.size(), args.size());
  for (std::size_t i = 0; i < count; ++i) args[i] = node.bytes.data() + node.offsets[i];
  CUDA_KERNEL_NODE_PARAMS params{};
  params.func = node.function;
  params.gridDimX = node.dims.grid.x;
  params.gridDimY = node.dims.grid.y;
  params.gridDimZ = node.dims.grid.z;
  params.blockDimX = node.dims.block.x;
  params.blockDimY = node.dims.block.y;
  params.blockDimZ = node.dims.block.z;
  params.sharedMemBytes = node.dims.shared_bytes;
  params.kernelParams = args.data();
  return driver.cuGraphExecKernelNodeSetParams(exec, node.node, &params);
}

// Writes `bytes` into every argument of `node` bound to `param`; whether it took it.
bool write_param(capture::ParamNode& node, const void* param, const void* bytes,
                 std::size_t size) {
  bool took = false;
  for (const capture::ParamNode::Binding& binding : node.bindings) {
    if (binding.param.get() != param) continue;
    std::memcpy(node.bytes.data() + node.offsets[binding.arg], bytes, size);
    took = true;
  }
  return took;
}

}  // namespace

bool GraphState::took_param(const void* param) {
  std::lock_guard lock(mutex_);
  if (released()) return false;
  for (const capture::ParamNode& node : recording_->param_nodes) {
    for (const capture::ParamNode::Binding& binding : node.bindings) {
      if (binding.param.get() == param) return true;
    }
  }
  return false;
}

Result<void> GraphState::set_param(const void* param, const void* bytes, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (released()) {
    return Error(Errc::graph_state, "Graph::set: the graph is destroyed or its device closed");
  }
  // Check first: every node that took the param took it with this size. Every such node holds
  // the same value for it (a set writes all of them, a recording takes one value): keep it to
  // set back on a failure.
  if (size > kMaxArgBytes) {
    return Error(Errc::invalid_argument, "Graph::set: a value of more than 64 bytes");
  }
  std::array<std::byte, kMaxArgBytes> before{};
  bool found = false;
  for (const capture::ParamNode& node : recording_->param_nodes) {
    for (const capture::ParamNode::Binding& binding : node.bindings) {
      if (binding.param.get() != param) continue;
      if (node.sizes[binding.arg] != size) {
        return Error(Errc::invalid_argument,
                     "Graph::set: the param was recorded as a " +
                         std::to_string(node.sizes[binding.arg]) + "-byte argument, not " +
                         std::to_string(size));
      }
      if (!found) std::memcpy(before.data(), node.bytes.data() + node.offsets[binding.arg], size);
      found = true;
    }
  }
  if (!found) {
    return Error(Errc::invalid_argument,
                 "Graph::set: the graph never took this param (no launch recorded into it bound "
                 "it with Arg::param)");
  }
  if (Result<void> bound = stream_->device().bind_thread(); !bound) {
    return bound.error().context("Graph::set");
  }
  DriverApi& driver = stream_->device().driver();
  auto& nodes = recording_->param_nodes;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!write_param(nodes[i], param, bytes, size)) continue;
    if (CUresult result = set_node(driver, hot_.exec, nodes[i]); result != CUDA_SUCCESS) {
      // Set back what was set, so the graph replays one value everywhere (best effort: a
      // driver that fails once may fail again; that is logged).
      (void)write_param(nodes[i], param, before.data(), size);
      for (std::size_t back = 0; back < i; ++back) {
        if (!write_param(nodes[back], param, before.data(), size)) continue;
        if (CUresult again = set_node(driver, hot_.exec, nodes[back]); again != CUDA_SUCCESS) {
          log(LogLevel::warn, Error::from_driver("cuGraphExecKernelNodeSetParams", again)
                                  .context("Graph::set: setting a node back")
                                  .message());
        }
      }
      return Error::from_driver("cuGraphExecKernelNodeSetParams", result).context("Graph::set");
    }
  }
  return {};
}

bool GraphState::try_release(bool host_sync) noexcept {
  std::lock_guard lock(mutex_);
  if (released()) return true;
  std::uint64_t sequence = 0;
  // What a host sync covers: everything enqueued on the stream so far (without the point, out of
  // memory, it orders nothing, which only refuses more).
  std::optional<OrderPoint> point;
  {
    std::lock_guard stream_lock(stream_->mutex());
    sequence = stream_->drops().last_enqueued();
    try {
      if (host_sync) point = stream_->order_point();
    } catch (...) {
    }
  }
  DriverApi& driver = stream_->device().driver();
  {
    // Waiting and destroying the executable are unsafe calls: not while a recording forbids them.
    capture::CaptureTracker::UnsafeCall call = stream_->device().tracker().enter_unsafe_call();
    if (!call) return false;
    hot_.flags.fetch_or(ReplayBlock::kReleased, std::memory_order_acq_rel);
    // A replay may still be running: wait for it before the memory it uses can be reused.
    if (CUresult result = driver.cuStreamSynchronize(stream_->handle()); result != CUDA_SUCCESS) {
      // The stream already faulted: destroy anyway, and let the next sync report it.
      stream_->errors().push(
          Error::from_driver("cuStreamSynchronize", result).context("destroying a graph"));
      sequence = 0;
      point.reset();
    }
    if (Result<void> destroyed = recording_->executable.destroy(); !destroyed) {
      log(LogLevel::warn, destroyed.error().context("destroying a graph").message());
    }
  }
  if (point) {
    stream_->host_saw_finish(*point);
  } else if (sequence != 0) {
    std::lock_guard stream_lock(stream_->mutex());
    stream_->drops().passed(sequence);
  }
  // Its replays are over: no buffer keeps them as uses any more. Unpin: back through the drop
  // queue, already behind the stream. The modules stay loaded until this state goes (the device
  // may be closing, and unloads them after its graphs).
  forget_buffers();
  recording_->pins.clear();
  recording_->source = capture::CapturedGraph{};
  return true;
}

void GraphState::release() noexcept {
  std::lock_guard lock(mutex_);
  if ((hot_.flags.fetch_or(ReplayBlock::kReleased, std::memory_order_acq_rel) &
       ReplayBlock::kReleased) != 0) {
    return;
  }
  DriverApi& driver = stream_->device().driver();
  if (CUresult result = driver.cuStreamSynchronize(stream_->handle()); result != CUDA_SUCCESS) {
    stream_->errors().push(
        Error::from_driver("cuStreamSynchronize", result).context("destroying a graph"));
  }
  if (Result<void> destroyed = recording_->executable.destroy(); !destroyed) {
    log(LogLevel::warn, destroyed.error().context("destroying a graph").message());
  }
  forget_buffers();
  recording_->pins.clear();
  recording_->source = capture::CapturedGraph{};
}

}  // namespace graphcap::detail
