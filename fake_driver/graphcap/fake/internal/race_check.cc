#include <graphcap/fake/internal/race_check.h>

#include <algorithm>

#include <graphcap/fake/internal/graph_model.h>

namespace graphcap::fake::internal {

void AccessLog::add(CUdeviceptr begin, std::size_t bytes, bool write) {
  if (bytes == 0) return;
  const CUdeviceptr end = begin + bytes;
  // The last range of the same kind, if the new one touches it: most bodies walk forwards.
  for (auto it = ranges.rbegin(); it != ranges.rend() && it - ranges.rbegin() < 2; ++it) {
    if (it->write != write) continue;
    if (begin >= it->begin && begin <= it->end) {
      it->end = std::max(it->end, end);
      return;
    }
    break;
  }
  ranges.push_back({begin, end, write});
}

void AccessLog::append(const AccessLog& other) {
  ranges.insert(ranges.end(), other.ranges.begin(), other.ranges.end());
}

Reachability::Reachability(const std::vector<NodeData>& nodes,
                           const std::vector<std::size_t>& order)
    : words_((nodes.size() + 63) / 64), bits_(nodes.size() * words_, 0) {
  for (std::size_t node : order) {
    std::uint64_t* mine = bits_.data() + node * words_;
    for (std::size_t dep : nodes[node].deps) {
      const std::uint64_t* theirs = bits_.data() + dep * words_;
      for (std::size_t w = 0; w < words_; ++w) mine[w] |= theirs[w];
      mine[dep / 64] |= std::uint64_t{1} << (dep % 64);
    }
  }
}

std::vector<Race> find_races(const std::vector<AccessLog>& logs, const Reachability& reach) {
  struct Interval {
    CUdeviceptr begin, end;
    std::size_t node;
    bool write;
  };
  std::vector<Interval> all;
  for (std::size_t node = 0; node < logs.size(); ++node) {
    for (const Access& access : logs[node].ranges) {
      all.push_back({access.begin, access.end, node, access.write});
    }
  }
  std::sort(all.begin(), all.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Race> races;
  std::set<std::pair<std::size_t, std::size_t>> found;
  std::vector<const Interval*> active;  // ranges begun so far that may still overlap
  for (const Interval& next : all) {
    std::erase_if(active, [&](const Interval* open) { return open->end <= next.begin; });
    for (const Interval* open : active) {
      if (open->node == next.node || (!open->write && !next.write)) continue;
      if (reach.ordered(open->node, next.node)) continue;
      const bool open_first = open->node < next.node;
      const auto pair = open_first ? std::make_pair(open->node, next.node)
                                   : std::make_pair(next.node, open->node);
      if (!found.insert(pair).second) continue;
      Race race;
      race.first = pair.first;
      race.second = pair.second;
      race.first_writes = open_first ? open->write : next.write;
      race.second_writes = open_first ? next.write : open->write;
      race.begin = next.begin;
      race.end = std::min(open->end, next.end);
      races.push_back(race);
    }
    active.push_back(&next);
  }
  return races;
}

}  // namespace graphcap::fake::internal
