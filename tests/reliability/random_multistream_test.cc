// Random lifecycles on several streams: seeded random sequences of graphcap calls on the
// fake across a recording stream (stream 0) and two side streams, with events, cross-stream
// waits, device copies and word fills, and fork/join recordings, checked step by step against a
// host-side model, in the style of random_lifecycle_test.cc, on the shared model library
// (model/world.h: the device, streams, events and draws; model/streams.h: the streams' order,
// events and the recording's nodes; model/host_buffer.h: the buffers' bytes).
//
// The model follows docs/capture-lifecycle.md ("Buffers on several streams", "Events", "Several
// streams in one recording"):
//   - per stream, a sequence number per stamped operation and the position of every other stream
//     it is ordered after (a vector clock: Device::record captures the stream's position and what
//     it is ordered after, Device::wait merges that in; an eager use of another stream's buffer
//     orders that buffer's owner after the use, as graphcap hands the buffer back; a completed
//     sync or read orders every stream after its stream's work): model/order.h;
//   - per buffer, its bytes (which elements are known), the failure it carries, its writer with
//     the write's and the writer's last use's sequence numbers, and the reads of other streams
//     since. A read must be ordered after the write, a write after every use since it: otherwise
//     Errc::invalid_argument before anything is enqueued; so is an eager use on another stream
//     of a buffer whose owner is in the recording;
//   - per event, its last record: the stream, position and clock, and, inside a recording, the
//     recording and the nodes the record marks. Waiting on it inside a recording when it was
//     recorded outside (or in an ended recording) is invalid_argument; a stream outside any
//     window that waits on an event of the open recording is forked into it (a stream with a
//     window of its own: graph_state);
//   - per recording (stream 0 only), what it recorded (in order, applied by each replay), its
//     claims, its nodes with their dependencies (each stream's frontier, as the driver keeps
//     them), its side streams, and whether it is doomed. end_capture refuses a doomed recording
//     with doomed, side work not joined back with graph_state (the claims carry the refusal, its
//     uses are forgotten: each buffer has the users it had without them), and returns every side stream to
//     no_capture; end or abort on a side stream is graph_state.
// Every call's result must be the model's (success or the exact Errc), and every read must return
// exactly the known bytes. Allocations and host writes are not issued while a recording is open
// (whether the pools' cache serves them is not modelled: random_lifecycle_test.cc covers that),
// and a graph is replayed only when none of its buffers carries a failure (random_many_graphs_test.cc
// models that); a replay is a use of the graph's buffers on stream 0 like an eager one (refused
// when not ordered, stamped when it runs), with nothing handed back.
//
// After each sequence every window is closed, every live buffer is read back on its owner (after
// ordering the owner after every stream), everything is dropped and the device closed: no handle
// may be left and the fake must have seen no memory-safety violation. GRAPHCAP_SEED=<seed> reruns
// one sequence (printing it); GRAPHCAP_RANDOM_SEQUENCES=<n> sets how many run (default 3000; 600
// under AddressSanitizer or ThreadSanitizer).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/graphcap.h>

#include "device_fixture.h"
#include "model/runner.h"
#include "model/streams.h"
#include "model/sequence.h"
#include "model/world.h"
#include "test_driver.h"

