// Random lifecycles on several streams: seeded random sequences of graphcap calls on the
// fake across a recording stream (stream 0) and two side streams, with events, cross-stream
// waits, device copies and word fills, and fork/join recordings, checked step by step against a
// host-side model, in the style of random_lifecycle_test.cc.
//
// The model follows docs/capture-lifecycle.md ("Buffers on several streams", "Events", "Several
// streams in one recording"):
//   - per stream, a sequence number per stamped operation and the position of every other stream
//     it is ordered after (a vector clock: Device::record captures the stream's position and what
//     it is ordered after, Device::wait merges that in; an eager use of another stream's buffer
//     orders that buffer's owner after the use, as graphcap hands the buffer back; a completed
//     sync or read orders every stream after its stream's work): tests/support/order_model.h;
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
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
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
#include "kernels/test_kernels.h"
#include "order_model.h"

namespace graphcap::testing {
namespace {

using Values = std::vector<std::uint32_t>;

constexpr int kStreams = 3;  // 0 records; 1 and 2 are side streams
constexpr int kEvents = 3;
constexpr int kStepsPerSequence = 60;
constexpr std::uint32_t kN = 64;  // elements (u32) of every buffer

constexpr model::SequenceCounts kCounts{.fake = 3000, .sanitizer = 600, .gpu = 3000};  // fake only

using Clock = StreamOrder<kStreams>::Clock;  // per other stream: the position ordered after

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

// The ordering rule's bookkeeping (memory::BufferState's) is its BufferUsage.
struct ModelBuffer : BufferUsage {
  int owner = 0;
  Values bytes;
  std::vector<bool> known;
  std::optional<Errc> failure;
  bool live = true;
  Buffer handle;
};

// Its order (StreamOrder): a wait recorded into a recording (a fork, a join) orders the graph,
// not eager work.
struct ModelStream : StreamOrder<kStreams> {
  CaptureState state = CaptureState::no_capture;
  bool side = false;  // forked into the open recording
  Stream* handle = nullptr;
};

struct ModelEvent {
  bool recorded = false;
  int stream = 0;
  std::uint64_t seq = 0;
  Clock clock{};
  std::uint64_t recording = 0;     // the recording it was recorded in, 0 if none
  std::vector<std::size_t> nodes;  // the frontier it marks there
  Event handle;
};

struct Node {
  int stream = 0;
  std::vector<std::size_t> deps;
};

struct ModelRecording {
  std::uint64_t id = 0;  // 0: none open
  bool doomed = false;
  std::vector<int> claims;
  std::set<int> buffers;  // every buffer an operation of it used (reads and writes)
  std::map<int, BufferUsage> before;  // per buffer it used: the usage without its uses
  std::vector<Op> ops;
  std::vector<Node> nodes;
  std::map<int, std::vector<std::size_t>> frontier;
  std::map<int, std::size_t> last_node;
};

struct ModelGraph {
  std::vector<Op> ops;
  std::set<int> buffers;
  bool live = true;
  Graph handle;
};

std::string errc_text(const std::optional<Errc>& code) {
  return code ? to_string(*code) : std::string("ok");
}

std::map<std::string, std::uint64_t>& outcomes() {
  static std::map<std::string, std::uint64_t> counts;
  return counts;
}

class Sequence {
 public:
  explicit Sequence(std::uint64_t seed) : rng_(seed) {}

