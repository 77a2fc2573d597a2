// Random lifecycles: seeded random sequences of API calls against graphcap on the fake,
// checked step by step against a small model of what each call must do.
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
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
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

namespace graphcap::testing {
namespace {

using Values = std::vector<std::uint32_t>;

constexpr int kStreams = 2;
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

struct ModelBuffer {
  int stream = 0;
  std::size_t n = 0;
  Values bytes;
  std::vector<bool> known;
  std::optional<Errc> failure;
  bool live = true;  // false once dropped (a graph may still replay into its memory)
  // Written, used on its stream since that stream's last completed host sync (eagerly; by the
  // open recording): until then no other stream is ordered after that write, that use.
  bool written_since_sync = true;  // the allocation
  bool used_since_sync = true;
  bool written_by_recording = false;
  bool used_by_recording = false;
  Buffer handle;
};

struct ModelGraph {
  int stream = 0;
  std::vector<Op> ops;
  bool live = true;
  Graph handle;
};

struct ModelStream {
  CaptureState state = CaptureState::no_capture;
  bool doomed = false;
  std::vector<int> claims;
  std::vector<Op> recorded;
  Stream* handle = nullptr;
  std::optional<Errc> queued;  // a skipped replay's error, reported by the next sync or read
};

std::string errc_text(const std::optional<Errc>& code) {
  return code ? to_string(*code) : std::string("ok");
}

// How often each call ended each way, over every sequence run (printed: the coverage).
std::map<std::string, std::uint64_t>& outcomes() {
  static std::map<std::string, std::uint64_t> counts;
  return counts;
}

class Sequence {
 public:
  explicit Sequence(std::uint64_t seed) : seed_(seed), rng_(seed) {}

  // Runs the sequence; returns the divergence, if any (empty when the model held).
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
    Result<Stream*> second = device_->create_stream();
    if (!second) return "create_stream failed: " + to_string(second.error());
    streams_[1].handle = *second;

    for (int step = 0; step < kStepsPerSequence && divergence_.empty(); ++step) random_step();
    // Close every window, read back everything, then tear down.
    for (int s = 0; s < kStreams && divergence_.empty(); ++s) {
      if (streams_[s].state == CaptureState::capture) do_end(s);
      if (streams_[s].state == CaptureState::prepare) do_abort(s);
    }
    for (std::size_t b = 0; b < buffers_.size() && divergence_.empty(); ++b) {
      if (buffers_[b].live) do_read(static_cast<int>(b), buffers_[b].stream, false);
    }
    for (int s = 0; s < kStreams && divergence_.empty(); ++s) do_sync(s);
    if (divergence_.empty()) teardown();
    return divergence_;
  }

  std::string log() const { return log_.str(); }

 private:
  // ---- helpers ------------------------------------------------------------------------------------
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  bool chance(int percent) { return static_cast<int>(pick(100)) < percent; }
  std::uint32_t random_value() { return static_cast<std::uint32_t>(rng_() & 0xFFFFF); }

  bool any_recording() const {
    for (const ModelStream& s : streams_) {
      if (s.state == CaptureState::capture) return true;
    }
    return false;
  }

  // A live buffer (of stream `s` unless `anywhere`), or -1.
  int live_buffer(int s, bool anywhere = false) {
    std::vector<int> candidates;
    for (std::size_t b = 0; b < buffers_.size(); ++b) {
      if (buffers_[b].live && (anywhere || buffers_[b].stream == s)) {
        candidates.push_back(static_cast<int>(b));
      }
    }
    return candidates.empty() ? -1 : candidates[pick(candidates.size())];
  }

  void diverge(const std::string& what) {
    if (divergence_.empty()) divergence_ = what;
  }

  template <class T>
  std::optional<Errc> code_of(const Result<T>& result) {
    return result ? std::nullopt : std::optional<Errc>(result.error().code());
  }