namespace graphcap::testing::multistream {
namespace {

using model::World;
using Values = std::vector<std::uint32_t>;

constexpr int kStreams = model::kOrderedStreams;  // 0 records; 1 and 2 are side streams
constexpr int kEvents = 3;
constexpr int kStepsPerSequence = 60;
constexpr std::uint32_t kN = model::kWords;  // elements (u32) of every buffer

constexpr model::SequenceCounts kCounts{.fake = 3000, .sanitizer = 600, .gpu = 3000};  // fake only

// One operation on whole buffers, by model buffer id.
struct Op {
  enum Kind { add_one, copy_kernel, fill_kernel, device_copy, device_fill, write } kind;
  int src = -1;
  int dst = -1;
  std::uint32_t value = 0;  // fills
  Values data;              // write
};

const char* kind_name(Op::Kind kind) {
  switch (kind) {
    case Op::add_one: return "launch add_one";
    case Op::copy_kernel: return "launch copy";
    case Op::fill_kernel: return "launch fill";
    case Op::device_copy: return "Device::copy";
    case Op::device_fill: return "Device::fill";
    case Op::write: return "write";
  }
  return "?";
}

// Its bytes and failure (HostBuffer), and the order rule's bookkeeping (BufferUsage).
struct ModelBuffer : model::HostBuffer, model::BufferUsage {};

// The open recording's contents (its streams' order is model::Streams').
struct ModelRecording {
  bool doomed = false;
  std::vector<int> claims;
  std::set<int> buffers;  // every buffer an operation of it used (reads and writes)
  std::vector<Op> ops;
};

struct ModelGraph {
  std::vector<Op> ops;
  std::set<int> buffers;
  bool live = true;
  Graph handle;
  // Its replays, as users of its buffers (as memory::ReplayUses keeps them, apart from the
  // buffers' eager uses): the last one's position on stream 0, until the graph is released.
  std::uint64_t replayed_at = 0;
  bool released = false;
  // The buffers it holds until released (those alive at its close: a handle or another graph
  // held them): their uses outlive their handles, so its replays are checked against them.
  std::set<int> held;
  bool writes(int b) const {
    return std::any_of(ops.begin(), ops.end(), [&](const Op& op) { return op.dst == b; });
  }
};

model::Outcomes& outcomes() {
  static model::Outcomes counts;
  return counts;
}

class Model : public model::Sequence<ModelBuffer, ModelGraph> {
 public:
  // The fake's race check on: no two operations that nothing orders may race.
  explicit Model(std::uint64_t seed) : Sequence(seed, make_test_driver(fake::FakeDriverOptions{}), outcomes()) {}

  model::SequenceEnd run() {
    if (!world.open()) return end();
    // A buffer on every stream to start with.
    for (int s = 0; s < kStreams; ++s) do_alloc(s);
    for (int step = 0; step < kStepsPerSequence && ok(); ++step) random_step();
    finish();
    return close();
  }

 private:
  // ---- helpers ------------------------------------------------------------------------------
  bool recording_open() const { return streams_.recording_open(); }
  bool in_recording(int s) const { return streams_.in_recording(s); }

  int any_buffer() {
    return live_buffer([](int) { return true; });
  }
  // Mostly a buffer of stream `s` (the common case), else any.
  int buffer_for(int s) {
    if (world.chance(60)) {
      const int own = live_buffer([&](int b) { return buf(b).owner == s; });
      if (own >= 0) return own;
    }
    return any_buffer();
  }

  // Ordered after the buffer's eager uses, and after the last replay of every graph (not yet
  // released) that uses it: a write after each, a read after those that write it.
  bool may_use(int s, int b, bool writes) const {
    const ModelBuffer& buffer = buffers[static_cast<std::size_t>(b)];
    if (!streams_.may_use(s, buffer, buffer.owner, writes)) return false;
    for (const ModelGraph& graph : graphs) {
      if (graph.released || graph.replayed_at == 0 || graph.buffers.count(b) == 0) continue;
      model::BufferUsage replay;
      model::stamp(replay, 0, graph.writes(b), graph.replayed_at);
      if (!streams_.may_use(s, replay, buffer.owner, writes)) return false;
    }
    return true;
  }
  void stamp(int s, int b, bool writes, std::uint64_t seq) { streams_.stamp(s, b, buf(b), writes, seq); }

  void apply(const Op& op) {
    ModelBuffer& dst = buf(op.dst);
    switch (op.kind) {
      case Op::add_one:
      case Op::copy_kernel:
      case Op::device_copy:
        dst.copy_words(buf(op.src), op.kind == Op::add_one ? 1 : 0, kN);
        break;
      case Op::fill_kernel:
      case Op::device_fill:
        dst.fill_words(op.value, kN);
        break;
      case Op::write:
        dst.write_words(0, op.data);
        break;
    }
  }

