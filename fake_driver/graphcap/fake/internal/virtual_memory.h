// VirtualMemory: what the fake's virtual memory management holds: address ranges reserved apart
// from memory (cuMemAddressReserve), physical allocations (cuMemCreate) and the mappings of the
// one into the other (cuMemMap). The rules are vmm_calls.cc's; this is the bookkeeping and the
// host memory behind it, laid out as a GPU lays it out: each reservation is one range of host
// address space (reserved, inaccessible where nothing is mapped) and each physical allocation a
// memory file mapped into it where cuMemMap maps it, so a range mapped from several allocations
// is contiguous to kernels and copies, and one allocation mapped at two addresses is one memory.
// Not locked: FakeState's mutex guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <graphcap/driver/cuda_types.h>

namespace graphcap::fake::internal {

class VirtualMemory {
 public:
  // cuMemGetAllocationGranularity's answer on the H200, MINIMUM and RECOMMENDED alike.
  static constexpr std::size_t kGranularity = std::size_t{2} << 20;

  struct Reservation {
    CUdeviceptr base = 0;
    std::size_t size = 0;
    int device = 0;  // whose address window it came from
    CUcontext context = nullptr;
    std::shared_ptr<std::byte> host;  // `size` bytes of host address space, taken at first map
  };
  struct Physical {
    std::size_t size = 0;
    int device = 0;
    CUcontext context = nullptr;
    int fd = -1;            // the memory file behind it
    bool released = false;  // cuMemRelease'd: no longer a handle, alive while it is mapped
    std::size_t mappings = 0;
  };
  struct Mapping {
    CUdeviceptr base = 0;
    std::size_t size = 0;
    CUmemGenericAllocationHandle handle = 0;
    CUdeviceptr reservation = 0;
  };

  explicit VirtualMemory(int devices);
  ~VirtualMemory();
  VirtualMemory(const VirtualMemory&) = delete;
  VirtualMemory& operator=(const VirtualMemory&) = delete;

  // Physical memory held on `device` (created, and not yet released and unmapped).
  std::size_t used(int device) const { return used_.at(static_cast<std::size_t>(device)); }

  // ---- reservations ----
  Reservation& add_reservation(CUdeviceptr base, std::size_t size, int device, CUcontext context);
  Reservation* find_reservation(CUdeviceptr base);
  // The reservation holding all of [address, address + size), or nullptr.
  Reservation* reservation_of(CUdeviceptr address, std::size_t size);
  void remove_reservation(CUdeviceptr base);
  bool has_mappings(const Reservation& reservation) const;

  // ---- physical memory ----
  // A new allocation of `size` bytes (zeroed) on `device`; 0 when the host can't back it.
  CUmemGenericAllocationHandle create(std::size_t size, int device, CUcontext context);
  Physical* find_physical(CUmemGenericAllocationHandle handle);
  // cuMemRelease: the handle goes; the memory goes with its last mapping.
  void release(CUmemGenericAllocationHandle handle);

  // ---- mappings ----
  // The host bytes behind `handle` mapped at `base` of `reservation`, or nullptr when the host
  // can't map it. Counts the mapping.
  std::shared_ptr<std::byte> map(Reservation& reservation, CUdeviceptr base,
                                 CUmemGenericAllocationHandle handle);
  void unmap(CUdeviceptr base);
  const std::map<CUdeviceptr, Mapping>& mappings() const noexcept { return mappings_; }
  // Whether [address, address + size) overlaps a mapping.
  bool overlaps_mapping(CUdeviceptr address, std::size_t size) const;
  // The mappings that cover [address, address + size) exactly, whole, in order; empty when the
  // range starts or ends inside a mapping or holds a gap.
  std::vector<const Mapping*> whole_mappings(CUdeviceptr address, std::size_t size) const;

  std::size_t reservation_count() const noexcept { return reservations_.size(); }
  std::size_t handle_count() const;  // physical allocations not released
  const std::map<CUdeviceptr, Reservation>& reservations() const noexcept { return reservations_; }
  const std::map<CUmemGenericAllocationHandle, Physical>& physicals() const noexcept {
    return physicals_;
  }

 private:
  void free_physical(std::map<CUmemGenericAllocationHandle, Physical>::iterator it);

  std::vector<std::size_t> used_;
  CUmemGenericAllocationHandle next_handle_ = 0x1000;
  std::map<CUdeviceptr, Reservation> reservations_;
  std::map<CUmemGenericAllocationHandle, Physical> physicals_;
  std::map<CUdeviceptr, Mapping> mappings_;
};

}  // namespace graphcap::fake::internal
