// GraphPool: graphs that share the memory of their intermediates (Device::create_graph_pool(s),
// CaptureOptions::pool). Every graph of a pool is recorded on the pool's stream and replays on it,
// so stream order runs their replays one at a time and never two at once; that is what makes the
// sharing safe. An intermediate is a buffer allocated inside a pool's recording and dropped
// before end_capture (the warm-up's allocations are never the pool's: they plan what the
// recording takes). Buffers alive after a recording are never shared: a buffer lent from the pool
// that outlives its recording makes end_capture refuse it (Errc::graph_state). Within one
// recording nothing is shared: each allocation is its own memory for the recording's whole life,
// even when the one before it was dropped (the replay orders their uses by the graph's edges, not
// by when the recording allocated them).
//
// Where the device supports CUDA's virtual memory management (and GraphPoolOptions asks for it,
// as it does by default), a pool reserves one range of addresses and lays every recording's
// intermediates out in it from the base, in the order the recording allocates them: every graph
// of the pool uses the same bytes from the base, so the pool holds what its largest graph needs
// (rounded up to the driver's 2 MiB granularity), whatever order the graphs are recorded in.
// begin_capture maps what the warm-up's allocations need at the end of what is mapped, one
// physical allocation a granule (no address any graph holds moves; the recording itself never
// maps). As graphs go (destroyed, evicted from a GraphCache) the granules no remaining graph uses
// are unmapped and given back once the stream has passed their last use: the pool holds the
// largest remaining graph's need rounded up to the granule, in every order of recording and going.
// Elsewhere (plain allocations) a later recording borrows the smallest earlier intermediate that
// holds each of its own, whole: graphs recorded largest first share, others hold their own. An
// intermediate is held while any graph uses it and goes back to the stream's pool with the last
// one; that is all the plain layout promises: recorded largest first, the smaller graphs use the
// largest one's intermediates, so it going gives nothing back while they remain. stats() says
// which layout. A shared handle: copies name one pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace graphcap {

namespace detail {
class GraphPoolState;
}
struct HandleAccess;

struct GraphPoolOptions {
  // Lay the pool out in one reserved range of virtual memory where the device supports it
  // (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED); false: plain allocations.
  bool virtual_memory = true;
  // Addresses to reserve for it (rounded up to the granularity); 0: as many as the device has
  // memory (cuMemGetInfo's total). Reserving costs no device memory (measured on the H200).
  std::size_t reserve_bytes = 0;
};

struct GraphPoolStats {
  bool virtual_memory = false;  // laid out in a reserved range; false: plain allocations
  std::size_t bytes_held = 0;   // device memory the pool holds for its graphs (bytes_held())
  std::size_t intermediates = 0;  // pieces of memory that is (intermediates())
  // On virtual memory (0 otherwise):
  std::size_t granularity = 0;   // the driver's mapping granularity
  std::size_t reserved_bytes = 0;  // addresses reserved
  std::uintptr_t base = 0;         // the first of them (a buffer at or past it is the pool's)
  std::size_t used_bytes = 0;    // from the base to the end of the farthest intermediate in use
  std::size_t growths = 0;       // times the pool mapped more, ever
  std::size_t shrinks = 0;       // times it unmapped its tail and gave it back, ever
};

class GraphPool {
 public:
  GraphPool() = default;  // empty: naming it in CaptureOptions is Errc::invalid_argument

  explicit operator bool() const noexcept { return state_ != nullptr; }
  // Bytes of device memory the pool's graphs share now: the range's mapped memory, or (on plain
  // allocations) each shared intermediate slice once.
  std::size_t bytes_held() const noexcept;
  // How many pieces of memory that is: physical allocations mapped into the range (one a
  // granule), or shared intermediate slices.
  std::size_t intermediates() const noexcept;
  GraphPoolStats stats() const noexcept;

 private:
  friend struct HandleAccess;
  explicit GraphPool(std::shared_ptr<detail::GraphPoolState> state) noexcept
      : state_(std::move(state)) {}

  std::shared_ptr<detail::GraphPoolState> state_;
};

}  // namespace graphcap