  // ---- the calls -----------------------------------------------------------------------------
  void do_alloc(int s) {
    log() << "alloc(stream " << s << ") as buffer " << buffers.size() << "\n";
    Result<Buffer> buffer = device().alloc(kN * 4, stream(s));
    world.expect(buffer, std::nullopt, "alloc");
    if (!buffer) return;
    ModelBuffer model;
    model.owner = s;
    model.live = true;
    model.handle = *buffer;
    model.writer = s;  // the allocation counts as a write on its owner
    model.write_seq = model.use_seq = ++streams_[s].seq;
    buffers.push_back(std::move(model));
  }

  Result<void> issue(int s, const Op& op) {
    const Buffer& dst = buf(op.dst).handle;
    switch (op.kind) {
      case Op::add_one: return world.add_one(stream(s), buf(op.src).handle, dst);
      case Op::copy_kernel: return world.copy(stream(s), buf(op.src).handle, dst);
      case Op::fill_kernel: return world.fill(stream(s), dst, op.value);
      case Op::device_copy: return device().copy(dst, buf(op.src).handle, stream(s));
      case Op::device_fill: return device().fill(dst, op.value, stream(s));
      case Op::write: return device().write(dst, to_bytes(op.data), stream(s));
    }
    return {};
  }

  // A whole-buffer operation on stream `s`: eager, or recorded when `s` is in the recording.
  void do_op(int s, Op op) {
    const bool reads = op.src >= 0;
    log() << kind_name(op.kind) << "(";
    if (reads) log() << "buffer " << op.src << " -> ";
    log() << "buffer " << op.dst << ", stream " << s << ")\n";
    Result<void> done = issue(s, op);
    ModelBuffer& dst = buf(op.dst);
    const std::string what = std::string(kind_name(op.kind)) +
                             (in_recording(s) ? " (recorded" : " (eager") +
                             (s == 0 ? ")" : ", side stream)");
    const bool unordered = (reads && !may_use(s, op.src, false)) || !may_use(s, op.dst, true);
    if (unordered) {
      world.expect(done, Errc::invalid_argument, what + " not ordered");
      return;
    }
    const bool recorded = in_recording(s);
    if (reads && buf(op.src).failure) {
      world.expect(done, Errc::failed_buffer, what);
      dst.fail(Errc::failed_buffer);
      if (recorded) {
        recording_.doomed = true;
        recording_.claims.push_back(op.dst);
        recording_.buffers.insert(op.src);
        recording_.buffers.insert(op.dst);
      }
      return;
    }
    world.expect(done, std::nullopt, what);
    const std::uint64_t seq = ++streams_[s].seq;
    if (reads) stamp(s, op.src, false, seq);
    stamp(s, op.dst, true, seq);
    if (recorded) {
      recording_.claims.push_back(op.dst);
      if (reads) recording_.buffers.insert(op.src);
      recording_.buffers.insert(op.dst);
      streams_.add_node(s);
      recording_.ops.push_back(std::move(op));
      return;
    }
    apply(op);
    dst.produced();  // a whole eager operation produces it
    // Buffers of other streams are handed back: their owners are ordered after this use.
    std::set<int> owners;
    if (reads) owners.insert(buf(op.src).owner);
    owners.insert(dst.owner);
    for (int owner : owners) {
      if (owner != s) streams_.merge(owner, s, seq);
    }
  }

  void random_op(int s) {
    Op op;
    op.kind = static_cast<Op::Kind>(world.pick(6));
    if (op.kind == Op::write && recording_open()) op.kind = Op::device_fill;  // staging: see top
    op.dst = buffer_for(s);
    if (op.dst < 0) return;
    if (op.kind == Op::add_one || op.kind == Op::copy_kernel || op.kind == Op::device_copy) {
      op.src = buffer_for(s);
      if (op.kind == Op::device_copy && op.src == op.dst) return;  // overlapping: not modelled
    }
    op.value = world.value();
    if (op.kind == Op::write) {
      op.data.resize(kN);
      for (std::uint32_t& v : op.data) v = world.value();
    }
    do_op(s, std::move(op));
  }

