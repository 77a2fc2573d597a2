// ErrorQueue: a stream's asynchronous failures (of replays, of waits in destructors), kept until
// the next sync or read reports them (thread-safe; the check for none reads one atomic).
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <vector>

#include <graphcap/error.h>

namespace graphcap::detail {

class ErrorQueue {
 public:
  void push(const Error& error);
  // The first error queued since the last take (saying how many came after it), or none.
  std::optional<Error> take();
  bool any() const noexcept { return any_.load(std::memory_order_acquire); }

 private:
  std::mutex mutex_;
  std::vector<Error> errors_;
  std::atomic<bool> any_{false};
};

}  // namespace graphcap::detail
