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
  state.stream().queue_error(error);
  return error;
}

// cuGraphLaunch failed: kept out of Graph::replay, so that building the error costs the hot path
// nothing (no registers saved for it, no inlined string handling).
[[gnu::cold, gnu::noinline]] Error launch_failed(detail::GraphState& state, CUresult result) {
  return replay_failed(state, Error::from_driver("cuGraphLaunch", result).context("replay"));
}

// Off the hot path: the gate is not clear, or this thread is not bound to the device yet.
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
  // Some buffer of the stream carries a failure: a replay reading one would compute from bytes
  // no operation produced. Skip it, and let its outputs say why.
  if (std::optional<Error> failure = state->buffers().first_failed_read()) {
    return replay_failed(
        *state, Error(Errc::failed_buffer,
                      "replay: a buffer the graph reads carries an error, so the replay was "
                      "skipped: " + failure->message(),
                      failure->driver_code()));
  }
  if (Result<void> bound = state->stream().device().bind_thread(); !bound) return bound;
  if (const CUresult result = hot.driver->cuGraphLaunch(hot.exec, hot.stream);
      result != CUDA_SUCCESS) {
    return launch_failed(*state, result);
  }
  // Enqueued: what the graph produces whole replaces whatever those buffers carried.
  state->buffers().clear_produced();
  return {};
}

}  // namespace

Result<void> Graph::replay() {
  // The hot path: one cache line of the graph, the stream's gate word, the thread's bound device.
  if (state_ == nullptr) [[unlikely]] return replay_slow(nullptr);
  const detail::ReplayBlock& hot = state_->hot();
  if (hot.released.load(std::memory_order_acquire) || !hot.gate->open() ||
      detail::t_bound_device != hot.device_id) [[unlikely]] {
    return replay_slow(state_.get());
  }
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
  if (!state->try_release()) {
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
