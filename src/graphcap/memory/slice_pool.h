// SlicePool: the caching allocator of one stream, for one kind of memory (device, or pinned host
// staging). Two pools in one:
//  - dynamic: size-classed free lists; a request a free slice can serve makes no driver call;
//  - persistent: exact-fit free lists that serve capture windows. While armed (prepare_capture
//    to end_capture) every request goes here. While priming (the warm-up run) every slice handed
//    out is retained when released, so the pool grows to the run's full distinct working set; at
//    the end of priming the retained slices become free for the recording to reuse. While
//    recording, the pool never calls the driver: a request it can't serve is an error.
// Not locked: its stream's mutex guards it.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include <graphcap/driver/driver_api.h>
#include <graphcap/log.h>
#include <graphcap/memory/pool_stats.h>
#include <graphcap/memory/slice.h>
#include <graphcap/result.h>

namespace graphcap::memory {

class SlicePool {
 public:
  SlicePool(DriverApi& driver, SliceKind kind) : driver_(&driver), kind_(kind) {}
  ~SlicePool() { free_all(); }
  SlicePool(const SlicePool&) = delete;
  SlicePool& operator=(const SlicePool&) = delete;

  // A slice of at least `bytes` (> 0). `may_allocate` false forbids driver calls (an unsafe call
  // would invalidate another stream's recording); the pool then serves from its free lists only.
  Result<Slice> acquire(std::size_t bytes, bool may_allocate);
  // A slice whose last use the stream has passed: back to its free list (or retained).
  void release(Slice slice);

  // Capture hooks, in order: arm (persistent + priming), end_priming, then disarm.
  void arm() noexcept;
  void end_priming() noexcept;
  void disarm() noexcept;
  void set_recording(bool recording) noexcept { recording_ = recording; }
  bool armed() const noexcept { return armed_; }
  bool priming() const noexcept { return priming_; }

  // Give the persistent pool's free slices back to the driver (a graph pool on virtual memory lays
  // its recordings out in its own range, so what the warm-up left here would only be cached).
  // Call where an unsafe call is allowed.
  void trim_persistent() noexcept;

  // The level a teardown failure with a driver code is logged at (warn when empty): the closing
  // device says info for the consequences of a fault its user was already told of.
  using TeardownLevel = std::function<LogLevel(CUresult)>;
  // Return every slice, free or not, to the driver (the device is closing), except those at
  // `kept` (held by graphs of other devices: each goes to the driver with free_kept later).
  // Frees that fail are logged once per driver code, with how many and how much.
  void free_all(const std::vector<std::uintptr_t>& kept = {},
                const TeardownLevel& level = {}) noexcept;
  // A slice free_all kept: to the driver now. False when the pool does not hold it.
  bool free_kept(const Slice& slice) noexcept;

  PoolStats stats() const;

 private:
  Result<Slice> allocate(std::size_t capacity, bool persistent);
  void trim_free() noexcept;  // give free cached slices back to the driver (on out-of-memory)
  void trim(std::map<std::size_t, std::vector<Slice>>& lists) noexcept;
  CUresult driver_free(const Slice& slice) noexcept;

  DriverApi* driver_;
  SliceKind kind_;
  bool armed_ = false;
  bool priming_ = false;
  bool recording_ = false;
  std::map<std::size_t, std::vector<Slice>> dynamic_free_;     // by size class
  std::map<std::size_t, std::vector<Slice>> persistent_free_;  // by exact size
  std::vector<Slice> retained_;
  std::unordered_map<std::uintptr_t, std::size_t> owned_;      // address -> capacity
  std::size_t reserved_bytes_ = 0;
  std::size_t driver_allocations_ = 0;
};

}  // namespace graphcap::memory
