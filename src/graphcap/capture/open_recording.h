// OpenRecording: one recording while it is open, the one owner of its bookkeeping. It holds what
// the graph will replay against (the pins, what it keeps alive, the buffers by role), the param
// nodes, the doom, the pool window, the loops, and the topology of its streams (fork/join); every
// operation enters the recording through it (record(), the event marks and waits, join, the
// loops), and closing hands the graph's state back whole, with the refusal decided before
// anything is changed (an `into` graph, the claims, an executable).
//
// It lives in the Window of the stream that begins the recording (the origin); side streams
// forked into it record into the origin's. Its lock guards the bookkeeping against side streams
// recording under their own stream's mutex; the lifecycle calls (prepare, open, close, loops)
// come with the origin stream's mutex held. It makes no CUDA calls of its own: they are the
// GraphDriver's.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <string>
#include <thread>
#include <vector>

#include <graphcap/capture/capture_tracker.h>
#include <graphcap/capture/graph_driver.h>
#include <graphcap/capture/pool_share.h>
#include <graphcap/capture/recorded_topology.h>
#include <graphcap/capture/recording.h>
#include <graphcap/result.h>

namespace graphcap::memory {
class SliceOwner;
}

namespace graphcap::capture {

class Window;

// The graph a recording is closed into (Device::end_capture(s, into)): its executable, and the
// nodes of the graph it was instantiated from (empty if not kept).
struct IntoGraph {
  const Executable& executable;
  const std::vector<CUgraphNode>& source_nodes;
  // The report of the recording the executable holds now: its node counts, from the census of
  // the graph it was instantiated from (which refused memory nodes), are an updated graph's.
  const GraphReport& report;
};

// What closing produced: the graph's whole state, or the refusal (then `recording` holds only
// what is to be released, which the caller drops once no unsafe-call scope is held).
// The Recording is held by pointer from here to the graph that adopts it: it is large, and each
// move of it was code the close ran cold after the driver's update (issue 24).
struct ClosedRecording {
  std::unique_ptr<Recording> recording;
  std::optional<Error> refusal;
};

class OpenRecording {
 public:
  OpenRecording(GraphDriver& graphs, CaptureTracker& tracker, CUstream stream) noexcept
      : graphs_(&graphs), tracker_(&tracker), stream_(stream) {}
  OpenRecording(const OpenRecording&) = delete;
  OpenRecording& operator=(const OpenRecording&) = delete;

  // ---- The lifecycle (the origin stream's mutex held) ---------------------------------------
  // prepare_capture: the recording will open in `mode`; `claim_on_refusal` false: a refusal
  // leaves what it would have written as it is; with `pool`, the window shares intermediates.
  void prepare(CUstreamCaptureMode mode, bool claim_on_refusal, std::shared_ptr<PoolShare> pool);
  // The window closed in prepare state: forget the options.
  void unprepare() noexcept;
  CUstreamCaptureMode mode() const noexcept { return mode_; }
  // Register with the tracker and open the driver's capture on the stream; undone on a failure.
  Result<void> open(int stream_index);
  // The open recording's identity (unique in the process), 0 when none is open.
  std::uint64_t id() const;
  const CaptureTracker::Registration& registration() const noexcept { return registration_; }
  // In global and thread_local mode only the recording's own thread may end it or open loops.
  Result<void> check_thread(const char* operation) const;
  bool on_other_thread() const noexcept;
  // Close the recording: the driver's capture (and its loops' bodies) always, then the graph or
  // the refusal. `abandon`: refuse it with this error (abort_capture, a closing device);
  // `other_thread`: ended from another thread (the driver then answers WRONG_THREAD).
  struct CloseRequest {
    bool upload = false;
    const IntoGraph* into = nullptr;
    bool other_thread = false;
    std::optional<Error> abandon;
    std::uint64_t sequence = 0;  // the origin stream's operation number at the close
  };
  ClosedRecording close(CloseRequest request);
  // A recording this one's graph replaced: its node list's room is kept for the next recording
  // (RecordedTopology::recycle).
  void recycle(Recording& replaced) noexcept;