  std::string run() {
    register_test_kernels(driver_);
    Result<std::unique_ptr<Device>> opened = Device::open(driver_);
    if (!opened) return "Device::open failed: " + to_string(opened.error());
    device_ = std::move(*opened);
    Result<Module> module = device_->load_module(driver_.module_image({"add_one", "fill", "copy"}));
    if (!module) return "load_module failed: " + to_string(module.error());
    for (auto [kernel, name] : {std::pair{&add_one_, "add_one"}, std::pair{&fill_, "fill"},
                                std::pair{&copy_, "copy"}}) {
      Result<Kernel> found = module->kernel(name);
      if (!found) return "kernel failed: " + to_string(found.error());
      *kernel = *found;
    }
    streams_[0].handle = &device_->stream();
    for (int s = 1; s < kStreams; ++s) {
      Result<Stream*> made = device_->create_stream();
      if (!made) return "create_stream failed: " + to_string(made.error());
      streams_[s].handle = *made;
    }
    for (ModelEvent& event : events_) {
      Result<Event> made = device_->create_event();
      if (!made) return "create_event failed: " + to_string(made.error());
      event.handle = std::move(*made);
    }
    // A buffer on every stream to start with.
    for (int s = 0; s < kStreams; ++s) do_alloc(s);

    for (int step = 0; step < kStepsPerSequence && divergence_.empty(); ++step) random_step();

    // Close the window, order every stream after every other, read back everything.
    if (divergence_.empty() && streams_[0].state == CaptureState::capture) do_end(0);
    if (divergence_.empty() && streams_[0].state == CaptureState::prepare) do_abort(0);
    for (int from = 0; from < kStreams && divergence_.empty(); ++from) {
      for (int to = 0; to < kStreams && divergence_.empty(); ++to) {
        if (from != to) do_order(from, to, 0);
      }
    }
    for (int from = 0; from < kStreams && divergence_.empty(); ++from) {
      for (int to = 0; to < kStreams && divergence_.empty(); ++to) {
        if (from != to) do_order(from, to, 1);
      }
    }
    for (std::size_t b = 0; b < buffers_.size() && divergence_.empty(); ++b) {
      if (buffers_[b].live) do_read(static_cast<int>(b), buffers_[b].owner);
    }
    for (int s = 0; s < kStreams && divergence_.empty(); ++s) do_sync(s);
    if (divergence_.empty()) teardown();
    return divergence_;
  }

  std::string log() const { return log_.str(); }

 private:
  // ---- helpers ------------------------------------------------------------------------------
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  bool chance(int percent) { return static_cast<int>(pick(100)) < percent; }
  std::uint32_t random_value() { return static_cast<std::uint32_t>(rng_() & 0xFFFFF); }

  bool recording_open() const { return recording_.id != 0; }
  bool in_recording(int s) const { return streams_[s].state == CaptureState::capture; }

  int live_buffer() {
    std::vector<int> candidates;
    for (std::size_t b = 0; b < buffers_.size(); ++b) {
      if (buffers_[b].live) candidates.push_back(static_cast<int>(b));
    }
    return candidates.empty() ? -1 : candidates[pick(candidates.size())];
  }
  // Mostly a buffer of stream `s` (the common case), else any.
  int buffer_for(int s) {
    if (chance(60)) {
      std::vector<int> own;
      for (std::size_t b = 0; b < buffers_.size(); ++b) {
        if (buffers_[b].live && buffers_[b].owner == s) own.push_back(static_cast<int>(b));
      }
      if (!own.empty()) return own[pick(own.size())];
    }
    return live_buffer();
  }

  ModelBuffer& buf(int b) { return buffers_[static_cast<std::size_t>(b)]; }

  void diverge(const std::string& what) {
    if (divergence_.empty()) divergence_ = what;
  }

  template <class T>
  void expect(const Result<T>& result, std::optional<Errc> expected, const std::string& what) {
    const std::optional<Errc> got =
        result ? std::nullopt : std::optional<Errc>(result.error().code());
    ++outcomes()[what + " -> " + errc_text(got)];
    log_ << " -> " << (result ? std::string("ok") : to_string(result.error())) << "\n";
    if (got != expected) {
      diverge(what + ": expected " + errc_text(expected) + ", got " +
              (result ? std::string("ok") : to_string(result.error())));
    }
  }

  // ---- the ordering rule (tests/support/order_model.h) -----------------------------------------
  std::uint64_t recording_of(int s) const { return in_recording(s) ? recording_.id : 0; }

  // Device::check_buffer: may stream `s` use buffer `b` now (writing it when `writes`)?
  bool may_use(int s, int b, bool writes) {
    const ModelBuffer& buffer = buf(b);
    if (!ordered_for_use(streams_[s], s, buffer, writes, recording_of(s), completed_)) {
      return false;
    }
    // An eager use of a buffer whose owner is in the recording could not be handed back.
    return !(buffer.owner != s && in_recording(buffer.owner) && !in_recording(s));
  }

