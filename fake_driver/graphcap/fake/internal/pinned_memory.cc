#include <graphcap/fake/internal/pinned_memory.h>

#include <new>

namespace graphcap::fake::internal {
namespace {
constexpr std::align_val_t kPinnedAlignment{64};
}

PinnedMemory::~PinnedMemory() {
  for (auto& [address, block] : blocks_) {
    ::operator delete(reinterpret_cast<void*>(address), kPinnedAlignment);
  }
}

void* PinnedMemory::allocate(std::size_t bytes, CUcontext context) {
  if (bytes > limit_ - used_) return nullptr;
  void* pointer = ::operator new(bytes, kPinnedAlignment);
  blocks_.emplace(reinterpret_cast<std::uintptr_t>(pointer), Block{bytes, context});
  used_ += bytes;
  return pointer;
}

bool PinnedMemory::free(void* pointer) {
  auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(pointer));
  if (it == blocks_.end()) return false;
  used_ -= it->second.size;
  ::operator delete(pointer, kPinnedAlignment);
  blocks_.erase(it);
  return true;
}

bool PinnedMemory::contains(const void* pointer, std::size_t bytes) const {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  auto it = blocks_.upper_bound(address);
  if (it == blocks_.begin()) return false;
  --it;
  const std::uintptr_t offset = address - it->first;
  return offset < it->second.size && bytes <= it->second.size - offset;
}

std::size_t PinnedMemory::free_all_of(CUcontext context) {
  std::size_t freed = 0;
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    if (it->second.context == context) {
      used_ -= it->second.size;
      ::operator delete(reinterpret_cast<void*>(it->first), kPinnedAlignment);
      it = blocks_.erase(it);
      ++freed;
    } else {
      ++it;
    }
  }
  return freed;
}

}  // namespace graphcap::fake::internal
