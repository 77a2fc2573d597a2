// GraphState: what a Graph owns: the executable, the stream it replays on, and everything the
// recording replays against (the pinned allocations, the modules of its kernels). Released
// exactly once: by Graph::destroy, or by the device closing.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <graphcap/capture/recording.h>
#include <graphcap/capture/replay_gate.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/memory/replay_uses.h>

namespace graphcap::detail {

class StreamCore;

// Everything Graph::replay reads, on one cache line: with the stream's gate, the stream's
// operation counter and the thread's bound device, that is all the hot path touches before
// cuGraphLaunch; the one word it writes is its own replay's position.
struct alignas(64) ReplayBlock {
  // flags: any bit set sends a replay off the hot path. Besides kReleased, the bits of
  // memory::ReplayChecks: another stream used one of the graph's buffers (check the order once),
  // or a graph of another stream replays with one (check it every time).
  static constexpr unsigned kReleased = 1;
  static_assert((kReleased & (memory::ReplayChecks::kUsedElsewhere | memory::ReplayChecks::kShared)) == 0);

  DriverApi* driver = nullptr;
  CUgraphExec exec = nullptr;
  CUstream stream = nullptr;
  const capture::ReplayGate* gate = nullptr;
  unsigned long long device_id = 0;
  const std::atomic<std::uint64_t>* position = nullptr;  // the stream's operation counter
  // The last replay's position on the stream, just after the operation enqueued before it (0:
  // never replayed): the graph's buffers read it as their use by the replay
  // (memory::ReplayUses), and the next order point of the stream (an event, a sync) covers it.
  mutable std::atomic<std::uint64_t> replayed_at{0};
  mutable std::atomic<unsigned> flags{0};

  void mark_replay() const noexcept {
    replayed_at.store(position->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};
static_assert(sizeof(ReplayBlock) == 64, "the replay hot path reads one cache line of the graph");

class GraphState {
 public:
  GraphState(std::shared_ptr<StreamCore> stream,
             std::unique_ptr<capture::Recording> recording) noexcept;
  GraphState(const GraphState&) = delete;
  GraphState& operator=(const GraphState&) = delete;
  ~GraphState();

  const ReplayBlock& hot() const noexcept { return hot_; }
  StreamCore& stream() const noexcept { return *stream_; }
  const GraphReport& report() const noexcept { return recording_->report; }
  bool released() const noexcept {
    return (hot_.flags.load(std::memory_order_acquire) & ReplayBlock::kReleased) != 0;
  }

  // The buffers the recording read, wrote and produced whole (see Graph::replay's slow path).
  const capture::BufferRoles& buffers() const noexcept { return recording_->buffers; }
  const std::vector<capture::RecordedNode>& nodes() const noexcept { return recording_->nodes; }
  const capture::NodeStore& node_store() const noexcept { return recording_->store; }
  capture::OperationLabel label(std::size_t node) const { return recording_->label(node); }

  // The executable replays run (an empty one for a released graph).
  const capture::Executable& executable() const noexcept { return recording_->executable; }
  // The nodes of the graph the executable was instantiated from, when it was kept (param nodes).
  const std::vector<CUgraphNode>& source_nodes() const noexcept { return recording_->source_nodes; }

  // Graph::set: give every node that took `param` the value `bytes` (size bytes) from the next
  // replay on. Errc::invalid_argument when no node took it or the size differs; on a driver
  // failure the nodes already set are set back, so the graph is unchanged.
  Result<void> set_param(const void* param, const void* bytes, std::size_t size);
  // Whether a node of the recording took `param`.
  bool took_param(const void* param);

  // Before a replay that another stream's use of one of the graph's buffers sent off the hot path
  // (ReplayBlock::flags): the rule of docs/capture-lifecycle.md, "Buffers on several streams",
  // for each of them, as for an eager use on the graph's stream (Errc::invalid_argument naming
  // the stream to wait for; nothing is enqueued).
  Result<void> check_replay_order();
  // After a replay that looked at its buffers' failures (ReplayBlock::flags cleared of
  // memory::ReplayChecks::kCarriesFailure before it looked): set it again while one still carries
  // one, so the next replay looks too.
  void note_failures() noexcept;

  // Graph::replay_checked (checked_replay.cc): the recording's operations issued again one by
  // one, each followed by a wait; the first that fails is the error, naming it.
  Result<void> replay_checked();

  // A re-recording closed into this graph (Device::end_capture(s, into)) replaces the current
  // recording. When it holds no executable, the current one took it in place (exec update) and is
  // kept. Returns what was replaced (the old executable when there is a new one, the old pins
  // and keep-alives): the caller releases it once the stream has passed the replays of it.
  // Not to be called concurrently with replay() of the same graph.
  std::unique_ptr<capture::Recording> adopt(std::unique_ptr<capture::Recording> recording) noexcept;

  // Wait for in-flight replays (a failed wait is queued on the stream), destroy the executable,
  // unpin. False, doing nothing, when a recording forbids the wait now (defer it then).
  // Idempotent. With `host_sync` (Graph::destroy waiting while its caller waits) the wait is a
  // host synchronisation of the graph's stream, as Device::sync is: every stream is ordered after
  // what that stream had enqueued. A deferred release waits at a moment the caller can't see, so
  // it orders nothing.
  bool try_release(bool host_sync = false) noexcept;
  // The same, unconditionally (the device is closing).
  void release() noexcept;

 private:
  void tell_other_devices() const;
  // current_'s buffers learn that this graph's replays use them (ReplayUses); those of a replaced
  // recording keep its last replay's position (freeze_buffers).
  void watch_buffers() noexcept;
  void freeze_buffers() noexcept;
  // Every buffer told forgets the graph (released: its replays are over).
  void forget_buffers() noexcept;

  ReplayBlock hot_;
  std::shared_ptr<StreamCore> stream_;
  std::unique_ptr<capture::Recording> recording_;  // never null
  std::mutex mutex_;
  // A buffer the current recording replays with, held while it does: the graph pins its memory
  // anyway, and its uses must outlive the last handle, or a replay after the handle is dropped
  // would not be ordered after another stream's use made before the drop.
  struct Watched {
    std::shared_ptr<memory::BufferState> buffer;
    bool writes;
  };
  // A recording's buffers alive now (those it allocated are gone at its close), each once (by
  // address), with whether it writes it.
  static std::vector<Watched> buffers_of(const capture::Recording& recording);
  std::vector<Watched> current_;                          // the current recording's buffers
  std::vector<std::weak_ptr<memory::BufferState>> told_;  // every buffer told, until released
};

}  // namespace graphcap::detail
