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

// What one stream's next work is ordered after (thread-safe): its eager work's order, merged from
// each event it waited for, and a recording's, which starts from the eager order and holds only
// inside that recording (a recorded wait orders the graph's nodes, never the stream's eager work).
class StreamOrder {
 public:
  // What work entering recording `recording` (0: eager work) is ordered after, now.
  OrderList now(std::uint64_t recording) const;
  // Waited (eagerly) for an event marking `point` of another stream.
  void after(const OrderPoint& point);
  // The same for a wait recorded into recording `recording` (a fork or a join).
  void after_in(std::uint64_t recording, const OrderPoint& point);
  // Whether work entering `recording` comes after operation `sequence` of `stream` by the events
  // waited for.
  bool covers(std::uint64_t recording, const memory::SliceOwner* stream,
              std::uint64_t sequence) const;

 private:
  const OrderList& now_locked(std::uint64_t recording) const noexcept {
    return recording != 0 && recorded_of_ == recording ? in_recording_ : eager_;
  }
  mutable std::mutex mutex_;
  OrderList eager_;
  std::uint64_t recorded_of_ = 0;  // the recording in_recording_ is of
  OrderList in_recording_;
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
