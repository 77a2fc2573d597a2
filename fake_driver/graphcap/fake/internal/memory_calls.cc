// Device and pinned host memory: allocation (synchronous, stream-ordered, and captured as graph
// allocations), the implicit device synchronization of the synchronous frees, and the copies and
// memsets that move bytes through the queue.
#include <graphcap/fake/internal/fake_state.h>

#include <algorithm>

#include <cstring>

namespace graphcap::fake {

using internal::DeviceMemory;

CUresult FakeState::cuMemGetInfo(std::size_t* free, std::size_t* total) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *total = device_memory_.total();
  const std::size_t used = bytes_in_use(context->device);
  *free = used >= *total ? 0 : *total - used;
  return CUDA_SUCCESS;
}

std::size_t FakeState::bytes_in_use(int device) const {
  return device_memory_.used(device) + virtual_memory_.used(device) +
         executable_arena_.held(device);
}

bool FakeState::has_room(int device, std::size_t bytes) const {
  const std::size_t used = bytes_in_use(device);
  return used <= device_memory_.total() && bytes <= device_memory_.total() - used;
}

CUresult FakeState::allocate_live(const Context& context, std::size_t bytes,
                                  internal::DeviceMemory::Kind kind, CUdeviceptr* pointer) {
  if (!has_room(context.device, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  DeviceMemory::Allocation& allocation =
      device_memory_.reserve(bytes, context.device, context.handle, kind);
  device_memory_.make_live(allocation);
  allocation.host_allocated = true;
  *pointer = allocation.base;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemAlloc(CUdeviceptr* pointer, std::size_t bytes) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  if (pointer == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  return allocate_live(*context, bytes, DeviceMemory::Kind::sync, pointer);
}

CUresult FakeState::cuMemFree(CUdeviceptr pointer) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  if (pointer == 0) return CUDA_SUCCESS;  // not measured: freeing NULL does nothing
  DeviceMemory::Allocation* allocation = device_memory_.find_base(pointer);
  if (allocation == nullptr || !allocation->host_allocated) return CUDA_ERROR_INVALID_VALUE;
  run_all();  // cuMemFree synchronizes the device first
  allocation->host_allocated = false;
  device_memory_.make_dead(*allocation);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemAllocAsync(CUdeviceptr* pointer, std::size_t bytes, CUstream handle) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  bool captured = false;
  if (CUresult r = enter_stream_call(handle, &context, &stream, &captured); r != CUDA_SUCCESS) {
    return r;
  }
  if (pointer == nullptr || bytes == 0) return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
  if (captured) {
    // A graph allocation: its address is fixed now, its memory exists while a launch holds it.
    DeviceMemory::Allocation& allocation =
        device_memory_.reserve(bytes, context->device, context->handle, DeviceMemory::Kind::graph);
    add_node(*stream, internal::AllocWork{allocation.base, bytes});
    *pointer = allocation.base;
    return CUDA_SUCCESS;
  }
  // Measured on the H200 (graphcap-fidelity, 2026-12-03): on a stream that is not capturing it is
  // a potentially unsafe call (900, invalidating the captures that prohibit it).
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  // Usable at once: the fake's queue runs in order, so nothing can touch it before it exists.
  return allocate_live(*context, bytes, DeviceMemory::Kind::async, pointer);
}

CUresult FakeState::cuMemFreeAsync(CUdeviceptr pointer, CUstream handle) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  bool captured = false;
  if (CUresult r = enter_stream_call(handle, &context, &stream, &captured); r != CUDA_SUCCESS) {
    return r;
  }
  if (pointer == 0) return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
  DeviceMemory::Allocation* allocation = device_memory_.find_base(pointer);
  if (captured) {
    // A MEM_FREE node may free an allocation of this graph, memory the host holds now (freed, for
    // the host, when the graph launches), or another graph's allocation (measured by
    // graphcap-fidelity and FidelityRules on the H200). Refused with INVALID_VALUE, the capture
    // left active and no node added (measured by graphcap-fidelity): an allocation some graph's
    // MEM_FREE already frees (FidelityRules: the allocating capture's own free after another's),
    // and one of this graph that an executable made since its allocation keeps (14 generated
    // programs whose executable was made before the allocation freed it).
    const internal::Graph& graph = graphs_.at(capture_of(*stream)->graph);
    bool in_graph = false;
    for (const internal::NodeData& node : graph.nodes) {
      if (const auto* alloc = std::get_if<internal::AllocWork>(&node.work)) {
        in_graph = in_graph || alloc->address == pointer;
      }
    }
    auto frees = [&](const std::vector<internal::NodeData>& nodes) {
      return std::any_of(nodes.begin(), nodes.end(), [&](const internal::NodeData& node) {
        const auto* free = std::get_if<internal::FreeWork>(&node.work);
        return free != nullptr && free->address == pointer;
      });
    };
    for (const auto& entry : graphs_) {
      if (frees(entry.second.nodes)) return CUDA_ERROR_INVALID_VALUE;
    }
    // Measured (H100, 2026-12-07, 3 programs): also when only an executable holds that MEM_FREE
    // (its graph destroyed since).
    for (const auto& entry : execs_) {
      if (frees(entry.second.body->nodes)) return CUDA_ERROR_INVALID_VALUE;
    }
    if (in_graph) {
      const CUgraph capturing = capture_of(*stream)->graph;
      for (const auto& entry : execs_) {
        const Exec& exec = entry.second;
        const std::vector<CUdeviceptr>& kept = exec.body->kept_allocs;
        if (exec.source == capturing && std::find(kept.begin(), kept.end(), pointer) != kept.end()) {
          return CUDA_ERROR_INVALID_VALUE;  // that executable keeps it past its launch
        }
      }
    }
    const bool graph_allocation =
        allocation != nullptr && allocation->kind == DeviceMemory::Kind::graph;
    // Measured (H100, 2026-12-07, one program): a graph's allocation the host does not hold, once
    // the graph that allocates it and its executables are destroyed, is no allocation to free.
    if (graph_allocation && !in_graph && !allocation->host_allocated) {
      auto allocates = [&](const std::vector<internal::NodeData>& nodes) {
        return std::any_of(nodes.begin(), nodes.end(), [&](const internal::NodeData& node) {
          const auto* alloc = std::get_if<internal::AllocWork>(&node.work);
          return alloc != nullptr && alloc->address == pointer;
        });
      };
      const bool held =
          std::any_of(graphs_.begin(), graphs_.end(),
                      [&](const auto& entry) { return allocates(entry.second.nodes); }) ||
          std::any_of(execs_.begin(), execs_.end(),
                      [&](const auto& entry) { return allocates(entry.second.body->nodes); });
      if (!held) return CUDA_ERROR_INVALID_VALUE;
    }
    if (!in_graph && !graph_allocation && (allocation == nullptr || !allocation->host_allocated)) {
      return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
    }
    add_node(*stream, internal::FreeWork{pointer});
    return CUDA_SUCCESS;
  }
  // Measured on the H200 (graphcap-fidelity): outside a capture, a potentially unsafe call.
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  if (allocation == nullptr || !allocation->host_allocated) return CUDA_ERROR_INVALID_VALUE;
  allocation->host_allocated = false;  // for the host it is gone now; the device frees it in order
  enqueue(*stream, "cuMemFreeAsync", internal::NodeWork{internal::FreeWork{pointer}});
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemAllocHost(void** pointer, std::size_t bytes) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  if (pointer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (bytes == 0) {
    // Measured on the H200: a zero-byte request succeeds. Nothing is allocated (the pointer the
    // real driver hands back is not measured); freeing it is freeing NULL.
    *pointer = nullptr;
    return CUDA_SUCCESS;
  }
  void* allocated = pinned_memory_.allocate(bytes, context->handle);
  if (allocated == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = allocated;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemFreeHost(void* pointer) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_unsafe_call(); r != CUDA_SUCCESS) return r;
  if (pointer == nullptr) return CUDA_SUCCESS;  // not measured: freeing NULL does nothing
  if (!pinned_memory_.contains(pointer, 0)) return CUDA_ERROR_INVALID_VALUE;
  run_all();  // cuMemFreeHost synchronizes the device first
  return pinned_memory_.free(pointer) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

int FakeState::memory_kind(CUdeviceptr address) {
  const DeviceMemory::Allocation* allocation = device_memory_.find_containing(address);
  return allocation == nullptr ? -1 : static_cast<int>(allocation->kind);
}

CUresult FakeState::cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, std::size_t bytes,
                                      CUstream handle) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  bool captured = false;
  if (CUresult r = enter_stream_call(handle, &context, &stream, &captured); r != CUDA_SUCCESS) {
    return r;
  }
  if (bytes != 0 && (src == nullptr || dst == 0)) return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
  internal::CopyToDeviceWork copy;
  copy.dst = dst;
  copy.src = src;
  copy.bytes = bytes;
  copy.pinned = pinned_memory_.contains(src, bytes);
  if (captured) {
    copy.dst_memory = memory_kind(dst);
    add_node(*stream, internal::NodeWork{std::move(copy)});  // reads `src` on every launch
    return CUDA_SUCCESS;
  }
  if (!copy.pinned && bytes != 0) {
    // From pageable memory the stream is synchronised first (CUDA's "API synchronization
    // behavior"; on the H100 such a copy read what a graph queued before it had written there),
    // then the source is staged at call time: the caller may reuse it when this returns.
    run_until(stream->last_seq);
    if (options_.detect_races) host_waited(*stream);
    copy.from_snapshot = true;
    copy.snapshot.assign(static_cast<const std::byte*>(src),
                         static_cast<const std::byte*>(src) + bytes);
  }
  enqueue(*stream, "cuMemcpyHtoDAsync", internal::NodeWork{std::move(copy)});
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, std::size_t bytes,
                                      CUstream handle) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  bool captured = false;
  if (CUresult r = enter_stream_call(handle, &context, &stream, &captured); r != CUDA_SUCCESS) {
    return r;
  }
  if (bytes != 0 && (dst == nullptr || src == 0)) return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
  internal::CopyToHostWork copy{dst, src, bytes, pinned_memory_.contains(dst, bytes)};
  if (captured) {
    copy.src_memory = memory_kind(src);
    add_node(*stream, internal::NodeWork{copy});  // writes `dst` on every launch
    return CUDA_SUCCESS;
  }
  if (copy.pinned || bytes == 0) {
    enqueue(*stream, "cuMemcpyDtoHAsync", internal::NodeWork{copy});
    return CUDA_SUCCESS;
  }
  // Into pageable memory the copy is synchronous: everything queued before it runs first.
  run_all();
  tick();
  execute_node(internal::NodeWork{copy}, "cuMemcpyDtoHAsync");
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemsetD8Async(CUdeviceptr dst, unsigned char value, std::size_t count,
                                    CUstream handle) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  bool captured = false;
  if (CUresult r = enter_stream_call(handle, &context, &stream, &captured); r != CUDA_SUCCESS) {
    return r;
  }
  if (count != 0 && dst == 0) return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
  // Measured (graphcap-fidelity, 2026-12-04, 14 programs): outside a capture, a memset into
  // a graph's allocation that no launch holds (its capture's address, unbacked) is 1.
  if (!captured) {
    if (const DeviceMemory::Allocation* a = device_memory_.find_containing(dst);
        a != nullptr && a->kind == DeviceMemory::Kind::graph && !a->host_allocated) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  internal::MemsetWork memset{dst, value, count, 1};
  if (captured) {
    add_node(*stream, internal::NodeWork{memset});
  } else {
    enqueue(*stream, "cuMemsetD8Async", internal::NodeWork{memset});
  }
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemsetD32Async(CUdeviceptr dst, unsigned value, std::size_t count,
                                     CUstream handle) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  bool captured = false;
  if (CUresult r = enter_stream_call(handle, &context, &stream, &captured); r != CUDA_SUCCESS) {
    return r;
  }
  if (count != 0 && dst == 0) return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
  // cuda.h: "The dstDevice pointer must be four byte aligned." The H200 answers 1 and, during a
  // capture, leaves the capture active (unlike a bad launch shape, which invalidates it).
  if (dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  internal::MemsetWork memset{dst, value, count, 4};
  if (captured) {
    add_node(*stream, internal::NodeWork{memset});
  } else {
    enqueue(*stream, "cuMemsetD32Async", internal::NodeWork{memset});
  }
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes,
                                      CUstream handle) {
  Context* context = nullptr;
  Stream* stream = nullptr;
  bool captured = false;
  if (CUresult r = enter_stream_call(handle, &context, &stream, &captured); r != CUDA_SUCCESS) {
    return r;
  }
  if (bytes != 0 && (dst == 0 || src == 0)) return refuse(*stream, CUDA_ERROR_INVALID_VALUE);
  internal::CopyDeviceWork copy{dst, src, bytes};
  if (captured) {
    copy.dst_memory = memory_kind(dst);
    copy.src_memory = memory_kind(src);
    add_node(*stream, internal::NodeWork{copy});  // reads `src` on every launch
  } else {
    enqueue(*stream, "cuMemcpyDtoDAsync", internal::NodeWork{copy});
  }
  return CUDA_SUCCESS;
}

}  // namespace graphcap::fake
