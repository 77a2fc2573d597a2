// The rule of docs/capture-lifecycle.md, "Buffers on several streams", as one check: whether a
// stream may use a buffer now. A read must come after the buffer's last write on another stream, a
// write after every use on other streams since that write; a graph's replays are uses on its
// stream at the replay's position. Eager and recorded operations check it before they are issued
// (Device::check_buffer); a graph's replay checks it for each of its buffers when another stream
// used one since (GraphState::check_replay_order).
#pragma once

#include <graphcap/detail/stream_core.h>
#include <graphcap/memory/buffer_state.h>
#include <graphcap/result.h>

namespace graphcap::detail {

// The rule's hot path, read before anything else wherever the rule is checked: `stream` used
// `buffer` last (and, for a write, no other stream read it since), no graph of another stream
// replays with it, and `stream` is not a side stream of a recording (whose own earlier work is
// not the graph's). True: in order, without taking a lock.
inline bool used_last_here(const memory::BufferState& buffer, const StreamCore& stream,
                           bool writes) noexcept {
  return buffer.writer() == &stream && (!writes || !buffer.has_readers()) &&
         !buffer.replays().concern(stream, buffer.owner()) && !stream.forked();
}

// Errc::invalid_argument naming `what` (and the stream of the use that is not ordered, with how
// to order it) when `stream` may not use `buffer` now; `writes`: the use writes it.
Result<void> check_buffer_order(const memory::BufferState& buffer, StreamCore& stream,
                                const char* what, bool writes);

}  // namespace graphcap::detail