  // ---- Operations entering the recording (any stream of it) ------------------------------
  // An operation of stream `stream` (its index), issued on `issued_on`: pin its memory, note
  // what it reads and writes, keep alive what its replay needs, add its node; name the node of
  // a launch that took params. `failure`: it failed or was skipped, so the recording is doomed.
  // An error when the recording could not name a param node (the recording is doomed then too).
  Result<void> record(Operation& op, int stream, const Error* failure, CUstream issued_on);
  void doom(const Error& error);
  // Whether a failed operation marks what it writes (false: claim_on_refusal was false).
  bool claims() const noexcept { return claim_on_refusal_; }
  // The nodes an event recorded now on `stream` marks.
  std::vector<std::size_t> marks(int stream) const;
  // `stream` waited on an event marking `nodes`.
  void waited(int stream, const std::vector<std::size_t>& nodes);
  // `side` (stream `stream`) waited on an event of recording `id` marking `after`: it joins.
  Result<void> join(Window& side, int stream, std::uint64_t id,
                    const std::vector<std::size_t>& after);
  // A graph pool's window: in the recording, a buffer in memory the pool lends (or nullptr),
  // owned by `owner` (the pool's stream) where the pool makes it anew.
  std::shared_ptr<memory::BufferState> lend(std::size_t bytes,
                                            const std::shared_ptr<memory::SliceOwner>& owner);
  // Memory the window allocated (in the warm-up, or the recording), when it shares a pool.
  void allocated(const std::shared_ptr<memory::Allocation>& memory, bool warm_up);
  // A buffer allocated inside the recording (any stream of it, lent by a pool or not). Alive at
  // the close, it holds bytes only the graph's replays write: in a window that does not claim
  // (its warm-up is the step's one execution) that refuses the recording (graph_state).
  void allocated_inside(const std::shared_ptr<memory::BufferState>& buffer);
  // Whether a buffer allocated inside the last recording closed here was alive at its close
  // (whatever the close answered); false again from the next prepare.
  bool kept_allocation_at_close() const noexcept { return kept_at_close_; }
  bool shares_pool() const noexcept { return static_cast<bool>(pool_); }
  bool pool_on_virtual_memory() const noexcept { return pool_ && pool_->virtual_memory(); }
  // begin_capture, before open(): a pool on virtual memory maps what the warm-up planned (the
  // pool never grows inside the recording). A failure maps nothing more.
  Result<void> lay_out_pool() { return pool_ ? pool_->lay_out() : Result<void>{}; }

