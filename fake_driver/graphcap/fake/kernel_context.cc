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

bool KernelContext::watches_accesses() const { return state_->kernel_watches_accesses(); }

void KernelContext::watch_access(std::size_t param, CUdeviceptr address, std::size_t bytes,
                                 bool writable) const {
  state_->kernel_watch_access(*this, param, address, bytes, writable);
}

void KernelContext::trap(CUresult code) const { state_->kernel_trap(code); }

bool KernelContext::tracks_accesses() const { return state_->kernel_tracks_accesses(); }

void KernelContext::accessed(CUdeviceptr address, std::size_t bytes, bool writable) const {
  state_->kernel_accessed(address, bytes, writable);
}

void KernelContext::set_condition(std::size_t param, unsigned value) const {
  state_->kernel_set_condition(*this, param, value);
}

void KernelContext::set_condition_handle(CUgraphConditionalHandle handle, unsigned value) const {
  state_->kernel_set_condition_handle(*this, handle, value);
}

bool KernelContext::device_range(CUdeviceptr address, DeviceRange* range, std::string* why) const {
  return state_->kernel_range(address, range, why);
}

std::string KernelContext::overrun(const DeviceRange& range, CUdeviceptr address,
                                   std::size_t bytes) {
  internal::DeviceMemory::Extent extent;
  extent.base = range.base;
  extent.size = range.size;
  extent.buffer = range.buffer;
  extent.mapping = range.mapping;
  extent.allocation = range.allocation;
  extent.allocation_size = range.allocation_size;
  return internal::DeviceMemory::overrun(extent, address, bytes);
}

void KernelContext::violation(std::string_view text, CUresult code) const {
  state_->kernel_violation(*this, text, code);
}

bool KernelContext::faulted() const { return state_->kernel_faulted(); }

bool KernelContext::strict() const { return state_->strict(); }

std::uint64_t KernelContext::max_threads_per_launch() const {
  return state_->max_threads_per_launch();
}

bool FakeState::kernel_range(CUdeviceptr address, KernelContext::DeviceRange* range,
                             std::string* why) {
  internal::DeviceMemory::Extent extent;
  if (!device_memory_.extent(address, &extent, why)) return false;
  if (extent.buffer && running_.work != nullptr) {
    // A replayed node: the Buffer it was recorded with, where that memory held one then.
    const internal::BufferExtent* recorded = nullptr;
    for (const internal::BufferExtent& candidate : running_.work->extents) {
      if (candidate.base >= extent.allocation && candidate.base <= address &&
          (recorded == nullptr || candidate.base > recorded->base)) {
        recorded = &candidate;
      }
    }
    if (recorded != nullptr) {
      std::byte* allocation = extent.bytes - (extent.base - extent.allocation);
      extent.bytes = allocation + (recorded->base - extent.allocation);
      extent.base = recorded->base;
      extent.size = recorded->size;
    }
  }
  range->host = extent.bytes;
  range->base = extent.base;
  range->size = extent.size;
  range->buffer = extent.buffer;
  range->mapping = extent.mapping;
  range->allocation = extent.allocation;
  range->allocation_size = extent.allocation_size;
  return true;
}

void FakeState::kernel_violation(const KernelContext& context, std::string_view text,
                                 CUresult code) {
  violation(running_.where + ": kernel '" + std::string(context.name_) + "' " + std::string(text),
            code);
}

void FakeState::annotate_buffer(CUdeviceptr address, std::size_t bytes) noexcept {
  std::lock_guard<std::mutex> guard(mutex_);
  device_memory_.annotate(address, bytes);
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
    KernelContext::DeviceRange range;
    if (address % align != 0) {
      violation(who + internal::hex(address) + " is not aligned to " + std::to_string(align) +
                    " bytes",
                CUDA_ERROR_MISALIGNED_ADDRESS);
    } else if (!kernel_range(address, &range, &why)) {
      violation(who + internal::hex(address) + " (" + std::to_string(bytes) + " bytes) " + why);
    } else if (const std::size_t offset = address - range.base;
               offset <= range.size && bytes <= range.size - offset) {
      if (running_.pdl != nullptr) kernel_watch_access(context, param, address, bytes, writable);
      kernel_accessed(address, bytes, writable);
      return range.host + offset;
    } else {
      violation(who + KernelContext::overrun(range, address, bytes));
    }
  }
  if (bytes == 0) return nullptr;
  // Zeroed scratch memory, so the body runs on without touching anything real.
  auto& scratch = context.scratch_.emplace_back(bytes + align, std::byte{0});
  const auto address = reinterpret_cast<std::uintptr_t>(scratch.data());
  return scratch.data() + ((align - address % align) % align);
}

void FakeState::kernel_trap(CUresult code) {
  fault(code, running_.where + ": kernel '" +
                  (running_.kernel != nullptr ? running_.kernel->name : std::string()) +
                  "' trapped (KernelContext::trap)");
}

void FakeState::kernel_wait_for_predecessor() { running_.waited = true; }

void FakeState::kernel_watch_access(const KernelContext& context, std::size_t param,
                                    CUdeviceptr address, std::size_t bytes, bool writable) {
  if (running_.pdl == nullptr || bytes == 0) return;
  check_before_wait(context, param, address, bytes);
  if (!writable || !running_.pdl->record_writes) return;
  // A GRAPHCAP_KERNEL reports each element it touches: neighbouring accesses (a grid-stride
  // loop's) grow the last range instead of adding one.
  std::vector<ByteRange>& ranges = running_.pdl->written.ranges;
  if (!ranges.empty()) {
    ByteRange& last = ranges.back();
    const CUdeviceptr end = last.begin + last.bytes;
    if (address >= last.begin && address <= end) {
      last.bytes = std::max<std::size_t>(last.bytes, address + bytes - last.begin);
      return;
    }
  }
  ranges.push_back({address, bytes});
}

void FakeState::check_before_wait(const KernelContext& context, std::size_t param,
                                  CUdeviceptr address, std::size_t bytes) {
  if (running_.waited || running_.pdl_reported) return;
  for (const PredecessorWrites* before : running_.pdl->before_wait) {
    for (const ByteRange& range : before->ranges) {
      const CUdeviceptr begin = std::max(address, range.begin);
      const CUdeviceptr end = std::min(address + bytes, range.begin + range.bytes);
      if (begin >= end) continue;
      running_.pdl_reported = true;
      // Recorded, not a fault even under strict: the GPU does not fail such a kernel, it reads
      // stale data (so the work runs on, as a GPU's would).
      violations_.push_back(running_.where + ": kernel '" + std::string(context.name_) +
                "' was launched programmatically after kernel '" + before->kernel +
                "' and takes parameter " + std::to_string(param) + "'s " +
                std::to_string(end - begin) + " bytes at " + internal::hex(begin) +
                ", which '" + before->kernel +
                "' may write, before KernelContext::wait_for_predecessor() "
                "(cudaGridDependencySynchronize): on a GPU it may run before they are written and "
                "read stale data (the H200 did: docs/cuda-driver-facts.md, \"Programmatic "
                "dependent launch and priorities\")");
      return;
    }
  }
}

}  // namespace graphcap::fake
