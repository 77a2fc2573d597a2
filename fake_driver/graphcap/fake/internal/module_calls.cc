// Modules and launches: fake kernels are registered host functions with a declared parameter
// layout, named by a module image; cuLaunchKernel checks the launch shape against the H200's
// limits, copies exactly the declared parameters and queues (or captures) the kernel.
#include <graphcap/fake/internal/fake_state.h>

#include <algorithm>

#include <graphcap/fake/internal/kernel_params.h>
#include <graphcap/fake/internal/module_image.h>

namespace graphcap::fake {
namespace {

// The H200's launch limits (as cuDeviceGetAttribute reports them).
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlock[3] = {1024, 1024, 64};
constexpr unsigned kMaxGrid[3] = {2147483647u, 65535, 65535};
constexpr int kOptInSharedBytes = 232448;  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
// cuCtxGetStreamPriorityRange on the H200: lower numbers are higher priorities.
constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;

bool valid_shape(const LaunchDims& dims) {
  const unsigned grid[3] = {dims.grid.x, dims.grid.y, dims.grid.z};
  const unsigned block[3] = {dims.block.x, dims.block.y, dims.block.z};
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0) return false;
    if (grid[i] > kMaxGrid[i] || block[i] > kMaxBlock[i]) return false;
  }
  const unsigned long long threads =
      static_cast<unsigned long long>(block[0]) * block[1] * block[2];
  return threads <= kMaxThreadsPerBlock;
}

}  // namespace

void FakeState::register_kernel(std::string name, bool declared, std::vector<std::size_t> sizes,
                                std::vector<std::size_t> alignments, KernelBody body) {
  auto kernel = std::make_shared<internal::KernelDef>();
  kernel->name = name;
  if (declared) internal::lay_out_params(sizes, alignments, kernel.get());
  kernel->body = std::move(body);
  std::lock_guard<std::mutex> guard(mutex_);
  kernels_.insert_or_assign(std::move(name), std::move(kernel));
}

CUresult FakeState::cuModuleLoadData(CUmodule* module, const void* image) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto names = internal::parse_module_image(static_cast<const char*>(image));
  if (!names) return CUDA_ERROR_INVALID_IMAGE;
  Module loaded;
  for (const std::string& name : *names) {
    auto it = kernels_.find(name);
    if (it == kernels_.end()) return CUDA_ERROR_INVALID_IMAGE;  // no code for that entry
    loaded.kernels.emplace(name, it->second);
  }
  loaded.handle = new_handle<CUmodule>();
  loaded.device = context->device;
  *module = loaded.handle;
  modules_.emplace(loaded.handle, std::move(loaded));
  return CUDA_SUCCESS;
}

CUresult FakeState::cuModuleUnload(CUmodule handle) {
  Context* context = nullptr;
  if (CUresult r = need_context_to_release(&context); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  auto it = modules_.find(handle);
  if (it == modules_.end()) return CUDA_ERROR_INVALID_HANDLE;
  run_all();  // not measured: work already queued with its kernels finishes first
  for (auto& [name, function] : it->second.functions) functions_.erase(function);
  modules_.erase(it);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuModuleGetFunction(CUfunction* function, CUmodule handle, const char* name) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (function == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = modules_.find(handle);
  if (it == modules_.end()) return CUDA_ERROR_INVALID_HANDLE;
  Module& module = it->second;
  auto kernel = module.kernels.find(name);
  if (kernel == module.kernels.end()) return CUDA_ERROR_NOT_FOUND;
  auto existing = module.functions.find(name);
  if (existing == module.functions.end()) {
    const auto created = new_handle<CUfunction>();
    functions_.emplace(created, Function{handle, kernel->second});
    existing = module.functions.emplace(name, created).first;
  }
  *function = existing->second;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuFuncGetAttribute(int* value, CUfunction_attribute attribute,
                                       CUfunction function) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = functions_.find(function);
  if (it == functions_.end()) return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = kMaxThreadsPerBlock; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:  // fake kernels use no static shared memory
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *value = 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = it->second.max_dynamic_shared;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // not modelled (docs/fake-driver.md)
  }
}

CUresult FakeState::cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute,
                                       int value) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  auto it = functions_.find(function);
  if (it == functions_.end()) return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value > kOptInSharedBytes) return CUDA_ERROR_INVALID_VALUE;
      it->second.max_dynamic_shared = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      return value >= -1 && value <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // read-only or not modelled
  }
}

