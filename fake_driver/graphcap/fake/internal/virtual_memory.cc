#include <graphcap/fake/internal/virtual_memory.h>

#include <sys/mman.h>
#include <unistd.h>

namespace graphcap::fake::internal {
namespace {

// Host address space for a reservation: reserved, not committed, inaccessible until mapped.
std::shared_ptr<std::byte> reserve_host(std::size_t size) {
  void* raw = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(raw),
                                    [size](std::byte* p) { ::munmap(p, size); });
}

// A memory file of `size` zero bytes (committed only where touched).
int create_host(std::size_t size) {
  const int fd = ::memfd_create("graphcap-fake-vmm", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Back to reserved and inaccessible.
void unmap_host(std::byte* at, std::size_t size) {
  (void)::mmap(at, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
               0);
}

}  // namespace

VirtualMemory::VirtualMemory(int devices)
    : used_(static_cast<std::size_t>(devices > 0 ? devices : 1), 0) {}

VirtualMemory::~VirtualMemory() {
  for (auto& [handle, physical] : physicals_) {
    if (physical.fd >= 0) ::close(physical.fd);
  }
}

VirtualMemory::Reservation& VirtualMemory::add_reservation(CUdeviceptr base, std::size_t size,
                                                           int device, CUcontext context) {
  Reservation reservation;
  reservation.base = base;
  reservation.size = size;
  reservation.device = device;
  reservation.context = context;
  return reservations_.emplace(base, std::move(reservation)).first->second;
}

VirtualMemory::Reservation* VirtualMemory::find_reservation(CUdeviceptr base) {
  auto it = reservations_.find(base);
  return it == reservations_.end() ? nullptr : &it->second;
}

VirtualMemory::Reservation* VirtualMemory::reservation_of(CUdeviceptr address, std::size_t size) {
  auto it = reservations_.upper_bound(address);
  if (it == reservations_.begin()) return nullptr;
  --it;
  Reservation& candidate = it->second;
  const std::size_t offset = address - candidate.base;
  if (offset >= candidate.size || size > candidate.size - offset) return nullptr;
  return &candidate;
}

void VirtualMemory::remove_reservation(CUdeviceptr base) { reservations_.erase(base); }

bool VirtualMemory::has_mappings(const Reservation& reservation) const {
  for (const auto& [base, mapping] : mappings_) {
    if (mapping.reservation == reservation.base) return true;
  }
  return false;
}

CUmemGenericAllocationHandle VirtualMemory::create(std::size_t size, int device,
                                                    CUcontext context) {
  const int fd = create_host(size);
  if (fd < 0) return 0;
  const CUmemGenericAllocationHandle handle = next_handle_;
  next_handle_ += 0x40;
  Physical physical;
  physical.size = size;
  physical.device = device;
  physical.context = context;
  physical.fd = fd;
  physicals_.emplace(handle, physical);
  used_.at(static_cast<std::size_t>(device)) += size;
  return handle;
}

VirtualMemory::Physical* VirtualMemory::find_physical(CUmemGenericAllocationHandle handle) {
  auto it = physicals_.find(handle);
  return it == physicals_.end() ? nullptr : &it->second;
}

void VirtualMemory::free_physical(std::map<CUmemGenericAllocationHandle, Physical>::iterator it) {
  if (it->second.fd >= 0) ::close(it->second.fd);
  used_.at(static_cast<std::size_t>(it->second.device)) -= it->second.size;
  physicals_.erase(it);
}

void VirtualMemory::release(CUmemGenericAllocationHandle handle) {
  auto it = physicals_.find(handle);
  if (it == physicals_.end()) return;
  it->second.released = true;
  if (it->second.mappings == 0) free_physical(it);
}

std::shared_ptr<std::byte> VirtualMemory::map(Reservation& reservation, CUdeviceptr base,
                                              CUmemGenericAllocationHandle handle) {
  Physical* physical = find_physical(handle);
  if (physical == nullptr) return nullptr;
  if (!reservation.host) {
    reservation.host = reserve_host(reservation.size);
    if (!reservation.host) return nullptr;
  }
  std::byte* at = reservation.host.get() + (base - reservation.base);
  void* mapped = ::mmap(at, physical->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                        physical->fd, 0);
  if (mapped == MAP_FAILED) return nullptr;
  ++physical->mappings;
  mappings_.emplace(base, Mapping{base, physical->size, handle, reservation.base});
  // The mapping's bytes keep the reservation's host range alive (queued work may name them).
  return std::shared_ptr<std::byte>(reservation.host, at);
}

void VirtualMemory::unmap(CUdeviceptr base) {
  auto it = mappings_.find(base);
  if (it == mappings_.end()) return;
  const Mapping mapping = it->second;
  mappings_.erase(it);
  if (Reservation* reservation = find_reservation(mapping.reservation);
      reservation != nullptr && reservation->host) {
    unmap_host(reservation->host.get() + (mapping.base - reservation->base), mapping.size);
  }
  auto physical = physicals_.find(mapping.handle);
  if (physical == physicals_.end()) return;
  if (--physical->second.mappings == 0 && physical->second.released) free_physical(physical);
}

bool VirtualMemory::overlaps_mapping(CUdeviceptr address, std::size_t size) const {
  // Mappings never overlap: only the last one starting before the range's end can reach into it.
  auto it = mappings_.lower_bound(address + size);
  if (it == mappings_.begin()) return false;
  --it;
  return it->second.base + it->second.size > address;
}

std::vector<const VirtualMemory::Mapping*> VirtualMemory::whole_mappings(CUdeviceptr address,
                                                                          std::size_t size) const {
  std::vector<const Mapping*> covered;
  CUdeviceptr at = address;
  const CUdeviceptr end = address + size;
  while (at < end) {
    auto it = mappings_.find(at);
    if (it == mappings_.end() || it->second.size > end - at) return {};
    covered.push_back(&it->second);
    at += it->second.size;
  }
  return covered;
}

std::size_t VirtualMemory::handle_count() const {
  std::size_t count = 0;
  for (const auto& [handle, physical] : physicals_) count += physical.released ? 0 : 1;
  return count;
}

}  // namespace graphcap::fake::internal
