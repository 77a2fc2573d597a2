// Simulated device memory: host bytes behind fake 64-bit device addresses. Ranges never overlap
// and are never handed out twice (with a guard gap between them), so an access to freed or
// foreign memory is always detectable and always names the allocation it hit. Address ranges
// reserved for virtual memory management (cuMemAddressReserve) are taken from the same windows;
// what is mapped into them (cuMemMap) is a mapping record each, whose bytes VirtualMemory owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <graphcap/driver/cuda_types.h>

namespace graphcap::fake::internal {

class DeviceMemory {
 public:
  // cuMemAlloc, cuMemAllocAsync, a MEM_ALLOC node, a cuMemMap of physical memory into a reserved
  // range (its bytes are the physical allocation's, accounted at cuMemCreate, not here).
  enum class Kind { sync, async, graph, mapping };

  struct Allocation {
    CUdeviceptr base = 0;
    std::size_t size = 0;
    int device = 0;
    CUcontext context = nullptr;
    Kind kind = Kind::sync;
    // The host's view: allocated and not yet freed by any call (what cuMemFree/cuMemFreeAsync
    // accept, and what the graph relaunch rule checks).
    bool host_allocated = false;
    // The device's view: work executing now may touch it (backing bytes exist).
    bool device_live = false;
    std::shared_ptr<std::byte> bytes;  // zero-filled while device_live
    // The Buffers graphcap lends out of this allocation (DriverApi::annotate_buffer), by start
    // address: the size of the one lent last, or 0 while the memory is back in graphcap's pool
    // (no Buffer holds it). Empty: no annotation, the whole allocation is one range.
    std::map<CUdeviceptr, std::size_t> buffers;
  };

  // The memory an address lies in: the annotated Buffer holding it, or else its allocation.
  struct Extent {
    std::byte* bytes = nullptr;  // host bytes of the extent's first byte
    CUdeviceptr base = 0;
    std::size_t size = 0;
    bool buffer = false;         // an annotated Buffer, not a whole allocation
    bool mapping = false;        // the allocation is a VMM mapping (and the ones after it)
    CUdeviceptr allocation = 0;  // the allocation around it, and its size (for messages)
    std::size_t allocation_size = 0;
  };

  DeviceMemory(int devices, std::size_t bytes_per_device);

  // A fresh address range for `size` bytes, neither live nor host-allocated yet.
  Allocation& reserve(std::size_t size, int device, CUcontext context, Kind kind);
  // Give a reserved range backing bytes (zeroed) / take them away. No-ops for a mapping.
  void make_live(Allocation& allocation);
  void make_dead(Allocation& allocation);

  // ---- virtual memory management ----
  // A fresh range of `size` bytes in `device`'s window of reserved ranges, aligned to
  // `alignment` (a power of two), never handed out again; 0 when the window has no room.
  // `reserved` makes accesses to a range's unmapped parts say so.
  CUdeviceptr take_range(std::size_t size, std::size_t alignment, int device);
  void reserved(CUdeviceptr base, std::size_t size) { reservations_[base] = size; }
  void unreserved(CUdeviceptr base) { reservations_.erase(base); }
  // A mapping record over [base, base + size) whose bytes are `bytes` (owned elsewhere), not
  // accessible until its device_live is set (cuMemSetAccess). Replaces an unmapped record at the
  // same address. access() takes a range over consecutive accessible mappings of one reservation
  // as one (contiguous in host memory too: VirtualMemory lays each reservation out as one host
  // range).
  Allocation& add_mapping(CUdeviceptr base, std::size_t size, int device, CUcontext context,
                          std::shared_ptr<std::byte> bytes);
  void remove_mapping(CUdeviceptr base);

  // An allocation's accessible size: a mapping's runs on through the accessible mappings
  // that follow it in its reservation.
  std::size_t run_of(const Allocation& allocation) const;
  // " (a range reserved ... with no accessible mapping there)" when address is in a reservation.
  std::string in_reservation(CUdeviceptr address) const;
  Allocation* find_base(CUdeviceptr base);
  Allocation* find_containing(CUdeviceptr address);

  // The host bytes behind [address, address + bytes) when the range lies inside one live
  // allocation; otherwise nullptr and `why` says what is wrong, as the end of a sentence. (Copies,
  // memsets and the tests' direct access: graphcap checks its own copies against its Buffers.)
  std::byte* access(CUdeviceptr address, std::size_t bytes, std::string* why);
  // The extent holding `address`: its live allocation, or with `buffers` the annotated Buffer of
  // it that holds the address (what kernels are checked against); false when there is none, and
  // `why` says why, as a sentence's end after the address: "is in freed memory (...)".
  bool extent(CUdeviceptr address, Extent* out, std::string* why, bool buffers = true);
  // Why [address, address + bytes) is not inside `extent` (which holds address), as access says.
  static std::string overrun(const Extent& extent, CUdeviceptr address, std::size_t bytes);

  // DriverApi::annotate_buffer: a Buffer of `bytes` bytes lent at `address` (it replaces the one
  // lent there before: graph recordings keep their own, KernelWork::extents), or, with 0, every
  // Buffer there returned to the pool. Ignored outside live allocations.
  void annotate(CUdeviceptr address, std::size_t bytes);

  std::size_t used(int device) const { return used_.at(static_cast<std::size_t>(device)); }
  std::size_t total() const noexcept { return total_; }

  // Visits every allocation record (live, dead and reserved).
  void for_each(const std::function<void(Allocation&)>& visit);

 private:
  std::size_t total_;
  std::vector<std::size_t> used_;
  std::vector<CUdeviceptr> next_;
  std::vector<CUdeviceptr> next_reserved_;
  std::map<CUdeviceptr, Allocation> allocations_;
  std::map<CUdeviceptr, std::size_t> reservations_;  // reserved ranges, by base
};

}  // namespace graphcap::fake::internal