  void do_record(int e, int s) {
    log() << "record(event " << e << ", stream " << s << ")\n";
    world.expect(device().record_event(world.event(e), stream(s)), std::nullopt, "record");
    streams_.recorded(events_[static_cast<std::size_t>(e)], s);
  }

  void do_wait(int s, int e) {
    log() << "wait(stream " << s << ", event " << e << ")\n";
    const model::EventState& event = events_[static_cast<std::size_t>(e)];
    const model::WaitRule rule = streams_.wait_rule(event, s);
    world.expect(device().wait(stream(s), world.event(e)), rule.expected, rule.what);
    if (!rule.expected) streams_.waited(s, event, rule.fork);
  }

  // `to` ordered after `from` through event `e` (two steps).
  void do_order(int from, int to, int e) {
    do_record(e, from);
    if (ok()) do_wait(to, e);
  }

  void do_prepare() {
    log() << "prepare_capture(stream 0)\n";
    std::optional<Errc> expected;
    if (streams_[0].state != CaptureState::no_capture) expected = Errc::graph_state;
    world.expect(device().prepare_capture(stream(0)), expected, "prepare_capture");
    if (!expected) streams_[0].state = CaptureState::prepare;
  }

  void do_begin() {
    log() << "begin_capture(stream 0)\n";
    std::optional<Errc> expected;
    if (streams_[0].state != CaptureState::prepare) expected = Errc::graph_state;
    world.expect(device().begin_capture(stream(0)), expected, "begin_capture");
    if (expected) return;
    streams_.open_recording(0);
    recording_ = ModelRecording{};
  }

  // The recording closed (refused when `refusal`): side streams leave it; a refusal marks the
  // claims and forgets the uses of its buffers (they never ran).
  void close_recording(std::optional<Errc> refusal) {
    if (refusal) {
      for (int b : recording_.claims) buf(b).fail(*refusal);
    }
    streams_.close_recording(refusal.has_value(), recording_.buffers,
                             [&](int b) -> model::BufferUsage* { return &buf(b); });
    recording_ = ModelRecording{};
    for (ModelGraph& graph : graphs) {
      if (!graph.live) graph.released = true;  // a release deferred by the recording
    }
  }

  void do_end(int s) {
    log() << "end_capture(stream " << s << ")\n";
    if (s != 0) {
      // A side stream (forked or not) has no recording of its own to end.
      world.expect(device().end_capture(stream(s)), Errc::graph_state, "end_capture on a side stream");
      return;
    }
    std::optional<Errc> expected;
    std::string what = "end_capture";
    if (streams_[0].state != CaptureState::capture) {
      expected = Errc::graph_state;
    } else if (recording_.doomed) {
      expected = Errc::doomed;
    } else if (streams_.unjoined()) {
      expected = Errc::graph_state;
      what = "end_capture with side work not joined back";
    }
    Result<Graph> graph = device().end_capture(stream(0));
    world.expect(graph, expected, what);
    if (streams_[0].state != CaptureState::capture) return;
    if (expected) {
      close_recording(expected);
      return;
    }
    if (!graph) return;
    log() << "  graph " << graphs.size() << " replays " << recording_.ops.size() << " op(s)\n";
    ModelGraph made{recording_.ops, recording_.buffers, true, std::move(*graph), 0, false, {}};
    for (int b : recording_.buffers) {
      if (alive(b)) made.held.insert(b);
    }
    graphs.push_back(std::move(made));
    close_recording(std::nullopt);
  }

