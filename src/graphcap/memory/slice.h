// Slice: one driver allocation as the pools hand it out. A slice is device memory (a CUdeviceptr)
// or pinned host staging memory (cuMemAllocHost), never both.
#pragma once

#include <cstddef>
#include <cstdint>

#include <graphcap/driver/cuda_types.h>

namespace graphcap::memory {

enum class SliceKind : std::uint8_t { device, pinned_host };

struct Slice {
  std::uintptr_t address = 0;  // a CUdeviceptr, or the host address of pinned memory
  std::size_t capacity = 0;    // bytes the driver allocated
  SliceKind kind = SliceKind::device;
  bool persistent = false;     // from the exact-fit pool that serves captures
  bool primed = false;         // handed out while the pool was priming (retained on release)

  CUdeviceptr device_ptr() const noexcept { return static_cast<CUdeviceptr>(address); }
  void* host_ptr() const noexcept { return reinterpret_cast<void*>(address); }
  explicit operator bool() const noexcept { return address != 0; }
};

}  // namespace graphcap::memory
