// Window: the capture lifecycle of one stream, shared by every driver. It knows the stream's pools,
// its drop queue and its state; the recording's bookkeeping is its OpenRecording's, and the driver
// calls are the GraphDriver's (and, inside the pools and the queue, the memory layer's). Rule by
// rule, as docs/design.md ("The capture lifecycle") and docs/capture-lifecycle.md state:
//
//   no_capture --prepare--> prepare --begin--> capture --end/abort--> no_capture
//
// Each transition checks the state first and rejects an out-of-order call with
// Errc::graph_state, changing nothing. A stream forked into another stream's recording (a side
// stream) is in capture state too, recording into that stream's (the origin's) OpenRecording until
// it closes. Not locked: the stream's mutex guards it (state() may be read without it).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <source_location>
#include <vector>

#include <graphcap/capture/capture_state.h>
#include <graphcap/capture/capture_tracker.h>
#include <graphcap/capture/graph_driver.h>
#include <graphcap/capture/conditional_frames.h>
#include <graphcap/capture/open_recording.h>
#include <graphcap/capture/recording_close.h>
#include <graphcap/capture/pool_share.h>
#include <graphcap/capture/recording.h>
#include <graphcap/capture/replay_gate.h>
#include <graphcap/memory/drop_queue.h>
#include <graphcap/memory/slice_owner.h>
#include <graphcap/memory/slice_pool.h>
#include <graphcap/result.h>

namespace graphcap::capture {

class Window {
 public:
  Window(GraphDriver& graphs, memory::SlicePool& device_pool, memory::SlicePool& staging_pool,
         memory::DropQueue& drops, CaptureTracker& tracker, ReplayGate& gate,
         CUstream stream) noexcept
      : device_pool_(&device_pool), staging_pool_(&staging_pool), drops_(&drops),
        tracker_(&tracker), gate_(&gate), recording_(graphs, tracker, stream) {}
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  CaptureState state() const noexcept { return state_.load(std::memory_order_acquire); }
  bool recording() const noexcept { return state() == CaptureState::capture; }
  // The recording this stream's operations enter now: its own, or the one it was forked into;
  // nullptr outside a recording.
  OpenRecording* recording_into() noexcept {
    if (!recording()) return nullptr;
    Window* origin = joined_.load(std::memory_order_acquire);
    return origin != nullptr ? &origin->recording_ : &recording_;
  }
  // Its identity (unique in the process); 0 when this stream records nothing.
  std::uint64_t recording_id() noexcept {
    OpenRecording* into = recording_into();
    return into != nullptr ? into->id() : 0;
  }
  // The window whose recording this one records into: itself, the origin, or nullptr.
  Window* origin() noexcept {
    if (Window* origin = joined_.load(std::memory_order_acquire)) return origin;
    return recording() ? this : nullptr;
  }
  bool is_side() const noexcept { return joined_.load(std::memory_order_acquire) != nullptr; }
  // Whether a failed operation of the open recording marks what it writes.
  bool marks_failed_writes() noexcept {
    OpenRecording* into = recording_into();
    return into == nullptr || into->claims();
  }

  // A graph pool's window on this stream (not on a side stream): inside its recording, a buffer in
  // memory the pool lends (nullptr when it can't, or outside the recording: the warm-up's
  // buffers are never the pool's), owned by `owner` (this stream); and the memory the window
  // allocated itself (in the warm-up, it plans the recording's layout).
  std::shared_ptr<memory::BufferState> lend(std::size_t bytes,
                                            const std::shared_ptr<memory::SliceOwner>& owner) {
    return recording() && !is_side() ? recording_.lend(bytes, owner) : nullptr;
  }
  // Whether a buffer allocated inside this stream's last recording was alive at its close.
  bool kept_allocation_at_close() const noexcept { return recording_.kept_allocation_at_close(); }
  void allocated(const std::shared_ptr<memory::Allocation>& memory) {
    const CaptureState now = state();
    if (now != CaptureState::no_capture && !is_side()) {
      recording_.allocated(memory, now == CaptureState::prepare);
    }
  }