  template <class T>
  void expect(const Result<T>& result, std::optional<Errc> expected, const std::string& what) {
    const std::optional<Errc> got = code_of(result);
    ++outcomes()[what + " -> " + errc_text(got)];
    log_ << " -> " << (result ? std::string("ok") : to_string(result.error())) << "\n";
    if (got != expected) {
      diverge(what + ": expected " + errc_text(expected) + ", got " +
              (result ? std::string("ok") : to_string(result.error())));
    }
  }

  void apply(const Op& op) {
    ModelBuffer& dst = buffers_[static_cast<std::size_t>(op.dst)];
    switch (op.kind) {
      case Op::add_one:
      case Op::copy: {
        const ModelBuffer& src = buffers_[static_cast<std::size_t>(op.src)];
        for (std::uint32_t i = 0; i < op.n; ++i) {
          dst.bytes[i] = src.bytes[i] + (op.kind == Op::add_one ? 1 : 0);
          dst.known[i] = src.known[i];
        }
        break;
      }
      case Op::fill:
        for (std::uint32_t i = 0; i < op.n; ++i) {
          dst.bytes[i] = op.value;
          dst.known[i] = true;
        }
        break;
      case Op::write:
        for (std::size_t i = 0; i < op.data.size(); ++i) {
          dst.bytes[op.offset + i] = op.data[i];
          dst.known[op.offset + i] = true;
        }
        break;
    }
  }

  // A recording of stream `s` was refused or abandoned: what it claimed carries that, and its
  // uses never ran.
  void refuse_claims(int s) {
    for (int b : streams_[s].claims) buffers_[static_cast<std::size_t>(b)].failure = Errc::doomed;
    streams_[s].claims.clear();
    streams_[s].recorded.clear();
    close_uses(s, false);
  }
  void close_uses(int s, bool made_graph) {
    for (ModelBuffer& buffer : buffers_) {
      if (buffer.stream != s) continue;
      buffer.written_since_sync =
          buffer.written_since_sync || (made_graph && buffer.written_by_recording);
      buffer.used_since_sync = buffer.used_since_sync || (made_graph && buffer.used_by_recording);
      buffer.written_by_recording = buffer.used_by_recording = false;
    }
  }
  // graphcap stamped a use of `buffer` on its stream.
  void used(ModelBuffer& buffer, bool writes) {
    const bool recorded = streams_[buffer.stream].state == CaptureState::capture;
    (recorded ? buffer.used_by_recording : buffer.used_since_sync) = true;
    if (writes) (recorded ? buffer.written_by_recording : buffer.written_since_sync) = true;
  }
  // A host sync of stream `s` completed: every stream is ordered after its buffers' uses.
  void synced(int s) {
    for (ModelBuffer& buffer : buffers_) {
      if (buffer.stream == s) buffer.used_since_sync = buffer.written_since_sync = false;
    }
  }
  // A use on another stream that graphcap allows (ordered by a host sync) is not modelled here.
  bool ordered_elsewhere(const ModelBuffer& buffer, bool writes) const {
    if (writes) return !buffer.used_since_sync && !buffer.used_by_recording;
    return !buffer.written_since_sync && !buffer.written_by_recording;
  }

  // ---- the calls ------------------------------------------------------------------------------
  void do_prepare(int s) {
    log_ << "prepare_capture(stream " << s << ")";
    std::optional<Errc> expected;
    if (streams_[s].state != CaptureState::no_capture) expected = Errc::graph_state;
    expect(device_->prepare_capture(*streams_[s].handle), expected, "prepare_capture");
    if (!expected) streams_[s].state = CaptureState::prepare;
  }

  void do_begin(int s) {
    log_ << "begin_capture(stream " << s << ")";
    std::optional<Errc> expected;
    // Out of order; or another recording is open in global mode on this thread.
    if (streams_[s].state != CaptureState::prepare || any_recording()) expected = Errc::graph_state;
    expect(device_->begin_capture(*streams_[s].handle), expected, "begin_capture");
    if (!expected) {
      streams_[s].state = CaptureState::capture;
      streams_[s].doomed = false;
      streams_[s].claims.clear();
      streams_[s].recorded.clear();
    }
  }

