#include <graphcap/graph_pool.h>

#include <graphcap/detail/graph_pool_state.h>

namespace graphcap {

std::size_t GraphPool::bytes_held() const noexcept {
  return state_ ? state_->bytes_held() : 0;
}

std::size_t GraphPool::intermediates() const noexcept {
  return state_ ? state_->intermediates() : 0;
}

GraphPoolStats GraphPool::stats() const noexcept {
  GraphPoolStats stats;
  if (!state_) return stats;
  stats.virtual_memory = state_->virtual_memory();
  stats.bytes_held = state_->bytes_held();
  stats.intermediates = state_->intermediates();
  if (const auto& range = state_->range()) {
    const memory::VirtualRange::Stats held = range->stats();
    stats.granularity = range->granularity();
    stats.reserved_bytes = range->reserved();
    stats.base = static_cast<std::uintptr_t>(range->base());
    stats.used_bytes = held.used;
    stats.growths = held.growths;
    stats.shrinks = held.shrinks;
  }
  return stats;
}

}  // namespace graphcap
