// PendingGraphState: what a PendingGraph owns: a recording closed with its instantiate deferred
// (StreamCore::end_capture_deferred: every refusal but the instantiate's decided, its pins and
// pool share taken, its census made), until finish() makes it a GraphState or abandon() drops
// it. Its instantiate may run on another thread (InstantiateThreads) while its stream records
// the next graph: it touches only this recording and the driver, with the thread's capture mode
// RELAXED for the call, so it never invalidates another thread's recording (a RELAXED thread is
// never prohibited: docs/cuda-driver-facts.md, "Calls from another thread").
//
// One instantiate at most, by whoever takes it first: a worker (run_queued), or finish() on the
// stream's thread (which waits for a worker that has begun it).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <graphcap/capture/recording.h>
#include <graphcap/driver/cuda_types.h>
#include <graphcap/error.h>
#include <graphcap/result.h>

namespace graphcap::detail {

class StreamCore;
class GraphState;

class PendingGraphState {
 public:
  // `bodies`: the recording's conditional bodies' graphs, to name a node a refused instantiate
  // names (StreamCore::end_capture_deferred).
  PendingGraphState(std::shared_ptr<StreamCore> stream,
                    std::unique_ptr<capture::Recording> recording,
                    std::vector<capture::BodyGraph> bodies) noexcept;
  PendingGraphState(const PendingGraphState&) = delete;
  PendingGraphState& operator=(const PendingGraphState&) = delete;
  ~PendingGraphState();

  // Submitted to a worker (InstantiateThreads::submit).
  void queue() noexcept;
  // A worker's turn: instantiate, then upload on `upload` (nullptr: no upload), unless finish()
  // or abandon() took it first.
  void run_queued(CUstream upload) noexcept;
  // Instantiated (or refused): finish() will not wait.
  bool ready() const;
  // On the stream's thread, while the stream records nothing: the graph's state (registered with
  // the device; uploaded on its stream where the device pre-uploads and no worker did), or the
  // instantiate's error (the recording is dropped as a refused one is). Instantiates here if no
  // worker has begun to; waits for one that has. Once only: Errc::graph_state after.
  Result<std::shared_ptr<GraphState>> finish();
  // Dropped unfinished (waiting for a worker that has begun it): a graph's state to release as a
  // destroyed graph is, when the executable was made; nullptr otherwise (the recording is
  // dropped here).
  std::shared_ptr<GraphState> abandon() noexcept;

 private:
  enum class Phase { recorded, queued, instantiating, instantiated, taken };
  // Instantiate (phase instantiating, no lock held), then upload on `upload` if given.
  void instantiate(CUstream upload) noexcept;
  // Wait for a worker's instantiate; take it on this thread if none has begun (lock held).
  void settle(std::unique_lock<std::mutex>& lock) noexcept;

  std::shared_ptr<StreamCore> stream_;
  std::unique_ptr<capture::Recording> recording_;
  std::vector<capture::BodyGraph> bodies_;
  std::optional<Error> failure_;  // the instantiate's (or its thread's binding's) error
  bool upload_tried_ = false;     // a worker uploaded it (or tried: a failure was a warning)
  mutable std::mutex mutex_;
  std::condition_variable instantiated_;
  Phase phase_ = Phase::recorded;
};

}  // namespace graphcap::detail
