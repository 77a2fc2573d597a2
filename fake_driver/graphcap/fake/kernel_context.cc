// What a fake kernel body sees: its parameters (size-checked) and device buffers (bounds- and
// liveness-checked). Runs with the FakeState lock held, so it reads the state directly.
#include <graphcap/fake/fake_driver.h>

#include <cstring>

#include <graphcap/fake/internal/fake_state.h>

namespace graphcap::fake {

const std::byte* KernelContext::param_bytes(std::size_t param, std::size_t size) const {
  return state_->kernel_param(*this, param, size);
}

std::byte* KernelContext::device_bytes(std::size_t param, std::size_t bytes,
                                       std::size_t align) const {
  return state_->kernel_buffer(*this, param, bytes, align);
}

void KernelContext::trap(CUresult code) const { state_->kernel_trap(code); }

void KernelContext::set_condition(std::size_t param, unsigned value) const {
  state_->kernel_set_condition(*this, param, value);
}

const std::byte* FakeState::kernel_param(const KernelContext& context, std::size_t param,
                                         std::size_t size) {
  const std::span<const KernelParamInfo> layout = context.layout_;
  const std::string who = running_.where + ": kernel '" + std::string(context.name_) + "'";
  if (param >= layout.size()) {
    violation(who + " reads parameter " + std::to_string(param) + " but declares " +
              std::to_string(layout.size()));
    return nullptr;
  }
  const KernelParamInfo& declared = layout[param];
  if (size != declared.size) {
    violation(who + " reads parameter " + std::to_string(param) + " as " + std::to_string(size) +
              " bytes, but it has " + std::to_string(declared.size));
    return nullptr;
  }
  return context.buffer_.data() + declared.offset;
}

std::byte* FakeState::kernel_buffer(const KernelContext& context, std::size_t param,
                                    std::size_t bytes, std::size_t align) {
  const std::byte* raw = kernel_param(context, param, sizeof(CUdeviceptr));
  if (raw != nullptr) {
    CUdeviceptr address = 0;
    std::memcpy(&address, raw, sizeof address);
    if (bytes == 0) return nullptr;  // an empty range touches nothing
    const std::string who = running_.where + ": kernel '" + std::string(context.name_) +
                            "' parameter " + std::to_string(param) + ": ";
    std::string why;
    if (address % align != 0) {
      violation(who + internal::hex(address) + " is not aligned to " + std::to_string(align) +
                " bytes");
    } else if (std::byte* found = device_memory_.access(address, bytes, &why)) {
      return found;
    } else {
      violation(who + why);
    }
  }
  if (bytes == 0) return nullptr;
  // Zeroed scratch memory, so the body runs on without touching anything real.
  auto& scratch = context.scratch_.emplace_back(bytes + align, std::byte{0});
  const auto address = reinterpret_cast<std::uintptr_t>(scratch.data());
  return scratch.data() + ((align - address % align) % align);
}

void FakeState::kernel_trap(CUresult code) {
  if (!running_.trap) running_.trap = code;
}

}  // namespace graphcap::fake
