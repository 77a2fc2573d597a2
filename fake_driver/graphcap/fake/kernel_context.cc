// What a fake kernel body sees: its parameters (size-checked) and device buffers (bounds- and
// liveness-checked). Runs with the FakeState lock held, so it reads the state directly.
#include <graphcap/fake/fake_driver.h>

#include <algorithm>
#include <cstring>

#include <graphcap/fake/internal/fake_state.h>

namespace graphcap::fake {

const std::byte* KernelContext::param_bytes(std::size_t param, std::size_t size) const {
  return state_->kernel_param(*this, param, size);
}

std::byte* KernelContext::device_bytes(std::size_t param, std::size_t bytes, std::size_t align,
                                       bool writable) const {
  return state_->kernel_buffer(*this, param, bytes, align, writable);
}

void KernelContext::wait_for_predecessor() const { state_->kernel_wait_for_predecessor(); }

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
                                    std::size_t bytes, std::size_t align, bool writable) {
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
      if (running_.pdl != nullptr) {
        check_before_wait(context, param, address, bytes);
        if (writable && running_.pdl->record_writes) {
          running_.pdl->written.ranges.push_back({address, bytes});
        }
      }
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

void FakeState::kernel_wait_for_predecessor() { running_.waited = true; }

void FakeState::check_before_wait(const KernelContext& context, std::size_t param,
                                  CUdeviceptr address, std::size_t bytes) {
  if (running_.waited || running_.pdl_reported) return;
  for (const PredecessorWrites* before : running_.pdl->before_wait) {
    for (const ByteRange& range : before->ranges) {
      const CUdeviceptr begin = std::max(address, range.begin);
      const CUdeviceptr end = std::min(address + bytes, range.begin + range.bytes);
      if (begin >= end) continue;
      running_.pdl_reported = true;
      violation(running_.where + ": kernel '" + std::string(context.name_) +
                "' was launched programmatically after kernel '" + before->kernel +
                "' and takes parameter " + std::to_string(param) + "'s " +
                std::to_string(end - begin) + " bytes at " + internal::hex(begin) +
                ", which '" + before->kernel +
                "' may write, before KernelContext::wait_for_predecessor() "
                "(cudaGridDependencySynchronize): on a GPU it may run before they are written and "
                "read stale data (the H200 did: docs/cuda-driver-facts.md, P03.a)");
      return;
    }
  }
}

}  // namespace graphcap::fake