  void do_end(int s) {
    log_ << "end_capture(stream " << s << ")";
    ModelStream& stream = streams_[s];
    std::optional<Errc> expected;
    if (stream.state != CaptureState::capture) {
      expected = Errc::graph_state;
    } else if (stream.doomed) {
      expected = Errc::doomed;
    }
    Result<Graph> graph = device_->end_capture(*stream.handle);
    expect(graph, expected, "end_capture");
    if (stream.state != CaptureState::capture) return;
    stream.state = CaptureState::no_capture;
    if (expected) {
      refuse_claims(s);
      return;
    }
    if (!graph) return;
    log_ << "  graph " << graphs_.size() << " replays " << stream.recorded.size() << " op(s)\n";
    graphs_.push_back(ModelGraph{s, std::move(stream.recorded), true, std::move(*graph)});
    stream.recorded.clear();
    stream.claims.clear();
    close_uses(s, true);
  }

  void do_abort(int s) {
    log_ << "abort_capture(stream " << s << ")";
    ModelStream& stream = streams_[s];
    const CaptureState was = stream.state;
    expect(device_->abort_capture(*stream.handle),
           was == CaptureState::no_capture ? std::optional<Errc>(Errc::graph_state) : std::nullopt,
           "abort_capture");
    stream.state = CaptureState::no_capture;
    if (was == CaptureState::capture) refuse_claims(s);
  }

  void do_alloc(int s) {
    const std::size_t n = kSizes[pick(std::size(kSizes))];
    log_ << "alloc(" << n * 4 << " bytes, stream " << s << ") as buffer " << buffers_.size();
    Result<Buffer> buffer = device_->alloc(n * 4, *streams_[s].handle);
    if (!buffer) {
      // Only the pools' caching can refuse it: a recording is open (here, or in global mode).
      log_ << " -> " << to_string(buffer.error()) << "\n";
      ++outcomes()["alloc -> " + errc_text(buffer.error().code()) + " (pool, recording open)"];
      if (!any_recording() || buffer.error().code() != Errc::out_of_memory) {
        diverge("alloc: expected ok, got " + to_string(buffer.error()));
      }
      if (streams_[s].state == CaptureState::capture) streams_[s].doomed = true;
      return;
    }
    log_ << " -> ok\n";
    ++outcomes()[std::string("alloc -> ok") + (any_recording() ? " (recording open)" : "")];
    ModelBuffer model;
    model.stream = s;
    model.n = n;
    model.bytes.assign(n, 0);
    model.known.assign(n, false);
    model.handle = *buffer;
    buffers_.push_back(std::move(model));
  }

  void do_write(int b, int on_stream) {
    ModelBuffer& buffer = buffers_[static_cast<std::size_t>(b)];
    const bool partial = chance(30);
    const std::size_t offset = partial ? pick(buffer.n) : 0;
    const std::size_t count = partial ? 1 + pick(buffer.n - offset) : buffer.n;
    Values data(count);
    for (std::uint32_t& v : data) v = random_value();
    if (on_stream != buffer.stream && ordered_elsewhere(buffer, true)) return;
    log_ << "write(buffer " << b << ", elements [" << offset << ", " << offset + count
         << "), stream " << on_stream << ")";
    Result<void> written =
        device_->write(buffer.handle, offset * 4, to_bytes(data), *streams_[on_stream].handle);
    if (on_stream != buffer.stream) {
      expect(written, Errc::invalid_argument, "write with a buffer of another stream");
      return;
    }
    ModelStream& stream = streams_[on_stream];
    const bool recording = stream.state == CaptureState::capture;
    used(buffer, true);  // stamped even when the staging failed
    if (!written) {
      // Staging refused by the pool while a recording is open: the destination carries it.
      log_ << " -> " << to_string(written.error()) << "\n";
      ++outcomes()["write -> " + errc_text(written.error().code()) + " (staging, recording open)"];
      if (!any_recording() || written.error().code() != Errc::out_of_memory) {
        diverge("write: expected ok, got " + to_string(written.error()));
      }
      buffer.failure = Errc::out_of_memory;
      if (recording) {
        stream.claims.push_back(b);
        stream.doomed = true;
      }
      return;
    }
    log_ << " -> ok\n";
    ++outcomes()[std::string("write -> ok") + (recording ? " (recorded)" : "")];
    Op op{Op::write, -1, b, static_cast<std::uint32_t>(count), 0, offset, std::move(data)};
    if (recording) {
      stream.claims.push_back(b);
      stream.recorded.push_back(std::move(op));
      return;
    }
    apply(op);
    if (offset == 0 && count == buffer.n) buffer.failure.reset();
  }

