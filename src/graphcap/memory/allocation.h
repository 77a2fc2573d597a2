// Allocation: one slice handed out by a stream's pool. Shared by the buffer that owns it and by
// every graph that replays against it (pinning); when the last reference goes, the slice goes to
// its owner's drop queue, stamped with its last use.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <graphcap/memory/slice.h>
#include <graphcap/memory/slice_owner.h>

namespace graphcap::memory {

class Allocation {
 public:
  Allocation(std::shared_ptr<SliceOwner> owner, Slice slice) noexcept
      : owner_(std::move(owner)), slice_(slice) {}
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
  ~Allocation() { owner_->drop(slice_, last_use()); }

  const Slice& slice() const noexcept { return slice_; }
  SliceOwner& owner() const noexcept { return *owner_; }

  // The owner stream's sequence number of an operation that uses this slice.
  void used_at(std::uint64_t sequence) noexcept {
    std::uint64_t seen = last_use_.load(std::memory_order_relaxed);
    while (seen < sequence &&
           !last_use_.compare_exchange_weak(seen, sequence, std::memory_order_relaxed)) {
    }
  }
  std::uint64_t last_use() const noexcept { return last_use_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<SliceOwner> owner_;
  Slice slice_;
  std::atomic<std::uint64_t> last_use_{0};
};

}  // namespace graphcap::memory
