// PendingGraph: a recording closed with its instantiate still to come (CaptureSequence::
// end_deferred). Closing it decided every refusal but the instantiate's (a doom, memory nodes, a
// buffer that outlived it, an unjoined side stream) and made everything else of the graph: its
// pins, its share of a graph pool, its census. Its stream may record the next graph at once,
// while an InstantiateWorkers thread instantiates this one (and uploads it on a stream of its
// own): cuGraphInstantiate of distinct graphs runs on several threads at once, and the capture
// and instantiate phases scaled on the H200 where a whole pipeline per thread did not
// (docs/performance.md, "Startup"). finish() gives the Graph, on the recording's stream, as
// end_capture would have.
//
//   InstantiateWorkers workers(device, 3);
//   std::vector<PendingGraph> pending;
//   for (...) {  // each recorded on `s` with a CaptureSequence
//     Result<PendingGraph> closed = sequence.end_deferred();
//     if (closed) workers.submit(pending.emplace_back(std::move(*closed)));
//   }
//   for (PendingGraph& p : pending) { Result<Graph> graph = p.finish(); ... }
//
// A graph instantiated this way has the model's driver bytes (GraphMemory::driver_source model):
// the drop of free memory across one instantiate can't be told from another's running beside
// it. Finish or drop every PendingGraph before closing its Device.
#pragma once

#include <memory>

#include <graphcap/graph.h>
#include <graphcap/result.h>

namespace graphcap {

namespace detail {
class PendingGraphState;
class InstantiateThreads;
}  // namespace detail
class Device;
struct HandleAccess;

class PendingGraph {
 public:
  PendingGraph() noexcept;  // empty: finish() is Errc::graph_state
  PendingGraph(PendingGraph&& other) noexcept;
  PendingGraph& operator=(PendingGraph&& other) noexcept;
  PendingGraph(const PendingGraph&) = delete;
  PendingGraph& operator=(const PendingGraph&) = delete;
  // Dropped unfinished: waits for a worker instantiating it, then lets go of everything, as a
  // destroyed Graph does (never throws).
  ~PendingGraph();

  explicit operator bool() const noexcept { return state_ != nullptr; }
  // Instantiated (or refused) already: finish() will not wait.
  bool ready() const;

  // The Graph, on the thread that uses the recording's stream, while the stream records nothing:
  // instantiated here unless a worker has begun it (then it waits for it), and uploaded on the
  // stream where DeviceOptions::upload_on_capture asks and no worker did. A refused instantiate
  // is its error, as end_capture's would have been (Errc::driver naming
  // cuGraphInstantiateWithParams and the node), and the recording is let go (nothing it wrote is
  // marked: its window decided that at prepare_capture). Errc::graph_state while the stream
  // records (it stays pending), for an empty PendingGraph, or once finished.
  Result<Graph> finish();

 private:
  friend struct HandleAccess;
  friend class InstantiateWorkers;
  explicit PendingGraph(std::shared_ptr<detail::PendingGraphState> state) noexcept;
  void drop() noexcept;

  std::shared_ptr<detail::PendingGraphState> state_;
};

// Host threads that instantiate PendingGraphs (and upload them, on a stream of each thread's own)
// while the calling thread records the next ones. Each thread's own capture mode is RELAXED, so
// nothing it does invalidates a recording open on another thread (docs/cuda-driver-facts.md,
// "Calls from another thread"). The graphs are taken in the order submitted.
class InstantiateWorkers {
 public:
  // `threads` threads (0 counts as 1) for graphs recorded on `device`'s streams.
  InstantiateWorkers(Device& device, unsigned threads);
  InstantiateWorkers(const InstantiateWorkers&) = delete;
  InstantiateWorkers& operator=(const InstantiateWorkers&) = delete;
  // Every graph submitted is taken first (instantiated, or skipped if finished or dropped
  // meanwhile) and the uploads are waited for; then the threads end.
  ~InstantiateWorkers();

  // Instantiate `graph` on a worker. An empty one is ignored.
  void submit(const PendingGraph& graph);

 private:
  std::unique_ptr<detail::InstantiateThreads> threads_;
};

}  // namespace graphcap