  void do_launch(int on_stream) {
    const int kind = static_cast<int>(pick(3));
    const bool misuse = chance(5);
    const int dst = live_buffer(on_stream, misuse);
    if (dst < 0) return;
    const int src = kind == Op::fill ? -1 : live_buffer(on_stream, misuse);
    if (kind != Op::fill && src < 0) return;
    ModelBuffer& out = buffers_[static_cast<std::size_t>(dst)];
    std::uint32_t n = static_cast<std::uint32_t>(out.n);
    if (src >= 0) n = std::min(n, static_cast<std::uint32_t>(buffers_[static_cast<std::size_t>(src)].n));
    const std::uint32_t value = random_value();
    if ((out.stream != on_stream && ordered_elsewhere(out, true)) ||
        (src >= 0 && buffers_[static_cast<std::size_t>(src)].stream != on_stream &&
         ordered_elsewhere(buffers_[static_cast<std::size_t>(src)], false))) {
      return;
    }
    Op op{static_cast<Op::Kind>(kind), src, dst, n, value, 0, {}};
    Result<void> launched;
    switch (op.kind) {
      case Op::add_one:
        log_ << "launch add_one(buffer " << src << " -> buffer " << dst << ", n " << n;
        launched = device_->launch(*streams_[on_stream].handle, add_one_, dims_for(n),
                                   {Arg::in(buffers_[static_cast<std::size_t>(src)].handle),
                                    Arg::out(out.handle), Arg::value(n)});
        break;
      case Op::copy:
        log_ << "launch copy(buffer " << src << " -> buffer " << dst << ", n " << n;
        launched = device_->launch(*streams_[on_stream].handle, copy_, dims_for(n),
                                   {Arg::in(buffers_[static_cast<std::size_t>(src)].handle),
                                    Arg::out(out.handle), Arg::value(n)});
        break;
      case Op::fill:
        log_ << "launch fill(buffer " << dst << " = " << value << ", n " << n;
        launched = device_->launch(*streams_[on_stream].handle, fill_, dims_for(n),
                                   {Arg::out(out.handle), Arg::value(value), Arg::value(n)});
        break;
      case Op::write:
        return;
    }
    log_ << ", stream " << on_stream << ")";
    const bool foreign = out.stream != on_stream ||
                         (src >= 0 && buffers_[static_cast<std::size_t>(src)].stream != on_stream);
    if (foreign) {
      expect(launched, Errc::invalid_argument, "launch with a buffer of another stream");
      return;
    }
    ModelStream& stream = streams_[on_stream];
    const bool recording = stream.state == CaptureState::capture;
    const bool input_failed = src >= 0 && buffers_[static_cast<std::size_t>(src)].failure.has_value();
    expect(launched, input_failed ? std::optional<Errc>(Errc::failed_buffer) : std::nullopt,
           "launch");
    if (input_failed) {
      out.failure = Errc::failed_buffer;
      if (recording) {
        stream.claims.push_back(dst);
        stream.doomed = true;
      }
      return;
    }
    used(out, true);
    if (src >= 0) used(buffers_[static_cast<std::size_t>(src)], false);
    if (recording) {
      stream.claims.push_back(dst);
      stream.recorded.push_back(std::move(op));
      return;
    }
    apply(op);
    // An `out` binding that ran produced the buffer's contents: its failure is gone (even when
    // this kernel wrote only the first n elements: graphcap can't tell how much a kernel writes).
    out.failure.reset();
  }