  // memory::BufferState::used_by (a recorded use is the recording's: a refusal forgets it).
  void stamp(int s, int b, bool writes, std::uint64_t seq) {
    if (in_recording(s)) {
      recording_.before.try_emplace(b, static_cast<const BufferUsage&>(buf(b)));
    } else if (auto before = recording_.before.find(b); before != recording_.before.end()) {
      graphcap::testing::stamp(before->second, s, writes, seq);
    }
    graphcap::testing::stamp(buf(b), s, writes, seq);
  }

  void merge(int s, int other, std::uint64_t seq, bool recorded = false) {
    graphcap::testing::merge(streams_[s], s, other, seq, recorded ? recording_.id : 0);
  }

  // A host sync of stream `s` completed: every stream is ordered after what it covers.
  void completed(int s) { complete(completed_, streams_[s], s); }

  void apply(const Op& op) {
    ModelBuffer& dst = buf(op.dst);
    switch (op.kind) {
      case Op::add_one:
      case Op::copy_kernel:
      case Op::device_copy: {
        const ModelBuffer& src = buf(op.src);
        const Values in = src.bytes;
        const std::vector<bool> known = src.known;
        for (std::uint32_t i = 0; i < kN; ++i) {
          dst.bytes[i] = in[i] + (op.kind == Op::add_one ? 1 : 0);
          dst.known[i] = known[i];
        }
        break;
      }
      case Op::fill_kernel:
      case Op::device_fill:
        for (std::uint32_t i = 0; i < kN; ++i) {
          dst.bytes[i] = op.value;
          dst.known[i] = true;
        }
        break;
      case Op::write:
        for (std::uint32_t i = 0; i < kN; ++i) {
          dst.bytes[i] = op.data[i];
          dst.known[i] = true;
        }
        break;
    }
  }

  // ---- the calls -----------------------------------------------------------------------------
  void do_alloc(int s) {
    log_ << "alloc(stream " << s << ") as buffer " << buffers_.size();
    Result<Buffer> buffer = device_->alloc(kN * 4, *streams_[s].handle);
    expect(buffer, std::nullopt, "alloc");
    if (!buffer) return;
    ModelBuffer model;
    model.owner = s;
    model.bytes.assign(kN, 0);
    model.known.assign(kN, false);
    model.handle = *buffer;
    model.writer = s;  // the allocation counts as a write on its owner
    model.write_seq = model.use_seq = ++streams_[s].seq;
    buffers_.push_back(std::move(model));
  }

  // A whole-buffer operation on stream `s`: eager, or recorded when `s` is in the recording.
  void do_op(int s, Op op) {
    const bool reads = op.src >= 0;
    log_ << kind_name(op.kind) << "(";
    if (reads) log_ << "buffer " << op.src << " -> ";
    log_ << "buffer " << op.dst << ", stream " << s << ")";
    Stream& stream = *streams_[s].handle;
    ModelBuffer& dst = buf(op.dst);
    Result<void> done;
    switch (op.kind) {
      case Op::add_one:
        done = device_->launch(stream, add_one_, dims_for(kN),
                               {Arg::in(buf(op.src).handle), Arg::out(dst.handle), Arg::value(kN)});
        break;
      case Op::copy_kernel:
        done = device_->launch(stream, copy_, dims_for(kN),
                               {Arg::in(buf(op.src).handle), Arg::out(dst.handle), Arg::value(kN)});
        break;
      case Op::fill_kernel:
        done = device_->launch(stream, fill_, dims_for(kN),
                               {Arg::out(dst.handle), Arg::value(op.value), Arg::value(kN)});
        break;
      case Op::device_copy:
        done = device_->copy(dst.handle, buf(op.src).handle, stream);
        break;
      case Op::device_fill:
        done = device_->fill(dst.handle, op.value, stream);
        break;
      case Op::write:
        done = device_->write(dst.handle, to_bytes(op.data), stream);
        break;
    }
    const std::string what = std::string(kind_name(op.kind)) +
                              (in_recording(s) ? " (recorded" : " (eager") +
                              (s == 0 ? ")" : ", side stream)");
    const bool unordered = (reads && !may_use(s, op.src, false)) || !may_use(s, op.dst, true);
    if (unordered) {
      expect(done, Errc::invalid_argument, what + " not ordered");
      return;
    }
    const bool recorded = in_recording(s);
    if (reads && buf(op.src).failure) {
      expect(done, Errc::failed_buffer, what);
      dst.failure = Errc::failed_buffer;
      if (recorded) {
        recording_.doomed = true;
        recording_.claims.push_back(op.dst);
        recording_.buffers.insert(op.src);
        recording_.buffers.insert(op.dst);
      }
      return;
    }
    expect(done, std::nullopt, what);
    const std::uint64_t seq = ++streams_[s].seq;
    if (reads) stamp(s, op.src, false, seq);
    stamp(s, op.dst, true, seq);
    if (recorded) {
      recording_.claims.push_back(op.dst);
      if (reads) recording_.buffers.insert(op.src);
      recording_.buffers.insert(op.dst);
      Node node;
      node.stream = s;
      node.deps = std::move(recording_.frontier[s]);
      recording_.frontier[s].assign(1, recording_.nodes.size());
      recording_.last_node[s] = recording_.nodes.size();
      recording_.nodes.push_back(std::move(node));
      recording_.ops.push_back(std::move(op));
      return;
    }
    apply(op);
    dst.failure.reset();  // a whole eager operation produces it
    // Buffers of other streams are handed back: their owners are ordered after this use.
    std::set<int> owners;
    if (reads) owners.insert(buf(op.src).owner);
    owners.insert(dst.owner);
    for (int owner : owners) {
      if (owner != s) merge(owner, s, seq);
    }
  }

