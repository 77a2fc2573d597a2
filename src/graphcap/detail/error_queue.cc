#include <graphcap/detail/error_queue.h>

#include <string>

namespace graphcap::detail {

void ErrorQueue::push(const Error& error) {
  std::lock_guard lock(mutex_);
  errors_.push_back(error);
  any_.store(true, std::memory_order_release);
}

std::optional<Error> ErrorQueue::take() {
  if (!any()) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (errors_.empty()) return std::nullopt;
  Error first = errors_.front();
  if (errors_.size() > 1) {
    first = Error(first.code(),
                  first.message() + " (and " + std::to_string(errors_.size() - 1) +
                      " later error(s) on this stream)",
                  first.driver_code());
  }
  errors_.clear();
  any_.store(false, std::memory_order_release);
  return first;
}

}  // namespace graphcap::detail
