// RecordingBook: the book an open recording keeps of what it recorded: its identity and doom,
// the node records and their topology, what its graph will replay against (the pins, what it
// keeps alive, the buffers by role), the param nodes and the node counts. Every operation of
// every stream in the recording enters here (record()), and the close takes the book whole
// into the Recording (take_locked()).
//
// Its lock guards the book and the recording's other owners' state beside it (the conditional
// frames, the forked streams): side streams record under their own stream's mutex, so the
// origin's mutex alone does not guard what they write. Methods named `_locked` want it held;
// the others take it. It makes no CUDA calls but the one naming a param node's node.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include <graphcap/capture/graph_driver.h>
#include <graphcap/capture/recorded_topology.h>
#include <graphcap/capture/recording.h>
#include <graphcap/result.h>

namespace graphcap::capture {

class RecordingBook {
 public:
  // Where the origin stream's operations are recorded now: the open body of the innermost
  // conditional node (`frame` its loop's or condition's id, `body` which of its bodies, `lane`
  // its lane in the topology), or the graph itself (frame 0). Set by the conditional frames.
  struct Place {
    std::uint64_t frame = 0;
    unsigned body = 0;
    int lane = 0;
  };

  RecordingBook(GraphDriver& graphs, CUstream stream) noexcept
      : graphs_(&graphs), stream_(stream) {}
  RecordingBook(const RecordingBook&) = delete;
  RecordingBook& operator=(const RecordingBook&) = delete;

  std::mutex& mutex() const noexcept { return mutex_; }

  // A new recording `id` of stream `stream_index` in `mode` opens: the book is emptied.
  void open(std::uint64_t id, int stream_index, CUstreamCaptureMode mode);
  // The open recording's identity (unique in the process), 0 when none is open.
  std::uint64_t id() const;
  // The recording's id, open or closing (for messages and the debug log).
  std::uint64_t id_locked() const noexcept { return id_; }
  bool open_locked() const noexcept { return open_; }
  int stream_index() const noexcept { return stream_index_; }
  CUstreamCaptureMode mode() const noexcept { return mode_; }

  // An operation of stream `stream` (its index), issued on `issued_on`: pin its memory, note
  // what it reads and writes, keep alive what its replay needs, add its node; name the node of
  // a launch that took params. `failure`: it failed or was skipped, so the recording is doomed.
  // An error when the recording could not name a param node (the recording is doomed then too).
  Result<void> record(Operation& op, int stream, const Error* failure, CUstream issued_on);
  // The node of a conditional node the origin inserts (of loop or condition `frame`, labelled
  // `label`), where the origin records now: its index in the topology.
  std::size_t add_conditional_locked(std::uint64_t frame, std::string label,
                                     std::source_location where);

  void doom(const Error& error);
  void doom_locked(const Error& error) {
    if (!doomed_) doomed_ = error;
  }
  const std::optional<Error>& doomed_locked() const noexcept { return doomed_; }

  // `body_nodes`: what the body holds already (a body returned to when a frame inside closes).
  void place_locked(const Place& place, std::size_t body_nodes = 0) noexcept {
    place_ = place;
    body_nodes_ = body_nodes;
  }
  // Nodes recorded into the open body.
  std::size_t body_nodes_locked() const noexcept { return body_nodes_; }
  // A kernel recorded into this recording takes condition (or loop) `id` (Arg::condition).
  bool condition_taken_locked(std::uint64_t id) const;
  RecordedTopology& topology_locked() noexcept { return topology_; }
  const RecordedTopology& topology_locked() const noexcept { return topology_; }

  // The close: the recording is no longer open; its contents go to `recording` (which is new:
  // its lists are empty), and what it recorded (the node counts) and its doom are returned.
  struct Taken {
    GraphReport recorded;
    std::optional<Error> doomed;
    // A buffer allocated inside the recording was alive at the close: it holds bytes only the
    // graph's replays write.
    bool kept_allocation = false;
  };
  Taken take_locked(Recording& recording);
  // A recording this book's graph replaced: its node list's room is kept for the next
  // recording (RecordedTopology::recycle).
  void recycle(Recording& replaced) noexcept;
  // A buffer allocated inside the recording (any stream of it, lent by a pool or not), watched
  // until the close (Taken::kept_allocation).
  void allocated_inside(const std::shared_ptr<memory::BufferState>& buffer);

 private:
  // record()'s rare parts, out of line so a recorded launch's path stays on few code lines.
  void record_failure_locked(const Operation& op, const Error& failure);
  Result<void> record_param_node_locked(Operation& op, CUstream issued_on);
  void log_recorded_locked(std::size_t added, CUgraphNodeType type) const;

  GraphDriver* graphs_;
  CUstream stream_;
  int stream_index_ = 0;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_GLOBAL;

  mutable std::mutex mutex_;
  std::uint64_t id_ = 0;
  bool open_ = false;
  std::optional<Error> doomed_;
  GraphReport recorded_;  // node counts of the recording's own operations
  std::vector<std::shared_ptr<memory::Allocation>> pins_;
  BufferRoles roles_;
  std::vector<std::shared_ptr<const void>> keep_alive_;
  std::vector<ParamNode> param_nodes_;
  std::vector<std::weak_ptr<memory::BufferState>> allocated_inside_;
  RecordedTopology topology_;
  std::size_t node_hint_ = 0;  // how many nodes the last recording made
  Place place_;
  std::size_t body_nodes_ = 0;
  std::vector<std::uint64_t> taken_conditions_;
  bool node_priorities_ = false;  // a recorded launch asked for a priority
  std::size_t programmatic_edges_ = 0;
};

}  // namespace graphcap::capture
