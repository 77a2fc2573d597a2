// Random lifecycles: seeded random sequences of API calls against graphcap on the fake,
// checked step by step against a small model of what each call must do, on the shared model
// library (model/world.h: the device, streams and draws; model/host_buffer.h: the bytes).
//
// The model keeps, per stream, the capture state (no_capture / prepare / capture), whether the
// open recording is doomed, what it recorded and which buffers it claimed; per buffer, its bytes
// (with which elements are known: a fresh allocation's are not) and the failure it carries; per
// graph, the operations it replays. Calls are issued in and out of order (prepare, begin, end,
// abort on either stream, from any state), with allocations, full and partial writes, launches of
// add_one / fill / copy (now and then with a buffer of the other stream), full and partial reads,
// syncs, drops, replays and destroys. Each call's result must be what the model says: success,
// or the specific Errc (graph_state for out-of-order lifecycle calls and for reads or syncs while
// a recording is open, invalid_argument for a buffer of another stream, failed_buffer for a launch
// reading a failed buffer, doomed for a refused recording and for what it claimed), and every read
// must return exactly the known bytes. Only two outcomes depend on the pools' caching, which the
// model does not simulate: an allocation or a write's staging while a recording is open (on its
// stream, or on another one in global mode) may be served from cache or refused with
// Errc::out_of_memory (a pool that may not grow); the model accepts either and follows what happened (a refusal dooms the
// recording of that stream and marks the write's destination).
//
// After each sequence every window is closed, every live buffer is read back, everything is
// dropped and the device closed: no handle may be left and the fake must have seen no
// memory-safety violation. A divergence fails the test and prints the seed and the sequence;
// GRAPHCAP_SEED=<seed> reruns that one sequence (printing it), GRAPHCAP_RANDOM_SEQUENCES=<n> sets
// how many run (default 10000; 2000 under AddressSanitizer or ThreadSanitizer).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <graphcap/graphcap.h>

#include "device_fixture.h"
#include "model/runner.h"
#include "model/sequence.h"
#include "model/world.h"
#include "test_driver.h"

namespace graphcap::testing::lifecycle {
namespace {

using model::World;
using Values = std::vector<std::uint32_t>;

constexpr int kStreams = 2;  // the world's streams 0 and 1
constexpr int kStepsPerSequence = 48;
constexpr std::size_t kSizes[] = {16, 64, 100};  // elements (u32)

constexpr model::SequenceCounts kCounts{.fake = 10000, .sanitizer = 2000, .gpu = 10000};  // fake only

// One recorded (or replayed) operation on buffers, by model buffer id.
struct Op {
  enum Kind { add_one, fill, copy, write } kind;
  int src = -1;
  int dst = -1;
  std::uint32_t n = 0;      // elements
  std::uint32_t value = 0;  // fill
  std::size_t offset = 0;   // write, in elements
  Values data;              // write
};

// Its bytes and failure (HostBuffer; a dropped one is not live, a graph may still replay into its
// memory), and what orders other streams after its uses: written, used on its stream since that
// stream's last completed host sync (eagerly; by the open recording). Until then no other stream
// is ordered after that write, that use.
struct ModelBuffer : model::HostBuffer {
  explicit ModelBuffer(std::size_t words) : HostBuffer(words) {}
  bool written_since_sync = true;  // the allocation
  bool used_since_sync = true;
  bool written_by_recording = false;
  bool used_by_recording = false;
};

struct ModelGraph {
  int stream = 0;
  std::vector<Op> ops;
  bool live = true;
  Graph handle;
  // The buffers it holds until released (those alive at its close): their failures outlive
  // their handles.
  std::set<int> held;
  bool released = false;  // destroyed, and no open recording deferred its release
};

struct ModelStream {
  CaptureState state = CaptureState::no_capture;
  bool doomed = false;
  std::vector<int> claims;
  std::vector<Op> recorded;
  std::optional<Errc> queued;  // a skipped replay's error, reported by the next sync or read
};

model::Outcomes& outcomes() {
  static model::Outcomes counts;
  return counts;
}

class Model : public model::Sequence<ModelBuffer, ModelGraph> {
 public:
  explicit Model(std::uint64_t seed) : Sequence(seed, make_test_driver(), outcomes()) {}

