// SliceOwner: the stream a slice belongs to, as the memory layer sees it: where an Allocation's
// slice goes when its last handle goes (the stream's drop queue).
// detail::StreamCore is the one implementation.
#pragma once

#include <cstdint>
#include <memory>

#include <graphcap/memory/slice.h>
#include <graphcap/memory/slice_home.h>

namespace graphcap::memory {

class SliceOwner {
 public:
  // A slice's last handle went away (any thread); `last_use` is its last operation's sequence.
  virtual void drop(const Slice& slice, std::uint64_t last_use) noexcept = 0;
  // The same for a slice that goes back to `home` (a graph pool's range), not to the stream's
  // pool. Without a stream order to wait for, it goes back at once.
  virtual void drop_to(const Slice& slice, std::uint64_t last_use,
                       std::shared_ptr<SliceHome> home) noexcept {
    (void)last_use;
    home->release(slice);
  }

 protected:
  ~SliceOwner() = default;
};

}  // namespace graphcap::memory
