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
  Result<void> prepare(CUstreamCaptureMode mode);
  // Drain the drop queue, end priming, open the driver's recording. On failure, undo all of it.
  Result<void> begin();
  // Close the recording: the whole Recording, or the refusal (then the claims are marked). Only
  // the thread that began a GLOBAL or THREAD_LOCAL recording may end it (the driver's rule).
  Result<Recording> end(bool upload);
  // Leave prepare or capture without a graph, from any thread: a recording begun on another
  // thread is terminated (the driver ends it with CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, which
  // is the expected outcome there), and what it would have written is claimed.
  Result<void> abort();
  // Close whatever is open, from any thread (the device is closing).
  void force_close() noexcept;

  // An operation on the stream while recording: pin its memory, note what it reads and writes,
  // keep alive what its replay needs. `failure` set: the operation failed or was skipped, so
  // the recording is doomed (it is missing an operation) and what it writes is claimed.
  void record(const Operation& op, const Error* failure);
  // Doom the recording with the first error inside it.
  void doom(const Error& error);
  const std::optional<Error>& doomed() const noexcept { return doomed_; }

  // Names the stream in messages and the debug log ("stream 1"), and in Graph::dot().
  void set_stream_index(int index) noexcept { stream_index_ = index; }

 private:
  Result<void> check_owner_thread(const char* operation) const;
  void set_state(CaptureState state) noexcept;
  // Close the driver's recording and make what it captured into a Recording, or refuse it.
  Result<Recording> close(bool upload, std::optional<Error> doomed, bool other_thread);
  void flush_drops();

  GraphDriver* graphs_;
  memory::SlicePool* device_pool_;
  memory::SlicePool* staging_pool_;
  memory::DropQueue* drops_;
  CaptureTracker* tracker_;
  ReplayGate* gate_;
  CUstream stream_;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::atomic<CaptureState> state_{CaptureState::no_capture};
  std::thread::id recording_thread_;
  std::uint64_t id_ = 0;
  std::optional<Error> doomed_;
  GraphReport recorded_;  // node counts of the window's own recorded operations
  std::vector<std::shared_ptr<memory::Allocation>> pins_;
  BufferRoles roles_;  // roles_.writes are the claims
  std::vector<std::shared_ptr<const void>> keep_alive_;
  int stream_index_ = 0;
  std::vector<RecordedNode> nodes_;             // the recording's operations, in order
  std::vector<std::size_t> frontier_;           // what the next operation depends on
  std::string last_label_;                      // the last operation recorded (for messages)
  std::chrono::steady_clock::time_point begun_;  // for the debug log's timings
};

}  // namespace graphcap::capture
