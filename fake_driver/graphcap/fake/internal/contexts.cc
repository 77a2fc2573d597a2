// cuInit, devices and primary contexts; what a primary context's destruction reclaims.
#include <graphcap/fake/internal/fake_state.h>

#include <vector>

#include <algorithm>
#include <cstring>
#include <utility>

namespace graphcap::fake {
namespace {

constexpr const char* kDeviceName = "graphcap fake device";

// The H200's limits (what the real driver reports for it).
constexpr std::pair<CUdevice_attribute, int> kH200Attributes[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
};

bool h200_attribute(CUdevice_attribute attribute, int* value) {
  for (const auto& [known, known_value] : kH200Attributes) {
    if (known == attribute) {
      *value = known_value;
      return true;
    }
  }
  return false;
}

}  // namespace

CUresult FakeState::cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (options_.device_count <= 0) return CUDA_ERROR_NO_DEVICE;
  initialized_ = true;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = options_.driver_version;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuDeviceGetCount(int* count) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(contexts_.size());
  return CUDA_SUCCESS;
}

CUresult FakeState::cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= static_cast<int>(contexts_.size())) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuDeviceGetName(char* name, int length, CUdevice device) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (name == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= static_cast<int>(contexts_.size())) return CUDA_ERROR_INVALID_DEVICE;
  const std::size_t room = static_cast<std::size_t>(length) - 1;
  const std::size_t copied = std::min(room, std::strlen(kDeviceName));
  std::memcpy(name, kDeviceName, copied);
  name[copied] = '\0';
  return CUDA_SUCCESS;
}

CUresult FakeState::cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                         CUdevice device) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= static_cast<int>(contexts_.size())) return CUDA_ERROR_INVALID_DEVICE;
  if (!h200_attribute(attribute, value)) return CUDA_ERROR_INVALID_VALUE;
  if (attribute == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) {
    *value = options_.virtual_memory ? 1 : 0;
  }
  return CUDA_SUCCESS;
}

CUresult FakeState::cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (sticky_) return *sticky_;  // measured: no context comes back after a fault
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= static_cast<int>(contexts_.size())) return CUDA_ERROR_INVALID_DEVICE;
  Context& primary = contexts_[static_cast<std::size_t>(device)];
  ++primary.refs;
  *context = primary.handle;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuDevicePrimaryCtxRelease(CUdevice device) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (device < 0 || device >= static_cast<int>(contexts_.size())) return CUDA_ERROR_INVALID_DEVICE;
  Context& primary = contexts_[static_cast<std::size_t>(device)];
  if (primary.refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--primary.refs == 0) destroy_context(primary);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuCtxSetCurrent(CUcontext context) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (context != nullptr && find_context(context) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  this_thread().context = context;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuCtxGetCurrent(CUcontext* context) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *context = this_thread().context;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuCtxSynchronize() {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  // Synchronizing the context synchronizes its capturing streams: refused in every mode.
  bool capturing = false;
  for (auto& [id, capture] : captures_) {
    if (capture.device == context->device) {
      refuse(capture, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
      capturing = true;
    }
  }
  if (capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  run_all();
  // Every fault of the context's streams is reported by this wait: the earliest one is returned.
  std::optional<StreamError> first;
  for (auto& [id, stream] : streams_) {
    if (stream->device != context->device || !stream->error) continue;
    if (!first || stream->error->seq < first->seq) first = stream->error;
    stream->error.reset();
  }
  return first ? first->code : CUDA_SUCCESS;
}

// The primary context is destroyed: its queued work finishes, and every handle created in it that
// is still alive is reclaimed by the driver (and counted: each is a leak of whoever created it).
void FakeState::destroy_context(Context& context) {
  run_all();
  const int device = context.device;
  std::size_t reclaimed = reclaim_virtual_memory(device);

  for (auto it = captures_.begin(); it != captures_.end();) {
    Capture& capture = it->second;
    ++it;  // finish_capture erases it
    if (capture.device != device) continue;
    if (capture.into_body && capture.status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      // The context's end destroys the stream as cuStreamDestroy does, which crashed the process
      // for such a stream (stream_calls.cc). Seen on the H100 (580.159.04): the tests that left
      // one to the driver died once their device released the last primary-context reference;
      // the safe-life model over libcuda, which holds one more reference for the process, did
      // not (docs/cuda-driver-facts.md).
      violation("the primary context was destroyed with a stream whose capture into a "
                "conditional body was invalidated: the driver crashed (SIGSEGV); keep a "
                "reference to the context while such a stream lives");
    }
    finish_capture(capture, false);
  }
  for (auto it = execs_.begin(); it != execs_.end();) {
    auto next = std::next(it);
    if (it->second.device == device) {
      erase_exec(it->first);
      ++reclaimed;
    }
    it = next;
  }
  // Collected first: erasing a graph erases the body graphs of its conditional nodes too, which
  // may be the next entries of the map (found by graphcap-fidelity's generated programs).
  std::vector<CUgraph> graphs;
  for (const auto& [handle, graph] : graphs_) {
    if (graph.context == context.handle && graph.owner == nullptr) graphs.push_back(handle);
  }
  for (CUgraph handle : graphs) {
    if (graphs_.count(handle) != 0) {
      erase_graph(handle);
      ++reclaimed;
    }
  }
  for (auto it = graphs_.begin(); it != graphs_.end();) {  // bodies whose node's graph is gone
    if (it->second.context == context.handle) {
      const CUgraph handle = it->first;
      erase_graph(handle);
      ++reclaimed;
      it = graphs_.begin();
    } else {
      ++it;
    }
  }
  for (auto it = events_.begin(); it != events_.end();) {
    if (it->second.device == device) {
      it = events_.erase(it);
      ++reclaimed;
    } else {
      ++it;
    }
  }
  for (auto it = modules_.begin(); it != modules_.end();) {
    if (it->second.device == device) {
      for (auto& [name, function] : it->second.functions) functions_.erase(function);
      it = modules_.erase(it);
      ++reclaimed;
    } else {
      ++it;
    }
  }
  std::vector<std::uint64_t> dead_streams;
  for (auto& [id, stream] : streams_) {
    if (stream->device != device) continue;
    if (stream->handle != nullptr) {
      dead_streams.push_back(id);
      ++reclaimed;
    } else {
      stream->error.reset();  // the NULL stream lives on, clean, for the next context
    }
  }
  for (auto it = per_thread_streams_.begin(); it != per_thread_streams_.end();) {
    if (it->first.second == device) {
      dead_streams.push_back(it->second);
      it = per_thread_streams_.erase(it);
    } else {
      ++it;
    }
  }
  for (std::uint64_t id : dead_streams) remove_stream(id);

  device_memory_.for_each([&](internal::DeviceMemory::Allocation& allocation) {
    if (allocation.context != context.handle) return;
    if (allocation.host_allocated) ++reclaimed;
    allocation.host_allocated = false;
    device_memory_.make_dead(allocation);
  });
  reclaimed += pinned_memory_.free_all_of(context.handle);
  reclaimed_ += reclaimed;
  // Peer access ends with either context of the pair.
  context.peers.clear();
  for (Context& other : contexts_) other.peers.erase(device);
  executable_arena_.clear(device);  // what the driver kept for executables goes with the context
}

}  // namespace graphcap::fake
