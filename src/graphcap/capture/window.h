// Window: the capture lifecycle of one stream, shared by every driver. It knows the stream's pools,
// its drop queue and its state; the driver calls are the GraphDriver's (and, inside the pools and
// the queue, the memory layer's). Rule by rule, as docs/capture-lifecycle.md and DESIGN.md state:
//
//   no_capture --prepare--> prepare --begin--> capture --end/abort--> no_capture
//
// Each transition checks the state first and rejects an out-of-order call with
// Errc::graph_state, changing nothing. Not locked: the stream's mutex guards it (state() may be
// read without it).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <graphcap/capture/graph_driver.h>
#include <graphcap/detail/allocation.h>
#include <graphcap/detail/buffer_state.h>
#include <graphcap/detail/capture_tracker.h>
#include <graphcap/detail/replay_gate.h>
#include <graphcap/memory/drop_queue.h>
#include <graphcap/memory/slice_pool.h>
#include <graphcap/result.h>
#include <graphcap/stream.h>

namespace graphcap::capture {

// The buffers a recording uses, by role. Held weakly: a graph must not keep a buffer's failure
// bookkeeping alive after its last handle (its memory is pinned separately).
struct BufferRoles {
  std::vector<std::weak_ptr<detail::BufferState>> reads;     // read by a recorded launch
  std::vector<std::weak_ptr<detail::BufferState>> writes;    // written (the claims)
  std::vector<std::weak_ptr<detail::BufferState>> produces;  // written whole (out, full write)
};

struct Closed {
  Instantiated graph;
  std::vector<std::shared_ptr<detail::Allocation>> pins;
  BufferRoles buffers;
};

class Window {
 public:
  Window(GraphDriver& graphs, memory::SlicePool& device_pool, memory::SlicePool& staging_pool,
         memory::DropQueue& drops, detail::CaptureTracker& tracker, detail::ReplayGate& gate,
         CUstream stream, CUstreamCaptureMode mode) noexcept
      : graphs_(&graphs), device_pool_(&device_pool), staging_pool_(&staging_pool),
        drops_(&drops), tracker_(&tracker), gate_(&gate), stream_(stream), mode_(mode) {}
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  CaptureState state() const noexcept { return state_.load(std::memory_order_acquire); }
  bool recording() const noexcept { return state() == CaptureState::capture; }

  // Arm the pools: route every allocation of this stream to the persistent pool, and prime.
  Result<void> prepare();
  // Drain the drop queue, end priming, open the driver's recording. On failure, undo all of it.
  Result<void> begin();
  // Close the recording: a graph with its pins, or the refusal (then the claims are marked).
  Result<Closed> end(bool upload);
  // Leave prepare or capture without a graph (closing the driver's recording if open).
  Result<void> abort();
  // Close whatever is open, from any thread (the device is closing).
  void force_close() noexcept;

  // While recording: pin an allocation the recording uses; claim a buffer it would write; doom
  // the recording with the first error inside it.
  void touch(const std::shared_ptr<detail::Allocation>& allocation);
  void claim(const std::shared_ptr<detail::BufferState>& buffer);
  void read(const std::shared_ptr<detail::BufferState>& buffer);
  void produce(const std::shared_ptr<detail::BufferState>& buffer);
  void doom(const Error& error);
  const std::optional<Error>& doomed() const noexcept { return doomed_; }
  // One operation of the window's own was recorded, adding one node of `type`.
  void recorded(CUgraphNodeType type) noexcept {
    ++recorded_.nodes_by_type[type];
    ++recorded_.node_count;
  }

 private:
  Result<void> check_owner_thread(const char* operation) const;
  void set_state(CaptureState state) noexcept;
  void leave_recording() noexcept;
  Result<Closed> close_recording(bool upload, std::optional<Error> doomed);

  GraphDriver* graphs_;
  memory::SlicePool* device_pool_;
  memory::SlicePool* staging_pool_;
  memory::DropQueue* drops_;
  detail::CaptureTracker* tracker_;
  detail::ReplayGate* gate_;
  CUstream stream_;
  CUstreamCaptureMode mode_;
  std::atomic<CaptureState> state_{CaptureState::no_capture};
  std::thread::id recording_thread_;
  std::optional<Error> doomed_;
  GraphReport recorded_;  // node counts of the window's own recorded operations
  std::vector<std::shared_ptr<detail::Allocation>> touched_;
  BufferRoles roles_;  // roles_.writes are the claims
};

}  // namespace graphcap::capture