  model::SequenceEnd run() {
    if (!world.open()) return end();
    for (int step = 0; step < kStepsPerSequence && ok(); ++step) random_step();
    finish();
    return close();
  }

 private:
  // ---- helpers ------------------------------------------------------------------------------------

  bool any_recording() const {
    return std::any_of(std::begin(streams_), std::end(streams_),
                       [](const ModelStream& s) { return s.state == CaptureState::capture; });
  }

  // A live buffer (of stream `s` unless `anywhere`), or -1.
  int buffer_of(int s, bool anywhere = false) {
    return live_buffer([&](int b) { return anywhere || buf(b).owner == s; });
  }

  // The pools' caching, which the model does not simulate, may refuse what a call allocates while
  // a recording is open (out_of_memory): counted, and nothing else is right.
  template <class T>
  bool refused_by_pool(const Result<T>& result, const std::string& what, const char* how) {
    if (result) return false;
    log() << "  " << what << " -> " << to_string(result.error()) << "\n";
    world.count(what + " -> " + to_string(result.error().code()) + how);
    if (!any_recording() || result.error().code() != Errc::out_of_memory) {
      world.diverge(what + ": expected ok, got " + to_string(result.error()));
    }
    return true;
  }

  void apply(const Op& op) {
    ModelBuffer& dst = buf(op.dst);
    switch (op.kind) {
      case Op::add_one:
      case Op::copy:
        dst.copy_words(buf(op.src), op.kind == Op::add_one ? 1 : 0, op.n);
        break;
      case Op::fill:
        dst.fill_words(op.value, op.n);
        break;
      case Op::write:
        dst.write_words(op.offset, op.data);
        break;
    }
  }

  // A recording of stream `s` was refused or abandoned: what it claimed carries that, and its
  // uses never ran.
  void refuse_claims(int s) {
    for (int b : streams_[s].claims) buf(b).fail(Errc::doomed);
    streams_[s].claims.clear();
    streams_[s].recorded.clear();
    close_uses(s, false);
  }
  void close_uses(int s, bool made_graph) {
    for (ModelBuffer& buffer : buffers) {
      if (buffer.owner != s) continue;
      buffer.written_since_sync = buffer.written_since_sync || (made_graph && buffer.written_by_recording);
      buffer.used_since_sync = buffer.used_since_sync || (made_graph && buffer.used_by_recording);
      buffer.written_by_recording = buffer.used_by_recording = false;
    }
  }
  // graphcap stamped a use of `buffer` on its stream.
  void used(ModelBuffer& buffer, bool writes) {
    const bool recorded = streams_[buffer.owner].state == CaptureState::capture;
    (recorded ? buffer.used_by_recording : buffer.used_since_sync) = true;
    if (writes) (recorded ? buffer.written_by_recording : buffer.written_since_sync) = true;
  }
  // A host sync of stream `s` completed: every stream is ordered after its buffers' uses.
  void synced(int s) {
    for (ModelBuffer& buffer : buffers) {
      if (buffer.owner == s) buffer.used_since_sync = buffer.written_since_sync = false;
    }
  }
  // A use on another stream that graphcap allows (ordered by a host sync) is not modelled here.
  bool ordered_elsewhere(const ModelBuffer& buffer, bool writes) const {
    if (writes) return !buffer.used_since_sync && !buffer.used_by_recording;
    return !buffer.written_since_sync && !buffer.written_by_recording;
  }
  // A write of buffer `b` on stream `s` (launch or host write) was refused for a failed input or
  // by the pool: it carries `code`, and dooms the recording that claims it.
  void failed_write(int s, int b, Errc code) {
    buf(b).fail(code);
    if (streams_[s].state == CaptureState::capture) {
      streams_[s].claims.push_back(b);
      streams_[s].doomed = true;
    }
  }
  // A write of buffer `b` on stream `s` succeeded: recorded (claimed) or run now.
  void wrote(int s, int b, Op op) {
    if (streams_[s].state == CaptureState::capture) {
      streams_[s].claims.push_back(b);
      streams_[s].recorded.push_back(std::move(op));
      return;
    }
    apply(op);
  }

