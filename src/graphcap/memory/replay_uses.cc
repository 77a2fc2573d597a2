#include <graphcap/memory/replay_uses.h>

#include <algorithm>

namespace graphcap::memory {

void ReplayUses::add(const ReplayUse& use, const SliceOwner& owner) {
  std::lock_guard lock(mutex_);
  owner_ = &owner;
  for (ReplayUse& other : uses_) {
    if (other.stream == use.stream || !(other.writes || use.writes)) continue;
    // Replays on two streams: nothing stamps either, so each checks the other at every replay.
    use.checks->fetch_or(ReplayChecks::kShared, std::memory_order_acq_rel);
    if (other.checks != nullptr) other.checks->fetch_or(ReplayChecks::kShared, std::memory_order_acq_rel);
  }
  uses_.push_back(use);
  refresh_flags(owner);
}

void ReplayUses::forget(const void* graph) {
  std::lock_guard lock(mutex_);
  if (std::erase_if(uses_, [&](const ReplayUse& use) { return use.graph == graph; }) != 0 &&
      owner_ != nullptr) {
    refresh_flags(*owner_);
  }
}

void ReplayUses::freeze(const void* graph) {
  std::lock_guard lock(mutex_);
  // One frozen use per graph: a later freeze supersedes an earlier one (its position is later).
  const SliceOwner* stream = nullptr;
  std::uint64_t at = 0;
  bool writes = false;
  bool found = false;
  for (const ReplayUse& use : uses_) {
    if (use.graph != graph) continue;
    found = true;
    stream = use.stream;
    at = std::max(at, use.at());
    writes = writes || use.writes;
  }
  if (!found) return;
  std::erase_if(uses_, [&](const ReplayUse& use) { return use.graph == graph; });
  if (at != 0) uses_.push_back({graph, stream, nullptr, at, nullptr, writes});
  if (owner_ != nullptr) refresh_flags(*owner_);
}

void ReplayUses::conflicts(const SliceOwner& stream, bool writes, std::vector<At>& out) const {
  std::lock_guard lock(mutex_);
  for (const ReplayUse& use : uses_) {
    if (use.stream == &stream || !(writes || use.writes)) continue;
    if (const std::uint64_t at = use.at(); at != 0) out.push_back({use.stream, at, use.writes});
  }
}

void ReplayUses::used_by(const SliceOwner& stream, bool writes) {
  std::lock_guard lock(mutex_);
  for (const ReplayUse& use : uses_) {
    if (use.stream == &stream || use.checks == nullptr || !(writes || use.writes)) continue;
    use.checks->fetch_or(ReplayChecks::kUsedElsewhere, std::memory_order_acq_rel);
  }
}

void ReplayUses::failed() {
  std::lock_guard lock(mutex_);
  for (const ReplayUse& use : uses_) {
    if (use.checks != nullptr) use.checks->fetch_or(ReplayChecks::kCarriesFailure, std::memory_order_acq_rel);
  }
}

void ReplayUses::refresh_flags(const SliceOwner& owner) {
  any_.store(!uses_.empty(), std::memory_order_release);
  off_owner_.store(std::any_of(uses_.begin(), uses_.end(),
                               [&](const ReplayUse& use) { return use.stream != &owner; }),
                   std::memory_order_release);
}

}  // namespace graphcap::memory
