// Page-locked host memory (cuMemAllocHost): real, 64-byte aligned host memory, tracked so copies
// can tell pinned from pageable memory (they behave differently) and so a replay that reads freed
// staging memory is caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include <graphcap/driver/cuda_types.h>

namespace graphcap::fake::internal {

class PinnedMemory {
 public:
  explicit PinnedMemory(std::size_t limit) : limit_(limit) {}
  ~PinnedMemory();
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;

  // nullptr when the limit would be exceeded.
  void* allocate(std::size_t bytes, CUcontext context);
  // False if `pointer` is not the start of a live block.
  bool free(void* pointer);
  // Whether [pointer, pointer + bytes) lies inside one live block.
  bool contains(const void* pointer, std::size_t bytes) const;
  // Frees every block of `context`; returns how many there were.
  std::size_t free_all_of(CUcontext context);
  std::size_t count() const noexcept { return blocks_.size(); }

 private:
  struct Block {
    std::size_t size;
    CUcontext context;
  };
  std::size_t limit_;
  std::size_t used_ = 0;
  std::map<std::uintptr_t, Block> blocks_;
};

}  // namespace graphcap::fake::internal