  // ---- the calls ------------------------------------------------------------------------------
  void do_prepare(int s) {
    log() << "prepare_capture(stream " << s << ")\n";
    std::optional<Errc> expected;
    if (streams_[s].state != CaptureState::no_capture) expected = Errc::graph_state;
    world.expect(device().prepare_capture(stream(s)), expected, "prepare_capture");
    if (!expected) streams_[s].state = CaptureState::prepare;
  }

  void do_begin(int s) {
    log() << "begin_capture(stream " << s << ")\n";
    std::optional<Errc> expected;
    // Out of order; or another recording is open in global mode on this thread.
    if (streams_[s].state != CaptureState::prepare || any_recording()) expected = Errc::graph_state;
    world.expect(device().begin_capture(stream(s)), expected, "begin_capture");
    if (expected) return;
    ModelStream& st = streams_[s];
    st.state = CaptureState::capture;
    st.doomed = false;
    st.claims.clear();
    st.recorded.clear();
  }

  // Whether buffer b's state (its failure) is still kept: its handle or a graph not yet released
  // holds it.
  bool alive(int b) const {
    if (buffers[static_cast<std::size_t>(b)].live) return true;
    return std::any_of(graphs.begin(), graphs.end(), [&](const ModelGraph& graph) {
      return !graph.released && graph.held.count(b) != 0;
    });
  }
  // A host wait or a recording's end with none open: the releases a recording deferred happen.
  void release_deferred() {
    if (any_recording()) return;
    for (ModelGraph& graph : graphs) {
      if (!graph.live) graph.released = true;
    }
  }

  void do_end(int s) {
    log() << "end_capture(stream " << s << ")\n";
    ModelStream& st = streams_[s];
    std::optional<Errc> expected;
    if (st.state != CaptureState::capture) {
      expected = Errc::graph_state;
    } else if (st.doomed) {
      expected = Errc::doomed;
    }
    Result<Graph> graph = device().end_capture(stream(s));
    world.expect(graph, expected, "end_capture");
    if (st.state != CaptureState::capture) return;
    st.state = CaptureState::no_capture;
    release_deferred();
    if (expected) {
      refuse_claims(s);
      return;
    }
    if (!graph) return;
    log() << "  graph " << graphs.size() << " replays " << st.recorded.size() << " op(s)\n";
    ModelGraph made{s, std::move(st.recorded), true, std::move(*graph), {}, false};
    for (const Op& op : made.ops) {
      for (int b : {op.src, op.dst}) {
        if (b >= 0 && alive(b)) made.held.insert(b);
      }
    }
    graphs.push_back(std::move(made));
    st.recorded.clear();
    st.claims.clear();
    close_uses(s, true);
  }

  void do_abort(int s) {
    log() << "abort_capture(stream " << s << ")\n";
    const CaptureState was = streams_[s].state;
    world.expect(device().abort_capture(stream(s)),
                  was == CaptureState::no_capture ? std::optional<Errc>(Errc::graph_state) : std::nullopt,
                  "abort_capture");
    streams_[s].state = CaptureState::no_capture;
    if (was == CaptureState::capture) refuse_claims(s);
    release_deferred();
  }