  void random_op(int s) {
    Op op;
    op.kind = static_cast<Op::Kind>(pick(6));
    if (op.kind == Op::write && recording_open()) op.kind = Op::device_fill;  // staging: see top
    op.dst = buffer_for(s);
    if (op.dst < 0) return;
    if (op.kind == Op::add_one || op.kind == Op::copy_kernel || op.kind == Op::device_copy) {
      op.src = buffer_for(s);
      if (op.kind == Op::device_copy && op.src == op.dst) return;  // overlapping: not modelled
    }
    op.value = random_value();
    if (op.kind == Op::write) {
      op.data.resize(kN);
      for (std::uint32_t& v : op.data) v = random_value();
    }
    do_op(s, std::move(op));
  }

  void do_record(int e, int s) {
    log_ << "record(event " << e << ", stream " << s << ")";
    ModelEvent& event = events_[static_cast<std::size_t>(e)];
    expect(device_->record_event(event.handle, *streams_[s].handle), std::nullopt, "record");
    event.recorded = true;
    event.stream = s;
    event.seq = streams_[s].seq;
    event.clock = current_clock(streams_[s], recording_of(s));
    event.recording = in_recording(s) ? recording_.id : 0;
    event.nodes = in_recording(s) ? recording_.frontier[s] : std::vector<std::size_t>{};
  }

  void do_wait(int s, int e) {
    log_ << "wait(stream " << s << ", event " << e << ")";
    const ModelEvent& event = events_[static_cast<std::size_t>(e)];
    const std::uint64_t mine = in_recording(s) ? recording_.id : 0;
    std::optional<Errc> expected;
    std::string what = "wait";
    bool fork = false;
    if (event.recorded) {
      if (mine != 0 && event.recording == 0) {
        expected = Errc::invalid_argument;
        what = "wait inside the recording on an event recorded outside";
      } else if (mine != 0 && event.recording != mine) {
        expected = Errc::invalid_argument;
        what = "wait inside the recording on an event of another recording";
      } else if (mine == 0 && event.recording != 0) {
        if (streams_[s].state != CaptureState::no_capture) {
          expected = Errc::graph_state;
          what = "fork of a stream with a window of its own";
        } else if (event.recording != recording_.id) {
          expected = Errc::invalid_argument;
          what = "wait on an event of an ended recording";
        } else {
          fork = true;
          what = "wait: fork";
        }
      } else if (mine != 0) {
        what = "wait inside the recording";
      }
    } else {
      what = "wait on an event never recorded";
    }
    expect(device_->wait(*streams_[s].handle, event.handle), expected, what);
    if (expected || !event.recorded) return;
    if (event.stream != s) {
      const bool recorded = fork || mine != 0;  // orders the graph only
      merge(s, event.stream, event.seq, recorded);
      for (int other = 0; other < kStreams; ++other) {
        merge(s, other, event.clock[static_cast<std::size_t>(other)], recorded);
      }
    }
    if (fork) {
      streams_[s].state = CaptureState::capture;
      streams_[s].side = true;
      std::vector<std::size_t>& frontier = recording_.frontier[s];
      frontier.insert(frontier.end(), event.nodes.begin(), event.nodes.end());
    } else if (mine != 0) {
      std::vector<std::size_t>& frontier = recording_.frontier[s];
      for (std::size_t node : event.nodes) {
        if (std::find(frontier.begin(), frontier.end(), node) == frontier.end()) {
          frontier.push_back(node);
        }
      }
    }
  }

