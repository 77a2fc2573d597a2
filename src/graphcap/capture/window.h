// Window: the capture lifecycle of one stream, shared by every driver. It knows the stream's pools,
// its drop queue and its state; the driver calls are the GraphDriver's (and, inside the pools and
// the queue, the memory layer's). Rule by rule, as docs/design.md ("The capture lifecycle") and
// docs/capture-lifecycle.md state:
//
//   no_capture --prepare--> prepare --begin--> capture --end/abort--> no_capture
//
// Each transition checks the state first and rejects an out-of-order call with
// Errc::graph_state, changing nothing. The window owns the recording's bookkeeping: every
// operation recorded into it (record()) pins its memory and names the buffers it reads and
// writes, and closing hands back the whole Recording. Not locked: the stream's mutex guards it
// (state() may be read without it).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <graphcap/capture/capture_state.h>
#include <graphcap/capture/capture_tracker.h>
#include <graphcap/capture/graph_driver.h>
#include <graphcap/capture/recording.h>
#include <graphcap/capture/replay_gate.h>
#include <graphcap/memory/drop_queue.h>
#include <graphcap/memory/slice_pool.h>
#include <graphcap/result.h>

namespace graphcap::capture {

class Window {
 public:
  Window(GraphDriver& graphs, memory::SlicePool& device_pool, memory::SlicePool& staging_pool,
         memory::DropQueue& drops, CaptureTracker& tracker, ReplayGate& gate,
         CUstream stream) noexcept
      : graphs_(&graphs), device_pool_(&device_pool), staging_pool_(&staging_pool),
        drops_(&drops), tracker_(&tracker), gate_(&gate), stream_(stream) {}
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  CaptureState state() const noexcept { return state_.load(std::memory_order_acquire); }
  bool recording() const noexcept { return state() == CaptureState::capture; }
  // The mode the window's recording opens (or opened) in.
  CUstreamCaptureMode mode() const noexcept { return mode_; }
  // The open recording's identity (unique in the process); 0 when none is open.
  std::uint64_t recording_id() const noexcept { return recording() ? id_ : 0; }

  // Arm the pools: route every allocation of this stream to the persistent pool, and prime. The
  // recording that follows opens in `mode`.
  // `claim_on_refusal` false: a refusal leaves what the recording would have written as it is
  // (the warm-up produced it; see CaptureOptions).
  Result<void> prepare(CUstreamCaptureMode mode, bool claim_on_refusal = true);
  // Drain the drop queue, end priming, open the driver's recording. On failure, undo all of it.
  Result<void> begin();
  // Close the recording: the whole Recording, or the refusal (then the claims are marked). Only
  // the thread that began a GLOBAL or THREAD_LOCAL recording may end it (the driver's rule).
  Result<Recording> end(bool upload);
  // The same, re-recording into `into` (an existing graph's executable): cuGraphExecUpdate when
  // the driver accepts it (then the Recording holds no executable and report.updated is true),
  // else a new executable instantiated (report.update_refusal says why). On a refusal of the
  // recording itself, `into` is untouched.
  // `into_source_nodes`: the nodes of the graph `into` was instantiated from (empty if it was
  // not kept): the new recording's param nodes are mapped onto them after an update.
  Result<Recording> end(bool upload, const Executable& into,
                        const std::vector<CUgraphNode>& into_source_nodes);
  // Leave prepare or capture without a graph, from any thread: a recording begun on another
  // thread is terminated (the driver ends it with CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, which
  // is the expected outcome there), and what it would have written is claimed.
  Result<void> abort();
  // Close whatever is open, from any thread (the device is closing).
  void force_close() noexcept;

  // An operation on the stream while recording: pin its memory, note what it reads and writes,
  // keep alive what its replay needs. `failure` set: the operation failed or was skipped, so
  // the recording is doomed (it is missing an operation) and what it writes is claimed. The
  // operation's label is moved into the recording (the caller's is left empty).
  void record(Operation& op, const Error* failure);
  // Doom the recording with the first error inside it.
  void doom(const Error& error);
  // Whether a failed operation of the open recording marks what it writes: false in a window
  // prepared with claim_on_refusal false (its warm-up produced those bytes, and the operation
  // that failed to be recorded did not touch them), true otherwise.
  bool marks_failed_writes() noexcept;

  // ---- Several streams in one recording (fork/join) ----------------------------------------
  // A side stream joins a recording when it waits on an event recorded inside it (a fork): its
  // window then records into the origin's (the window that began the recording), and is in
  // capture state until the origin's recording closes. The origin's bookkeeping (pins, claims,
  // nodes, doom) is guarded by its own mutex, so side streams record under their own stream's
  // mutex only. At end, work of a side stream that the origin's last operations don't depend on
  // is refused by name before the driver is asked.
  //
  // The window whose recording this one records into: itself, or the origin it was forked into.
  Window* origin() noexcept;
  bool is_side() const noexcept { return joined_.load(std::memory_order_acquire) != nullptr; }
  int stream_index() const noexcept { return stream_index_; }
  // Join `origin`'s recording `id` (this stream waited on an event of it marking `after`).
  // Refused (graph_state) when that recording is no longer open.
  Result<void> join(Window& origin, std::uint64_t id, const std::vector<std::size_t>& after);
  // On the origin: the nodes an event recorded now on stream `stream` marks.
  std::vector<std::size_t> frontier_of(int stream);
  // On the origin: stream `stream` waited on an event marking `nodes`.
  void add_dependencies(int stream, const std::vector<std::size_t>& nodes);

