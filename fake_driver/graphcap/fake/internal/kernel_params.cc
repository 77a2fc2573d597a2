#include <graphcap/fake/internal/kernel_params.h>

#include <cstring>

namespace graphcap::fake::internal {
namespace {

// Reads `extra`'s key/value pairs up to CU_LAUNCH_PARAM_END and copies each parameter from the
// buffer at its offset.
CUresult from_extra(const KernelDef& kernel, void** extra, std::vector<std::byte>* out) {
  const void* source = nullptr;
  const std::size_t* source_size = nullptr;
  for (std::size_t i = 0;; i += 2) {
    const auto key = reinterpret_cast<std::uintptr_t>(extra[i]);
    if (key == kLaunchParamEnd) break;
    if (key == kLaunchParamBufferPointer) {
      source = extra[i + 1];
    } else if (key == kLaunchParamBufferSize) {
      source_size = static_cast<const std::size_t*>(extra[i + 1]);
    } else {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (source == nullptr || source_size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (*source_size < kernel.param_bytes) return CUDA_ERROR_INVALID_VALUE;
  const auto* bytes = static_cast<const std::byte*>(source);
  for (const KernelParamInfo& param : kernel.params) {
    if (param.size != 0) std::memcpy(out->data() + param.offset, bytes + param.offset, param.size);
  }
  return CUDA_SUCCESS;
}

CUresult from_params(const KernelDef& kernel, void** params, std::vector<std::byte>* out) {
  if (kernel.params.empty()) return CUDA_SUCCESS;  // params may be NULL: nothing is read
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Exactly the declared count: the array has no terminator.
  for (std::size_t i = 0; i < kernel.params.size(); ++i) {
    if (params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const KernelParamInfo& param = kernel.params[i];
    if (param.size != 0) std::memcpy(out->data() + param.offset, params[i], param.size);
  }
  return CUDA_SUCCESS;
}

}  // namespace

std::size_t natural_alignment(std::size_t size) {
  std::size_t alignment = 1;
  while (alignment < 8 && size % (alignment * 2) == 0) alignment *= 2;
  return alignment;
}

void lay_out_params(std::span<const std::size_t> sizes, std::span<const std::size_t> alignments,
                    KernelDef* def) {
  def->declared = true;
  def->params.clear();
  std::size_t offset = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::size_t alignment = alignments[i] == 0 ? 1 : alignments[i];
    offset = (offset + alignment - 1) / alignment * alignment;
    def->params.push_back(KernelParamInfo{offset, sizes[i]});
    offset += sizes[i];
  }
  def->param_bytes = offset;
}

std::string undeclared_layout_message(const KernelDef& kernel) {
  return "cuLaunchKernel: kernel '" + kernel.name +
         "' has no declared parameter layout, so its parameters can't be read (kernelParams has "
         "no terminator); register it with FakeDriver::register_typed_kernel<Params...>(name, "
         "body) or register_kernel(name, param_sizes, body)";
}

CUresult copy_launch_params(const KernelDef& kernel, void** params, void** extra,
                            std::vector<std::byte>* buffer) {
  buffer->clear();
  if (!kernel.declared) return CUDA_ERROR_INVALID_VALUE;
  if (params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  buffer->assign(kernel.param_bytes, std::byte{0});
  const CUresult result =
      extra != nullptr ? from_extra(kernel, extra, buffer) : from_params(kernel, params, buffer);
  if (result != CUDA_SUCCESS) buffer->clear();
  return result;
}

}  // namespace graphcap::fake::internal
