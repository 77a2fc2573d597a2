// What the fake finds that a GPU only shows as wrong bytes: nodes of a launched graph that race
// (no path of edges orders them, and they touch the same bytes, one writing), the order a launch
// runs its nodes in (node_order_seed: any order the edges allow), and addresses baked into a
// captured kernel's parameters whose memory is gone by the replay.
#include <graphcap/fake/internal/fake_state.h>

#include <cstring>

namespace graphcap::fake {

const std::vector<std::size_t>& FakeState::launch_order(const internal::ExecBody& body,
                                                        std::vector<std::size_t>& storage) {
  if (options_.node_order_seed == 0) return body.order;
  storage = internal::random_topological_order(body.nodes, [this] { return order_random_(); });
  return storage;
}

std::string FakeState::node_label(const internal::NodeData& node, std::size_t index, int depth) {
  return "node " + std::to_string(index) +
         (depth > 0 ? " of a conditional body, depth " + std::to_string(depth) : std::string()) +
         " (" + internal::describe(node.work) + ")";
}

bool FakeState::check_graph_races(const internal::ExecBody& body,
                                  const std::vector<internal::AccessLog>& logs,
                                  const std::vector<std::size_t>& order, CUgraphExec exec,
                                  int depth) {
  // Most launches touch memory in several nodes; a graph of one node, or of nodes touching
  // nothing, has nothing to compare.
  std::size_t touching = 0;
  for (const internal::AccessLog& log : logs) touching += log.ranges.empty() ? 0 : 1;
  if (touching < 2) return true;
  if (!body.races) {
    body.races = std::make_shared<internal::RaceCache>(internal::Reachability(body.nodes, body.order));
  }
  bool faulted = false;
  for (const internal::Race& race : internal::find_races(logs, order, body.races->reach)) {
    if (!body.races->reported.insert({race.first, race.second}).second) continue;
    const auto verb = [](bool write) { return write ? "writes" : "reads"; };
    const std::size_t bytes = race.end - race.begin;
    std::string bytes_text = std::to_string(bytes) + " bytes at " + internal::hex(race.begin);
    if (const internal::DeviceMemory::Allocation* allocation =
            device_memory_.find_containing(race.begin)) {
      const std::size_t offset = race.begin - allocation->base;
      bytes_text += " (bytes " + std::to_string(offset) + "-" + std::to_string(offset + bytes) +
                    " of allocation " + internal::hex(allocation->base) + " of " +
                    std::to_string(allocation->size) + " bytes)";
    }
    std::string text = "cuGraphLaunch of exec " +
                       internal::hex(reinterpret_cast<std::uintptr_t>(exec)) + ": race between " +
                       node_label(body.nodes[race.first], race.first, depth) + " and " +
                       node_label(body.nodes[race.second], race.second, depth) +
                       ", which no path of edges orders: node " + std::to_string(race.first) +
                       " " + verb(race.first_writes) + " and node " +
                       std::to_string(race.second) + " " + verb(race.second_writes) + " the " +
                       bytes_text +
                       " (on a GPU they may run in either order, or at once: add the edge, an "
                       "event wait between their streams, or a join)";
    // Under strict the launch fails as a fault does: no GPU reports a race, so the code is the
    // generic one of a failed launch.
    if (options_.strict) {
      fault(CUDA_ERROR_LAUNCH_FAILED, text);
      faulted = true;
    }
    violations_.push_back(std::move(text));
  }
  return !faulted;
}

std::vector<internal::HeldAddress> FakeState::held_addresses(const internal::KernelWork& work) {
  std::vector<internal::HeldAddress> held;
  const std::vector<KernelParamInfo>& params = work.kernel->params;
  for (std::size_t p = 0; p < params.size(); ++p) {
    const KernelParamInfo& param = params[p];
    // Every 8-byte-aligned word of the parameter: a pointer parameter's one, and the pointers a
    // struct passed by value carries (a tensor map's global address).
    for (std::size_t offset = (8 - param.offset % 8) % 8; offset + 8 <= param.size; offset += 8) {
      CUdeviceptr address = 0;
      std::memcpy(&address, work.params.data() + param.offset + offset, sizeof address);
      if (address == 0) continue;
      internal::DeviceMemory::Extent extent;
      std::string why;
      if (!device_memory_.extent(address, &extent, &why, false)) continue;
      held.push_back({p, offset, address, extent.allocation, extent.allocation_size});
    }
  }
  return held;
}

void FakeState::check_baked(const internal::KernelWork& work, const std::string& where) {
  for (const internal::HeldAddress& held : work.held) {
    internal::DeviceMemory::Extent extent;
    std::string why;
    if (device_memory_.extent(held.address, &extent, &why, false)) continue;
    const std::size_t size = work.kernel->params[held.param].size;
    violation(where + ": kernel '" + work.kernel->name + "' parameter " +
              std::to_string(held.param) +
              (size > 8 ? " (bytes " + std::to_string(held.offset) + "-" +
                              std::to_string(held.offset + 8) + " of its " + std::to_string(size) +
                              ")"
                        : std::string()) +
              " holds " + internal::hex(held.address) +
              ", an address baked at capture: it lay in allocation " +
              internal::hex(held.allocation) + " of " + std::to_string(held.allocation_size) +
              " bytes then, and now it " + why +
              " (the graph does not keep that memory alive: keep it for the graph's lifetime, "
              "or record again)");
  }
}

// ---- eager: streams ---------------------------------------------------------------------------

void FakeState::begin_eager(const Op& op, const Stream& stream) {
  internal::VectorClock& clock = stream_clocks_[stream.id];
  clock.join(*op.host);  // what the host had waited for when it enqueued this
  Stream& waiting = *stream_by_id(stream.id);
  std::erase_if(waiting.waits, [&](const Stream::EventWait& wait) {
    if (wait.from_seq > op.seq) return false;
    clock.join(*wait.clock);
    return true;
  });
  // The legacy stream waits for the work before it on every blocking stream of its device, and
  // a blocking stream's work waits for the legacy stream's before it (CUDA's implicit sync).
  const bool blocking = (stream.flags & CU_STREAM_NON_BLOCKING) == 0;
  if (stream.legacy) {
    for (const auto& [id, other] : streams_) {
      if (id == stream.id || other->legacy || other->device != stream.device ||
          (other->flags & CU_STREAM_NON_BLOCKING) != 0) {
        continue;
      }
      if (auto found = stream_clocks_.find(id); found != stream_clocks_.end()) {
        clock.join(found->second);
      }
    }
  } else if (blocking) {
    const std::uint64_t legacy =
        contexts_[static_cast<std::size_t>(stream.device)].default_stream;
    if (auto found = stream_clocks_.find(legacy); found != stream_clocks_.end() && legacy != 0) {
      clock.join(found->second);
    }
  }
  clock.advance(stream.id);
}

std::string FakeState::stream_name(const Stream& stream) const {
  if (stream.legacy) return "the legacy stream of device " + std::to_string(stream.device);
  if (stream.handle == nullptr) return "a per-thread stream of device " + std::to_string(stream.device);
  return "stream " + internal::hex(reinterpret_cast<std::uintptr_t>(stream.handle));
}

bool FakeState::check_eager_writes(const Op& op, const Stream& stream,
                                   const internal::AccessLog& log, std::string* text) {
  const internal::VectorClock& clock = stream_clocks_[stream.id];
  internal::EagerWrite write;
  write.stream = stream.id;
  write.count = clock.of(stream.id);
  bool clean = true;
  for (const internal::Access& access : log.ranges) {
    if (!access.write) continue;
    if (write.what.empty()) {
      const auto* node = std::get_if<internal::NodeWork>(&op.work);
      const auto* launch = std::get_if<GraphLaunchWork>(&op.work);
      write.what = std::string(op.entry_point) + " (" +
                   (node != nullptr ? internal::describe(*node)
                    : launch != nullptr
                        ? "exec " + internal::hex(reinterpret_cast<std::uintptr_t>(launch->exec))
                        : std::string("work")) +
                   ") on " + stream_name(stream);
    }
    for (const internal::LastWrites::Conflict& conflict :
         last_writes_.write(access.begin, access.end, write, clock)) {
      const std::size_t bytes = conflict.end - conflict.begin;
      std::string where = std::to_string(bytes) + " bytes at " + internal::hex(conflict.begin);
      if (const internal::DeviceMemory::Allocation* allocation =
              device_memory_.find_containing(conflict.begin)) {
        const std::size_t offset = conflict.begin - allocation->base;
        where += " (bytes " + std::to_string(offset) + "-" + std::to_string(offset + bytes) +
                 " of allocation " + internal::hex(allocation->base) + " of " +
                 std::to_string(allocation->size) + " bytes)";
      }
      std::string message = write.what + ": race with " + conflict.earlier.what +
                            ": both write the " + where +
                            ", and no event wait or host wait orders the two (on a GPU the "
                            "streams may run them in either order, or at once)";
      if (clean) *text = message;
      clean = false;
      violations_.push_back(std::move(message));
    }
  }
  return clean;
}

void FakeState::eager_record(const Op& op, CUevent event) {
  const internal::VectorClock& clock = stream_clocks_[op.stream];
  if (events_.count(event) != 0) event_clocks_[event] = clock;
  auto [first, last] = awaited_records_.equal_range(op.seq);
  for (auto it = first; it != last; ++it) *it->second = clock;
  awaited_records_.erase(first, last);
}

void FakeState::eager_wait(Stream& stream, CUevent event, const Event& awaited) {
  auto clock = std::make_shared<internal::VectorClock>();
  if (awaited.done) {
    if (auto found = event_clocks_.find(event); found != event_clocks_.end()) *clock = found->second;
  } else {
    awaited_records_.emplace(awaited.record_seq, clock);  // filled when the record runs
  }
  stream.waits.push_back({next_seq_, std::move(clock)});
}

void FakeState::host_waited(const Stream& stream) {
  auto joined = std::make_shared<internal::VectorClock>(*host_clock_);
  if (auto found = stream_clocks_.find(stream.id); found != stream_clocks_.end()) {
    joined->join(found->second);
  }
  // Event waits issued since the stream's last work ran: a wait on the stream covers the work
  // they wait for too (CUDA's cuStreamSynchronize waits for it), though no later work of the
  // stream has joined them into its clock yet. Their records have run: the wait ran the queue
  // up to them.
  for (const Stream::EventWait& wait : stream.waits) joined->join(*wait.clock);
  host_clock_ = std::move(joined);
}

void FakeState::host_waited(CUevent event) {
  auto found = event_clocks_.find(event);
  if (found == event_clocks_.end()) return;
  auto joined = std::make_shared<internal::VectorClock>(*host_clock_);
  joined->join(found->second);
  host_clock_ = std::move(joined);
}

void FakeState::host_waited_all() {
  auto joined = std::make_shared<internal::VectorClock>(*host_clock_);
  for (const auto& [id, clock] : stream_clocks_) joined->join(clock);
  host_clock_ = std::move(joined);
}

}  // namespace graphcap::fake
