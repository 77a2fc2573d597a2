#include <graphcap/memory/buffer_state.h>

namespace graphcap::memory {

BufferState::~BufferState() {
  if (failed()) owner().count_failed_buffer(-1);
}

void BufferState::fail(const Error& error) {
  std::lock_guard lock(mutex_);
  failure_ = error;
  if (!failed_.exchange(true, std::memory_order_acq_rel)) owner().count_failed_buffer(+1);
}

void BufferState::clear_failure() {
  if (!failed()) return;
  std::lock_guard lock(mutex_);
  failure_.reset();
  if (failed_.exchange(false, std::memory_order_acq_rel)) owner().count_failed_buffer(-1);
}

}  // namespace graphcap::memory
