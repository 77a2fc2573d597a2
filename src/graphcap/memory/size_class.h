// Size classes of the caching pool. Requests are rounded up to one of four classes per power of
// two (at most 25% slack), so a free slice serves every request of its class without a driver
// call; the persistent pool rounds only to the allocation alignment (exact fit).
#pragma once

#include <bit>
#include <cstddef>
#include <limits>

namespace graphcap::memory {

inline constexpr std::size_t kAllocationAlignment = 256;  // what cuMemAlloc guarantees
inline constexpr std::size_t kSmallestClass = 512;

// Rounds to the allocation alignment; 0 when that overflows.
constexpr std::size_t exact_size(std::size_t bytes) noexcept {
  if (bytes > std::numeric_limits<std::size_t>::max() - (kAllocationAlignment - 1)) return 0;
  return (bytes + kAllocationAlignment - 1) & ~(kAllocationAlignment - 1);
}

// The size class serving `bytes`; 0 when that overflows.
constexpr std::size_t size_class(std::size_t bytes) noexcept {
  if (bytes <= kSmallestClass) return kSmallestClass;
  const int top = std::bit_width(bytes - 1) - 1;  // floor(log2(bytes - 1))
  const std::size_t step = std::size_t{1} << (top - 2);
  if (bytes > std::numeric_limits<std::size_t>::max() - (step - 1)) return 0;
  return (bytes + step - 1) & ~(step - 1);
}

}  // namespace graphcap::memory
