// DeviceLimits: the launch limits of a device, read once when it opens; launches are checked
// against them before the driver sees them.
#pragma once

#include <cstddef>

#include <graphcap/driver/launch_dims.h>

namespace graphcap {

// graphcap's own limits on one launch, on any device: at most kMaxLaunchArgs arguments, each value
// or param at most kMaxArgBytes bytes (larger data goes through a Buffer). Launches past them are
// refused, and the fixed-size copies of a launch's arguments are this long.
inline constexpr std::size_t kMaxLaunchArgs = 64;
inline constexpr std::size_t kMaxArgBytes = 64;

struct DeviceLimits {
  unsigned max_threads_per_block = 0;
  Dim3 max_block;
  Dim3 max_grid;
  unsigned max_shared_bytes = 0;          // dynamic shared memory per block, with opt-in
  unsigned default_shared_bytes = 0;      // per block without opt-in (48 KiB on CUDA GPUs)
};

}  // namespace graphcap