  // ---- Conditional nodes: WHILE loops, IF/ELSE and SWITCH branches -------------------------
  // (docs/capture-lifecycle.md, "Device-side loops and branches"). Each opens a frame whose
  // bodies the origin stream's operations go into, captured on the frame's body stream; frames
  // nest (up to kMaxDepth, of any kinds) and close innermost first. Every refusal is decided
  // before anything changes (graph_state); a failed driver step dooms the recording (a
  // conditional node without its body must never replay).
  struct LoopInfo {
    std::uint64_t id = 0;                 // unique in the process
    CUgraphConditionalHandle handle = 0;  // what a kernel sets
  };
  struct ConditionInfo {
    std::uint64_t id = 0;  // unique in the process (shared with loops' ids)
    CUgraphConditionalHandle handle = 0;
  };
  enum class BranchKind : std::uint8_t { if_else, switch_cases };
  // The depth a new conditional node would have, or graph_state when too many are open.
  Result<std::size_t> next_loop_depth() const;
  // Insert a WHILE node whose condition is `first` at the start of every replay; what the
  // origin stream records from now on is its body, captured on `body_stream`.
  // (`where`: the public call's line, for the node's label and the messages naming it.)
  Result<LoopInfo> begin_loop(CUstream body_stream, unsigned first, std::source_location where);
  // Close the innermost frame, which must be loop `id`; graph_state otherwise, for a loop whose
  // condition starts true and no recorded kernel takes (it could never end), and for a condition
  // made in its body that steers no branch: nothing changed.
  Result<void> end_loop(std::uint64_t id);
  // A loop or a branch of this id is open.
  bool loop_open(std::uint64_t id) const;
  // A conditional handle on the graph the origin records into now (the graph, or the body open
  // now), starting every replay at `first`, for an IF or a SWITCH to steer by. Nothing changes on
  // a refusal or a failure.
  Result<ConditionInfo> make_condition(unsigned first, std::source_location where);
  // Insert the IF node (with its ELSE body; IF's body open from now on) or the SWITCH node of
  // `cases` bodies (no body open until begin_case) steered by `condition`, on `body_stream`.
  // Refused unless the condition is this recording's, steers no branch yet, was made in a body
  // open now, and a kernel recorded since took it.
  Result<void> begin_branch(CUstream body_stream, BranchKind kind, std::uint64_t condition,
                            unsigned cases, std::source_location where);
  // Close the IF body of the innermost frame (condition's IF) and open its ELSE body.
  Result<void> begin_else(std::uint64_t condition);
  // Close the open case of the innermost frame (condition's SWITCH), if any, and open `index`.
  Result<void> begin_case(std::uint64_t condition, unsigned index);
  // Close the innermost frame, which must be condition's branch of `kind`.
  Result<void> end_branch(BranchKind kind, std::uint64_t condition);
  // The innermost frame has no body open (a SWITCH before its first case, or a body that failed
  // to open): the origin may record nothing now.
  bool between_cases() const noexcept { return between_cases_.load(std::memory_order_acquire); }
  // What `operation` on the origin is refused with then: graph_state between a SWITCH's cases;
  // the recording's doom when the body failed to open (it is refused: end or abort it).
  Error no_body_refusal(const std::string& operation) const;
  // end_capture with frames open, or with a condition made in the graph that steers no branch:
  // refused (the recording stays open), naming the innermost frame or the condition; never for a
  // doomed recording (end_capture closes it, refused with its doom).
  std::optional<Error> open_loop_refusal() const;
  // Where the origin's operations are issued now: the innermost body stream, or nullptr.
  CUstream loop_target() const noexcept { return loop_target_.load(std::memory_order_acquire); }
  // Body streams whose invalidated capture was left open (ending it crashes the H200's driver):
  // never to be used again, destroyed by their owner.
  std::vector<CUstream> take_abandoned_bodies() { return std::exchange(abandoned_bodies_, {}); }

  // For messages and the debug log.
  void set_stream_index(int index) noexcept { stream_index_ = index; }
  void set_stream(const memory::SliceOwner* stream) noexcept { self_ = stream; }

 private:
  // Measured (B08): IF, WHILE, alternating IF/WHILE and SWITCH nodes nest to depth 128 (each
  // depth instantiated and ran); graphcap takes no more than the H200 was shown to.
  static constexpr std::size_t kMaxDepth = 128;
  enum class FrameKind : std::uint8_t { loop, if_else, switch_cases };
  // One open conditional node and the body of it being recorded.
  struct Frame {
    FrameKind kind = FrameKind::loop;
    std::uint64_t id = 0;  // the loop's, or the condition's that steers the branch
    CUstream body_stream = nullptr;
    std::vector<CUgraph> bodies;  // the node's body graphs (owned by the node)
    unsigned body = 0;            // the body recorded now (when body_open)
    bool body_open = false;
    bool stuck = false;           // a body's capture was invalidated: left open, never ended
    bool open_failed = false;     // opening body `body` failed (the recording is doomed)
    std::vector<bool> begun;      // per body: begun already
    CUgraphConditionalHandle handle = 0;
    unsigned first = 0;
    bool condition_taken = false;  // a loop: a recorded kernel takes the handle (it can end)
    int lane = 0;                  // the body's lane in the topology (below any stream index)
    std::size_t node = 0;          // the conditional node
    std::size_t body_nodes = 0;    // nodes recorded into the open body
    std::source_location where{};  // the call that began it
  };
  // A condition made by make_condition: where, and what has been done with it.
  struct ConditionState {
    std::uint64_t id = 0;
    CUgraphConditionalHandle handle = 0;
    unsigned first = 0;
    std::uint64_t home_frame = 0;  // the frame whose body it was made in (0: the graph)
    unsigned home_body = 0;
    std::size_t after_node = 0;  // how many nodes were recorded when it was made
    bool taken = false;          // a kernel recorded since takes it (Arg::condition)
    bool used = false;           // a branch steers by it
    std::source_location where{};  // Device::condition's caller
  };
  // A body graph of the recording, to name a node of it in an instantiate refusal.
  struct BodyGraph {
    std::uint64_t frame = 0;
    unsigned body = 0;
    CUgraph graph = nullptr;
    std::size_t node = 0;  // the conditional node (in the topology)
  };