  void do_read(int b, int on_stream, bool partial) {
    ModelBuffer& buffer = buffers_[static_cast<std::size_t>(b)];
    const std::size_t offset = partial ? pick(buffer.n) : 0;
    const std::size_t count = partial ? 1 + pick(buffer.n - offset) : buffer.n;
    if (on_stream != buffer.stream && ordered_elsewhere(buffer, false)) return;
    log_ << "read(buffer " << b << ", elements [" << offset << ", " << offset + count
         << "), stream " << on_stream << ")";
    Result<std::vector<std::byte>> read =
        device_->read(buffer.handle, offset * 4, count * 4, *streams_[on_stream].handle);
    std::optional<Errc> expected;
    if (on_stream != buffer.stream) {
      expected = Errc::invalid_argument;
    } else if (any_recording()) {
      expected = Errc::graph_state;  // waiting now would invalidate the recording
    } else if (buffer.failure) {
      expected = buffer.failure;
    } else if (streams_[on_stream].queued) {
      expected = std::exchange(streams_[on_stream].queued, std::nullopt);  // surfaces once
    }
    expect(read, expected, "read");
    if (on_stream == buffer.stream && !any_recording() && !buffer.failure) {
      synced(on_stream);  // enqueued, then waited for its stream (a queued error comes after)
    }
    if (!read || expected) return;
    const Values got = to_u32(*read);
    std::size_t known = 0;
    for (std::size_t i = 0; i < count; ++i) known += buffer.known[offset + i] ? 1 : 0;
    outcomes()["read: elements compared with the model"] += known;
    for (std::size_t i = 0; i < count; ++i) {
      if (buffer.known[offset + i] && got[i] != buffer.bytes[offset + i]) {
        diverge("read: buffer " + std::to_string(b) + " element " + std::to_string(offset + i) +
                " is " + std::to_string(got[i]) + ", the model says " +
                std::to_string(buffer.bytes[offset + i]));
        return;
      }
    }
  }

  void do_sync(int s) {
    log_ << "sync(stream " << s << ")";
    std::optional<Errc> expected;
    if (any_recording()) {
      expected = Errc::graph_state;
    } else {
      expected = std::exchange(streams_[s].queued, std::nullopt);  // surfaces once
    }
    expect(device_->sync(*streams_[s].handle), expected, "sync");
    if (!any_recording()) synced(s);
  }

  void do_drop(int b) {
    log_ << "drop(buffer " << b << ")\n";
    buffers_[static_cast<std::size_t>(b)].live = false;
    buffers_[static_cast<std::size_t>(b)].handle = Buffer{};
  }

  void do_replay(int g) {
    ModelGraph& graph = graphs_[static_cast<std::size_t>(g)];
    log_ << "replay(graph " << g << ")";
    std::optional<Errc> expected;
    if (!graph.live || streams_[graph.stream].state == CaptureState::capture) {
      expected = Errc::graph_state;
    }
    // A replay reading a buffer that carries a failure is skipped, and what it writes carries
    // failed_buffer (a dropped buffer is no longer checked: the graph holds it weakly).
    bool input_failed = false;
    if (!expected) {
      for (const Op& op : graph.ops) {
        if (op.src < 0) continue;
        const ModelBuffer& in = buffers_[static_cast<std::size_t>(op.src)];
        if (in.live && in.failure) input_failed = true;
      }
      if (input_failed) expected = Errc::failed_buffer;
    }
    expect(graph.handle.replay(), expected, "replay");
    if (input_failed) {
      // The skipped replay's error is queued on its stream too (graph.h).
      if (!streams_[graph.stream].queued) streams_[graph.stream].queued = Errc::failed_buffer;
      for (const Op& op : graph.ops) {
        ModelBuffer& out = buffers_[static_cast<std::size_t>(op.dst)];
        if (out.live) out.failure = Errc::failed_buffer;
      }
      return;
    }
    if (expected) return;
    outcomes()["replay: ops applied"] += graph.ops.size();
    for (const Op& op : graph.ops) apply(op);
    // What the graph produces whole (an `out` launch, a full write) no longer carries a failure.
    for (const Op& op : graph.ops) {
      ModelBuffer& out = buffers_[static_cast<std::size_t>(op.dst)];
      const bool whole = op.kind != Op::write || (op.offset == 0 && op.data.size() == out.n);
      if (whole) out.failure.reset();
    }
  }

