// GraphState: what a Graph owns: the executable, the stream it replays on, and the allocations it
// pins. Released exactly once: by Graph::destroy, or by the device closing.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <graphcap/capture/executable.h>
#include <graphcap/capture/window.h>
#include <graphcap/detail/allocation.h>
#include <graphcap/graph.h>
#include <graphcap/result.h>

namespace graphcap::detail {

class StreamCore;
class ReplayGate;

// Everything Graph::replay reads, on one cache line: with the stream's gate and the thread's
// bound device, that is all the hot path touches before cuGraphLaunch.
struct alignas(64) ReplayBlock {
  DriverApi* driver = nullptr;
  CUgraphExec exec = nullptr;
  CUstream stream = nullptr;
  const ReplayGate* gate = nullptr;
  unsigned long long device_id = 0;
  std::atomic<bool> released{false};
};

class GraphState {
 public:
  GraphState(std::shared_ptr<StreamCore> stream, capture::Executable executable,
             std::vector<std::shared_ptr<Allocation>> pins, capture::BufferRoles buffers,
             GraphReport report) noexcept;

  const ReplayBlock& hot() const noexcept { return hot_; }
  StreamCore& stream() const noexcept { return *stream_; }
  const capture::Executable& executable() const noexcept { return executable_; }
  const GraphReport& report() const noexcept { return report_; }
  bool released() const noexcept { return hot_.released.load(std::memory_order_acquire); }

  // The buffers the recording read, wrote and produced whole (see Graph::replay's slow path).
  const capture::BufferRoles& buffers() const noexcept { return buffers_; }

  // Wait for in-flight replays (a failed wait is queued on the stream), destroy the executable,
  // unpin. Idempotent. Call only when no recording forbids the wait (the device defers it).
  void release() noexcept;

 private:
  ReplayBlock hot_;
  std::shared_ptr<StreamCore> stream_;
  capture::Executable executable_;
  std::vector<std::shared_ptr<Allocation>> pins_;
  capture::BufferRoles buffers_;
  GraphReport report_;
  std::mutex mutex_;
};

}  // namespace graphcap::detail
