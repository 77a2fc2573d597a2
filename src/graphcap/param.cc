#include <graphcap/param.h>

#include <cstring>

namespace graphcap {

ParamSlot::ParamSlot(const void* initial, std::size_t size) noexcept
    : size_(size <= kMaxBytes ? size : kMaxBytes) {
  std::memcpy(bytes_, initial, size_);
}

void ParamSlot::load(void* out) const noexcept {
  std::lock_guard lock(mutex_);
  std::memcpy(out, bytes_, size_);
}

void ParamSlot::store(const void* in) noexcept {
  std::lock_guard lock(mutex_);
  std::memcpy(bytes_, in, size_);
}

}  // namespace graphcap
