// InstantiateThreads: the threads behind InstantiateWorkers. Each makes its device's context
// current, sets its own capture mode to RELAXED (none of its calls may then invalidate a
// recording of another thread: docs/cuda-driver-facts.md, "Calls from another thread"), and
// makes a stream of its own to upload on: the recording's stream records the next graph
// meanwhile, and an upload into a capturing stream invalidates its capture. It takes the
// submitted graphs in order, instantiates and uploads each (PendingGraphState::run_queued), and,
// once stopped with nothing left to take, waits for its uploads (a replay on the recording's
// stream then never meets one still in flight) and destroys its stream.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace graphcap::detail {

class DeviceCore;
class PendingGraphState;

class InstantiateThreads {
 public:
  // `threads` threads (at least one) for graphs of `device`. Starting a thread may throw
  // (std::system_error), as std::jthread does.
  InstantiateThreads(std::shared_ptr<DeviceCore> device, unsigned threads);
  InstantiateThreads(const InstantiateThreads&) = delete;
  InstantiateThreads& operator=(const InstantiateThreads&) = delete;
  // Every graph submitted is taken (instantiated, or skipped if finished or dropped meanwhile),
  // then the threads end.
  ~InstantiateThreads();

  void submit(std::shared_ptr<PendingGraphState> graph);

 private:
  void work() noexcept;
  // Take what is left, then end the threads.
  void stop() noexcept;

  std::shared_ptr<DeviceCore> device_;
  std::mutex mutex_;
  std::condition_variable submitted_;
  std::deque<std::shared_ptr<PendingGraphState>> queue_;
  bool stopping_ = false;
  std::vector<std::jthread> threads_;  // last: they end before what they use goes
};

}  // namespace graphcap::detail
