// Replays (one that reads a buffer carrying a failure, whichever stream owns it, is skipped with
// failed_buffer; one that runs clears what it writes), destroys, Graph::set and Param::set.
#include <algorithm>
#include <string>

#include "many_graphs/model.h"

namespace graphcap::testing::many_graphs {
std::optional<Errc> replay_expectation(const Model& m, const ModelGraph& graph, bool live) {
  if (!live || m.in_recording(graph.stream)) return Errc::graph_state;
  for (int b : graph.reads) {
    if (m.alive(b) && m.buf(b).failure) return Errc::failed_buffer;
  }
  return std::nullopt;
}

// What a replay did to the model: ran (its ops, in recording order) or did not.
void replay_effect(Model& m, const ModelGraph& graph, const Result<void>& replayed) {
  if (!replayed) {
    const Errc code = replayed.error().code();
    if (code == Errc::graph_state) return;
    for (int b : graph.writes) m.fail(b, code);
    std::optional<Errc>& queued = m.queued[static_cast<std::size_t>(graph.stream)];
    if (!queued) queued = code;
    return;
  }
  // Another graph of its pool may have used its intermediates' memory since the last replay.
  std::set<int> used = graph.reads;
  used.insert(graph.writes.begin(), graph.writes.end());
  for (int b : used) {
    if (!m.buf(b).live && m.buf(b).scratch) m.buf(b).forget_words();
  }
  m.world.count("replay: ops applied", graph.ops.size());
  for (const Op& op : graph.ops) apply(m, op);
  for (int b : graph.writes) m.clear_failure(b);  // produced whole by an enqueued replay
}

void do_replay(Model& m, int g) {
  ModelGraph& graph = m.graphs[static_cast<std::size_t>(g)];
  const bool refused = !graph.live || m.in_recording(graph.stream);
  if (!refused) {
    // Not modelled: a replay with a recording open (the sync after it is refused, and another
    // stream's work could race it on a GPU), or one its stream is not ordered for.
    if (m.recording_open()) return;
    for (int b : graph.held) {
      if (!m.may_use(graph.stream, b, graph.writes.count(b) != 0)) return;
    }
  }
  m.log() << "replay(graph " << g << ")\n";
  m.faults.arm({"cuGraphLaunch"});
  Result<void> replayed = graph.handle.replay();
  m.faults.settle();
  const std::optional<Errc> expected = replay_expectation(m, graph, graph.live);
  m.expect(replayed, expected, expected == Errc::graph_state ? "replay refused" : "replay");
  replay_effect(m, graph, replayed);
  check_all(m);
  if (!refused) (void)do_sync(m, graph.stream);
}

void do_destroy(Model& m, int g) {
  m.log() << "destroy(graph " << g << ")\n";
  ModelGraph& graph = m.graphs[static_cast<std::size_t>(g)];
  m.faults.arm({"cuStreamSynchronize", "cuGraphExecDestroy", "cuGraphDestroy"});
  Result<void> destroyed = graph.handle.destroy();
  m.faults.settle();
  m.expect(destroyed, std::nullopt, graph.live ? "destroy" : "destroy again");
  if (graph.live) {
    // Released now, or when the open recording ends.
    (m.recording_open() ? m.deferred : graph.released) = true;
  }
  graph.live = false;
  check_all(m);
}

void do_graph_set(Model& m, int g, int p) {
  ModelGraph& graph = m.graphs[static_cast<std::size_t>(g)];
  const std::uint32_t value = m.world.value();
  m.log() << "Graph::set(graph " << g << ", param " << p << ", " << value << ")\n";
  m.faults.arm({"cuGraphExecKernelNodeSetParams"});
  Result<void> set = graph.handle.set(m.params[static_cast<std::size_t>(p)], value);
  m.faults.settle();
  std::optional<Errc> expected;
  std::string what = "Graph::set";
  if (!graph.live) {
    expected = Errc::graph_state;
    what = "Graph::set on a destroyed graph";
  } else if (graph.params.count(p) == 0) {
    expected = Errc::invalid_argument;
    what = "Graph::set of a param the graph never took";
  }
  m.expect(set, expected, what);
  if (set) {
    for (Op& op : graph.ops) {
      if (op.kind == Op::fill_param && op.param == p) op.value = value;
    }
  }
  check_all(m);
}

void do_param_set(Model& m, int p) {
  const std::uint32_t value = m.world.value();
  m.log() << "Param::set(param " << p << ", " << value << ")\n";
  m.params[static_cast<std::size_t>(p)].set(value);
}

}  // namespace graphcap::testing::many_graphs
