// DropQueue: where a stream's slices wait between their last handle going away and their reuse.
//
// A slice may return to its pool only once the stream has passed a fence recorded after the
// slice's last use: until then a queued launch or copy may still read or write it. Every use is
// stamped with the stream's operation sequence number; the queue learns the stream's progress
// from synchronizations and from fence events, and releases exactly the slices whose last use
// is behind it. (The seed, see docs/design.md "Where graphcap comes from", double-buffers its
// queue for the same guarantee; stamping each use gives it per slice, so a slice dropped after a
// sync is reusable at once.)
//
// While a capture records on the stream, nothing here calls the driver: a fence recorded into a
// capture would be a graph node, and a query would invalidate it. Flushes wait until the window
// closes. Not locked: the stream's mutex guards it.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <vector>

#include <graphcap/driver/driver_api.h>
#include <memory>

#include <graphcap/memory/slice.h>
#include <graphcap/memory/slice_home.h>
#include <graphcap/memory/slice_pool.h>
#include <graphcap/result.h>

namespace graphcap::memory {

class DropQueue {
 public:
  // `waiting`, when given, is set whenever a drop or a flush leaves drops waiting here: the
  // device polls its streams' queues only then (DeviceCore::collect_deferred), not at every close.
  DropQueue(DriverApi& driver, CUstream stream, SlicePool& device, SlicePool& host,
            std::atomic<bool>* waiting = nullptr)
      : driver_(&driver), stream_(stream), device_(&device), host_(&host), waiting_(waiting) {}
  ~DropQueue() { destroy_events(); }
  DropQueue(const DropQueue&) = delete;
  DropQueue& operator=(const DropQueue&) = delete;

  // The sequence number of an operation about to be enqueued on the stream (one writer: the
  // stream's mutex is held; replays read it without it, see position()).
  std::uint64_t next_use() noexcept {
    const std::uint64_t next = enqueued_.load(std::memory_order_relaxed) + 1;
    enqueued_.store(next, std::memory_order_release);
    return next;
  }
  std::uint64_t last_enqueued() const noexcept { return enqueued_.load(std::memory_order_relaxed); }
  // The same counter, for a graph's replay, which takes no lock: it places itself just after it.
  const std::atomic<std::uint64_t>& position() const noexcept { return enqueued_; }

  // A slice's last handle went away; `last_use` is the sequence number of its last operation.
  // It goes back to `home` when given (a graph pool's range), else to its pool.
  void drop(const Slice& slice, std::uint64_t last_use, std::shared_ptr<SliceHome> home = nullptr);

  // The stream has completed everything enqueued up to `sequence` (a synchronization returned).
  void passed(std::uint64_t sequence);

  // Non-blocking progress: release what finished fences cover, and record a fence for drops
  // still waiting. `may_query` false when a query would invalidate a recording elsewhere.
  void flush(bool may_query);

  // Blocking: fence everything dropped so far, wait for it, release it.
  Result<void> drain();

  std::size_t pending() const noexcept { return pending_.size(); }
  // A flush held back (the stream records: no fence may go into it): what waits still waits, and
  // whoever polls is told so again.
  void flush_later() noexcept { note_waiting(); }
  void destroy_events() noexcept;

 private:
  struct Dropped {
    Slice slice;
    std::uint64_t last_use;
    std::shared_ptr<SliceHome> home;
  };
  void release(const Dropped& dropped);
  struct Fence {
    CUevent event;
    std::uint64_t sequence;
  };

  Result<void> record_fence();
  void release_passed();
  void recycle(CUevent event) { spare_events_.push_back(event); }
  // Drops still wait here: tell whoever polls (waiting_).
  void note_waiting() noexcept {
    if (waiting_ != nullptr && !pending_.empty()) waiting_->store(true, std::memory_order_release);
  }

  DriverApi* driver_;
  CUstream stream_;
  SlicePool* device_;
  SlicePool* host_;
  std::atomic<bool>* waiting_;
  std::atomic<std::uint64_t> enqueued_{0};
  std::uint64_t completed_ = 0;
  std::vector<Dropped> pending_;
  std::deque<Fence> fences_;
  std::vector<CUevent> spare_events_;
};

}  // namespace graphcap::memory
