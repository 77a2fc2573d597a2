// Counts heap allocations made through operator new on the calling thread. graphcap-bench
// replaces the global operator new/delete (alloc_counter.cc) so a benchmark can check, outside its
// timed region, how many allocations one call makes: Graph::replay() should make none beyond
// what the driver's own cuGraphLaunch makes.
#pragma once

#include <cstdint>

namespace graphcap::bench {

// Allocations through any operator new on this thread since it started.
std::uint64_t allocations_on_this_thread() noexcept;

}  // namespace graphcap::bench
