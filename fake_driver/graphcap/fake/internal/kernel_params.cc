#include <graphcap/fake/internal/kernel_params.h>

#include <cstring>

namespace graphcap::fake::internal {
namespace {

constexpr std::size_t kUndeclaredSize = 8;

// The natural alignment of a parameter of `size` bytes: its largest power-of-two divisor, <= 8.
std::size_t natural_alignment(std::size_t size) {
  std::size_t alignment = 1;
  while (alignment < 8 && size % (alignment * 2) == 0) alignment *= 2;
  return alignment;
}

std::vector<std::byte> copy_bytes(const void* source, std::size_t size) {
  std::vector<std::byte> bytes(size);
  if (size != 0) std::memcpy(bytes.data(), source, size);
  return bytes;
}

CUresult from_extra(const KernelDef& kernel, void** extra,
                    std::vector<std::vector<std::byte>>* out) {
  const void* buffer = nullptr;
  const std::size_t* buffer_size = nullptr;
  for (std::size_t i = 0;; i += 2) {
    const auto key = reinterpret_cast<std::uintptr_t>(extra[i]);
    if (key == kLaunchParamEnd) break;
    if (key == kLaunchParamBufferPointer) {
      buffer = extra[i + 1];
    } else if (key == kLaunchParamBufferSize) {
      buffer_size = static_cast<const std::size_t*>(extra[i + 1]);
    } else {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  // The layout is only known for declared sizes.
  if (!kernel.declared_sizes || buffer == nullptr || buffer_size == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto* bytes = static_cast<const std::byte*>(buffer);
  std::size_t offset = 0;
  for (std::size_t size : kernel.param_sizes) {
    const std::size_t alignment = natural_alignment(size);
    offset = (offset + alignment - 1) / alignment * alignment;
    if (offset + size > *buffer_size) return CUDA_ERROR_INVALID_VALUE;
    out->push_back(copy_bytes(bytes + offset, size));
    offset += size;
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUresult copy_launch_params(const KernelDef& kernel, void** params, void** extra,
                            std::vector<std::vector<std::byte>>* out) {
  out->clear();
  if (params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (extra != nullptr) return from_extra(kernel, extra, out);
  if (!kernel.declared_sizes) {
    for (std::size_t i = 0; params != nullptr && params[i] != nullptr; ++i) {
      out->push_back(copy_bytes(params[i], kUndeclaredSize));
    }
    return CUDA_SUCCESS;
  }
  if (kernel.param_sizes.empty()) return CUDA_SUCCESS;
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t i = 0; i < kernel.param_sizes.size(); ++i) {
    if (params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    out->push_back(copy_bytes(params[i], kernel.param_sizes[i]));
  }
  return CUDA_SUCCESS;
}

}  // namespace graphcap::fake::internal