// As measured (docs/cuda-driver-facts.md, "A kernel's parameter layout"): each declared
// parameter's offset and size, CUDA_ERROR_INVALID_VALUE at the count and above. paramSize may be
// NULL (cuda.h). A kernel registered without a layout has none to report: CUDA_ERROR_NOT_SUPPORTED
// (fake-only: a real cubin always declares its layout).
CUresult FakeState::cuFuncGetParamInfo(CUfunction function, std::size_t index, std::size_t* offset,
                                       std::size_t* size) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  auto it = functions_.find(function);
  if (it == functions_.end()) return CUDA_ERROR_INVALID_HANDLE;
  const internal::KernelDef& kernel = *it->second.kernel;
  if (!kernel.declared) return CUDA_ERROR_NOT_SUPPORTED;
  if (offset == nullptr || index >= kernel.params.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = kernel.params[index].offset;
  if (size != nullptr) *size = kernel.params[index].size;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y,
                                   unsigned grid_z, unsigned block_x, unsigned block_y,
                                   unsigned block_z, unsigned shared_bytes, CUstream handle,
                                   void** params, void** extra) {
  const LaunchDims dims{{grid_x, grid_y, grid_z}, {block_x, block_y, block_z}, shared_bytes};
  return launch(function, dims, handle, params, extra, LaunchAttributes{}, "cuLaunchKernel");
}

CUresult FakeState::cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction function,
                                     void** params, void** extra) {
  if (config == nullptr) {
    Context* context = nullptr;
    if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (config->numAttrs > 0 && config->attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LaunchAttributes attributes;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& attribute = config->attrs[i];
    switch (attribute.id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
        break;
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        attributes.programmatic = attribute.value.programmaticStreamSerializationAllowed != 0;
        break;
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        // Measured: any value is accepted, and clamped to the context's range.
        attributes.priority =
            std::clamp(attribute.value.priority, kGreatestPriority, kLeastPriority);
        attributes.priority_given = true;
        break;
      default:
        // Cooperative launches, clusters, programmatic events, ...: not modelled. Refused, and
        // said, rather than run as if the attribute were not there.
        violation("cuLaunchKernelEx: launch attribute " + std::to_string(attribute.id) +
                  " is not modelled by the fake (docs/fake-driver.md)");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  const LaunchDims dims{{config->gridDimX, config->gridDimY, config->gridDimZ},
                        {config->blockDimX, config->blockDimY, config->blockDimZ},
                        config->sharedMemBytes};
  return launch(function, dims, config->hStream, params, extra, attributes, "cuLaunchKernelEx");
}

CUresult FakeState::launch(CUfunction function, const LaunchDims& dims, CUstream handle,
                           void** params, void** extra, const LaunchAttributes& attributes,
                           const char* entry_point) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  bool captured = false;
  if (CUresult r = enter_stream_call(handle, &context, &stream, &captured); r != CUDA_SUCCESS) {
    return r;
  }
  // Functions of an unloaded module are gone with it.
  auto it = functions_.find(function);
  if (it == functions_.end()) return refuse(*stream, CUDA_ERROR_INVALID_HANDLE);
  if (!valid_shape(dims) ||
      dims.shared_bytes > static_cast<unsigned>(it->second.max_dynamic_shared)) {
    return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
  }
  internal::KernelWork work;
  work.kernel = it->second.kernel;
  work.module = it->second.module;
  work.function = function;
  work.dims = dims;
  work.programmatic = attributes.programmatic;
  work.priority = attributes.priority;
  work.priority_given = attributes.priority_given;
  if (!work.kernel->declared) {
    // Without a layout the number of parameters is unknown: reading any would be a guess.
    violation(internal::undeclared_layout_message(*work.kernel));
    return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
  }
  if (CUresult r = internal::copy_launch_params(*work.kernel, params, extra, &work.params);
      r != CUDA_SUCCESS) {
    return refuse(*stream, r);
  }
  // Checked against the Buffers its pointers point into now, when it runs (lazily, or replayed)
  // as well: by then a GraphPool may have lent that memory to another graph's Buffer.
  work.extents = launch_extents(work);
  if (captured) {
    work.held = held_addresses(work);
    add_node(*stream, internal::NodeWork{std::move(work)}, attributes.programmatic);
    return CUDA_SUCCESS;
  }
  // Eagerly, a programmatic launch may overlap the kernel queued right before it on the stream
  // (one that already ran, or any other work, it cannot): that kernel's writes are watched.
  std::uint64_t after = 0;
  if (attributes.programmatic) {
    for (auto op = queue_.rbegin(); op != queue_.rend(); ++op) {
      if (op->stream != stream->id) continue;
      const auto* node = std::get_if<internal::NodeWork>(&op->work);
      if (node != nullptr && std::holds_alternative<internal::KernelWork>(*node)) {
        op->watch_writes = true;
        after = op->seq;
      }
      break;
    }
  }
  enqueue(*stream, entry_point, internal::NodeWork{std::move(work)});
  queue_.back().programmatic_after = after;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  // Measured on the H200: least 0, greatest -5. cuda.h: a NULL pointer is not written.
  if (least != nullptr) *least = kLeastPriority;
  if (greatest != nullptr) *greatest = kGreatestPriority;
  return CUDA_SUCCESS;
}

}  // namespace graphcap::fake
