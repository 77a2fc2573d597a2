#include <graphcap/fake/internal/device_memory.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include <sys/mman.h>

#include <graphcap/fake/internal/work.h>

namespace graphcap::fake::internal {
namespace {

// Device addresses look like CUDA's (high in the 48-bit space), one window per device.
constexpr CUdeviceptr kFirstAddress = 0x7f0000000000ULL;
constexpr CUdeviceptr kDeviceWindow = 0x10000000000ULL;
// Reserved ranges (cuMemAddressReserve) come from a window of their own per device, 128 TiB wide:
// the H200 granted 16 TiB and refused 128 TiB.
constexpr CUdeviceptr kFirstReservation = 0x10000000000000ULL;
constexpr CUdeviceptr kReservationWindow = CUdeviceptr{1} << 47;
// CUDA aligns allocations to at least 256 bytes; the guard gap keeps a small overrun from
// landing in the next allocation.
constexpr CUdeviceptr kDeviceAlignment = 0x1000;
constexpr CUdeviceptr kGuardGap = 0x10000;
constexpr std::size_t kHostAlignment = 256;
constexpr std::size_t kDirectMapBytes = std::size_t{1} << 20;

CUdeviceptr align_up(CUdeviceptr value, CUdeviceptr alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Zeroed, 256-byte aligned host memory, cheap while untouched: large sizes straight from mmap
// (calloc would memset them once glibc's dynamic mmap threshold has risen past them).
std::shared_ptr<std::byte> zeroed_bytes(std::size_t size) {
  if (size >= kDirectMapBytes) {
    void* raw = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(raw),
                                      [size](std::byte* p) { ::munmap(p, size); });
  }
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
      next_(used_.size()),
      next_reserved_(used_.size()) {
  for (std::size_t d = 0; d < next_.size(); ++d) {
    next_[d] = kFirstAddress + d * kDeviceWindow;
    next_reserved_[d] = kFirstReservation + d * kReservationWindow;
  }
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
  next = align_up(next + (size == 0 ? 1 : size), kDeviceAlignment) + kGuardGap;
  return allocations_.emplace(allocation.base, std::move(allocation)).first->second;
}

void DeviceMemory::make_live(Allocation& allocation) {
  if (allocation.device_live || allocation.kind == Kind::mapping) return;
  allocation.bytes = zeroed_bytes(allocation.size);
  allocation.device_live = true;
  used_.at(static_cast<std::size_t>(allocation.device)) += allocation.size;
}

void DeviceMemory::make_dead(Allocation& allocation) {
  if (!allocation.device_live || allocation.kind == Kind::mapping) return;
  allocation.bytes.reset();
  allocation.buffers.clear();
  allocation.device_live = false;
  used_.at(static_cast<std::size_t>(allocation.device)) -= allocation.size;
}

CUdeviceptr DeviceMemory::take_range(std::size_t size, std::size_t alignment, int device) {
  CUdeviceptr& next = next_reserved_.at(static_cast<std::size_t>(device));
  const CUdeviceptr end = kFirstReservation + (static_cast<CUdeviceptr>(device) + 1) * kReservationWindow;
  const CUdeviceptr base =
      align_up(next, alignment < kDeviceAlignment ? kDeviceAlignment : alignment);
  if (base >= end || size > end - base - kGuardGap) return 0;
  next = align_up(base + (size == 0 ? 1 : size), kDeviceAlignment) + kGuardGap;
  return base;
}

DeviceMemory::Allocation& DeviceMemory::add_mapping(CUdeviceptr base, std::size_t size,
                                                    int device, CUcontext context,
                                                    std::shared_ptr<std::byte> bytes) {
  allocations_.erase(base);
  Allocation mapping;
  mapping.base = base;
  mapping.size = size;
  mapping.device = device;
  mapping.context = context;
  mapping.kind = Kind::mapping;
  mapping.bytes = std::move(bytes);
  return allocations_.emplace(base, std::move(mapping)).first->second;
}

void DeviceMemory::remove_mapping(CUdeviceptr base) {
  auto it = allocations_.find(base);
  if (it != allocations_.end() && it->second.kind == Kind::mapping) allocations_.erase(it);
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
    *why = overrun(found, address, bytes) + in_reservation(address);  // only failures pay
    return nullptr;
  }
  *why = hex(address) + " (" + std::to_string(bytes) + " bytes) " + *why;
  return nullptr;
}

std::size_t DeviceMemory::run_of(const Allocation& allocation) const {
  // A range running on from one accessible mapping into the next ones of its reservation: the
  // device sees one range (measured on the H200), and so does the host behind it.
  if (allocation.kind != Kind::mapping) return allocation.size;
  std::size_t covered = allocation.size;
  const Allocation* last = &allocation;
  for (;;) {
    auto next = allocations_.find(last->base + last->size);
    if (next == allocations_.end() || next->second.kind != Kind::mapping ||
        !next->second.device_live || next->second.bytes.get() != last->bytes.get() + last->size) {
      return covered;
    }
    last = &next->second;
    covered += last->size;
  }
}

std::string DeviceMemory::in_reservation(CUdeviceptr address) const {
  auto it = reservations_.upper_bound(address);
  if (it == reservations_.begin()) return {};
  --it;
  if (address - it->first >= it->second) return {};
  return " (a range reserved by cuMemAddressReserve at " + hex(it->first) + " of " +
         std::to_string(it->second) + " bytes, with no accessible mapping there)";
}

bool DeviceMemory::extent(CUdeviceptr address, Extent* out, std::string* why, bool buffers) {
  Allocation* allocation = address == 0 ? nullptr : find_containing(address);
  if (allocation != nullptr && allocation->device_live) {
    Extent found;
    found.allocation = allocation->base;
    found.allocation_size = run_of(*allocation);
    found.mapping = allocation->kind == Kind::mapping;
    found.base = allocation->base;
    found.size = found.allocation_size;
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
    *why = "is not inside any device allocation" + in_reservation(address);
  } else {
    const std::string owner = (allocation->kind == Kind::mapping ? "mapping " : "allocation ") +
                              hex(allocation->base) + " of " + std::to_string(allocation->size) +
                              " bytes";
    if (allocation->kind == Kind::mapping) {
      *why = "is in " + owner + ", which cuMemSetAccess has not made accessible";
    } else {
      *why = allocation->kind == Kind::graph && !allocation->host_allocated
                 ? "is in " + owner + " of a graph, not allocated at this point"
                 : "is in freed memory (" + owner + ")";
    }
  }
  return false;
}

std::string DeviceMemory::overrun(const Extent& extent, CUdeviceptr address, std::size_t bytes) {
  const std::string range = hex(address) + " (" + std::to_string(bytes) + " bytes)";
  const std::size_t past = address + bytes - (extent.base + extent.size);
  const std::string allocation = (extent.mapping ? "mapping " : "allocation ") +
                                 hex(extent.allocation) + " of " +
                                 std::to_string(extent.allocation_size) + " bytes";
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
  const std::size_t room = run_of(*allocation) - (address - allocation->base);
  allocation->buffers[address] = std::min(room, bytes);
}

void DeviceMemory::for_each(const std::function<void(Allocation&)>& visit) {
  for (auto& [base, allocation] : allocations_) visit(allocation);
}

}  // namespace graphcap::fake::internal
