#include <graphcap/param.h>

#include <cstring>
#include <mutex>

namespace graphcap::detail {

class ParamSlot {
 public:
  ParamSlot(const void* initial, std::size_t size) noexcept
      : size_(size <= kMaxParamBytes ? size : kMaxParamBytes) {
    std::memcpy(bytes_, initial, size_);
  }

  void load(void* out) const noexcept {
    std::lock_guard lock(mutex_);
    std::memcpy(out, bytes_, size_);
  }

  void store(const void* in) noexcept {
    std::lock_guard lock(mutex_);
    std::memcpy(bytes_, in, size_);
  }

 private:
  mutable std::mutex mutex_;
  std::size_t size_;
  alignas(8) unsigned char bytes_[kMaxParamBytes] = {};
};

std::shared_ptr<ParamSlot> make_param_slot(const void* initial, std::size_t size) {
  return std::make_shared<ParamSlot>(initial, size);
}

void load_param(const ParamSlot& slot, void* out) noexcept { slot.load(out); }

void store_param(ParamSlot& slot, const void* in) noexcept { slot.store(in); }

}  // namespace graphcap::detail