  // Arm the pools (every allocation of this stream goes to the persistent pool, which primes),
  // and keep the recording's options: its mode, whether a refusal claims, the graph pool.
  Result<void> prepare(CUstreamCaptureMode mode, bool claim_on_refusal,
                       std::shared_ptr<PoolShare> pool);
  // Drain the drop queue, end priming, lay out a graph pool's recording (mapping what a pool on
  // virtual memory needs), open the driver's recording. On failure, undo all of it.
  Result<void> begin();
  // Close the recording (into `into` when given: re-recording an existing graph): the graph's
  // whole state, or the refusal (then the claims are marked). Refused with the recording still
  // open (graph_state, nothing changed) on a side stream, from another thread in global and
  // thread_local mode, with loops open, and while another open recording forbids instantiating.
  Result<std::unique_ptr<Recording>> end(bool upload, const IntoGraph* into = nullptr);
  // The same for a new graph, its instantiate left to later (OpenRecording::defer_instantiate):
  // an accepted recording comes back without an executable; the frames' body_graphs() are its
  // bodies' until the next recording opens.
  Result<std::unique_ptr<Recording>> end_deferred() {
    recording_.defer_instantiate(true);
    Result<std::unique_ptr<Recording>> ended = end(false);
    recording_.defer_instantiate(false);  // refused up front too: the next end is a plain one
    return ended;
  }
  // A recording of this stream's that a re-recording replaced (RecordingClose::retire_replaced;
  // the stream's mutex held).
  void retire(Recording& replaced) {
    RecordingClose::retire_replaced(recording_.book(), replaced, *drops_);
  }
  // Leave prepare or capture without a graph, from any thread: a recording begun on another
  // thread is terminated (the driver ends it with CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, which
  // is the expected outcome there), and what it would have written is claimed.
  Result<void> abort();
  // Close whatever is open, from any thread (the device is closing).
  void force_close() noexcept;

  // ---- Several streams in one recording (fork/join) ----------------------------------------
  // Join `origin`'s recording `id` (this stream waited on an event of it marking `after`).
  // Refused (graph_state) when that recording is no longer open.
  Result<void> join(Window& origin, std::uint64_t id, const std::vector<std::size_t>& after);

  // ---- Conditional nodes: the origin stream's, on its recording thread ---------------------
  // Whether `step` may run here now (a recording of this stream is open, this is its origin, on
  // its recording thread, and the step's loop or condition is of it): the depth of the node a
  // step that opens one would insert, else 0. The steps are its recording's frames'.
  Result<std::size_t> check_conditional(const ConditionalStep& step);

  // This stream's own recording (open or not; a side stream records into its origin's:
  // recording_into()). Its frames say where the stream's operations are issued now.
  OpenRecording& own_recording() noexcept { return recording_; }
  const OpenRecording& own_recording() const noexcept { return recording_; }

  // Names the stream in messages and the debug log ("stream 1"), and in Graph::dot().
  void set_stream_index(int index) noexcept { stream_index_ = index; }
  int stream_index() const noexcept { return stream_index_; }
  // The stream this window belongs to, as buffers know it (who used them).
  void set_stream(const memory::SliceOwner* stream) noexcept {
    self_ = stream;
    recording_.set_stream(stream);
  }
  const memory::SliceOwner* stream() const noexcept { return self_; }

 private:
  friend class RecordingClose;
  // A side stream: the recording it joined closed.
  void leave() noexcept;
  Result<void> refuse_on_side(const char* operation) const;
  void set_state(CaptureState state) noexcept;
  void disarm() noexcept;
  // Close the open recording as refused with `why` (abort_capture, a closing device).
  void abandon(const char* why);
  // Fence the deferred drops and release what is already behind the stream.
  void flush_drops();

  memory::SlicePool* device_pool_;
  memory::SlicePool* staging_pool_;
  memory::DropQueue* drops_;
  CaptureTracker* tracker_;
  ReplayGate* gate_;
  std::atomic<CaptureState> state_{CaptureState::no_capture};
  int stream_index_ = 0;
  const memory::SliceOwner* self_ = nullptr;
  std::atomic<Window*> joined_{nullptr};  // on a side stream: the origin
  OpenRecording recording_;
};

}  // namespace graphcap::capture