  void do_alloc(int s) {
    const std::size_t n = kSizes[world.pick(std::size(kSizes))];
    log() << "alloc(" << n * 4 << " bytes, stream " << s << ") as buffer " << buffers.size() << "\n";
    Result<Buffer> buffer = device().alloc(n * 4, stream(s));
    if (refused_by_pool(buffer, "alloc", " (pool, recording open)")) {
      if (streams_[s].state == CaptureState::capture) streams_[s].doomed = true;
      return;
    }
    log() << "  alloc -> ok\n";
    world.count(std::string("alloc -> ok") + (any_recording() ? " (recording open)" : ""));
    ModelBuffer model(n);
    model.owner = s;
    model.live = true;
    model.handle = *buffer;
    buffers.push_back(std::move(model));
  }

  void do_write(int b, int on_stream) {
    ModelBuffer& buffer = buf(b);
    const bool partial = world.chance(30);
    const std::size_t offset = partial ? world.pick(buffer.words()) : 0;
    const std::size_t count = partial ? 1 + world.pick(buffer.words() - offset) : buffer.words();
    Values data(count);
    for (std::uint32_t& v : data) v = world.value();
    if (on_stream != buffer.owner && ordered_elsewhere(buffer, true)) return;
    log() << "write(buffer " << b << ", elements [" << offset << ", " << offset + count << "), stream "
          << on_stream << ")\n";
    Result<void> written = device().write(buffer.handle, offset * 4, to_bytes(data), stream(on_stream));
    if (on_stream != buffer.owner) {
      world.expect(written, Errc::invalid_argument, "write with a buffer of another stream");
      return;
    }
    const bool recording = streams_[on_stream].state == CaptureState::capture;
    used(buffer, true);  // stamped even when the staging failed
    // Staging refused by the pool while a recording is open: the destination carries it.
    if (refused_by_pool(written, "write", " (staging, recording open)")) {
      failed_write(on_stream, b, Errc::out_of_memory);
      return;
    }
    log() << "  write -> ok\n";
    world.count(std::string("write -> ok") + (recording ? " (recorded)" : ""));
    wrote(on_stream, b, Op{Op::write, -1, b, static_cast<std::uint32_t>(count), 0, offset, std::move(data)});
    if (!recording && offset == 0 && count == buffer.words()) buffer.produced();
  }

  Result<void> issue(int on_stream, const Op& op) {
    switch (op.kind) {
      case Op::add_one:
        log() << "launch add_one(buffer " << op.src << " -> buffer " << op.dst << ", n " << op.n;
        return world.add_one(stream(on_stream), buf(op.src).handle, buf(op.dst).handle, op.n);
      case Op::copy:
        log() << "launch copy(buffer " << op.src << " -> buffer " << op.dst << ", n " << op.n;
        return world.copy(stream(on_stream), buf(op.src).handle, buf(op.dst).handle, op.n);
      case Op::fill:
        log() << "launch fill(buffer " << op.dst << " = " << op.value << ", n " << op.n;
        return world.fill(stream(on_stream), buf(op.dst).handle, op.value, op.n);
      case Op::write:
        break;
    }
    return {};
  }

