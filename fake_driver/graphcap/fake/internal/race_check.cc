#include <graphcap/fake/internal/race_check.h>

#include <algorithm>
#include <map>

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

std::vector<Race> find_races(const std::vector<AccessLog>& logs,
                             const std::vector<std::size_t>& order, const Reachability& reach) {
  // The nodes in the order they ran (a topological order): a node that ran earlier is either
  // an ancestor of a later one or unordered with it, never a descendant. Per byte range, the
  // node that wrote it last and the nodes that read it since: a write is compared with both, a
  // read with the writer, and a write then replaces them. An in-place chain of n nodes costs n
  // comparisons, not n^2; a race is reported with the last writer or readers of the bytes.
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  struct Segment {
    CUdeviceptr end = 0;
    std::size_t writer = kNone;
    std::vector<std::size_t> readers;
  };
  std::map<CUdeviceptr, Segment> segments;  // by begin; disjoint
  std::vector<Race> races;
  std::set<std::pair<std::size_t, std::size_t>> found;
  auto report = [&](std::size_t earlier, bool earlier_writes, std::size_t node, bool writes,
                    CUdeviceptr begin, CUdeviceptr end) {
    if (earlier == node || reach.ordered(earlier, node)) return;
    const bool earlier_first = earlier < node;
    const auto pair = earlier_first ? std::make_pair(earlier, node) : std::make_pair(node, earlier);
    if (!found.insert(pair).second) return;
    Race race;
    race.first = pair.first;
    race.second = pair.second;
    race.first_writes = earlier_first ? earlier_writes : writes;
    race.second_writes = earlier_first ? writes : earlier_writes;
    race.begin = begin;
    race.end = end;
    races.push_back(race);
  };
  // A segment boundary at `at` (the segment holding it split in two).
  auto split = [&](CUdeviceptr at) {
    auto it = segments.upper_bound(at);
    if (it == segments.begin()) return;
    --it;
    if (it->first < at && at < it->second.end) {
      Segment right = it->second;
      it->second.end = at;
      segments.emplace(at, std::move(right));
    }
  };
  auto apply = [&](std::size_t node, const Access& access) {
    split(access.begin);
    split(access.end);
    CUdeviceptr at = access.begin;
    auto it = segments.lower_bound(access.begin);
    while (at < access.end) {
      if (it == segments.end() || it->first > at) {  // bytes nobody touched yet
        const CUdeviceptr gap_end =
            it == segments.end() ? access.end : std::min(access.end, it->first);
        Segment fresh;
        fresh.end = gap_end;
        if (access.write) {
          fresh.writer = node;
        } else {
          fresh.readers.push_back(node);
        }
        it = std::next(segments.emplace_hint(it, at, std::move(fresh)));
        at = gap_end;
        continue;
      }
      Segment& segment = it->second;
      if (segment.writer != kNone) {
        report(segment.writer, true, node, access.write, it->first, segment.end);
      }
      if (access.write) {
        for (std::size_t reader : segment.readers) {
          report(reader, false, node, true, it->first, segment.end);
        }
        segment.writer = node;
        segment.readers.clear();
      } else if (segment.readers.empty() || segment.readers.back() != node) {
        segment.readers.push_back(node);
      }
      at = segment.end;
      ++it;
    }
  };
  for (std::size_t node : order) {
    if (node >= logs.size()) continue;
    for (const Access& access : logs[node].ranges) apply(node, access);
  }
  return races;
}

}  // namespace graphcap::fake::internal
