#include <graphcap/memory/virtual_range.h>

#include <algorithm>
#include <string>

#include <graphcap/log.h>

namespace graphcap::memory {
namespace {

std::size_t round_up(std::size_t bytes, std::size_t granularity) {
  return (bytes + granularity - 1) / granularity * granularity;
}

CUmemAllocationProp device_memory(CUdevice device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace

Result<std::size_t> VirtualRange::granularity(DriverApi& driver, CUdevice device) {
  int supported = 0;
  if (CUresult result = driver.cuDeviceGetAttribute(
          &supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuDeviceGetAttribute", result)
        .context("asking whether the device supports virtual memory management");
  }
  if (supported == 0) return std::size_t{0};
  const CUmemAllocationProp prop = device_memory(device);
  std::size_t granularity = 0;
  if (CUresult result = driver.cuMemGetAllocationGranularity(&granularity, &prop,
                                                             CU_MEM_ALLOC_GRANULARITY_MINIMUM);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuMemGetAllocationGranularity", result);
  }
  if (granularity == 0) {
    return Error(Errc::driver, "cuMemGetAllocationGranularity: the driver answered 0 bytes");
  }
  return granularity;
}

Result<std::shared_ptr<VirtualRange>> VirtualRange::reserve(DriverApi& driver, CUdevice device,
                                                            std::size_t bytes,
                                                            std::size_t granularity) {
  const std::size_t size = round_up(bytes == 0 ? granularity : bytes, granularity);
  CUdeviceptr base = 0;
  if (CUresult result = driver.cuMemAddressReserve(&base, size, 0, 0, 0); result != CUDA_SUCCESS) {
    return Error::from_driver("cuMemAddressReserve", result)
        .context("reserving " + std::to_string(size) + " bytes of addresses for a graph pool");
  }
  return std::make_shared<VirtualRange>(driver, device, base, size, granularity);
}

VirtualRange::VirtualRange(DriverApi& driver, CUdevice device, CUdeviceptr base,
                           std::size_t reserved, std::size_t granularity) noexcept
    : driver_(&driver), device_(device), base_(base), reserved_(reserved),
      granularity_(granularity) {}

VirtualRange::~VirtualRange() { close(); }

Result<void> VirtualRange::grow_to(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (closed_) return Error(Errc::graph_state, "growing a graph pool: its device is closed");
  if (bytes <= mapped_) return {};
  const std::size_t want = round_up(bytes, granularity_);
  if (want > reserved_) {
    return Error(Errc::out_of_memory,
                 "growing a graph pool to " + std::to_string(bytes) + " bytes: its range of " +
                     std::to_string(reserved_) + " reserved addresses is full (create the pool "
                     "with a larger GraphPoolOptions::reserve_bytes)");
  }
  const CUdeviceptr from = base_ + mapped_;
  const std::size_t size = want - mapped_;
  const std::string what = "growing a graph pool by " + std::to_string(size) + " bytes";
  // One physical allocation per granule: only a whole handle can be unmapped and released
  // (measured), so a piece as large as the growth would stay mapped while any graph used its first
  // granule, and a pool whose largest graph went first could never shrink to its smaller ones.
  // Room for the pieces first: nothing below allocates host memory once a piece exists.
  std::vector<Piece> grown;
  grown.reserve(size / granularity_);
  pieces_.reserve(pieces_.size() + size / granularity_);
  // Undoes this growth: nothing more is held than before it.
  auto undo = [&](const char* why) {
    for (auto piece = grown.rbegin(); piece != grown.rend(); ++piece) {
      (void)give_back(*piece, why, true);
    }
  };
  const CUmemAllocationProp prop = device_memory(device_);
  for (CUdeviceptr at = from; at < base_ + want; at += granularity_) {
    Piece piece;
    piece.at = at;
    piece.size = granularity_;
    if (CUresult result = driver_->cuMemCreate(&piece.handle, piece.size, &prop, 0);
        result != CUDA_SUCCESS) {
      undo("undoing a growth whose next piece could not be created");
      return Error::from_driver("cuMemCreate", result).context(what);
    }
    if (CUresult result = driver_->cuMemMap(piece.at, piece.size, 0, piece.handle, 0);
        result != CUDA_SUCCESS) {
      const CUresult undone = driver_->cuMemRelease(piece.handle);
      undo("undoing a growth whose next piece could not be mapped");
      if (undone != CUDA_SUCCESS) {
        log(LogLevel::warn, Error::from_driver("cuMemRelease", undone)
                                .context(what + ": releasing the piece that could not be mapped")
                                .message());
      }
      return Error::from_driver("cuMemMap", result).context(what);
    }
    grown.push_back(piece);
  }
  // Access over the whole growth in one call (the driver takes several mappings in one call).
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device_;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (CUresult result = driver_->cuMemSetAccess(from, size, &access, 1); result != CUDA_SUCCESS) {
    undo("undoing a growth whose access could not be set");
    return Error::from_driver("cuMemSetAccess", result).context(what);
  }
  pieces_.insert(pieces_.end(), grown.begin(), grown.end());
  mapped_ = want;
  ++growths_;
  return {};
}

void VirtualRange::hold(std::size_t bytes) noexcept {
  std::lock_guard lock(mutex_);
  hold_ = bytes;
  shrink_locked();
}

std::shared_ptr<Allocation> VirtualRange::view(std::shared_ptr<SliceOwner> owner,
                                               std::size_t offset, std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    ++views_[offset + bytes];
  }
  return make_view(std::move(owner), offset, bytes);
}

std::shared_ptr<Allocation> VirtualRange::view_if_mapped(std::shared_ptr<SliceOwner> owner,
                                                         std::size_t offset, std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    if (closed_ || offset + bytes > mapped_) return nullptr;
    ++views_[offset + bytes];  // counted under the same lock: no shrink can come between
  }
  return make_view(std::move(owner), offset, bytes);
}

std::shared_ptr<Allocation> VirtualRange::make_view(std::shared_ptr<SliceOwner> owner,
                                                    std::size_t offset, std::size_t bytes) {
  Slice slice;
  slice.address = static_cast<std::uintptr_t>(base_ + offset);
  slice.capacity = bytes;
  slice.kind = SliceKind::device;
  return std::make_shared<Allocation>(std::move(owner), slice, shared_from_this());
}

void VirtualRange::release(const Slice& slice) noexcept {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  const std::size_t end = static_cast<std::size_t>(slice.device_ptr() - base_) + slice.capacity;
  auto it = views_.find(end);
  if (it != views_.end() && --it->second == 0) views_.erase(it);
  shrink_locked();
}

std::size_t VirtualRange::used_locked() const noexcept {
  return views_.empty() ? 0 : views_.rbegin()->first;
}

void VirtualRange::shrink_locked() noexcept {
  if (closed_) return;
  const std::size_t keep = round_up(std::max(used_locked(), hold_), granularity_);
  bool shrank = false;
  while (!pieces_.empty() && pieces_.back().at - base_ >= keep) {
    // A piece that can't be unmapped stays, whole, to be tried again on the next shrink.
    if (!give_back(pieces_.back(), "giving back a graph pool's tail no graph uses", false)) break;
    mapped_ -= pieces_.back().size;
    pieces_.pop_back();
    shrank = true;
  }
  if (shrank) ++shrinks_;
}

bool VirtualRange::give_back(const Piece& piece, const char* why, bool release_if_mapped) noexcept {
  const CUresult unmapped = driver_->cuMemUnmap(piece.at, piece.size);
  // Released while still mapped, the memory lives on until its mapping goes (measured).
  const CUresult released = unmapped == CUDA_SUCCESS || release_if_mapped
                                ? driver_->cuMemRelease(piece.handle)
                                : CUDA_SUCCESS;
  try {
    if (unmapped != CUDA_SUCCESS) {
      log(LogLevel::warn, Error::from_driver("cuMemUnmap", unmapped).context(why).message() +
                              " (the piece stays mapped, and its memory held)");
    }
    if (released != CUDA_SUCCESS) {
      log(LogLevel::warn, Error::from_driver("cuMemRelease", released).context(why).message() +
                              " (its memory stays allocated)");
    }
  } catch (...) {
    // Logging failed (out of memory for the message): the calls above were made regardless.
  }
  return unmapped == CUDA_SUCCESS;
}

VirtualRange::Stats VirtualRange::stats() const {
  std::lock_guard lock(mutex_);
  Stats stats;
  stats.mapped = mapped_;
  stats.used = used_locked();
  stats.held = hold_;
  stats.pieces = pieces_.size();
  stats.growths = growths_;
  stats.shrinks = shrinks_;
  return stats;
}

void VirtualRange::close() noexcept {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  closed_ = true;
  bool all_unmapped = true;
  while (!pieces_.empty()) {
    if (!give_back(pieces_.back(), "closing a graph pool", true)) all_unmapped = false;
    mapped_ -= pieces_.back().size;
    pieces_.pop_back();
  }
  views_.clear();
  if (!all_unmapped) return;  // the driver refuses to free a range with a mapping left
  if (CUresult result = driver_->cuMemAddressFree(base_, reserved_); result != CUDA_SUCCESS) {
    try {
      log(LogLevel::warn,
          Error::from_driver("cuMemAddressFree", result).context("closing a graph pool").message());
    } catch (...) {
    }
  }
}

}  // namespace graphcap::memory