  void do_launch(int on_stream) {
    const int kind = static_cast<int>(world.pick(3));
    const bool misuse = world.chance(5);
    const int dst = buffer_of(on_stream, misuse);
    if (dst < 0) return;
    const int src = kind == Op::fill ? -1 : buffer_of(on_stream, misuse);
    if (kind != Op::fill && src < 0) return;
    ModelBuffer& out = buf(dst);
    std::uint32_t n = static_cast<std::uint32_t>(out.words());
    if (src >= 0) n = std::min(n, static_cast<std::uint32_t>(buf(src).words()));
    const std::uint32_t value = world.value();
    if ((out.owner != on_stream && ordered_elsewhere(out, true)) ||
        (src >= 0 && buf(src).owner != on_stream && ordered_elsewhere(buf(src), false))) {
      return;
    }
    Op op{static_cast<Op::Kind>(kind), src, dst, n, value, 0, {}};
    Result<void> launched = issue(on_stream, op);
    log() << ", stream " << on_stream << ")\n";
    const bool foreign = out.owner != on_stream || (src >= 0 && buf(src).owner != on_stream);
    if (foreign) {
      world.expect(launched, Errc::invalid_argument, "launch with a buffer of another stream");
      return;
    }
    const bool input_failed = src >= 0 && buf(src).failure.has_value();
    world.expect(launched, input_failed ? std::optional<Errc>(Errc::failed_buffer) : std::nullopt, "launch");
    if (input_failed) {
      failed_write(on_stream, dst, Errc::failed_buffer);
      return;
    }
    used(out, true);
    if (src >= 0) used(buf(src), false);
    const bool recording = streams_[on_stream].state == CaptureState::capture;
    wrote(on_stream, dst, std::move(op));
    // An `out` binding that ran produced the buffer's contents: its failure is gone (even when
    // this kernel wrote only the first n elements: graphcap can't tell how much a kernel writes).
    if (!recording) out.produced();
  }

  void do_read(int b, int on_stream, bool partial) {
    ModelBuffer& buffer = buf(b);
    const std::size_t offset = partial ? world.pick(buffer.words()) : 0;
    const std::size_t count = partial ? 1 + world.pick(buffer.words() - offset) : buffer.words();
    if (on_stream != buffer.owner && ordered_elsewhere(buffer, false)) return;
    log() << "read(buffer " << b << ", elements [" << offset << ", " << offset + count << "), stream "
          << on_stream << ")\n";
    Result<std::vector<std::byte>> read = device().read(buffer.handle, offset * 4, count * 4, stream(on_stream));
    std::optional<Errc> expected;
    if (on_stream != buffer.owner) {
      expected = Errc::invalid_argument;
    } else if (any_recording()) {
      expected = Errc::graph_state;  // waiting now would invalidate the recording
    } else if (buffer.failure) {
      expected = buffer.failure;
    } else if (streams_[on_stream].queued) {
      expected = std::exchange(streams_[on_stream].queued, std::nullopt);  // surfaces once
    }
    world.expect(read, expected, "read");
    if (on_stream == buffer.owner && !any_recording() && !buffer.failure) {
      synced(on_stream);  // enqueued, then waited for its stream (a queued error comes after)
      release_deferred();
    }
    if (!read || expected) return;
    world.count("read: elements compared with the model", buffer.known_count(offset, count));
    if (auto wrong = buffer.mismatch(to_u32(*read), offset, "read: buffer " + std::to_string(b))) {
      world.diverge(*wrong);
    }
  }

  void do_sync(int s) {
    log() << "sync(stream " << s << ")\n";
    std::optional<Errc> expected;
    if (any_recording()) {
      expected = Errc::graph_state;
    } else {
      expected = std::exchange(streams_[s].queued, std::nullopt);  // surfaces once
    }
    world.expect(device().sync(stream(s)), expected, "sync");
    if (!any_recording()) {
      synced(s);
      release_deferred();
    }
  }

  // Graph::destroy waits for the graph's stream: a host sync of it, as Device::sync is. While a
  // recording is open it defers the release (waiting would invalidate it), which orders nothing.
  void do_destroy(int g) {
    const ModelGraph& graph = graphs[static_cast<std::size_t>(g)];
    const bool waits = graph.live && !any_recording();
    const int s = graph.stream;
    destroy(g);
    if (waits) {
      synced(s);
      release_deferred();
    }
  }

