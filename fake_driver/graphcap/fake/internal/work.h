// The units of simulated device work. The same payloads are queued on streams by eager calls and
// stored in graph nodes by stream capture, so one executor runs both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/launch_dims.h>
#include <graphcap/fake/fake_driver.h>

namespace graphcap::fake::internal {

// A registered kernel: its body and its parameter layout, as a cubin declares it (what
// cuFuncGetParamInfo would answer from).
struct KernelDef {
  std::string name;
  bool declared = false;  // false: registered without a layout, so every launch is refused
  std::vector<KernelParamInfo> params;  // in order: each parameter's offset and size
  std::size_t param_bytes = 0;          // the parameter buffer: up to the end of the last one
  KernelBody body;
};

// A Buffer graphcap lent (DriverApi::annotate_buffer): where it starts and how long it is.
struct BufferExtent {
  CUdeviceptr base = 0;
  std::size_t size = 0;
};

// An 8-byte word of a captured kernel's parameters that held an address inside live device memory
// at capture: a replay passes it as it is, whether or not that memory is still there.
struct HeldAddress {
  std::size_t param = 0;
  std::size_t offset = 0;  // of the word, inside the parameter
  CUdeviceptr address = 0;
  CUdeviceptr allocation = 0;  // the allocation it lay in then, and its size
  std::size_t allocation_size = 0;
};

struct KernelWork {
  std::shared_ptr<const KernelDef> kernel;
  CUmodule module = nullptr;  // the module it came from: it must still be loaded when it runs
  CUfunction function = nullptr;
  LaunchDims dims;
  // The parameter buffer (kernel->param_bytes, each parameter at its offset, padding zero),
  // copied at launch time, as CUDA does.
  std::vector<std::byte> params;
  // The Buffers (graphcap's annotations) its 8-byte parameters pointed into at the launch (or
  // capture). It runs checked against these, not against whichever Buffer holds that memory when
  // it runs: a GraphPool's graphs share slices, each graph with its own Buffer there, and a
  // queued launch runs after later windows lent the memory again.
  std::vector<BufferExtent> extents;
  // Captured (or set on an executable) only: the words of its parameters that held addresses
  // of live memory then (checked at every replay: baked addresses).
  std::vector<HeldAddress> held;
  // cuLaunchKernelEx's attributes: PROGRAMMATIC_STREAM_SERIALIZATION (the kernel may begin
  // before its kernel predecessor ends, and must wait for it before reading what it wrote), and
  // PRIORITY, clamped to the context's range (measured on the H200).
  bool programmatic = false;
  int priority = 0;
  bool priority_given = false;  // the launch had a PRIORITY attribute
};

// cuMemcpyHtoDAsync. Pageable sources of an eager copy are snapshotted at call time; pinned
// sources, and every source of a captured copy, are read when the copy executes.
struct CopyToDeviceWork {
  CUdeviceptr dst = 0;
  const void* src = nullptr;
  std::size_t bytes = 0;
  bool pinned = false;  // src lay in cuMemAllocHost memory at call time
  bool from_snapshot = false;
  int dst_memory = -1;  // captured: the DeviceMemory::Kind of dst's allocation, -1 for none
  std::vector<std::byte> snapshot;
};

// cuMemcpyDtoHAsync (queued into pinned memory, or captured).
struct CopyToHostWork {
  void* dst = nullptr;
  CUdeviceptr src = 0;
  std::size_t bytes = 0;
  bool pinned = false;
  int src_memory = -1;  // captured: the DeviceMemory::Kind of src's allocation, -1 for none
};

// cuMemcpyDtoDAsync. Overlapping ranges: CUDA says the areas may not overlap and names no
// error; the fake copies as memmove would (what the H200 does is to be measured).
struct CopyDeviceWork {
  CUdeviceptr dst = 0;
  CUdeviceptr src = 0;
  std::size_t bytes = 0;
  int dst_memory = -1;  // captured: the DeviceMemory::Kind of each side's allocation, -1 for none
  int src_memory = -1;
};

// cuMemsetD8Async (element_size 1) and cuMemsetD32Async (element_size 4): `count` elements.
struct MemsetWork {
  CUdeviceptr dst = 0;
  unsigned value = 0;
  std::size_t count = 0;
  unsigned element_size = 1;
  std::size_t bytes() const noexcept { return count * element_size; }
};

// A graph allocation (MEM_ALLOC node): its address range was reserved at capture time.
struct AllocWork {
  CUdeviceptr address = 0;
  std::size_t bytes = 0;
};

// cuMemFreeAsync (queued or captured as MEM_FREE).
struct FreeWork {
  CUdeviceptr address = 0;
};

struct WaitEventWork {
  CUevent event = nullptr;
};

struct EmptyWork {};

struct ExecBody;
// A conditional node (cuGraphAddNode, CU_GRAPH_NODE_TYPE_CONDITIONAL): its handle, its kind and
// its body graphs (owned by the node). In a graph, `bodies` name the body graphs; in an
// executable, `exec_bodies` are those graphs as instantiated with it.
struct ConditionalWork {
  CUgraphConditionalHandle handle = 0;
  bool assign_default = false;  // the handle was created with CU_GRAPH_COND_ASSIGN_DEFAULT
  CUgraphConditionalNodeType type = CU_GRAPH_COND_TYPE_WHILE;
  std::vector<CUgraph> bodies;
  std::vector<std::shared_ptr<const ExecBody>> exec_bodies;
};

using NodeWork = std::variant<KernelWork, CopyToDeviceWork, CopyToHostWork, MemsetWork, AllocWork,
                              FreeWork, WaitEventWork, EmptyWork, CopyDeviceWork, ConditionalWork>;

CUgraphNodeType node_type(const NodeWork& work) noexcept;
// "KERNEL", "MEMCPY", ...
const char* node_type_name(CUgraphNodeType type) noexcept;
// A short description for messages and DOT labels: "kernel 'fill'", "memset of 64 bytes at 0x...".
std::string describe(const NodeWork& work);
std::string hex(std::uint64_t value);

}  // namespace graphcap::fake::internal
