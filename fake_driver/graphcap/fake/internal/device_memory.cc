#include <graphcap/fake/internal/device_memory.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include <graphcap/fake/internal/work.h>

namespace graphcap::fake::internal {
namespace {

// Device addresses look like CUDA's (high in the 48-bit space), one window per device.
constexpr CUdeviceptr kFirstAddress = 0x7f0000000000ULL;
constexpr CUdeviceptr kDeviceWindow = 0x10000000000ULL;
// CUDA aligns allocations to at least 256 bytes; the guard gap keeps a small overrun from
// landing in the next allocation.
constexpr CUdeviceptr kAlignment = 0x1000;
constexpr CUdeviceptr kGuardGap = 0x10000;
constexpr std::size_t kHostAlignment = 256;

CUdeviceptr align_up(CUdeviceptr value, CUdeviceptr alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Zeroed, 256-byte aligned host memory. calloc keeps large untouched allocations cheap.
std::shared_ptr<std::byte> zeroed_bytes(std::size_t size) {
  void* raw = std::calloc(size + kHostAlignment, 1);
  if (raw == nullptr) throw std::bad_alloc();
  auto address = reinterpret_cast<std::uintptr_t>(raw);
  auto aligned = (address + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  auto* bytes = reinterpret_cast<std::byte*>(aligned);
  return std::shared_ptr<std::byte>(bytes, [raw](std::byte*) { std::free(raw); });
}

}  // namespace

DeviceMemory::DeviceMemory(int devices, std::size_t bytes_per_device)
    : total_(bytes_per_device),
      used_(static_cast<std::size_t>(devices > 0 ? devices : 1), 0),
      next_(used_.size()) {
  for (std::size_t d = 0; d < next_.size(); ++d) next_[d] = kFirstAddress + d * kDeviceWindow;
}

DeviceMemory::Allocation& DeviceMemory::reserve(std::size_t size, int device, CUcontext context,
                                                Kind kind) {
  CUdeviceptr& next = next_.at(static_cast<std::size_t>(device));
  Allocation allocation;
  allocation.base = next;
  allocation.size = size;
  allocation.device = device;
  allocation.context = context;
  allocation.kind = kind;
  next = align_up(next + (size == 0 ? 1 : size), kAlignment) + kGuardGap;
  return allocations_.emplace(allocation.base, std::move(allocation)).first->second;
}

void DeviceMemory::make_live(Allocation& allocation) {
  if (allocation.device_live) return;
  allocation.bytes = zeroed_bytes(allocation.size);
  allocation.device_live = true;
  used_.at(static_cast<std::size_t>(allocation.device)) += allocation.size;
}

void DeviceMemory::make_dead(Allocation& allocation) {
  if (!allocation.device_live) return;
  allocation.bytes.reset();
  allocation.buffers.clear();
  allocation.device_live = false;
  used_.at(static_cast<std::size_t>(allocation.device)) -= allocation.size;
}

DeviceMemory::Allocation* DeviceMemory::find_base(CUdeviceptr base) {
  auto it = allocations_.find(base);
  return it == allocations_.end() ? nullptr : &it->second;
}

DeviceMemory::Allocation* DeviceMemory::find_containing(CUdeviceptr address) {
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return nullptr;
  --it;
  Allocation& candidate = it->second;
  if (address >= candidate.base && address - candidate.base < candidate.size) return &candidate;
  return nullptr;
}

std::byte* DeviceMemory::access(CUdeviceptr address, std::size_t bytes, std::string* why) {
  Extent found;
  if (extent(address, &found, why, false)) {
    const std::size_t offset = address - found.base;  // the address may lie past a Buffer
    if (offset <= found.size && bytes <= found.size - offset) return found.bytes + offset;
    *why = overrun(found, address, bytes);  // only failures pay for the message
    return nullptr;
  }
  *why = hex(address) + " (" + std::to_string(bytes) + " bytes) " + *why;
  return nullptr;
}

bool DeviceMemory::extent(CUdeviceptr address, Extent* out, std::string* why, bool buffers) {
  Allocation* allocation = address == 0 ? nullptr : find_containing(address);
  if (allocation != nullptr && allocation->device_live) {
    Extent found;
    found.allocation = allocation->base;
    found.allocation_size = allocation->size;
    found.base = allocation->base;
    found.size = allocation->size;
    if (buffers && !allocation->buffers.empty()) {
      auto it = allocation->buffers.upper_bound(address);
      if (it == allocation->buffers.begin()) {
        *why = "is in allocation " + hex(allocation->base) + " of " +
               std::to_string(allocation->size) + " bytes but before its first Buffer";
        return false;
      }
      --it;
      if (it->second == 0) {
        *why = "is in the memory of a Buffer that was dropped (at " +
               hex(it->first) + ", in allocation " + hex(allocation->base) + " of " +
               std::to_string(allocation->size) +
               " bytes, back in graphcap's pool: no Buffer holds it now)";
        return false;
      }
      found.base = it->first;
      found.size = it->second;
      found.buffer = true;
    }
    found.bytes = allocation->bytes.get() + (found.base - allocation->base);
    *out = found;
    return true;
  }
  if (address == 0) {
    *why = "is a null device pointer";
  } else if (allocation == nullptr) {
    *why = "is not inside any device allocation";
  } else {
    const std::string owner = "allocation " + hex(allocation->base) + " of " +
                              std::to_string(allocation->size) + " bytes";
    *why = allocation->kind == Kind::graph && !allocation->host_allocated
               ? "is in " + owner + " of a graph, not allocated at this point"
               : "is in freed memory (" + owner + ")";
  }
  return false;
}

std::string DeviceMemory::overrun(const Extent& extent, CUdeviceptr address, std::size_t bytes) {
  const std::string range = hex(address) + " (" + std::to_string(bytes) + " bytes)";
  const std::size_t past = address + bytes - (extent.base + extent.size);
  const std::string allocation =
      "allocation " + hex(extent.allocation) + " of " + std::to_string(extent.allocation_size) +
      " bytes";
  if (!extent.buffer) return range + " runs " + std::to_string(past) + " bytes past the end of " +
                             allocation;
  return range + " runs " + std::to_string(past) + " bytes past the end of the Buffer at " +
         hex(extent.base) + " of " + std::to_string(extent.size) + " bytes (in " + allocation +
         ")";
}

void DeviceMemory::annotate(CUdeviceptr address, std::size_t bytes) {
  Allocation* allocation = address == 0 ? nullptr : find_containing(address);
  if (allocation == nullptr || !allocation->device_live) return;
  // A Buffer never reaches past its allocation (graphcap lends slices of it). 0: returned, no
  // Buffer holds it until it is lent again.
  const std::size_t room = allocation->size - (address - allocation->base);
  allocation->buffers[address] = std::min(room, bytes);
}

void DeviceMemory::for_each(const std::function<void(Allocation&)>& visit) {
  for (auto& [base, allocation] : allocations_) visit(allocation);
}

}  // namespace graphcap::fake::internal
