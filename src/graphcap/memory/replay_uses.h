// ReplayUses: the graphs that replay with one buffer, as users of it (docs/capture-lifecycle.md,
// "Buffers on several streams"). A replay stamps nothing on the buffer: each graph keeps the
// position of its last replay on its stream in one word of its own (the only word the replay hot
// path writes), and the buffer keeps where to read it. Another stream's use is checked against
// those positions, and it tells each graph whose replays it conflicts with to check its own order
// at its next replay.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace graphcap::memory {

class SliceOwner;

// The bits of a graph's replay word (detail::ReplayBlock::flags) that users of its buffers set:
// a replay that finds either checks its order against the buffers' other users first.
struct ReplayChecks {
  static constexpr unsigned kUsedElsewhere = 2;  // another stream used a buffer since: check once
  static constexpr unsigned kShared = 4;  // a graph of another stream shares a buffer: every time
  // A buffer carries a failure: a replay reading one is skipped, one producing it clears it.
  static constexpr unsigned kCarriesFailure = 8;
};

// One graph's replays, as users of one buffer.
struct ReplayUse {
  const void* graph = nullptr;          // whose (to forget or freeze them)
  const SliceOwner* stream = nullptr;   // where it replays
  // Its last replay's position on `stream` (0: never replayed), read live; nullptr once the graph
  // no longer replays with this buffer (re-recorded without it): then `frozen_at` holds it.
  const std::atomic<std::uint64_t>* position = nullptr;
  std::uint64_t frozen_at = 0;
  std::atomic<unsigned>* checks = nullptr;  // the graph's replay word; nullptr once frozen
  bool writes = false;

  std::uint64_t at() const noexcept {
    return position != nullptr ? position->load(std::memory_order_acquire) : frozen_at;
  }
};

class ReplayUses {
 public:
  // A use on `stream` of a buffer owned by `owner` must look at the graphs (lock-free: the hot
  // path of a stream using its own buffer, whose graphs all replay there, reads two flags).
  bool concern(const SliceOwner& stream, const SliceOwner& owner) const noexcept {
    return any_.load(std::memory_order_acquire) &&
           (off_owner_.load(std::memory_order_acquire) || &stream != &owner);
  }

  // A graph replays with the buffer from now on. A graph of another stream whose replays
  // conflict with its (either writes) makes both check their order at every replay.
  void add(const ReplayUse& use, const SliceOwner& owner);
  // The graph no longer replays at all (released after waiting for its replays).
  void forget(const void* graph);
  // The graph no longer replays with this buffer (re-recorded): its last position stays a use
  // until the graph goes, since replays of the old executable may still be queued.
  void freeze(const void* graph);

  // The last replay of each graph of another stream than `stream` that a use there (a write when
  // `writes`) must come after: a write after every replay, a read after the replays that write.
  struct At {
    const SliceOwner* stream;
    std::uint64_t sequence;
    bool writes;
  };
  void conflicts(const SliceOwner& stream, bool writes, std::vector<At>& out) const;
  // The buffer started carrying a failure: every graph replaying with it looks before its next
  // replay.
  void failed();
  // `stream` used the buffer eagerly: each graph of another stream whose replays conflict with
  // that use checks its order at its next replay.
  void used_by(const SliceOwner& stream, bool writes);

 private:
  mutable std::mutex mutex_;
  std::vector<ReplayUse> uses_;  // guarded by mutex_
  std::atomic<bool> any_{false};
  std::atomic<bool> off_owner_{false};  // some graph replays on another stream than the owner
  void refresh_flags(const SliceOwner& owner);
  const SliceOwner* owner_ = nullptr;  // guarded by mutex_ (set by the first add)
};

}  // namespace graphcap::memory
