#include <graphcap/capture/recording_book.h>

#include <graphcap/driver/error_names.h>

#include <algorithm>
#include <utility>

#include <graphcap/capture/invalidation.h>
#include <graphcap/log.h>

namespace graphcap::capture {

void RecordingBook::open(std::uint64_t id, int stream_index, CUstreamCaptureMode mode) {
  std::lock_guard lock(mutex_);
  stream_index_ = stream_index;
  mode_ = mode;
  id_ = id;
  open_ = true;
  doomed_.reset();
  recorded_ = GraphReport{};
  pins_.clear();
  roles_ = BufferRoles{};
  keep_alive_.clear();
  param_nodes_.clear();
  // A re-recording of the same step records as many nodes: reserve them once instead of
  // growing (and moving every node) 8 times.
  topology_.clear(node_hint_);
  place_ = Place{};
  body_nodes_ = 0;
  taken_conditions_.clear();
  node_priorities_ = false;
  programmatic_edges_ = 0;
}

std::uint64_t RecordingBook::id() const {
  std::lock_guard lock(mutex_);
  return open_ ? id_ : 0;
}

void RecordingBook::doom(const Error& error) {
  std::lock_guard lock(mutex_);
  doom_locked(error);
}

bool RecordingBook::condition_taken_locked(std::uint64_t id) const {
  return std::find(taken_conditions_.begin(), taken_conditions_.end(), id) !=
         taken_conditions_.end();
}

Result<void> RecordingBook::record(Operation& op, int stream, const Error* failure,
                                   CUstream issued_on) {
  std::lock_guard lock(mutex_);
  for (const BufferUse& use : op.uses) {
    const std::shared_ptr<memory::BufferState>& buffer = *use.buffer;
    // Repeats of the last entry are skipped here (the rest are deduplicated at the close): a pass
    // of n launches of one kernel over the same buffers then holds one entry, not n.
    if (pins_.empty() || pins_.back() != buffer->memory()) pins_.push_back(buffer->memory());
    if (reads(use.access)) roles_.reads.push_back(buffer);
    if (writes(use.access)) roles_.writes.push_back(buffer);
    if (use.access == Access::write_whole && failure == nullptr) roles_.produces.push_back(buffer);
  }
  if (op.staging) pins_.push_back(op.staging);
  if (op.keep_alive && (keep_alive_.empty() || keep_alive_.back().get() != op.keep_alive.id)) {
    keep_alive_.push_back(op.keep_alive.share(op.keep_alive.owner));
  }
  if (failure != nullptr) [[unlikely]] {
    record_failure_locked(op, *failure);
    return {};
  }
  if (op.params != nullptr) {
    if (Result<void> named = record_param_node_locked(op, issued_on); !named) return named;
  }
  // The origin stream's operations go into the innermost open body (side streams' never do:
  // conditional nodes are the origin's): its lane; the graph's own counts are the graph's nodes.
  const bool in_body = stream == stream_index_ && place_.frame != 0;
  if (op.condition != 0) [[unlikely]] taken_conditions_.push_back(op.condition);
  if (in_body) {
    ++body_nodes_;
  } else if (op.external) {
    recorded_.external_work = true;  // the instantiate check reads the graph's nodes instead
  } else {
    ++recorded_.nodes_by_type[op.node];
    ++recorded_.node_count;
  }
  node_priorities_ = node_priorities_ || op.priority;
  RecordedNode& node = topology_.add(in_body ? place_.lane : stream);
  node.type = op.node;
  // (Not a conditional expression: that would move the label into a temporary first.)
  if (op.external && op.label.empty()) {
    OperationLabel external = OperationLabel::of_text("external work (record_external)");
    external.where = op.label.where;
    topology_.set_label(node, std::move(external));
  } else {
    topology_.set_label(node, std::move(op.label));
  }
  node.stream = stream;
  node.loop = in_body ? place_.frame : 0;
  node.branch_body = in_body ? place_.body : 0;
  if (op.programmatic) [[unlikely]] {
    // As the driver makes them (P01): programmatic edges from kernels, ordinary ones otherwise.
    node.programmatic = true;
    node.for_each_dependency(topology_.store(), [&](std::size_t before) {
      if (topology_.at(before).type == CU_GRAPH_NODE_TYPE_KERNEL) ++programmatic_edges_;
    });
  }
  if (log_enabled(LogLevel::debug)) [[unlikely]] log_recorded_locked(topology_.size() - 1, op.node);
  return {};
}

void RecordingBook::record_failure_locked(const Operation& op, const Error& failure) {
  if (!doomed_ && failure.driver_code() == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
    // Say which graphcap operation first saw the invalidation, and what came before it.
    doom_locked(Error(failure.code(),
               failure.message() + " (the first graphcap operation to see the recording "
               "invalidated; the one before it was " +
                   (topology_.empty() ? std::string("none: the recording had just begun")
                                      : topology_.label(topology_.size() - 1).first_line()) +
                   "; " + likely_causes(mode_) + driver_account(*graphs_, stream_) + ")",
               failure.driver_code()));
  } else {
    doom_locked(failure);
  }
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id_) + ": " + op.label.first_line() +
                             " failed: " + failure.message());
  }
}

