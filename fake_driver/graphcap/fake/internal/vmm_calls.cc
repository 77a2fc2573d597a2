// Virtual memory management: reserved address ranges, physical allocations and the mappings
// between them, with the H200's answers (docs/cuda-driver-facts.md, "Virtual memory management").
// None of these calls is stream-ordered or an unsafe call: the H200 allowed every
// one inside a capture in every mode, so none of them looks at captures. Physical memory counts as
// used from cuMemCreate to the release of its last reference (the handle, or its last mapping);
// reservations cost nothing; a mapping is inaccessible until cuMemSetAccess, and an access to a
// reserved range where nothing accessible is mapped is a violation (the H200: ILLEGAL_ADDRESS).
#include <graphcap/fake/internal/fake_state.h>

#include <bit>

namespace graphcap::fake {
namespace {

using internal::VirtualMemory;

constexpr std::size_t kGranularity = VirtualMemory::kGranularity;

bool granular(std::size_t value) { return value % kGranularity == 0; }

// A valid allocation property for device memory (type PINNED, a device location); the device
// itself is checked by the caller where the H200 checks it.
bool device_property(const CUmemAllocationProp& prop) {
  return prop.type == CU_MEM_ALLOCATION_TYPE_PINNED &&
         prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE && prop.win32HandleMetaData == nullptr;
}

}  // namespace

CUresult FakeState::cuMemGetAllocationGranularity(std::size_t* granularity,
                                                  const CUmemAllocationProp* prop,
                                                  CUmemAllocationGranularity_flags option) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Measured: option 5 is 1; the device ordinal is not checked (device 7 of one: SUCCESS).
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!device_property(*prop)) return CUDA_ERROR_INVALID_VALUE;  // not measured: a guess
  if (!options_.virtual_memory) return CUDA_ERROR_NOT_SUPPORTED;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemAddressReserve(CUdeviceptr* ptr, std::size_t size, std::size_t alignment,
                                        CUdeviceptr addr, unsigned long long flags) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  (void)addr;  // a hint only (the fake never grants it; the H200 grants a free one)
  if (ptr == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  // Measured: the size must be a positive multiple of 2 MiB (cuda.h says of the host page size),
  // the alignment 0 or a power of two.
  if (size == 0 || !granular(size)) return CUDA_ERROR_INVALID_VALUE;
  if (alignment != 0 && !std::has_single_bit(alignment)) return CUDA_ERROR_INVALID_VALUE;
  // Measured: aligned to at least 2 MiB, and to the alignment asked for; 16 TiB granted, 128 TiB
  // CUDA_ERROR_OUT_OF_MEMORY (the fake's window per device is 128 TiB).
  const CUdeviceptr base = device_memory_.take_range(
      size, alignment > kGranularity ? alignment : kGranularity, context->device);
  if (base == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  virtual_memory_.add_reservation(base, size, context->device, context->handle);
  device_memory_.reserved(base, size);
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemAddressFree(CUdeviceptr ptr, std::size_t size) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  // Measured: only a whole reservation, by its base and size, and not while anything is mapped
  // in it.
  VirtualMemory::Reservation* reservation = virtual_memory_.find_reservation(ptr);
  if (reservation == nullptr || reservation->size != size) return CUDA_ERROR_INVALID_VALUE;
  if (virtual_memory_.has_mappings(*reservation)) return CUDA_ERROR_INVALID_VALUE;
  device_memory_.unreserved(ptr);
  virtual_memory_.remove_reservation(ptr);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemCreate(CUmemGenericAllocationHandle* handle, std::size_t size,
                                const CUmemAllocationProp* prop, unsigned long long flags) {
  Context* context = nullptr;
  if (CUresult r = need_context(&context); r != CUDA_SUCCESS) return r;
  // Measured: flags 1, type INVALID, a size of G/2, G + 4 KiB or 0 are 1; device 7 is 101; more
  // than the device has (200 GiB) is 2.
  if (handle == nullptr || prop == nullptr || flags != 0 || !device_property(*prop)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const int device = prop->location.id;
  if (device < 0 || device >= static_cast<int>(contexts_.size())) return CUDA_ERROR_INVALID_DEVICE;
  if (size == 0 || !granular(size)) return CUDA_ERROR_INVALID_VALUE;
  if (!options_.virtual_memory) return CUDA_ERROR_NOT_SUPPORTED;
  // Measured: the memory is taken here (free memory drops at cuMemCreate, not at map or access).
  if (!has_room(device, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUmemGenericAllocationHandle created =
      virtual_memory_.create(size, device, contexts_[static_cast<std::size_t>(device)].handle);
  if (created == 0) return CUDA_ERROR_OUT_OF_MEMORY;  // the host could not back it
  *handle = created;
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  // Measured: handle 0 and a second release are 1; released while mapped, the memory stays usable
  // through the mapping and held until it is unmapped.
  VirtualMemory::Physical* physical = virtual_memory_.find_physical(handle);
  if (physical == nullptr || physical->released) return CUDA_ERROR_INVALID_VALUE;
  virtual_memory_.release(handle);
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemMap(CUdeviceptr ptr, std::size_t size, std::size_t offset,
                             CUmemGenericAllocationHandle handle, unsigned long long flags) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  // Measured, in the order the cases were asked: a misaligned address, flags 1; an address outside
  // every reservation, an offset, a size other than the handle's (801); a range already mapped,
  // wholly or in part (1).
  if (flags != 0 || !granular(ptr)) return CUDA_ERROR_INVALID_VALUE;
  VirtualMemory::Reservation* reservation = virtual_memory_.reservation_of(ptr, size == 0 ? 1 : size);
  if (reservation == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  VirtualMemory::Physical* physical = virtual_memory_.find_physical(handle);
  if (physical == nullptr || physical->released) return CUDA_ERROR_INVALID_VALUE;  // a guess
  if (offset != 0 || size != physical->size) return CUDA_ERROR_NOT_SUPPORTED;
  if (virtual_memory_.overlaps_mapping(ptr, size)) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<std::byte> bytes = virtual_memory_.map(*reservation, ptr, handle);
  if (!bytes) return CUDA_ERROR_OUT_OF_MEMORY;  // the host could not map it
  device_memory_.add_mapping(ptr, size, physical->device, physical->context, std::move(bytes));
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemUnmap(CUdeviceptr ptr, std::size_t size) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  // Measured: whole mappings only (one or several in one call); part of one is 1. It does not
  // wait for the device: work still queued that touches the range finds nothing mapped there.
  const std::vector<const VirtualMemory::Mapping*> covered =
      virtual_memory_.whole_mappings(ptr, size);
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (covered.empty()) {
    // Nothing mapped there at all, inside a reservation: SUCCESS, nothing done (the H200 in
    // graphcap-fidelity's run of 2026-12-03: 48 programs unmapped a range never mapped).
    const bool untouched = !virtual_memory_.overlaps_mapping(ptr, size) &&
                           virtual_memory_.reservation_of(ptr, size) != nullptr;
    return untouched ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<CUdeviceptr> bases;
  for (const VirtualMemory::Mapping* mapping : covered) bases.push_back(mapping->base);
  for (CUdeviceptr base : bases) {
    device_memory_.remove_mapping(base);
    virtual_memory_.unmap(base);
  }
  return CUDA_SUCCESS;
}

CUresult FakeState::cuMemSetAccess(CUdeviceptr ptr, std::size_t size, const CUmemAccessDesc* desc,
                                   std::size_t count) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (std::size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (desc[i].location.id < 0 || desc[i].location.id >= static_cast<int>(contexts_.size())) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
    if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
        desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  // Measured: over whole mappings only (several in one call are fine); a range partly unmapped, or
  // half a mapping, is 1.
  const std::vector<const VirtualMemory::Mapping*> covered =
      virtual_memory_.whole_mappings(ptr, size);
  if (size == 0 || covered.empty()) return CUDA_ERROR_INVALID_VALUE;
  for (const VirtualMemory::Mapping* mapping : covered) {
    internal::DeviceMemory::Allocation* record = device_memory_.find_base(mapping->base);
    const VirtualMemory::Physical* physical = virtual_memory_.find_physical(mapping->handle);
    if (record == nullptr || physical == nullptr) continue;
    // The access of the device the memory is on (other devices' access is not modelled). Read only
    // is accessible: the fake does not tell reads from writes (on the H200 a write faults there).
    for (std::size_t i = 0; i < count; ++i) {
      if (desc[i].location.id == physical->device) {
        record->device_live = desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE;
      }
    }
  }
  return CUDA_SUCCESS;
}

std::size_t FakeState::reclaim_virtual_memory(int device) {
  std::size_t reclaimed = 0;
  std::vector<CUdeviceptr> mapped;
  for (const auto& [base, mapping] : virtual_memory_.mappings()) {
    const VirtualMemory::Physical* physical = virtual_memory_.find_physical(mapping.handle);
    const VirtualMemory::Reservation* reservation =
        virtual_memory_.find_reservation(mapping.reservation);
    if ((physical != nullptr && physical->device == device) ||
        (reservation != nullptr && reservation->device == device)) {
      mapped.push_back(base);
    }
  }
  for (CUdeviceptr base : mapped) {
    device_memory_.remove_mapping(base);
    virtual_memory_.unmap(base);
    ++reclaimed;
  }
  std::vector<CUmemGenericAllocationHandle> handles;
  for (const auto& [handle, physical] : virtual_memory_.physicals()) {
    if (physical.device == device) handles.push_back(handle);
  }
  for (CUmemGenericAllocationHandle handle : handles) {
    // Unmapped by now (every mapping of the device's memory went above): a released one is gone.
    if (!virtual_memory_.find_physical(handle)->released) ++reclaimed;
    virtual_memory_.release(handle);
  }
  std::vector<CUdeviceptr> ranges;
  for (const auto& [base, reservation] : virtual_memory_.reservations()) {
    if (reservation.device == device && !virtual_memory_.has_mappings(reservation)) {
      ranges.push_back(base);
    }
  }
  for (CUdeviceptr base : ranges) {
    device_memory_.unreserved(base);
    virtual_memory_.remove_reservation(base);
    ++reclaimed;
  }
  return reclaimed;
}

}  // namespace graphcap::fake
