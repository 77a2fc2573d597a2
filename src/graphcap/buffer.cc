#include <graphcap/buffer.h>

#include <graphcap/memory/buffer_state.h>

namespace graphcap {

std::size_t Buffer::size() const noexcept { return state_ ? state_->size() : 0; }

CUdeviceptr Buffer::native_handle() const noexcept { return state_ ? state_->device_ptr() : 0; }

void Buffer::set_label(std::string label) {
  if (state_) state_->set_label(std::move(label));
}

std::string Buffer::label() const {
  std::shared_ptr<const std::string> label = state_ ? state_->label() : nullptr;
  return label ? *label : std::string();
}

std::optional<Error> Buffer::failure() const {
  return state_ ? state_->failure() : std::nullopt;
}

}  // namespace graphcap