  void do_replay(int g) {
    ModelGraph& graph = graphs[static_cast<std::size_t>(g)];
    log() << "replay(graph " << g << ")\n";
    std::optional<Errc> expected;
    if (!graph.live || streams_[graph.stream].state == CaptureState::capture) expected = Errc::graph_state;
    // A replay reading a buffer that carries a failure is skipped, and what it writes carries
    // failed_buffer (a dropped buffer too, while a graph holds it).
    const bool input_failed = !expected && std::any_of(graph.ops.begin(), graph.ops.end(), [&](const Op& op) {
      return op.src >= 0 && alive(op.src) && buf(op.src).failure;
    });
    if (input_failed) expected = Errc::failed_buffer;
    world.expect(graph.handle.replay(), expected, "replay");
    if (input_failed) {
      // The skipped replay's error is queued on its stream too (graph.h).
      if (!streams_[graph.stream].queued) streams_[graph.stream].queued = Errc::failed_buffer;
      for (const Op& op : graph.ops) {
        if (alive(op.dst)) buf(op.dst).fail(Errc::failed_buffer);
      }
      return;
    }
    if (expected) return;
    world.count("replay: ops applied", graph.ops.size());
    for (const Op& op : graph.ops) apply(op);
    // What the graph produces whole (an `out` launch, a full write) no longer carries a failure.
    for (const Op& op : graph.ops) {
      ModelBuffer& out = buf(op.dst);
      if (op.kind != Op::write || (op.offset == 0 && op.data.size() == out.words())) out.produced();
    }
  }

  void random_step() {
    // Work mostly on a stream that records, so recordings hold operations worth replaying.
    int s = static_cast<int>(world.pick(kStreams));
    for (int t = 0; t < kStreams; ++t) {
      if (streams_[t].state == CaptureState::capture && world.chance(60)) s = t;
    }
    std::size_t roll = world.pick(100);
    if (streams_[s].state == CaptureState::capture && roll >= 26 && roll < 36 && world.chance(70)) {
      roll = 50;  // inside a window, mostly launch: an allocation there usually dooms it
    }
    if (roll < 8) {
      do_prepare(s);
    } else if (roll < 16) {
      do_begin(s);
    } else if (roll < 23) {
      do_end(s);
    } else if (roll < 26) {
      do_abort(s);
    } else if (roll < 36) {
      do_alloc(s);
    } else if (roll < 46) {
      const int b = buffer_of(s, world.chance(5));
      if (b >= 0) do_write(b, s);
    } else if (roll < 68) {
      do_launch(s);
    } else if (roll < 78) {
      const int b = buffer_of(s, world.chance(5));
      if (b >= 0) do_read(b, s, world.chance(30));
    } else if (roll < 82) {
      do_sync(s);
    } else if (roll < 86) {
      const int b = buffer_of(s);
      if (b >= 0) drop(b);
    } else if (roll < 96) {
      if (!graphs.empty()) do_replay(static_cast<int>(world.pick(graphs.size())));
    } else {
      if (!graphs.empty()) do_destroy(static_cast<int>(world.pick(graphs.size())));
    }
  }

  // Close every window, read back everything.
  void finish() {
    for (int s = 0; s < kStreams && ok(); ++s) {
      if (streams_[s].state == CaptureState::capture) do_end(s);
      if (streams_[s].state == CaptureState::prepare) do_abort(s);
    }
    for (std::size_t b = 0; b < buffers.size() && ok(); ++b) {
      if (buffers[b].live) do_read(static_cast<int>(b), buffers[b].owner, false);
    }
    for (int s = 0; s < kStreams && ok(); ++s) do_sync(s);
  }

    ModelStream streams_[kStreams];
};

}  // namespace

TEST(RandomLifecycles, EverySequenceFollowsTheModel) {
  const std::uint64_t ran = model::run_sequences(model::sequence_count(true, kCounts),
                                                 [](std::uint64_t seed) { return Model(seed).run(); });
  std::printf("[ random   ] %llu sequences of %d steps\n", static_cast<unsigned long long>(ran),
              kStepsPerSequence);
  outcomes().print("random");
}

}  // namespace graphcap::testing::lifecycle
