#include "model/streams.h"

#include <algorithm>

namespace graphcap::testing::model {

void Streams::open_recording(int s) {
  (*this)[s].state = CaptureState::capture;
  recording_ = Recording{};
  recording_.id = next_recording_++;
  recording_.origin = s;
}

bool Streams::may_use(int s, const BufferUsage& usage, int owner, bool writes) const {
  const std::uint64_t recording = in_recording(s) ? recording_.id : 0;
  if (!ordered_for_use((*this)[s], s, usage, writes, recording, completed_)) return false;
  return !(owner != s && in_recording(owner) && !in_recording(s));
}

void Streams::stamp(int s, int b, BufferUsage& usage, bool writes, std::uint64_t seq) {
  if (in_recording(s)) {
    recording_.before.try_emplace(b, usage);
  } else if (auto before = recording_.before.find(b); before != recording_.before.end()) {
    model::stamp(before->second, s, writes, seq);  // not the recording's use
  }
  model::stamp(usage, s, writes, seq);
}

void Streams::merge(int s, int other, std::uint64_t seq, bool recorded, std::uint64_t above) {
  model::merge((*this)[s], s, other, seq, recorded ? recording_.id : 0, above);
}

void Streams::recorded(EventState& event, int s) {
  const bool inside = in_recording(s);
  event.recorded = true;
  event.stream = s;
  event.seq = (*this)[s].seq;
  const StreamOrder<kOrderedStreams>& order = (*this)[s];
  event.clock = current_clock(order, inside ? recording_.id : 0);
  const bool own_order = inside && order.recorded_of == recording_.id;  // its recording's order
  event.above = own_order ? order.joined_at : 0;
  event.recorded_above = own_order ? order.recorded_above : Clock{};
  event.recorded_upto = own_order ? order.recorded_upto : Clock{};
  event.recording = inside ? recording_.id : 0;
  event.nodes = inside ? recording_.frontier[s] : std::vector<std::size_t>{};
}

WaitRule Streams::wait_rule(const EventState& event, int s) const {
  const std::uint64_t mine = in_recording(s) ? recording_.id : 0;
  if (!event.recorded) return {std::nullopt, "wait on an event never recorded"};
  if (mine != 0 && event.recording == 0) {
    return {Errc::invalid_argument, "wait inside the recording on an event recorded outside"};
  }
  if (mine != 0 && event.recording != mine) {
    return {Errc::invalid_argument, "wait inside the recording on an event of another recording"};
  }
  if (mine == 0 && event.recording != 0) {
    if ((*this)[s].state != CaptureState::no_capture) {
      return {Errc::graph_state, "fork of a stream with a window of its own"};
    }
    if (event.recording != recording_.id) {
      return {Errc::invalid_argument, "wait on an event of an ended recording"};
    }
    return {std::nullopt, "wait: fork", true};
  }
  return {std::nullopt, mine != 0 ? "wait inside the recording" : "wait"};
}

void Streams::waited(int s, const EventState& event, bool fork) {
  if (!event.recorded) return;
  const bool inside = in_recording(s);
  if (fork) model::fork((*this)[s], recording_.id, (*this)[s].seq);
  if (event.stream != s) {
    const bool recorded = fork || inside;  // orders the graph only
    merge(s, event.stream, event.seq, recorded, event.above);
    for (int other = 0; other < kOrderedStreams; ++other) {
      const auto at = static_cast<std::size_t>(other);
      merge(s, other, event.clock[at], recorded);
      if (event.recorded_upto[at] != 0) {
        merge(s, other, event.recorded_upto[at], recorded, event.recorded_above[at]);
      }
    }
  }
  std::vector<std::size_t>& frontier = recording_.frontier[s];
  if (fork) {
    (*this)[s].state = CaptureState::capture;
    (*this)[s].side = true;
    frontier.insert(frontier.end(), event.nodes.begin(), event.nodes.end());
  } else if (inside) {
    for (std::size_t node : event.nodes) {
      if (std::find(frontier.begin(), frontier.end(), node) == frontier.end()) frontier.push_back(node);
    }
  }
}

Node& Streams::add_node(int s) {
  Node node;
  node.stream = s;
  node.deps = std::move(recording_.frontier[s]);
  recording_.frontier[s].assign(1, recording_.nodes.size());
  recording_.last_node[s] = recording_.nodes.size();
  recording_.nodes.push_back(std::move(node));
  return recording_.nodes.back();
}

std::optional<int> Streams::unjoined() const {
  std::vector<bool> joined(recording_.nodes.size(), false);
  std::vector<std::size_t> stack;
  if (auto found = recording_.frontier.find(recording_.origin); found != recording_.frontier.end()) {
    stack = found->second;
  }
  while (!stack.empty()) {
    const std::size_t node = stack.back();
    stack.pop_back();
    if (joined[node]) continue;
    joined[node] = true;
    for (std::size_t before : recording_.nodes[node].deps) stack.push_back(before);
  }
  for (const auto& [s, last] : recording_.last_node) {
    if (s != recording_.origin && !joined[last]) return s;
  }
  return std::nullopt;
}

std::vector<int> Streams::leave_recording() {
  std::vector<int> sides;
  for (int s = 0; s < kOrderedStreams; ++s) {
    if (s == recording_.origin || !(*this)[s].side) continue;
    sides.push_back(s);
    (*this)[s].side = false;
    (*this)[s].state = CaptureState::no_capture;
  }
  if (recording_.origin >= 0) (*this)[recording_.origin].state = CaptureState::no_capture;
  return sides;
}

void Streams::forget_uses(BufferUsage& usage, int b) const {
  if (auto before = recording_.before.find(b); before != recording_.before.end()) usage = before->second;
}

// A graph runs on its origin: the side streams' uses of its buffers become the origin's, at the
// origin's position at the close.
void Streams::hand_to_origin(BufferUsage& usage, const std::vector<int>& sides) const {
  for (int side : sides) usage.readers.erase(side);
  if (std::find(sides.begin(), sides.end(), usage.writer) != sides.end()) {
    usage.writer = recording_.origin;
    usage.write_seq = usage.use_seq = (*this)[recording_.origin].seq;
  }
}

}  // namespace graphcap::testing::model
