#include <graphcap/pending_graph.h>

#include <algorithm>
#include <utility>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/graph_state.h>
#include <graphcap/detail/instantiate_threads.h>
#include <graphcap/detail/pending_graph_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/try.h>

namespace graphcap {

PendingGraph::PendingGraph() noexcept = default;
PendingGraph::PendingGraph(std::shared_ptr<detail::PendingGraphState> state) noexcept
    : state_(std::move(state)) {}
PendingGraph::PendingGraph(PendingGraph&& other) noexcept = default;

PendingGraph& PendingGraph::operator=(PendingGraph&& other) noexcept {
  if (this != &other) {
    drop();
    state_ = std::move(other.state_);
  }
  return *this;
}

PendingGraph::~PendingGraph() { drop(); }

void PendingGraph::drop() noexcept {
  std::shared_ptr<detail::PendingGraphState> state = std::move(state_);
  if (!state) return;
  // An executable made already is released as a destroyed graph's is (deferred while a
  // recording forbids it).
  if (std::shared_ptr<detail::GraphState> made = state->abandon()) {
    Graph dropped = HandleAccess::graph(std::move(made));
  }
}

bool PendingGraph::ready() const { return state_ != nullptr && state_->ready(); }

Result<Graph> PendingGraph::finish() {
  if (!state_) return Error(Errc::graph_state, "PendingGraph::finish: an empty PendingGraph");
  GRAPHCAP_ASSIGN_OR_RETURN(std::shared_ptr<detail::GraphState> state, state_->finish());
  state_.reset();
  return HandleAccess::graph(std::move(state));
}

InstantiateWorkers::InstantiateWorkers(Device& device, unsigned threads)
    : threads_(std::make_unique<detail::InstantiateThreads>(
          HandleAccess::core(device.stream()).device().shared_from_this(),
          std::max(threads, 1u))) {}

InstantiateWorkers::~InstantiateWorkers() = default;

void InstantiateWorkers::submit(const PendingGraph& graph) {
  if (graph.state_) threads_->submit(graph.state_);
}

}  // namespace graphcap
