// OpenRecording: one recording while it is open, composed of its owners: its book of nodes and
// buffers (RecordingBook: every operation enters there), its conditional frames
// (ConditionalFrames: WHILE loops, IF/SWITCH branches and their bodies), its streams
// (ForkJoin), and, at the end, its close (RecordingClose). It owns the lifecycle between them:
// the options prepare keeps, opening the driver's capture, the thread rule, the graph pool's
// window; closing hands the graph's state back whole, with the refusal decided before anything
// is changed.
//
// It lives in the Window of the stream that begins the recording (the origin); side streams
// forked into it record into the origin's. The book's lock guards what side streams reach under
// their own stream's mutex; the lifecycle calls (prepare, open, close, the conditional steps)
// come with the origin stream's mutex held. It makes no CUDA calls of its own: they are the
// GraphDriver's.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <graphcap/capture/capture_tracker.h>
#include <graphcap/capture/conditional_frames.h>
#include <graphcap/capture/fork_join.h>
#include <graphcap/capture/graph_driver.h>
#include <graphcap/capture/pool_share.h>
#include <graphcap/capture/recording.h>
#include <graphcap/capture/recording_book.h>
#include <graphcap/capture/recording_close.h>
#include <graphcap/result.h>

namespace graphcap::memory {
class SliceOwner;
}

namespace graphcap::capture {

class OpenRecording {
 public:
  OpenRecording(GraphDriver& graphs, CaptureTracker& tracker, CUstream stream) noexcept
      : graphs_(&graphs), tracker_(&tracker), stream_(stream), book_(graphs, stream),
        frames_(graphs, book_, stream), forks_(book_) {}
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
  std::uint64_t id() const { return book_.id(); }
  const CaptureTracker::Registration& registration() const noexcept { return registration_; }
  // In global and thread_local mode only the recording's own thread may end it or open loops.
  Result<void> check_thread(const char* operation) const;
  bool on_other_thread() const noexcept;
  // Close the recording (RecordingClose): the driver's capture (and its bodies') always, then
  // the graph or the refusal; the options are forgotten.
  ClosedRecording close(CloseRequest request);
  // While set, a close that would instantiate a new graph (not `into`) leaves the executable to
  // instantiate_deferred (capture/instantiation.h), which may run on another thread while this
  // stream records again: every other refusal is decided and the graph's state made (pins, pool
  // share, census), and nothing is uploaded. Set around one end (Window::end_deferred); a flag
  // here rather than in CloseRequest, so the update close passes nothing more.
  void defer_instantiate(bool defer) noexcept { defer_instantiate_ = defer; }

  // ---- Its owners --------------------------------------------------------------------------
  RecordingBook& book() noexcept { return book_; }
  ConditionalFrames& frames() noexcept { return frames_; }
  const ConditionalFrames& frames() const noexcept { return frames_; }
  ForkJoin& forks() noexcept { return forks_; }

  // An operation entering the recording (RecordingBook::record), from any stream of it.
  Result<void> record(Operation& op, int stream, const Error* failure, CUstream issued_on) {
    return book_.record(op, stream, failure, issued_on);
  }
  void doom(const Error& error) { book_.doom(error); }
  // Whether a failed operation marks what it writes (false: claim_on_refusal was false).
  bool claims() const noexcept { return claim_on_refusal_; }

  // ---- The graph pool's window -------------------------------------------------------------
  // In the recording, a buffer in memory the pool lends (or nullptr), owned by `owner` (the
  // pool's stream) where the pool makes it anew.
  std::shared_ptr<memory::BufferState> lend(std::size_t bytes,
                                            const std::shared_ptr<memory::SliceOwner>& owner) {
    return pool_ ? pool_->lend(bytes, owner) : nullptr;
  }
  // Memory the window allocated (in the warm-up, or the recording), when it shares a pool.
  void allocated(const std::shared_ptr<memory::Allocation>& memory, bool warm_up) {
    if (pool_) pool_->allocated(memory, warm_up);
  }
  // A buffer allocated inside the recording (RecordingBook::allocated_inside). Alive at the
  // close, it holds bytes only the graph's replays write: in a window that does not claim (its
  // warm-up is the step's one execution) that refuses the recording (graph_state).
  void allocated_inside(const std::shared_ptr<memory::BufferState>& buffer) {
    book_.allocated_inside(buffer);
  }
  // Whether a buffer allocated inside the last recording closed here was alive at its close
  // (whatever the close answered); false again from the next prepare.
  bool kept_allocation_at_close() const noexcept { return kept_at_close_; }
  bool pool_on_virtual_memory() const noexcept { return pool_ && pool_->virtual_memory(); }
  // begin_capture, before open(): a pool on virtual memory maps what the warm-up planned (the
  // pool never grows inside the recording). A failure maps nothing more.
  Result<void> lay_out_pool() { return pool_ ? pool_->lay_out() : Result<void>{}; }

  // For messages and the debug log.
  void set_stream(const memory::SliceOwner* stream) noexcept { self_ = stream; }

 private:
  friend class RecordingClose;  // reads and empties the owners and options below

  GraphDriver* graphs_;
  CaptureTracker* tracker_;
  CUstream stream_;
  const memory::SliceOwner* self_ = nullptr;

  // Set by prepare (the origin stream's mutex held).
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
  bool claim_on_refusal_ = true;
  std::unique_ptr<PoolWindow> pool_;
  bool kept_at_close_ = false;  // set by RecordingClose
  bool defer_instantiate_ = false;
  CaptureTracker::Registration registration_;
  std::chrono::steady_clock::time_point begun_;
  std::string driver_dot_dir_;  // GRAPHCAP_DRIVER_DOT_DIR as the recording began (empty: unset)

  RecordingBook book_;
  ConditionalFrames frames_;
  ForkJoin forks_;
};

}  // namespace graphcap::capture
