// Races between the nodes of a launched graph: the device bytes each node read and wrote while it
// ran, which nodes a path of edges orders, and the pairs that overlap with no such path, at least
// one of them writing (FakeDriverOptions::detect_races).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include <graphcap/driver/cuda_types.h>

namespace graphcap::fake::internal {

struct NodeData;

// [begin, end) of device memory that one piece of work read or wrote.
struct Access {
  CUdeviceptr begin = 0;
  CUdeviceptr end = 0;
  bool write = false;
};

// What one piece of work (a node, an eager operation) touched, in the order it touched it.
// Neighbouring accesses of the same kind grow the last range instead of adding one (a kernel's
// threads walk an array element by element).
struct AccessLog {
  std::vector<Access> ranges;
  void add(CUdeviceptr begin, std::size_t bytes, bool write);
  void append(const AccessLog& other);
  void clear() { ranges.clear(); }
};

// Which nodes of one graph a path of edges orders: per node, the set of its ancestors (bitsets:
// n^2 bits, computed once per executable in topological order).
class Reachability {
 public:
  Reachability(const std::vector<NodeData>& nodes, const std::vector<std::size_t>& order);
  bool ordered(std::size_t a, std::size_t b) const noexcept {
    return before(a, b) || before(b, a);
  }

 private:
  bool before(std::size_t a, std::size_t b) const noexcept {  // a is an ancestor of b
    return (bits_[b * words_ + a / 64] >> (a % 64) & 1u) != 0;
  }
  std::size_t words_ = 0;
  std::vector<std::uint64_t> bits_;
};

// One race: nodes `first` < `second` touch [begin, end) with no path of edges between them.
struct Race {
  std::size_t first = 0;
  std::size_t second = 0;
  bool first_writes = false;
  bool second_writes = false;
  CUdeviceptr begin = 0;
  CUdeviceptr end = 0;
};

// The races among `logs` (one per node), which ran in `order`: each pair of nodes once, with the
// bytes where it was found. A node is compared with the last writer of each range it touches
// and, when it writes, with the readers since that write (what an ordered chain of nodes costs
// is linear in its accesses).
std::vector<Race> find_races(const std::vector<AccessLog>& logs,
                             const std::vector<std::size_t>& order, const Reachability& reach);

// What an executable remembers for the check: its reachability (computed at its first checked
// launch) and the pairs already reported (each race once per executable, not once per replay).
struct RaceCache {
  explicit RaceCache(Reachability computed) : reach(std::move(computed)) {}
  Reachability reach;
  std::set<std::pair<std::size_t, std::size_t>> reported;
};

}  // namespace graphcap::fake::internal