Result<void> RecordingBook::record_param_node_locked(Operation& op, CUstream issued_on) {
  // The node just recorded is the capture's one dependency now (docs/cuda-driver-facts.md,
  // cuStreamGetCaptureInfo): the node Graph::set names.
  Result<CUgraphNode> node = graphs_->last_node(issued_on);
  if (!node) {
    Error error = std::move(node).error().context(
        "finding the recorded node of a launch that takes a Param");
    doom_locked(error);
    return error;
  }
  op.params->node = *node;
  op.params->recorded = topology_.size();  // record() adds its node next
  param_nodes_.push_back(std::move(*op.params));
  return {};
}

void RecordingBook::log_recorded_locked(std::size_t added, CUgraphNodeType type) const {
  std::string text = topology_.label(added).text();
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  log(LogLevel::debug, "recording " + std::to_string(id_) + ": node " + std::to_string(added) +
                           " " + node_type_name(type) + ": " + text);
}

std::size_t RecordingBook::add_conditional_locked(std::uint64_t frame, std::string label,
                                                  std::source_location where) {
  // Recorded where the stream's work goes now (the graph, or the enclosing body), depending on
  // what the stream recorded last; later work there depends on it.
  const bool in_body = place_.frame != 0;
  if (in_body) {
    ++body_nodes_;
  } else {
    ++recorded_.nodes_by_type[CU_GRAPH_NODE_TYPE_CONDITIONAL];
    ++recorded_.node_count;
  }
  RecordedNode& node = topology_.add(in_body ? place_.lane : stream_index_);
  node.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  OperationLabel text = OperationLabel::of_text(std::move(label));
  text.where = where;
  topology_.set_label(node, std::move(text));
  node.stream = stream_index_;
  node.loop = in_body ? place_.frame : 0;
  node.branch_body = in_body ? place_.body : 0;
  node.body = frame;
  return topology_.size() - 1;
}

RecordingBook::Taken RecordingBook::take_locked(Recording& recording) {
  open_ = false;
  Taken taken{std::exchange(recorded_, GraphReport{}), std::exchange(doomed_, std::nullopt)};
  taken.recorded.node_priorities = node_priorities_;
  taken.recorded.programmatic_edges = programmatic_edges_;
  // (The recording is new: its lists are empty, so a swap hands them over.)
  recording.pins.swap(pins_);
  recording.buffers = std::exchange(roles_, BufferRoles{});
  recording.keep_alive.swap(keep_alive_);
  recording.param_nodes.swap(param_nodes_);
  node_hint_ = topology_.size();
  recording.nodes = topology_.take();
  recording.store = topology_.take_store();
  place_ = Place{};
  taken.kept_allocation = std::any_of(allocated_inside_.begin(), allocated_inside_.end(),
                                      [](const auto& weak) { return !weak.expired(); });
  allocated_inside_.clear();
  return taken;
}

void RecordingBook::allocated_inside(const std::shared_ptr<memory::BufferState>& buffer) {
  std::lock_guard lock(mutex_);
  std::erase_if(allocated_inside_, [](const auto& weak) { return weak.expired(); });
  allocated_inside_.push_back(buffer);
}

void RecordingBook::recycle(Recording& replaced) noexcept {
  std::lock_guard lock(mutex_);
  topology_.recycle(std::move(replaced.nodes), std::move(replaced.store));
}

}  // namespace graphcap::capture
