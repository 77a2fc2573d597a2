// The streams of a random model that records over several of them (random_multistream_test.cc,
// the many-graph model): each stream's capture state and order (order.h), the order completed host
// syncs give, the events that carry order between streams, and the one recording open, as the
// driver keeps it: its nodes with their dependencies (each stream's frontier), the side streams
// forked into it, and each buffer's usage before the recording used it (what a refusal leaves).
// The rules of docs/capture-lifecycle.md ("Buffers on several streams", "Events", "Several streams
// in one recording"):
//   - waiting inside the recording on an event recorded outside it, or in another recording, is
//     invalid_argument; a stream outside any window that waits on an event of the open recording
//     is forked into it (a stream with a window of its own: graph_state; an ended recording's
//     event: invalid_argument);
//   - the recording's origin must be ordered after the last node of every side stream when it
//     ends (unjoined() names the one that is not);
//   - when it closes the side streams leave it; a refused recording's uses never ran (each buffer
//     has the users it had without them), a graph's side uses become its origin's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <graphcap/graphcap.h>

#include "model/order.h"
#include "model/world.h"

namespace graphcap::testing::model {

constexpr int kOrderedStreams = World::kStreams;  // the world's streams, the checker aside
using Clock = StreamOrder<kOrderedStreams>::Clock;

struct StreamState : StreamOrder<kOrderedStreams> {
  CaptureState state = CaptureState::no_capture;
  bool side = false;  // forked into the open recording
};

struct EventState {
  bool recorded = false;
  int stream = 0;
  std::uint64_t seq = 0;
  Clock clock{};
  // Recorded on a side stream inside a recording: it marks only that stream's operations after
  // `above` (its recorded work), and the side streams' recorded work it is ordered after.
  std::uint64_t above = 0;
  Clock recorded_above{};
  Clock recorded_upto{};
  std::uint64_t recording = 0;     // the recording it was recorded in, 0 if none
  std::vector<std::size_t> nodes;  // the frontier it marks there
};

// A node as the driver sees it: what an executable update compares.
struct Node {
  int stream = 0;
  std::vector<std::size_t> deps;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_KERNEL;
  CUdeviceptr a = 0, b = 0;      // memcpy: source, destination; memset: destination
  std::uint32_t value = 0;       // memset
  bool fill_signature = false;   // a kernel of fill's parameters (add_one and copy share theirs)
};

// What a wait on an event must answer (`what` names the case for the outcome counts), and
// whether it forks the waiting stream into the open recording.
struct WaitRule {
  std::optional<Errc> expected;
  std::string what;
  bool fork = false;
};

class Streams {
 public:
  StreamState& operator[](int s) { return streams_[static_cast<std::size_t>(s)]; }
  const StreamState& operator[](int s) const { return streams_[static_cast<std::size_t>(s)]; }
  bool in_recording(int s) const { return (*this)[s].state == CaptureState::capture; }
  bool recording_open() const { return recording_.id != 0; }
  std::uint64_t recording_id() const { return recording_.id; }
  int origin() const { return recording_.origin; }
  const std::vector<Node>& nodes() const { return recording_.nodes; }

  // Stream `s` began a recording of its own.
  void open_recording(int s);

  // The order part of Device::check_buffer: may stream `s` use a buffer of stream `owner` with
  // `usage` now (writing it when `writes`)? An eager use of a buffer whose owner is in the
  // recording could not be handed back.
  bool may_use(int s, const BufferUsage& usage, int owner, bool writes) const;
  // memory::BufferState::used_by for buffer `b`: a recorded use is the recording's (a refusal
  // forgets it).
  void stamp(int s, int b, BufferUsage& usage, bool writes, std::uint64_t seq);
  // Stream `s` is ordered after operation `seq` of `other`: eagerly, or (`recorded`) for what it
  // records into the open recording only.
  void merge(int s, int other, std::uint64_t seq, bool recorded = false, std::uint64_t above = 0);
  // A host sync of stream `s` completed: every stream is ordered after what it covers.
  void completed(int s) { complete(completed_, (*this)[s], s); }

  // `event` was recorded on stream `s` now.
  void recorded(EventState& event, int s);
  WaitRule wait_rule(const EventState& event, int s) const;
  // Stream `s` waited on `event` (the wait succeeded).
  void waited(int s, const EventState& event, bool fork);

  // An operation stream `s` recorded: its node, after the stream's frontier.
  Node& add_node(int s);
  // The side stream whose last node the origin is not ordered after, if any.
  std::optional<int> unjoined() const;

  // The open recording closed, `refused` or into a graph: every stream leaves it; the buffers it
  // `used` (their usage from `usage_of`, nullptr for a dead one) lose its uses when refused, and a
  // graph's side uses become its origin's. Returns the side streams.
  template <class UsageOf>
  std::vector<int> close_recording(bool refused, const std::set<int>& used, UsageOf&& usage_of);

 private:
  struct Recording {
    std::uint64_t id = 0;  // 0: none open
    int origin = -1;
    std::vector<Node> nodes;
    std::map<int, std::vector<std::size_t>> frontier;
    std::map<int, std::size_t> last_node;
    std::map<int, BufferUsage> before;  // per buffer it used: the usage without its uses
  };
  std::vector<int> leave_recording();
  void forget_uses(BufferUsage& usage, int b) const;
  void hand_to_origin(BufferUsage& usage, const std::vector<int>& sides) const;

  StreamState streams_[kOrderedStreams];
  Clock completed_{};  // what completed host syncs saw finish (every stream is ordered after)
  Recording recording_;
  std::uint64_t next_recording_ = 1;
};

template <class UsageOf>
std::vector<int> Streams::close_recording(bool refused, const std::set<int>& used, UsageOf&& usage_of) {
  const std::vector<int> sides = leave_recording();
  for (int b : used) {
    BufferUsage* usage = usage_of(b);
    if (usage == nullptr) continue;
    if (refused) {
      forget_uses(*usage, b);
    } else {
      hand_to_origin(*usage, sides);
    }
  }
  recording_ = Recording{};
  return sides;
}

}  // namespace graphcap::testing::model