  // ---- WHILE loops inside the recording (docs/capture-lifecycle.md, "Device-side loops") -----
  // A loop's body is captured on a body stream of its own while the recording stream's later
  // work depends on the WHILE node. Loops nest; only the stream that began the recording (on its
  // recording thread, in global and thread_local mode) opens and closes them, innermost first.
  struct LoopInfo {
    std::uint64_t id = 0;                // unique in the process
    CUgraphConditionalHandle handle = 0;  // what a kernel sets
  };
  // Whether a loop may begin now (graph_state naming the reason if not): checked before the
  // caller makes a body stream. The depth the new loop would have.
  Result<std::size_t> check_loop_begin() const;
  // Insert a WHILE node whose condition is `first` at the start of every replay; what is
  // recorded on this stream from now on is its body, captured on `body_stream`. On a failure
  // the recording is doomed (a WHILE node with no body must never replay).
  Result<LoopInfo> begin_loop(CUstream body_stream, unsigned first);
  // Close the innermost loop, which must be `id` (graph_state otherwise, nothing changed).
  Result<void> end_loop(std::uint64_t id);
  bool loop_open(std::uint64_t id) const;
  // Body streams whose capture was invalidated and left open (ending it crashes the H200's
  // driver): the owner must never use or destroy them again (mutex of the stream held).
  std::vector<CUstream> take_abandoned_bodies();
  // Where this stream's operations are issued now: the body stream of the innermost open loop,
  // or nullptr for the stream itself. Read without the stream's mutex (Stream::handle()).
  CUstream loop_target() const noexcept { return loop_target_.load(std::memory_order_acquire); }

  // Names the stream in messages and the debug log ("stream 1"), and in Graph::dot().
  void set_stream_index(int index) noexcept { stream_index_ = index; }
  // The stream this window belongs to, as buffers know it (who used them).
  void set_stream(const memory::SliceOwner* stream) noexcept { self_ = stream; }

 private:
  Result<void> check_owner_thread(const char* operation) const;
  // end_capture with loops still open: refused, naming the innermost.
  std::optional<Error> open_loop_refusal() const;
  static constexpr std::size_t kMaxLoopDepth = 8;
  // record() on the origin, for an operation of stream `stream` (book_ not held).
  void record_from(Operation& op, const Error* failure, int stream);
  void doom_locked(const Error& error);
  // The work of side streams the origin's frontier does not depend on (book_ held).
  std::optional<Error> unjoined_locked() const;
  // A side stream: the recording it joined closed.
  void leave() noexcept;
  Result<void> refuse_on_side(const char* operation) const;
  void set_state(CaptureState state) noexcept;
  // Close the driver's recording and make what it captured into a Recording, or refuse it.
  Result<Recording> close(bool upload, std::optional<Error> doomed, bool other_thread,
                          const Executable* into = nullptr);
  void flush_drops();
  // Inspect, then update `into` (when given and possible) or instantiate: the recording with its
  // executable (none when `into` was updated) and report.
  Result<Recording> make_executable(CapturedGraph& captured, const GraphReport& recorded,
                                    const Executable* into, Recording& recording);

  GraphDriver* graphs_;
  memory::SlicePool* device_pool_;
  memory::SlicePool* staging_pool_;
  memory::DropQueue* drops_;
  CaptureTracker* tracker_;
  ReplayGate* gate_;
  CUstream stream_;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
  bool claim_on_refusal_ = true;
  std::atomic<CaptureState> state_{CaptureState::no_capture};
  std::thread::id recording_thread_;
  std::uint64_t id_ = 0;
  std::optional<Error> doomed_;
  GraphReport recorded_;  // node counts of the window's own recorded operations
  std::vector<std::shared_ptr<memory::Allocation>> pins_;
  BufferRoles roles_;  // roles_.writes are the claims
  std::vector<std::shared_ptr<const void>> keep_alive_;
  std::vector<ParamNode> param_nodes_;
  const std::vector<CUgraphNode>* into_source_nodes_ = nullptr;  // during end(upload, into, ...)
  int stream_index_ = 0;
  const memory::SliceOwner* self_ = nullptr;
  // Guards the recording's bookkeeping below and above (pins_, roles_, keep_alive_, recorded_,
  // doomed_) against side streams recording into it.
  mutable std::mutex book_;
  std::vector<RecordedNode> nodes_;             // the recording's operations, in order
  std::size_t node_hint_ = 0;                   // how many the last recording made
  std::map<int, std::vector<std::size_t>> frontiers_;  // per stream: what its next op depends on
  std::map<int, std::size_t> last_node_;        // per stream: its last recorded node
  std::vector<Window*> sides_;                  // the side streams joined into this recording
  std::atomic<Window*> joined_{nullptr};        // on a side stream: the origin
  std::chrono::steady_clock::time_point begun_;  // for the debug log's timings
  // The open loops, innermost last (book_ held to change), and bodies whose capture was found
  // invalidated at end_while: close() ends the recording's own capture and abandons them, the one
  // course the driver survives (docs/cuda-driver-facts.md, "Conditional nodes").
  struct LoopFrame {
    std::uint64_t id = 0;
    CUstream body_stream = nullptr;
    CUgraph body = nullptr;
    int lane = 0;          // the body's key in frontiers_/last_node_ (below any stream index)
    std::size_t node = 0;  // the WHILE node in nodes_
    GraphReport recorded;  // counts of the body's own nodes
  };
  std::vector<LoopFrame> loops_;
  std::vector<CUstream> unended_bodies_;
  std::vector<CUstream> abandoned_bodies_;
  std::atomic<CUstream> loop_target_{nullptr};
};

}  // namespace graphcap::capture
