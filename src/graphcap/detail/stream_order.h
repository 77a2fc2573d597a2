// Order between streams (docs/capture-lifecycle.md, "Buffers on several streams"): positions on
// streams (a stream and one of its operations' sequence numbers) known to come before something.
// One representation for every source of order: what a stream's next work comes after (merged
// from each event it waits for, inside and outside recordings), what an event's record carries
// (all of it, so order passes through any number of events), and what the host has seen finish.
// A graph runs on its origin stream: a side stream's work before it was forked into the
// recording is eager work, which no order inside the recording comes after. So a side stream's
// position inside a recording marks only its recorded work (the operations after its fork).
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
  // `stream` up to its operation `sequence`, counting only the operations after `above` (a side
  // stream's recorded work; 0: all of them). Of two positions on one stream, the later holds.
  void merge(const memory::SliceOwner* stream, std::uint64_t sequence, std::uint64_t above = 0);
  void merge(const OrderList& other);
  // Whether operation `sequence` of `stream` is among the positions.
  bool covers(const memory::SliceOwner* stream, std::uint64_t sequence) const noexcept;

 private:
  struct Position {
    const memory::SliceOwner* stream;
    std::uint64_t all = 0;    // every operation up to here
    std::uint64_t above = 0;  // and those in (above, upto]: a side stream's recorded work
    std::uint64_t upto = 0;
  };
  Position& at(const memory::SliceOwner* stream);
  std::vector<Position> positions_;
};

// A position on a stream and every position of other streams known to come before it: what an
// event recorded there marks.
struct OrderPoint {
  const memory::SliceOwner* stream = nullptr;  // nullptr: no position (an event never recorded)
  std::uint64_t sequence = 0;
  // The operations of `stream` it marks are those after this one (a side stream inside a
  // recording: its eager work before the fork is not the graph's).
  std::uint64_t above = 0;
  OrderList after;
};

// What one stream's next work is ordered after (thread-safe): its eager work's order, merged from
// each event it waited for, and a recording's, which holds only inside that recording (a recorded
// wait orders the graph's nodes, never the stream's eager work). On the origin the recording's
// starts from the eager order (the graph replays after the origin's earlier work); on a side
// stream it starts from the fork (the graph does not come after the side stream's eager work).
class StreamOrder {
 public:
  // What work entering recording `recording` (0: eager work) is ordered after, now.
  OrderList now(std::uint64_t recording) const;
  // Waited (eagerly) for an event marking `point` of another stream.
  void after(const OrderPoint& point);
  // The same for a wait recorded into recording `recording` (a join, or a wait between side
  // streams).
  void after_in(std::uint64_t recording, const OrderPoint& point);
  // The stream was forked into recording `recording` by a wait for `point`, after its operation
  // `joined_at`: its own operations up to there are eager work.
  void fork(std::uint64_t recording, std::uint64_t joined_at, const OrderPoint& point);
  // In `recording`: the stream's last operation before its fork (0: not a side stream of it).
  std::uint64_t joined_at(std::uint64_t recording) const;
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
  std::uint64_t joined_at_ = 0;    // a side stream of recorded_of_: where it forked
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
