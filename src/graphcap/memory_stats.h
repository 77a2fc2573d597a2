// MemoryStats: what a stream's pools hold (Device::memory_stats).
#pragma once

#include <cstddef>

#include <graphcap/memory/pool_stats.h>

namespace graphcap {

struct MemoryStats {
  memory::PoolStats device;
  memory::PoolStats staging;
  std::size_t pending_drops = 0;  // slices waiting for the stream to pass their last use
};

}  // namespace graphcap
