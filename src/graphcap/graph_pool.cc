#include <graphcap/graph_pool.h>

#include <graphcap/detail/graph_pool_state.h>

namespace graphcap {

std::size_t GraphPool::bytes_held() const noexcept {
  return state_ ? state_->bytes_held() : 0;
}

std::size_t GraphPool::intermediates() const noexcept {
  return state_ ? state_->intermediates() : 0;
}

}  // namespace graphcap
