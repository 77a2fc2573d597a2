// PoolStats: what one pool of a stream holds (see memory/slice_pool.h).
#pragma once

#include <cstddef>

namespace graphcap::memory {

struct PoolStats {
  std::size_t driver_allocations = 0;  // driver allocation calls made, ever
  std::size_t live_slices = 0;         // slices the pool owns now (free or handed out)
  std::size_t reserved_bytes = 0;      // their total capacity
  std::size_t free_slices = 0;         // of which free (dynamic + persistent)
  std::size_t retained_slices = 0;     // released while priming, held until priming ends
};

}  // namespace graphcap::memory