  Frame* find_frame_locked(std::uint64_t id);
  ConditionState* find_condition_locked(std::uint64_t id);
  // Whether the body `frame`/`body` (0/0: the graph) is open now.
  bool body_open_locked(std::uint64_t frame, unsigned body) const;
  // A condition made in body `frame`/`body` that steers no branch: the refusal of closing it.
  std::optional<Error> unused_condition_locked(std::uint64_t frame, unsigned body,
                                               const std::string& operation) const;
  // The innermost frame, checked to be `id`'s of `kind`: its index, or the refusal.
  Result<std::size_t> innermost_locked(FrameKind kind, std::uint64_t id,
                                       const std::string& operation) const;
  // Close the innermost frame's open body on the driver (a failure is returned, not doomed) and
  // open body `next` (or none). The caller decided every refusal first.
  std::optional<Error> switch_body(std::optional<unsigned> next, const std::string& operation);
  void retarget_locked() noexcept;
  // The conditional node of a new frame `frame` (labelled `label`) in the topology: its index.
  std::size_t add_conditional_locked(std::uint64_t frame, std::string label,
                                     std::source_location where);
  std::string frame_name(const Frame& frame) const;
  Error no_body_refusal_locked(const std::string& operation) const;
  // Names the node the driver named in a refused instantiate, in graphcap's terms.
  std::string name_failed_node(CapturedGraph& captured, const Recording& recording,
                               const InstantiateFailure& failure);

  void doom_locked(const Error& error);
  // close()'s rare parts, out of line: the update close runs its code cold, after the driver's
  // cuGraphExecUpdate has evicted it, so its path is kept to few code lines (issue 24).
  std::vector<bool> bodies_active(const std::vector<CUstream>& bodies) const;
  void end_bodies(const std::vector<CUstream>& bodies, const std::vector<bool>& active);
  Error close_refusal(const CloseRequest& request, const Result<CapturedGraph>& captured,
                      const std::optional<Error>& doomed, const std::optional<Error>& unjoined,
                      const Recording& recording) const;
  // record()'s rare parts, out of line so a recorded launch's path stays on few code lines.
  void record_failure_locked(const Operation& op, const Error& failure);
  Result<void> record_param_node_locked(Operation& op, CUstream issued_on);
  void record_condition_locked(std::uint64_t condition);
  void log_recorded_locked(std::size_t added, CUgraphNodeType type) const;
  std::optional<Error> unjoined_locked() const;
  // Inspect, then update `into` (when given and possible) or instantiate.
  Result<void> make_executable(CapturedGraph& captured, const GraphReport& recorded,
                               const IntoGraph* into, Recording& recording);
  void log_close(const GraphReport& recorded, const std::optional<Error>& refusal) const;

  GraphDriver* graphs_;
  CaptureTracker* tracker_;
  CUstream stream_;
  int stream_index_ = 0;
  const memory::SliceOwner* self_ = nullptr;

  // Set by prepare (the origin stream's mutex held).
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
  bool claim_on_refusal_ = true;
  std::unique_ptr<PoolWindow> pool_;
  bool kept_at_close_ = false;
  CaptureTracker::Registration registration_;
  std::chrono::steady_clock::time_point begun_;
  std::string driver_dot_dir_;  // GRAPHCAP_DRIVER_DOT_DIR as the recording began (empty: unset)

  // The bookkeeping, guarded by book_ (side streams record into it under their own mutex).
  mutable std::mutex book_;
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
  std::vector<Window*> sides_;
  std::vector<Frame> frames_;  // innermost last
  std::vector<ConditionState> conditions_;
  std::vector<BodyGraph> body_graphs_;
  bool node_priorities_ = false;  // a recorded launch asked for a priority
  std::size_t programmatic_edges_ = 0;
  std::vector<CUstream> unended_bodies_;   // invalidated at end_while: ended after the recording
  std::vector<CUstream> abandoned_bodies_;
  std::atomic<CUstream> loop_target_{nullptr};
  std::atomic<bool> between_cases_{false};
};

}  // namespace graphcap::capture