  // `to` ordered after `from` through event `e` (two steps).
  void do_order(int from, int to, int e) {
    do_record(e, from);
    if (divergence_.empty()) do_wait(to, e);
  }

  void do_prepare() {
    log_ << "prepare_capture(stream 0)";
    std::optional<Errc> expected;
    if (streams_[0].state != CaptureState::no_capture) expected = Errc::graph_state;
    expect(device_->prepare_capture(*streams_[0].handle), expected, "prepare_capture");
    if (!expected) streams_[0].state = CaptureState::prepare;
  }

  void do_begin() {
    log_ << "begin_capture(stream 0)";
    std::optional<Errc> expected;
    if (streams_[0].state != CaptureState::prepare) expected = Errc::graph_state;
    expect(device_->begin_capture(*streams_[0].handle), expected, "begin_capture");
    if (expected) return;
    streams_[0].state = CaptureState::capture;
    recording_ = ModelRecording{};
    recording_.id = next_recording_++;
  }

  // The recording closed (refused when `refusal`): side streams leave it; a refusal marks the
  // claims and forgets the side streams' uses of its buffers (they never ran).
  void close_recording(std::optional<Errc> refusal) {
    std::vector<int> sides;
    for (int s = 1; s < kStreams; ++s) {
      if (streams_[s].side) sides.push_back(s);
      streams_[s].side = false;
      streams_[s].state = CaptureState::no_capture;
    }
    streams_[0].state = CaptureState::no_capture;
    if (refusal) {
      for (int b : recording_.claims) buf(b).failure = *refusal;
    }
    // The uses were recorded, not run: a refused recording's never run (each buffer has the
    // users it had without them); a graph runs on stream 0, so its side streams' uses become
    // stream 0's, at its position at the close.
    if (refusal) {
      for (const auto& [b, before] : recording_.before) static_cast<BufferUsage&>(buf(b)) = before;
    } else if (!sides.empty()) {
      for (int b : recording_.buffers) {
        ModelBuffer& buffer = buf(b);
        for (int side : sides) buffer.readers.erase(side);
        if (std::find(sides.begin(), sides.end(), buffer.writer) != sides.end()) {
          buffer.writer = 0;
          buffer.write_seq = buffer.use_seq = streams_[0].seq;
        }
      }
    }
    recording_ = ModelRecording{};
  }

  std::optional<int> unjoined() const {
    std::vector<bool> joined(recording_.nodes.size(), false);
    std::vector<std::size_t> stack;
    if (auto found = recording_.frontier.find(0); found != recording_.frontier.end()) {
      stack = found->second;
    }
    while (!stack.empty()) {
      const std::size_t node = stack.back();
      stack.pop_back();
      if (joined[node]) continue;
      joined[node] = true;
      for (std::size_t before : recording_.nodes[node].deps) stack.push_back(before);
    }
    for (const auto& [stream, last] : recording_.last_node) {
      if (stream != 0 && !joined[last]) return stream;
    }
    return std::nullopt;
  }

  void do_end(int s) {
    log_ << "end_capture(stream " << s << ")";
    if (s != 0) {
      // A side stream (forked or not) has no recording of its own to end.
      expect(device_->end_capture(*streams_[s].handle), Errc::graph_state, "end_capture on a side stream");
      return;
    }
    std::optional<Errc> expected;
    std::string what = "end_capture";
    if (streams_[0].state != CaptureState::capture) {
      expected = Errc::graph_state;
    } else if (recording_.doomed) {
      expected = Errc::doomed;
    } else if (std::optional<int> side = unjoined()) {
      expected = Errc::graph_state;
      what = "end_capture with side work not joined back";
    }
    Result<Graph> graph = device_->end_capture(*streams_[0].handle);
    expect(graph, expected, what);
    if (streams_[0].state != CaptureState::capture) return;
    if (expected) {
      close_recording(expected);
      return;
    }
    if (!graph) return;
    log_ << "  graph " << graphs_.size() << " replays " << recording_.ops.size() << " op(s)\n";
    graphs_.push_back(ModelGraph{recording_.ops, recording_.buffers, true, std::move(*graph)});
    close_recording(std::nullopt);
  }