  void do_abort(int s) {
    log() << "abort_capture(stream " << s << ")\n";
    if (s != 0) {
      world.expect(device().abort_capture(stream(s)), Errc::graph_state, "abort_capture on a side stream");
      return;
    }
    const CaptureState was = streams_[0].state;
    world.expect(device().abort_capture(stream(0)),
                  was == CaptureState::no_capture ? std::optional<Errc>(Errc::graph_state) : std::nullopt,
                  "abort_capture");
    if (was == CaptureState::capture) {
      close_recording(Errc::doomed);
    } else {
      streams_[0].state = CaptureState::no_capture;
    }
  }

  void do_read(int b, int s) {
    log() << "read(buffer " << b << ", stream " << s << ")\n";
    ModelBuffer& buffer = buf(b);
    Result<std::vector<std::byte>> read = device().read(buffer.handle, stream(s));
    std::optional<Errc> expected;
    std::string what = "read";
    if (!may_use(s, b, false)) {
      expected = Errc::invalid_argument;
      what = "read not ordered";
    } else if (recording_open()) {
      expected = Errc::graph_state;
      what = "read while recording";
    } else if (buffer.failure) {
      expected = buffer.failure;
    }
    world.expect(read, expected, what);
    if (expected) return;
    // Past the failure check a read is an operation of its stream (its staging's use); a read
    // of the stream's own buffer is stamped on it.
    const std::uint64_t seq = ++streams_[s].seq;
    if (buffer.owner == s) stamp(s, b, false, seq);
    if (!read) return;
    streams_.completed(s);  // it waited for its stream
    world.count("read: elements compared with the model", buffer.known_count(0, kN));
    if (auto wrong = buffer.mismatch(to_u32(*read), 0, "read: buffer " + std::to_string(b))) {
      world.diverge(*wrong);
    }
  }

  void do_sync(int s) {
    log() << "sync(stream " << s << ")\n";
    world.expect(device().sync(stream(s)),
                  recording_open() ? std::optional<Errc>(Errc::graph_state) : std::nullopt, "sync");
    if (!recording_open()) streams_.completed(s);
  }

  // A replay is a use of the graph's buffers on stream 0, as its operations would be eagerly:
  // refused (invalid_argument, nothing enqueued) when stream 0 is not ordered after another
  // stream's use since; else its position is the graph's, a use of its buffers until the graph
  // is released (another stream orders itself after it with an event or a sync).
  // Whether buffer b's state (its uses, its failure) is still kept: a handle or a graph not yet
  // released holds it.
  bool alive(int b) const {
    if (buffers[static_cast<std::size_t>(b)].live) return true;
    return std::any_of(graphs.begin(), graphs.end(), [&](const ModelGraph& graph) {
      return !graph.released && graph.held.count(b) != 0;
    });
  }

  void do_replay(int g) {
    ModelGraph& graph = graphs[static_cast<std::size_t>(g)];
    for (int b : graph.buffers) {
      if (alive(b) && buf(b).failure) return;  // not modelled (see the top)
    }
    log() << "replay(graph " << g << ")\n";
    std::set<int> writes;
    for (const Op& op : graph.ops) writes.insert(op.dst);
    std::optional<Errc> expected;
    if (!graph.live || in_recording(0)) {
      expected = Errc::graph_state;
    } else {
      for (int b : graph.buffers) {
        if (graph.held.count(b) != 0 && !may_use(0, b, writes.count(b) != 0)) {
          expected = Errc::invalid_argument;
        }
      }
    }
    world.expect(graph.handle.replay(), expected,
                 expected == Errc::invalid_argument ? "replay not ordered" : "replay");
    if (expected) return;
    for (const Op& op : graph.ops) apply(op);
    for (const Op& op : graph.ops) buf(op.dst).produced();
    graph.replayed_at = ++streams_[0].seq;
  }

