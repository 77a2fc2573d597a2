// Order between streams (docs/capture-lifecycle.md, "Buffers on several streams"): positions on
// streams (a stream and one of its operations' sequence numbers) known to come before something.
// One representation for every source of order: what a stream's next work comes after (merged
// from each event it waits for, inside and outside recordings), what an event's record carries
// (all of it, so order passes through any number of events), and what the host has seen finish.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <graphcap/memory/slice_owner.h>

namespace graphcap::detail {

class OrderList {
 public:
  // `stream` up to its operation `sequence` (of two positions on one stream, the later holds).
  void merge(const memory::SliceOwner* stream, std::uint64_t sequence);
  void merge(const OrderList& other);
  // Whether operation `sequence` of `stream` is among the positions.
  bool covers(const memory::SliceOwner* stream, std::uint64_t sequence) const noexcept;

 private:
  std::vector<std::pair<const memory::SliceOwner*, std::uint64_t>> positions_;
};

// A position on a stream and every position of other streams known to come before it: what an
// event recorded there marks.
struct OrderPoint {
  const memory::SliceOwner* stream = nullptr;  // nullptr: no position (an event never recorded)
  std::uint64_t sequence = 0;
  OrderList after;
};

// What the host has seen finish: a host synchronisation that returned success completes the
// point it waited for, and everything ordered before it (thread-safe).
class CompletedOrder {
 public:
  void completed(const OrderPoint& point);
  bool covers(const memory::SliceOwner* stream, std::uint64_t sequence) const;

 private:
  mutable std::mutex mutex_;
  std::atomic<bool> any_{false};  // read first: most checks find no sync ever completed
  OrderList completed_;
};

}  // namespace graphcap::detail