  void do_abort(int s) {
    log_ << "abort_capture(stream " << s << ")";
    if (s != 0) {
      expect(device_->abort_capture(*streams_[s].handle), Errc::graph_state,
             "abort_capture on a side stream");
      return;
    }
    const CaptureState was = streams_[0].state;
    expect(device_->abort_capture(*streams_[0].handle),
           was == CaptureState::no_capture ? std::optional<Errc>(Errc::graph_state) : std::nullopt,
           "abort_capture");
    if (was == CaptureState::capture) {
      close_recording(Errc::doomed);
    } else {
      streams_[0].state = CaptureState::no_capture;
    }
  }

  void do_read(int b, int s) {
    log_ << "read(buffer " << b << ", stream " << s << ")";
    ModelBuffer& buffer = buf(b);
    Result<std::vector<std::byte>> read = device_->read(buffer.handle, *streams_[s].handle);
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
    expect(read, expected, what);
    if (expected) return;
    // Past the failure check a read is an operation of its stream (its staging's use); a read
    // of the stream's own buffer is stamped on it.
    const std::uint64_t seq = ++streams_[s].seq;
    if (buffer.owner == s) stamp(s, b, false, seq);
    if (!read) return;
    completed(s);  // it waited for its stream
    const Values got = to_u32(*read);
    for (std::uint32_t i = 0; i < kN; ++i) {
      if (buffer.known[i]) ++outcomes()["read: elements compared with the model"];
      if (buffer.known[i] && got[i] != buffer.bytes[i]) {
        diverge("read: buffer " + std::to_string(b) + " element " + std::to_string(i) + " is " +
                std::to_string(got[i]) + ", the model says " + std::to_string(buffer.bytes[i]));
        return;
      }
    }
  }

  void do_sync(int s) {
    log_ << "sync(stream " << s << ")";
    expect(device_->sync(*streams_[s].handle),
           recording_open() ? std::optional<Errc>(Errc::graph_state) : std::nullopt, "sync");
    if (!recording_open()) completed(s);
  }

  void do_drop(int b) {
    log_ << "drop(buffer " << b << ")\n";
    buf(b).live = false;
    buf(b).handle = Buffer{};
  }

  // A replay is a use of the graph's buffers on stream 0, as its operations would be eagerly:
  // refused (invalid_argument, nothing enqueued) when stream 0 is not ordered after another
  // stream's use since; else stamped at a position of its own (nothing hands it back: another
  // stream orders itself after it with an event or a sync).
  void do_replay(int g) {
    ModelGraph& graph = graphs_[static_cast<std::size_t>(g)];
    for (int b : graph.buffers) {
      if (buf(b).live && buf(b).failure) return;  // not modelled (see the top)
    }
    log_ << "replay(graph " << g << ")";
    std::optional<Errc> expected;
    std::set<int> reads, writes;
    for (const Op& op : graph.ops) {
      if (op.src >= 0) reads.insert(op.src);
      writes.insert(op.dst);
    }
    if (!graph.live || in_recording(0)) {
      expected = Errc::graph_state;
    } else {
      for (int b : graph.buffers) {
        if (buf(b).live && !may_use(0, b, writes.count(b) != 0)) expected = Errc::invalid_argument;
      }
    }
    expect(graph.handle.replay(), expected,
           expected == Errc::invalid_argument ? "replay not ordered" : "replay");
    if (expected) return;
    for (const Op& op : graph.ops) apply(op);
    for (const Op& op : graph.ops) buf(op.dst).failure.reset();
    const std::uint64_t seq = ++streams_[0].seq;
    for (int b : graph.buffers) {
      if (buf(b).live) stamp(0, b, writes.count(b) != 0, seq);
    }
  }

  void do_destroy(int g) {
    log_ << "destroy(graph " << g << ")";
    ModelGraph& graph = graphs_[static_cast<std::size_t>(g)];
    expect(graph.handle.destroy(), std::nullopt, "destroy");
    graph.live = false;
  }

