#include <graphcap/buffer.h>

#include <graphcap/memory/buffer_state.h>

namespace graphcap {

std::size_t Buffer::size() const noexcept { return state_ ? state_->size() : 0; }

CUdeviceptr Buffer::device_ptr() const noexcept { return state_ ? state_->device_ptr() : 0; }

std::optional<Error> Buffer::failure() const {
  return state_ ? state_->failure() : std::nullopt;
}

}  // namespace graphcap
