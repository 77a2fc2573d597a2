// The order rule of docs/capture-lifecycle.md ("Buffers on several streams") as a host model, for
// the random models of tests/reliability: a stream may read a buffer once it is ordered after the
// buffer's last write on another stream, and write it once it is ordered after every use on other
// streams since that write. Per stream, its operation count and a vector clock of the other
// streams' positions it is ordered after (Device::record captures it, Device::wait merges it in),
// with a second clock for the order a wait recorded into a recording gives (it orders that
// recording's operations, never eager work; an event carries the clock that orders its stream's
// work now, so order passes through every event); per device, the positions completed host syncs
// saw finish (every stream is ordered after them); per buffer, what memory::BufferState keeps:
// its writer, that write's and the writer's last use's operation numbers, other streams' reads
// since. A graph replays on its origin: a side stream's operations before its fork are eager
// work, so inside the recording they are neither ordered by the side stream's own order nor
// marked by its events (detail::StreamOrder).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>

namespace graphcap::testing::model {

template <std::size_t Streams>
struct StreamOrder {
  using Clock = std::array<std::uint64_t, Streams>;
  std::uint64_t seq = 0;  // operations stamped so far (the drop queue's count)
  Clock clock{};          // eager order: per other stream, the position it is ordered after
  std::uint64_t recorded_of = 0;  // the recording recorded_clock holds for
  Clock recorded_clock{};         // every operation up to the position
  // Besides, per stream, its operations in (above, upto]: a side stream's recorded work.
  Clock recorded_above{};
  Clock recorded_upto{};
  std::uint64_t joined_at = 0;  // a side stream of recorded_of: its last operation before the fork
};

struct BufferUsage {
  int writer = 0;
  std::uint64_t write_seq = 0;
  std::uint64_t use_seq = 0;
  std::map<int, std::uint64_t> readers;  // other streams' reads since the write
};

// What orders the work stream `order` enqueues now, in `recording` (0: none): what an event
// recorded now carries.
template <std::size_t Streams>
const typename StreamOrder<Streams>::Clock& current_clock(const StreamOrder<Streams>& order,
                                                          std::uint64_t recording) {
  return recording != 0 && order.recorded_of == recording ? order.recorded_clock : order.clock;
}

// A host sync of stream `s` (with `order`) completed: its work so far and what it was ordered
// after have finished.
template <std::size_t Streams>
void complete(typename StreamOrder<Streams>::Clock& completed, const StreamOrder<Streams>& order,
              int s) {
  for (std::size_t t = 0; t < Streams; ++t) {
    completed[t] = std::max(completed[t], static_cast<int>(t) == s ? order.seq : order.clock[t]);
  }
}

// Whether stream `s` is ordered after operation `seq` of stream `other`; `recording` is the
// recording `s` records into now (0: none), whose recorded order counts too; `completed`: what
// completed host syncs saw finish.
template <std::size_t Streams>
bool ordered(const StreamOrder<Streams>& order, int s, int other, std::uint64_t seq,
             std::uint64_t recording, const typename StreamOrder<Streams>::Clock& completed) {
  const auto at = static_cast<std::size_t>(other);
  if (seq == 0 || completed[at] >= seq) return true;
  const bool inside = recording != 0 && order.recorded_of == recording;
  if (other == s && (!inside || seq > order.joined_at)) return true;
  if (!inside) return order.clock[at] >= seq;
  return order.recorded_clock[at] >= seq ||
         (seq > order.recorded_above[at] && seq <= order.recorded_upto[at]);
}

// The order part of Device::check_buffer: may stream `s` use a buffer with `usage` now (writing it
// when `writes`)?
template <std::size_t Streams>
bool ordered_for_use(const StreamOrder<Streams>& order, int s, const BufferUsage& usage,
                     bool writes, std::uint64_t recording,
                     const typename StreamOrder<Streams>::Clock& completed) {
  // (ordered answers for s's own uses too: a side stream's before its fork are not the graph's.)
  if (!ordered(order, s, usage.writer, writes ? usage.use_seq : usage.write_seq, recording,
               completed)) {
    return false;
  }
  if (writes) {
    for (const auto& [reader, seq] : usage.readers) {
      if (!ordered(order, s, reader, seq, recording, completed)) return false;
    }
  }
  return true;
}

// memory::BufferState::used_by: stream `s` used the buffer at its operation `seq`.
inline void stamp(BufferUsage& usage, int s, bool writes, std::uint64_t seq) {
  if (usage.writer == s) {
    usage.use_seq = seq;
    if (writes) {
      usage.write_seq = seq;
      usage.readers.clear();
    }
    return;
  }
  if (writes) {
    usage.readers.clear();
    usage.writer = s;
    usage.write_seq = usage.use_seq = seq;
    return;
  }
  usage.readers[s] = seq;
}

// Stream `s` is ordered after operation `seq` of stream `other` (those after `above` only, when
// not 0: a side stream's recorded work): eagerly, or (recording != 0) for the operations it
// records into that recording only.
template <std::size_t Streams>
void merge(StreamOrder<Streams>& order, int s, int other, std::uint64_t seq,
           std::uint64_t recording = 0, std::uint64_t above = 0) {
  const auto at = static_cast<std::size_t>(other);
  if (recording == 0) {
    if (other != s) order.clock[at] = std::max(order.clock[at], seq);
    return;
  }
  if (order.recorded_of != recording) {
    // The origin: what it was ordered after eagerly holds too (its replays come after it).
    order.recorded_of = recording;
    order.recorded_clock = order.clock;
    order.recorded_above = order.recorded_upto = {};
    order.joined_at = 0;
  }
  if (above == 0) {
    order.recorded_clock[at] = std::max(order.recorded_clock[at], seq);
  } else {
    order.recorded_above[at] = above;
    order.recorded_upto[at] = std::max(order.recorded_upto[at], seq);
  }
}

// Stream `s` was forked into `recording` after its operation `joined_at`: nothing it was ordered
// after eagerly, nor its own work so far, comes before the graph.
template <std::size_t Streams>
void fork(StreamOrder<Streams>& order, std::uint64_t recording, std::uint64_t joined_at) {
  order.recorded_of = recording;
  order.recorded_clock = order.recorded_above = order.recorded_upto = {};
  order.joined_at = joined_at;
}

}  // namespace graphcap::testing::model
