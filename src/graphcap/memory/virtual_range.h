// VirtualRange: one reserved range of device addresses with physical memory mapped at its start
// (CUDA's virtual memory management: cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess):
// what a graph pool lays every graph's intermediates out in, each graph from the base. It grows by
// mapping new pieces at the end of what is mapped, so no address in it ever moves, and it shrinks
// by unmapping and releasing pieces from the end once no view (no graph, no buffer) uses them and
// no window holds them. Each piece is one granule (its own physical allocation: the driver
// unmaps and releases whole handles only), so what stays mapped is always what the views use,
// rounded up to the granule, whatever order the views came and went in. The H200's rules (docs/cuda-driver-facts.md, "Virtual
// memory management"): reservations cost no memory, physical memory is taken at cuMemCreate and
// given back at once by the unmap and release, whole handles are mapped at offset 0, access is
// set per mapping, and none of these calls waits for the device or is refused during a capture.
// A step that fails is undone: a growth that fails holds nothing more than before.
//
// The views are Allocations of the pool's stream whose home is this range: they come back here
// through that stream's drop queue, so a piece is unmapped only once the stream has passed every
// use of it (an unmap does not wait for the device). Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <graphcap/driver/driver_api.h>
#include <graphcap/memory/allocation.h>
#include <graphcap/memory/slice_home.h>
#include <graphcap/memory/slice_owner.h>
#include <graphcap/result.h>

namespace graphcap::memory {

class VirtualRange final : public SliceHome, public std::enable_shared_from_this<VirtualRange> {
 public:
  // The granularity on `device` when its driver supports virtual memory management
  // (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED); 0 when it does not.
  static Result<std::size_t> granularity(DriverApi& driver, CUdevice device);

  // Reserve `bytes` of addresses (rounded up to `granularity`) for memory of `device`.
  static Result<std::shared_ptr<VirtualRange>> reserve(DriverApi& driver, CUdevice device,
                                                       std::size_t bytes, std::size_t granularity);

  VirtualRange(DriverApi& driver, CUdevice device, CUdeviceptr base, std::size_t reserved,
               std::size_t granularity) noexcept;
  VirtualRange(const VirtualRange&) = delete;
  VirtualRange& operator=(const VirtualRange&) = delete;
  ~VirtualRange();

  CUdeviceptr base() const noexcept { return base_; }
  std::size_t granularity() const noexcept { return granularity_; }
  std::size_t reserved() const noexcept { return reserved_; }

  // Map physical memory until at least `bytes` from the base are mapped: a piece a granule at the
  // end of what is mapped (cuMemCreate and cuMemMap each), then access over all of them at once
  // (cuMemSetAccess); on a failure of any step the whole growth is undone. Errc::out_of_memory
  // beyond the reservation.
  Result<void> grow_to(std::size_t bytes);
  // While a window lays out up to `bytes` from the base, that much stays mapped even where no view
  // uses it yet (0 lets it go; the tail no view uses is then given back).
  void hold(std::size_t bytes) noexcept;

  // [offset, offset + bytes) as an Allocation of `owner` (pinned by graphs like any slice),
  // coming back here through `owner`'s drop queue. The range must be mapped there, and held (a
  // window's hold) or used by a view already.
  std::shared_ptr<Allocation> view(std::shared_ptr<SliceOwner> owner, std::size_t offset,
                                   std::size_t bytes);
  // The same where nothing holds that part: nullptr unless it is mapped now (then the view keeps
  // it mapped).
  std::shared_ptr<Allocation> view_if_mapped(std::shared_ptr<SliceOwner> owner,
                                             std::size_t offset, std::size_t bytes);

  struct Stats {
    std::size_t mapped = 0;   // physical memory mapped (the pool's device memory)
    std::size_t used = 0;     // from the base to the end of the farthest live view
    std::size_t held = 0;     // what a window holds mapped (hold)
    std::size_t pieces = 0;   // physical allocations mapped (one a granule)
    std::size_t growths = 0;  // times it grew (grow_to mapping anything), ever
    std::size_t shrinks = 0;  // times its tail was unmapped and released, ever
  };
  Stats stats() const;

  // The device is closing: unmap, release and free everything now. The range is inert after it
  // (views that come back later change nothing). Idempotent.
  void close() noexcept;

  // SliceHome: a view's last use is behind its stream.
  void release(const Slice& slice) noexcept override;

 private:
  struct Piece {
    CUdeviceptr at = 0;
    std::size_t size = 0;
    CUmemGenericAllocationHandle handle = 0;
  };
  // Unmap and release the pieces wholly beyond what views use and the window holds.
  void shrink_locked() noexcept;
  std::size_t used_locked() const noexcept;
  std::shared_ptr<Allocation> make_view(std::shared_ptr<SliceOwner> owner, std::size_t offset,
                                        std::size_t bytes);
  // Unmap and release one piece; false (warned) when the unmap failed and it stays mapped (its
  // handle then released only when `release_if_mapped`).
  bool give_back(const Piece& piece, const char* why, bool release_if_mapped) noexcept;

  DriverApi* driver_;
  CUdevice device_;
  CUdeviceptr base_;
  std::size_t reserved_;
  std::size_t granularity_;
  mutable std::mutex mutex_;
  std::vector<Piece> pieces_;                 // one a granule, in address order, from the base
  std::size_t mapped_ = 0;
  std::map<std::size_t, std::size_t> views_;  // live views by their end offset: how many end there
  std::size_t hold_ = 0;
  std::size_t growths_ = 0;
  std::size_t shrinks_ = 0;
  bool closed_ = false;
};

}  // namespace graphcap::memory
