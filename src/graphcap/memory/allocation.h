// Allocation: one slice handed out by a stream's pool, or a piece of a graph pool's range (its
// home). Shared by the buffer that owns it and by every graph that replays against it (pinning);
// when the last reference goes, the slice goes to its owner's drop queue, stamped with its last
// use, and from there back to its pool (or its home).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <graphcap/memory/slice.h>
#include <graphcap/memory/slice_home.h>
#include <graphcap/memory/slice_owner.h>

namespace graphcap::memory {

class Allocation {
 public:
  Allocation(std::shared_ptr<SliceOwner> owner, Slice slice,
             std::shared_ptr<SliceHome> home = nullptr) noexcept
      : owner_(std::move(owner)), home_(std::move(home)), slice_(slice) {}
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
  ~Allocation() {
    if (home_) {
      owner_->drop_to(slice_, last_use(), std::move(home_));
    } else {
      owner_->drop(slice_, last_use());
    }
  }

  const Slice& slice() const noexcept { return slice_; }
  SliceOwner& owner() const noexcept { return *owner_; }
  // Where the slice goes back to when it is not its stream pool's (a graph pool's range).
  const SliceHome* home() const noexcept { return home_.get(); }

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
  std::shared_ptr<SliceHome> home_;
  Slice slice_;
  std::atomic<std::uint64_t> last_use_{0};
};

}  // namespace graphcap::memory
