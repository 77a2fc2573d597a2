#include <graphcap/fake/internal/stream_order.h>

#include <algorithm>

namespace graphcap::fake::internal {

std::uint64_t VectorClock::of(std::uint64_t stream) const noexcept {
  auto it = std::lower_bound(counts_.begin(), counts_.end(), stream,
                             [](const auto& entry, std::uint64_t id) { return entry.first < id; });
  return it != counts_.end() && it->first == stream ? it->second : 0;
}

void VectorClock::join(const VectorClock& other) {
  if (other.counts_.empty()) return;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
  merged.reserve(counts_.size() + other.counts_.size());
  auto a = counts_.begin();
  auto b = other.counts_.begin();
  while (a != counts_.end() || b != other.counts_.end()) {
    if (b == other.counts_.end() || (a != counts_.end() && a->first < b->first)) {
      merged.push_back(*a++);
    } else if (a == counts_.end() || b->first < a->first) {
      merged.push_back(*b++);
    } else {
      merged.emplace_back(a->first, std::max(a->second, b->second));
      ++a;
      ++b;
    }
  }
  counts_ = std::move(merged);
}

std::uint64_t VectorClock::advance(std::uint64_t stream) {
  auto it = std::lower_bound(counts_.begin(), counts_.end(), stream,
                             [](const auto& entry, std::uint64_t id) { return entry.first < id; });
  if (it == counts_.end() || it->first != stream) it = counts_.insert(it, {stream, 0});
  return ++it->second;
}

std::vector<LastWrites::Conflict> LastWrites::write(CUdeviceptr begin, CUdeviceptr end,
                                                    const EagerWrite& write,
                                                    const VectorClock& clock) {
  std::vector<Conflict> conflicts;
  if (begin >= end) return conflicts;
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin() && std::prev(it)->second.end > begin) --it;
  std::vector<std::pair<CUdeviceptr, Entry>> kept;  // the parts of overlapped ranges outside
  while (it != ranges_.end() && it->first < end) {
    const EagerWrite& earlier = *it->second.write;
    if (earlier.stream != write.stream && earlier.count > clock.of(earlier.stream)) {
      const bool seen = std::any_of(conflicts.begin(), conflicts.end(), [&](const Conflict& c) {
        return c.earlier.stream == earlier.stream && c.earlier.count == earlier.count;
      });
      if (!seen) {
        conflicts.push_back({earlier, std::max(begin, it->first), std::min(end, it->second.end)});
      }
    }
    if (it->first < begin) kept.push_back({it->first, Entry{begin, it->second.write}});
    if (it->second.end > end) kept.push_back({end, Entry{it->second.end, it->second.write}});
    it = ranges_.erase(it);
  }
  for (auto& [at, entry] : kept) ranges_.emplace(at, std::move(entry));
  ranges_.emplace(begin, Entry{end, std::make_shared<const EagerWrite>(write)});
  return conflicts;
}

}  // namespace graphcap::fake::internal