  void random_step() {
    // Mostly work on the streams of the open recording, so recordings fork and join.
    int s = static_cast<int>(world.pick(kStreams));
    if (recording_open() && world.chance(50)) {
      std::vector<int> recording;
      for (int t = 0; t < kStreams; ++t) {
        if (in_recording(t)) recording.push_back(t);
      }
      s = recording[world.pick(recording.size())];
    }
    const int e = static_cast<int>(world.pick(kEvents));
    const std::size_t roll = world.pick(100);
    if (roll < 6) {
      do_prepare();
    } else if (roll < 12) {
      do_begin();
    } else if (roll < 18) {
      do_end(world.chance(85) ? 0 : s);
    } else if (roll < 20) {
      do_abort(world.chance(85) ? 0 : s);
    } else if (roll < 26) {
      if (!recording_open()) do_alloc(s);
    } else if (roll < 52) {
      random_op(s);
    } else if (roll < 62) {
      do_record(e, s);
    } else if (roll < 74) {
      do_wait(s, e);
    } else if (roll < 82) {
      const int b = buffer_for(s);
      if (b >= 0) do_read(b, s);
    } else if (roll < 85) {
      do_sync(s);
    } else if (roll < 88) {
      const int b = any_buffer();
      if (b >= 0) drop(b);
    } else if (roll < 97) {
      if (!graphs.empty()) do_replay(static_cast<int>(world.pick(graphs.size())));
    } else {
      if (!graphs.empty()) do_destroy(static_cast<int>(world.pick(graphs.size())));
    }
  }

  // Graph::destroy waits for the graph's stream (stream 0), a host sync that orders every stream
  // after what stream 0 had enqueued, as Device::sync does; while a recording is open it defers
  // the release (a wait now would invalidate the recording), which then orders nothing.
  // Released now, the graph's replays stop being uses (they finished); a deferred release does
  // that when the recording closes.
  void do_destroy(int g) {
    const bool releases = graphs[static_cast<std::size_t>(g)].live && !recording_open();
    destroy(g);
    if (!releases) return;
    streams_.completed(0);
    graphs[static_cast<std::size_t>(g)].released = true;
  }

  // Close the window, order every stream after every other, read back everything.
  void finish() {
    if (ok() && streams_[0].state == CaptureState::capture) do_end(0);
    if (ok() && streams_[0].state == CaptureState::prepare) do_abort(0);
    for (int e = 0; e < 2; ++e) {
      for (int from = 0; from < kStreams && ok(); ++from) {
        for (int to = 0; to < kStreams && ok(); ++to) {
          if (from != to) do_order(from, to, e);
        }
      }
    }
    for (std::size_t b = 0; b < buffers.size() && ok(); ++b) {
      if (buffers[b].live) do_read(static_cast<int>(b), buffers[b].owner);
    }
    for (int s = 0; s < kStreams && ok(); ++s) do_sync(s);
  }

  model::Streams streams_;
  std::array<model::EventState, kEvents> events_;
  ModelRecording recording_;
};

}  // namespace

TEST(RandomMultiStreamLifecycles, EverySequenceFollowsTheModel) {
  const std::uint64_t ran = model::run_sequences(model::sequence_count(true, kCounts),
                                                 [](std::uint64_t seed) { return Model(seed).run(); });
  std::printf("[ random   ] %llu multi-stream sequences of %d steps\n",
              static_cast<unsigned long long>(ran), kStepsPerSequence);
  outcomes().print("random");
  // The sequences must reach what they are for: forks, joins, refusals by name.
  EXPECT_GT(outcomes().of("wait: fork -> ok"), 0u);
  EXPECT_GT(outcomes().of("end_capture -> ok"), 0u);
  EXPECT_GT(outcomes().of("end_capture with side work not joined back -> graph_state"), 0u);
  EXPECT_GT(outcomes().of("launch add_one (eager, side stream) not ordered -> invalid_argument") +
                outcomes().of("Device::copy (eager, side stream) not ordered -> invalid_argument"),
            0u);
  EXPECT_GT(outcomes().of("replay not ordered -> invalid_argument"), 0u);
}

}  // namespace graphcap::testing::multistream
