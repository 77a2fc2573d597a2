#include <graphcap/graph.h>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/graph_state.h>
#include <graphcap/detail/stream_core.h>

namespace graphcap {

Graph::Graph() noexcept = default;
Graph::Graph(std::shared_ptr<detail::GraphState> state) noexcept : state_(std::move(state)) {}
Graph::Graph(Graph&& other) noexcept = default;

Graph& Graph::operator=(Graph&& other) noexcept {
  if (this != &other) {
    (void)destroy();
    state_ = std::move(other.state_);
  }
  return *this;
}

Graph::~Graph() { (void)destroy(); }

namespace {

// A replay that did not run: the error is returned and queued on the stream (it surfaces on the
// next sync too), and the recording's outputs carry it.
Error replay_failed(detail::GraphState& state, Error error) {
  state.buffers().fail_writes(error);  // what they hold now no replay produced
  state.stream().errors().push(error);
  state.note_failures();  // (a write that carried a failure already tells no graph again)
  return error;
}

// cuGraphLaunch failed: kept out of Graph::replay, so that building the error costs the hot path
// nothing (no registers saved for it, no inlined string handling).
[[gnu::cold, gnu::noinline]] Error launch_failed(detail::GraphState& state, CUresult result) {
  return replay_failed(state, Error::from_driver("cuGraphLaunch", result).context("replay"));
}

// Off the hot path: the stream's gate or the graph's replay word is not clear, or this thread is
// not bound to the device yet.
Result<void> replay_slow(detail::GraphState* state) {
  if (state == nullptr) {
    return Error(Errc::graph_state,
                 "replay: an empty graph (default-constructed, moved-from or destroyed)");
  }
  const detail::ReplayBlock& hot = state->hot();
  const unsigned gate = hot.gate->bits();
  if (state->released() || (gate & capture::ReplayGate::kClosed) != 0) {
    return Error(Errc::graph_state, "replay: the graph's device is closed");
  }
  if ((gate & capture::ReplayGate::kRecording) != 0) {
    return Error(Errc::graph_state,
                 "replay: its stream is recording; launching a graph into a capturing stream "
                 "would invalidate the recording");
  }
  // Cleared before it looks: a buffer failing meanwhile sets it again.
  hot.flags.fetch_and(~memory::ReplayChecks::kCarriesFailure, std::memory_order_acq_rel);
  // A buffer the graph reads carries a failure: the replay would compute from bytes no operation
  // produced. Skip it, and let its outputs say why.
  if (std::optional<Error> failure = state->buffers().first_failed_read()) {
    return replay_failed(
        *state, Error(Errc::failed_buffer,
                      "replay: a buffer the graph reads carries an error, so the replay was "
                      "skipped: " + failure->message(),
                      failure->driver_code()));
  }
  // Another stream used one of its buffers since (or a graph of another stream shares one): this
  // replay must come after those uses, as an eager use on its stream would.
  if ((hot.flags.load(std::memory_order_acquire) &
       (memory::ReplayChecks::kUsedElsewhere | memory::ReplayChecks::kShared)) != 0) {
    if (Result<void> ordered = state->check_replay_order(); !ordered) {
      state->note_failures();
      return std::move(ordered).error().context("replay");
    }
  }
  if (Result<void> bound = state->stream().device().bind_thread(); !bound) {
    state->note_failures();
    return bound;
  }
  hot.mark_replay();
  if (const CUresult result = hot.driver->cuGraphLaunch(hot.exec, hot.stream);
      result != CUDA_SUCCESS) {
    return launch_failed(*state, result);
  }
  // Enqueued: what the graph produces whole replaces whatever those buffers carried.
  state->buffers().clear_produced();
  state->note_failures();
  return {};
}

}  // namespace

Result<void> Graph::replay() {
  // The hot path: one cache line of the graph, the stream's gate word and operation counter, the
  // thread's bound device; it writes its position, which its buffers read as the replay's use.
  if (state_ == nullptr) [[unlikely]] return replay_slow(nullptr);
  const detail::ReplayBlock& hot = state_->hot();
  if (hot.flags.load(std::memory_order_acquire) != 0 || !hot.gate->open() ||
      detail::t_bound_device != hot.device_id) [[unlikely]] {
    return replay_slow(state_.get());
  }
  hot.mark_replay();
  if (const CUresult result = hot.driver->cuGraphLaunch(hot.exec, hot.stream);
      result != CUDA_SUCCESS) [[unlikely]] {
    return launch_failed(*state_, result);
  }
  return {};
}

Result<void> Graph::replay_checked() {
  if (state_ == nullptr) {
    return Error(Errc::graph_state,
                 "replay_checked: an empty graph (default-constructed, moved-from or destroyed)");
  }
  return state_->replay_checked();
}

CUgraphExec Graph::native_handle() const noexcept {
  return state_ && !state_->released() ? state_->hot().exec : nullptr;
}

Result<void> Graph::destroy() {
  std::shared_ptr<detail::GraphState> state = std::move(state_);
  if (!state || state->released()) return {};
  detail::DeviceCore& device = state->stream().device();
  if (!device.is_open()) return {};  // closing the device released it
  if (state->stream().recording()) {
    device.defer(std::move(state));  // waiting now would invalidate its stream's recording
    return {};
  }
  if (Result<void> bound = device.bind_thread(); !bound) {
    device.defer(std::move(state));
    return bound.error().context("destroying a graph");
  }
  if (!state->try_release(/*host_sync=*/true)) {
    device.defer(std::move(state));  // a recording forbids the wait now: released when it ends
    return {};
  }
  device.collect_deferred();
  return {};
}

Result<void> Graph::set_param(const void* param, const void* bytes, std::size_t size) {
  if (!state_ || state_->released()) {
    return Error(Errc::graph_state,
                 "Graph::set: an empty graph (default-constructed, moved-from or destroyed), or "
                 "its device is closed");
  }
  return state_->set_param(param, bytes, size);
}

bool Graph::took_param(const void* param) const {
  return state_ && !state_->released() && state_->took_param(param);
}

const GraphReport& Graph::report() const noexcept {
  static const GraphReport kEmpty{};
  return state_ ? state_->report() : kEmpty;
}

}  // namespace graphcap
