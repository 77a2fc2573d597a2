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

// Why a replay may not launch now; off the hot path.
Error refusal(const detail::GraphState* state) {
  if (state == nullptr) {
    return Error(Errc::graph_state,
                 "replay: an empty graph (default-constructed, moved-from or destroyed)");
  }
  if (state->released() || (state->hot().gate->bits() & detail::ReplayGate::kClosed) != 0) {
    return Error(Errc::graph_state, "replay: the graph's device is closed");
  }
  return Error(Errc::graph_state,
               "replay: its stream is recording; launching a graph into a capturing stream "
               "would invalidate the recording");
}

}  // namespace

Result<void> Graph::replay() {
  // The hot path: one cache line of the graph, the stream's gate, the thread's bound device.
  if (state_ == nullptr) [[unlikely]] return refusal(nullptr);
  const detail::ReplayBlock& hot = state_->hot();
  if (hot.released.load(std::memory_order_acquire) || !hot.gate->open()) [[unlikely]] {
    return refusal(state_.get());
  }
  if (detail::t_bound_device != hot.device_id) [[unlikely]] {
    if (Result<void> bound = state_->stream().device().bind_thread(); !bound) return bound;
  }
  if (const CUresult result = hot.driver->cuGraphLaunch(hot.exec, hot.stream);
      result != CUDA_SUCCESS) [[unlikely]] {
    Error error = Error::from_driver("cuGraphLaunch", result).context("replay");
    state_->stream().queue_error(error);
    return error;
  }
  return {};
}

CUgraphExec Graph::native_handle() const noexcept {
  return state_ && !state_->released() ? state_->hot().exec : nullptr;
}

Result<void> Graph::destroy() {
  std::shared_ptr<detail::GraphState> state = std::move(state_);
  if (!state || state->released()) return {};
  detail::DeviceCore& device = state->stream().device();
  if (!device.is_open()) return {};  // closing the device released it
  if (device.unsafe_calls_forbidden() || state->stream().window().recording()) {
    device.defer(std::move(state));  // waiting now would invalidate an open recording
    return {};
  }
  if (Result<void> bound = device.bind_thread(); !bound) {
    device.defer(std::move(state));
    return bound.error().context("destroying a graph");
  }
  state->release();
  device.collect_deferred();
  return {};
}

const GraphReport& Graph::report() const noexcept {
  static const GraphReport kEmpty{};
  return state_ ? state_->report() : kEmpty;
}

}  // namespace graphcap