  void random_step() {
    // Mostly work on the streams of the open recording, so recordings fork and join.
    int s = static_cast<int>(pick(kStreams));
    if (recording_open() && chance(50)) {
      std::vector<int> recording;
      for (int t = 0; t < kStreams; ++t) {
        if (in_recording(t)) recording.push_back(t);
      }
      s = recording[pick(recording.size())];
    }
    const int e = static_cast<int>(pick(kEvents));
    const std::size_t roll = pick(100);
    if (roll < 6) {
      do_prepare();
    } else if (roll < 12) {
      do_begin();
    } else if (roll < 18) {
      do_end(chance(85) ? 0 : s);
    } else if (roll < 20) {
      do_abort(chance(85) ? 0 : s);
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
      const int b = live_buffer();
      if (b >= 0) do_drop(b);
    } else if (roll < 97) {
      if (!graphs_.empty()) do_replay(static_cast<int>(pick(graphs_.size())));
    } else {
      if (!graphs_.empty()) do_destroy(static_cast<int>(pick(graphs_.size())));
    }
  }

  void teardown() {
    for (ModelGraph& graph : graphs_) graph.handle = Graph{};
    for (ModelBuffer& buffer : buffers_) buffer.handle = Buffer{};
    for (ModelEvent& event : events_) event.handle = Event{};
    add_one_ = fill_ = copy_ = Kernel{};
    device_.reset();
    const fake::LiveHandles live = driver_.live_handles();
    if (live.total() != 0) {
      diverge("the closed device left " + std::to_string(live.total()) + " handle(s)");
    }
    if (driver_.reclaimed_handles() != 0) diverge("handles were reclaimed with the context");
    if (!driver_.violations().empty()) diverge("fake violation: " + driver_.violations().front());
  }

  std::mt19937_64 rng_;
  fake::FakeDriver driver_;  // its race check on: no two operations no order separates may race
  std::unique_ptr<Device> device_;
  Kernel add_one_, fill_, copy_;
  ModelStream streams_[kStreams];
  Clock completed_{};  // what completed host syncs saw finish (every stream is ordered after)
  std::array<ModelEvent, kEvents> events_;
  std::vector<ModelBuffer> buffers_;
  std::vector<ModelGraph> graphs_;
  ModelRecording recording_;
  std::uint64_t next_recording_ = 1;
  std::ostringstream log_;
  std::string divergence_;
};

TEST(RandomMultiStreamLifecycles, EverySequenceFollowsTheModel) {
  const std::optional<std::uint64_t> only = model::env_number("GRAPHCAP_SEED");
  const std::uint64_t count = model::sequence_count(true, kCounts);
  std::uint64_t ran = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t seed = only ? *only : i + 1;
    Sequence sequence(seed);
    const std::string divergence = sequence.run();
    ++ran;
    if (only) {
      std::printf("seed %llu:\n%s", static_cast<unsigned long long>(seed),
                  sequence.log().c_str());
    }
    if (!divergence.empty()) {
      ADD_FAILURE() << "seed " << seed << " diverged from the model: " << divergence
                    << "\nrerun it with GRAPHCAP_SEED=" << seed << "; the sequence:\n"
                    << sequence.log();
      break;
    }
  }
  std::printf("[ random   ] %llu multi-stream sequences of %d steps\n",
              static_cast<unsigned long long>(ran), kStepsPerSequence);
  for (const auto& [what, n] : outcomes()) {
    std::printf("[ random   ]   %-64s %8llu\n", what.c_str(), static_cast<unsigned long long>(n));
  }
  // The sequences must reach what they are for: forks, joins, refusals by name.
  EXPECT_GT(outcomes()["wait: fork -> ok"], 0u);
  EXPECT_GT(outcomes()["end_capture -> ok"], 0u);
  EXPECT_GT(outcomes()["end_capture with side work not joined back -> graph_state"], 0u);
  EXPECT_GT(outcomes()["launch add_one (eager, side stream) not ordered -> invalid_argument"] +
                outcomes()["Device::copy (eager, side stream) not ordered -> invalid_argument"],
            0u);
  RecordProperty("sequences", static_cast<int>(ran));
}

}  // namespace
}  // namespace graphcap::testing