  void do_destroy(int g) {
    log_ << "destroy(graph " << g << ")";
    ModelGraph& graph = graphs_[static_cast<std::size_t>(g)];
    expect(graph.handle.destroy(), std::nullopt, "destroy");
    graph.live = false;
  }

  void random_step() {
    // Work mostly on a stream that records, so recordings hold operations worth replaying.
    int s = static_cast<int>(pick(kStreams));
    for (int t = 0; t < kStreams; ++t) {
      if (streams_[t].state == CaptureState::capture && chance(60)) s = t;
    }
    std::size_t roll = pick(100);
    if (streams_[s].state == CaptureState::capture && roll >= 26 && roll < 36 && chance(70)) {
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
      const int b = live_buffer(s, chance(5));
      if (b >= 0) do_write(b, s);
    } else if (roll < 68) {
      do_launch(s);
    } else if (roll < 78) {
      const int b = live_buffer(s, chance(5));
      if (b >= 0) do_read(b, s, chance(30));
    } else if (roll < 82) {
      do_sync(s);
    } else if (roll < 86) {
      const int b = live_buffer(s);
      if (b >= 0) do_drop(b);
    } else if (roll < 96) {
      if (!graphs_.empty()) do_replay(static_cast<int>(pick(graphs_.size())));
    } else {
      if (!graphs_.empty()) do_destroy(static_cast<int>(pick(graphs_.size())));
    }
  }

  void teardown() {
    for (ModelGraph& graph : graphs_) graph.handle = Graph{};
    for (ModelBuffer& buffer : buffers_) buffer.handle = Buffer{};
    add_one_ = fill_ = copy_ = Kernel{};
    device_.reset();
    const fake::LiveHandles live = driver_.live_handles();
    if (live.total() != 0) diverge("the closed device left " + std::to_string(live.total()) + " handle(s)");
    if (driver_.reclaimed_handles() != 0) diverge("handles were reclaimed with the context");
    if (!driver_.violations().empty()) diverge("fake violation: " + driver_.violations().front());
  }

  std::uint64_t seed_;
  std::mt19937_64 rng_;
  fake::FakeDriver driver_;
  std::unique_ptr<Device> device_;
  Kernel add_one_, fill_, copy_;
  ModelStream streams_[kStreams];
  std::vector<ModelBuffer> buffers_;
  std::vector<ModelGraph> graphs_;
  std::ostringstream log_;
  std::string divergence_;
};

TEST(RandomLifecycles, EverySequenceFollowsTheModel) {
  const std::optional<std::uint64_t> only = model::env_number("GRAPHCAP_SEED");
  const std::uint64_t count = model::sequence_count(true, kCounts);
  std::uint64_t ran = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t seed = only ? *only : i + 1;
    Sequence sequence(seed);
    const std::string divergence = sequence.run();
    ++ran;
    if (only) std::printf("seed %llu:\n%s", static_cast<unsigned long long>(seed), sequence.log().c_str());
    if (!divergence.empty()) {
      ADD_FAILURE() << "seed " << seed << " diverged from the model: " << divergence
                    << "\nrerun it with GRAPHCAP_SEED=" << seed << "; the sequence:\n"
                    << sequence.log();
      break;
    }
  }
  std::printf("[ random   ] %llu sequences of %d steps\n", static_cast<unsigned long long>(ran),
              kStepsPerSequence);
  for (const auto& [what, n] : outcomes()) {
    std::printf("[ random   ]   %-60s %8llu\n", what.c_str(), static_cast<unsigned long long>(n));
  }
  RecordProperty("sequences", static_cast<int>(ran));
}

}  // namespace
}  // namespace graphcap::testing
