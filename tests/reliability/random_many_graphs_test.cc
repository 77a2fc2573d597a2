// The many-graph life: seeded random sequences over three streams of graph pools,
// recordings, re-recordings into existing graphs, per-replay params, a GraphCache, CaptureScopes,
// aborts, events and fork/join, replays, drops, graph destroys and injected driver faults, checked
// after every call against a host model of every live buffer's bytes and of which streams are
// capturing. random_lifecycle_test.cc and random_multistream_test.cc do the same for one graph at
// a time; this model follows the rules of docs/capture-lifecycle.md ("Capture options and graph
// pools", "One owner of the recording", "Several streams in one recording", "Re-recording",
// "Per-replay parameters", "CaptureScope", "Buffers on several streams") and of graph_cache.h.
//
// What a sequence does. Most steps are whole capture windows: prepare_capture (with or without the
// stream's GraphPool), an optional warm-up that runs the window's plan eagerly, begin_capture (or a
// CaptureScope), the plan recorded, and a close: end_capture into a new graph, end_capture(s, into)
// re-recording a graph with the same topology (report().updated expected) or another one
// (re-instantiated), CaptureScope::end, a scope left so it aborts, or abort_capture mid-way. A plan
// is a few operations (launches of add_one / copy / fill, fill taking a Param, device copies and
// word fills) on the recording stream, intermediates it allocates and drops (or keeps: a result),
// and sometimes a fork: an event recorded on the recording stream and waited on by a side stream,
// which records operations on buffers the recording stream does not touch until it is joined back
// (and sometimes is not: refused by name). Misuse is mixed in (reads, syncs, replays, out-of-order
// lifecycle calls, end_capture on a side stream or into a graph of another stream, waits on events
// recorded outside). Between windows: eager operations on any stream (other streams' buffers once
// ordered by events), allocations, host writes, reads, replays, Param::set and Graph::set, runs of
// a GraphCache (max_graphs 2, give_up_after 2, a key whose step refuses when recorded, a key whose
// output the first run allocates, a key whose step keeps a result it allocates, invalidate with
// the same or another topology), drops, destroys.
//
// What the model knows (and so checks exactly, until a fault fires):
//   - every call's outcome: success or the exact Errc (ordering refusals, graph_state for
//     out-of-order calls and reads/syncs/replays while recording, doomed, unjoined side work, ...);
//   - per buffer: its bytes (which elements are known), the failure it carries (Buffer::failure()
//     must agree after every call) and the ordering bookkeeping of random_multistream_test.cc;
//   - per graph: what each replay does (one that reads a buffer carrying a failure, whichever
//     stream owns it, is skipped with failed_buffer; one that runs clears what it writes), the
//     value each node that took a param holds (Graph::set), and whether a re-recording can update
//     the executable (same nodes, types and edges; per-replay params addressable);
//   - graph pools: only memory allocated inside a pool's window and used by its graph joins the
//     pool (so such a buffer's bytes are unknown at the start of every replay: another graph of
//     the pool may have used the memory), nothing from before the window; no two live buffers ever
//     share an address range; a pool holds no memory once no graph of it and no buffer it lent
//     lives (GraphPool::bytes_held() is 0). Whether the pool lent a buffer the recording allocates
//     and keeps is the one thing the model cannot know: end_capture may then give the graph or
//     refuse the recording with graph_state (the lent buffer outlived it); the model accepts either
//     and follows what happened, reading the buffer's failure: a kept lent buffer of a window
//     closed without a graph carries a graph_state error for good (a full write does not clear it);
//   - GraphCache: which path each run takes (replay, record, fall back, run eagerly after giving
//     up), its stats after every run, which keys hold a graph (LRU eviction), and that a run has
//     the effect of exactly one execution of the step (each execution adds 1 to the key's output);
//     whatever a run does, its stream is not capturing when it returns.
// Allocations while a recording is open may be served from the pools' cache or refused
// (out_of_memory, dooming a recording of that stream): the model accepts either, as the one-graph
// model does. A graph is replayed only when no recording is open and its stream is ordered after
// the eager uses of its buffers, and is followed by a sync (which orders every stream after it).
//
// Injected faults: in some sequences, now and then one driver call of a step fails (fail_call of
// an entry point that step makes, with a code the entry point can return: tests/support/
// injected_codes.h, the sweep's table). From then on the sequence only requires what safety needs:
// every read returns an error or exactly the bytes the model knows, no stream is left capturing
// (graphcap's capture_state() and the driver agree), and at the end no handle is left but the one
// each failed release call leaks. After every call the model checks every stream's
// capture_state(), cuStreamIsCapturing (through the driver under the decorator) of every stream
// graphcap says is not capturing, every live buffer's failure, and, when no recording is open,
// every live buffer's bytes (read on a fifth stream ordered after every other by events, so the
// check changes no buffer's uses). At the end every window is closed, everything dropped, the
// device closed: the decorator's live_handles() (and, on the fake, the fake's) and no fake
// violation.
//
// The same source builds for the real driver (graphcap_many_graphs_cuda, gpu preset, label
// gpu_sweep). GRAPHCAP_SEED=<seed> reruns one sequence (printing it); GRAPHCAP_RANDOM_SEQUENCES=<n>
// sets how many run (default 10000 on the fake, 200 under AddressSanitizer or ThreadSanitizer, 300
// on a GPU). docs/reliability.md ("The many-graph life against a model") has the figures.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/fake/fault_injecting_driver.h>
#include <graphcap/graph_cache.h>
#include <graphcap/graphcap.h>

#include "device_fixture.h"
#include "model/runner.h"
#include "injected_codes.h"
#include "order_model.h"
#include "test_driver.h"

namespace graphcap::testing {
namespace {

using Values = std::vector<std::uint32_t>;

constexpr int kStreams = 3;  // the model's streams; a fourth one reads for the checks
constexpr int kEvents = 3;   // the model's events (forks, joins, orders)
constexpr int kParams = 2;   // Param<std::uint32_t>s
constexpr int kKeys = 4;     // GraphCache keys
constexpr int kCachePool = kStreams;  // the pool id of the cache's GraphPool
constexpr int kSteps = 30;  // top-level steps per sequence (a window is one, of many calls)
constexpr std::size_t kMaxLive = 14;  // live buffers a sequence keeps at most (then it drops)
constexpr std::uint32_t kN = 64;  // elements (u32) of every buffer
constexpr std::size_t kBytes = kN * sizeof(std::uint32_t);
constexpr std::uint64_t kAllKnown = ~std::uint64_t{0};
static_assert(kN == 64, "ModelBuffer::known is one bit per element");
constexpr int kFaultSequencePercent = 30;  // sequences that inject faults
constexpr int kFaultCallPercent = 4;       // of their calls, those armed with one
// What closing a recording may call (end_capture, with or without `into`; CaptureScope::end).
constexpr const char* kCloseEntries[] = {
    "cuStreamEndCapture", "cuGraphGetNodes",     "cuGraphNodeGetType", "cuGraphExecUpdate",
    "cuGraphInstantiateWithFlags", "cuGraphUpload", "cuGraphDestroy",  "cuGraphExecDestroy",
    "cuStreamSynchronize", "cuEventRecord",       "cuEventQuery"};

constexpr model::SequenceCounts kCounts{.fake = 10000, .sanitizer = 200, .gpu = 300};

using Clock = StreamOrder<kStreams>::Clock;

std::string errc_text(const std::optional<Errc>& code) {
  return code ? to_string(*code) : std::string("ok");
}

// How often each call ended each way, over every sequence run (printed: the coverage).
std::map<std::string, std::uint64_t>& outcomes() {
  static std::map<std::string, std::uint64_t> counts;
  return counts;
}

// The wording graphcap gives a lent pool buffer of a window that closed without a graph
// (capture/pool_share.cc): how the model tells it from a claim when it follows what happened.
constexpr std::string_view kPoisoned = "the window closed without a graph";

// ---- what the model keeps -----------------------------------------------------------------------

// One whole-buffer operation, by model buffer id.
struct Op {
  enum Kind { add_one, copy_kernel, fill_kernel, fill_param, device_copy, device_fill };
  Kind kind = add_one;
  int src = -1;
  int dst = -1;
  std::uint32_t value = 0;  // fills; fill_param: the value the node holds (Graph::set changes it)
  int param = -1;           // fill_param
};

const char* kind_name(Op::Kind kind) {
  switch (kind) {
    case Op::add_one: return "launch add_one";
    case Op::copy_kernel: return "launch copy";
    case Op::fill_kernel: return "launch fill";
    case Op::fill_param: return "launch fill(param)";
    case Op::device_copy: return "Device::copy";
    case Op::device_fill: return "Device::fill";
  }
  return "?";
}

bool reads_src(Op::Kind kind) {
  return kind == Op::add_one || kind == Op::copy_kernel || kind == Op::device_copy;
}

CUgraphNodeType node_type(Op::Kind kind) {
  switch (kind) {
    case Op::device_copy: return CU_GRAPH_NODE_TYPE_MEMCPY;
    case Op::device_fill: return CU_GRAPH_NODE_TYPE_MEMSET;
    default: return CU_GRAPH_NODE_TYPE_KERNEL;
  }
}

// A buffer: its bytes and failure, and (BufferUsage) who used it, for the order rule.
struct ModelBuffer : BufferUsage {
  int owner = 0;
  std::array<std::uint32_t, kN> bytes{};
  std::uint64_t known = 0;  // bit i: element i holds bytes[i] (a fresh allocation holds garbage)
  std::optional<Errc> failure;
  bool for_good = false;     // a lent pool buffer of a window closed without a graph
  int lent_by = -1;          // for_good: the pool that lent it (it keeps that memory alive)
  bool live = true;
  Buffer handle;
  CUdeviceptr ptr = 0;
  bool cache_private = false;  // a GraphCache key's output: used by the cache's steps only
  std::uint64_t window = 0;    // the pool window that allocated it (0: none)
  bool scratch = false;        // dead, and a pool's shared intermediate: unknown at each replay
  bool maybe_lent = false;     // the pool's recording may have lent it (resolved at the close)
};

// A stream: its capture state and window, and (StreamOrder) what it is ordered after.
struct ModelStream : StreamOrder<kStreams> {
  CaptureState state = CaptureState::no_capture;
  bool side = false;  // forked into the open recording
  Stream* handle = nullptr;
  std::optional<Errc> queued;  // a failed replay's error, reported once by the next sync or read
  // Its own window (prepare or capture, not as a side stream): the options it runs with.
  std::uint64_t window = 0;
  int pool = -1;
  bool claims = true;
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

// A node as the driver sees it: what exec update compares.
struct Node {
  int stream = 0;
  std::vector<std::size_t> deps;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_KERNEL;
  CUdeviceptr a = 0, b = 0;  // memcpy: source, destination; memset: destination
  std::uint32_t value = 0;   // memset
  bool fill_signature = false;  // a kernel of fill's parameters (add_one and copy share theirs)
};

// A window's plan: what its warm-up runs and its recording records. Buffers are chosen when a step
// runs (so a re-recording of the same plan has the same topology on other buffers).
struct PlanStep {
  enum Kind { op, alloc, drop, fork, join } kind = op;
  Op::Kind op_kind = Op::add_one;
  int lane = 0;  // 0: the recording stream; 1, 2: a side stream, bound at its fork
  int temp = -1;  // alloc, drop
};
struct Plan {
  std::vector<PlanStep> steps;
  int temps = 0;
};

struct ModelRecording {
  std::uint64_t id = 0;  // 0: none open
  int origin = -1;
  std::optional<Errc> doomed;
  bool claims = true;
  int pool = -1;
  std::uint64_t window = 0;
  std::vector<Op> ops;
  std::set<int> reads, writes;  // buffer ids (every write is whole: it is also produced)
  std::vector<Node> nodes;
  std::map<int, std::vector<std::size_t>> frontier;
  std::map<int, std::size_t> last_node;
  std::set<int> params;
  std::vector<int> maybe_lent;
  // Per buffer it used: the usage without its uses (what a refusal leaves).
  std::map<int, BufferUsage> before;
};

struct ModelGraph {
  int stream = 0;
  int pool = -1;
  std::vector<Op> ops;
  std::set<int> reads, writes;
  std::vector<Node> signature;  // the nodes of the recording its executable runs
  std::set<int> params;
  // The nodes of the recording it was instantiated from, if that one had params (0 otherwise).
  std::size_t source_count = 0;
  bool live = true;
  Graph handle;
  Plan plan;
};

struct CacheKey {
  bool present = false;  // in the cache's table
  bool has_graph = false;
  ModelGraph graph;
  bool stale = false;
  unsigned refusals = 0;
  bool gave_up = false;
  std::uint64_t last_use = 0;
  bool variant = false;  // the step's other topology: one kernel more (adds 2, not 1)
  bool refuses = false;  // the step syncs its stream, which a recording refuses
  bool keeps = false;    // the step allocates a result and keeps it (dropping the one before)
  int out = -1;          // the key's output (lazy keys: allocated by the first execution)
  int kept = -1;         // keeps: the last execution's result
};

// Where a plan's execution stands.
struct Region {  // a forked side stream, from its fork to its join
  int lane = 0;
  bool open = true;
  std::set<int> side_used, side_written, origin_used, origin_written;
};
struct Execution {
  int origin = 0;
  std::array<int, 3> lane{{-1, -1, -1}};  // lane -> stream
  std::array<int, 3> lane_ops{{0, 0, 0}};
  std::vector<int> temps;                 // slot -> buffer id (-1: none)
  std::vector<Region> regions;
};

// ---- one sequence -------------------------------------------------------------------------------

class Sequence {
 public:
  Sequence(std::uint64_t seed, std::unique_ptr<TestDriver> driver)
      : rng_(seed),
        test_driver_(std::move(driver)),
        fake_(test_driver_->fake()),
        faults_(test_driver_->api(), {.settle_queries = fake_ == nullptr, .record_calls = false}),
        // One sequence in four lays its pools out on plain allocations, the rest on virtual
        // memory (the default): by the seed, so the random draws stay those of earlier revisions.
        virtual_pools_(seed % 4 != 0) {
    faults_enabled_ = chance(kFaultSequencePercent);
  }

  std::string run() {
    if (!hold_context()) return "the harness could not retain the primary context";
    Result<std::unique_ptr<Device>> opened = Device::open(faults_);
    if (!opened) return "Device::open failed: " + to_string(opened.error());
    device_ = std::move(*opened);
    Result<Module> module = device_->load_module(test_driver_->kernel_image());
    if (!module) return "load_module failed: " + to_string(module.error());
    module_ = *module;
    for (auto [kernel, name] : {std::pair{&add_one_, "add_one"}, std::pair{&fill_, "fill"},
                                std::pair{&copy_, "copy"}}) {
      Result<Kernel> found = module_.kernel(name);
      if (!found) return "kernel failed: " + to_string(found.error());
      *kernel = *found;
    }
    streams_[0].handle = &device_->stream();
    for (int s = 1; s <= kStreams; ++s) {
      Result<Stream*> made = device_->create_stream();
      if (!made) return "create_stream failed: " + to_string(made.error());
      (s < kStreams ? streams_[s].handle : checker_) = *made;
    }
    for (int e = 0; e < kEvents; ++e) {
      Result<Event> made = device_->create_event();
      Result<Event> check = device_->create_event();
      if (!made || !check) return "create_event failed";
      events_[e].handle = std::move(*made);
      check_events_[e] = std::move(*check);
    }
    for (int s = 0; s < kStreams; ++s) {
      Result<GraphPool> pool = device_->create_graph_pool(
          *streams_[s].handle, GraphPoolOptions{.virtual_memory = virtual_pools_});
      if (!pool) return "create_graph_pool failed: " + to_string(pool.error());
      pools_[s] = std::move(*pool);
    }
    for (int p = 0; p < kParams; ++p) {
      params_[p] = device_->param<std::uint32_t>(random_value());
    }
    set_up_cache();
    log_ << "faults " << (faults_enabled_ ? "on" : "off") << ", cache on stream " << cache_stream_
         << (cache_options_.share_pool ? " (shared pool)" : "") << "\n";
    // Two buffers on every stream to start with, with known bytes.
    for (int s = 0; s < kStreams && divergence_.empty(); ++s) {
      do_upload(s);
      do_upload(s);
    }
    for (int step = 0; step < kSteps && divergence_.empty(); ++step) random_step();
    if (divergence_.empty()) finish();
    if (divergence_.empty()) teardown();
    release_context();
    return divergence_;
  }

  std::string log() const { return log_.str(); }

 private:
  // ---- helpers ---------------------------------------------------------------------------------
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  bool chance(int percent) { return static_cast<int>(pick(100)) < percent; }
  std::uint32_t random_value() { return static_cast<std::uint32_t>(rng_() & 0xFFFFF); }

  ModelBuffer& buf(int b) { return buffers_[static_cast<std::size_t>(b)]; }
  Stream& stream(int s) { return *streams_[s].handle; }
  bool recording_open() const { return recording_.id != 0; }
  bool in_recording(int s) const { return streams_[s].state == CaptureState::capture; }

  void diverge(const std::string& what) {
    if (divergence_.empty()) divergence_ = what;
  }

  template <class T>
  static std::optional<Errc> code_of(const Result<T>& result) {
    return result ? std::nullopt : std::optional<Errc>(result.error().code());
  }

  // Counts the outcome and compares it with the model's; after a fault fired, only counts it.
  template <class T>
  void expect(const Result<T>& result, std::optional<Errc> expected, const std::string& what) {
    note_fault();
    const std::optional<Errc> got = code_of(result);
    log_ << " -> " << (result ? std::string("ok") : to_string(result.error())) << "\n";
    if (degraded_) {
      ++outcomes()[what + " (after a fault) -> " + errc_text(got)];
      return;
    }
    ++outcomes()[what + " -> " + errc_text(got)];
    if (got != expected) {
      diverge(what + ": expected " + errc_text(expected) + ", got " +
              (result ? std::string("ok") : to_string(result.error())));
    }
  }
  // The model can't know which of two outcomes it is (a pool's lending, a pool's cache).
  template <class T>
  void expect_either(const Result<T>& result, std::optional<Errc> a, std::optional<Errc> b,
                     const std::string& what) {
    const std::optional<Errc> got = code_of(result);
    expect(result, got == b ? b : a, what);
  }

  // A live buffer, or -1: any, or one `keep` accepts.
  template <class Keep>
  int live_buffer(Keep&& keep) {
    std::vector<int> candidates;
    for (std::size_t b = 0; b < buffers_.size(); ++b) {
      if (buffers_[b].live && keep(static_cast<int>(b))) candidates.push_back(static_cast<int>(b));
    }
    return candidates.empty() ? -1 : candidates[pick(candidates.size())];
  }
  // A buffer for random work on stream `s`: mostly one of its own, never a cache's.
  int buffer_for(int s) {
    if (chance(60)) {
      const int own =
          live_buffer([&](int b) { return !buf(b).cache_private && buf(b).owner == s; });
      if (own >= 0) return own;
    }
    return live_buffer([&](int b) { return !buf(b).cache_private; });
  }
  std::size_t live_count() const {
    return static_cast<std::size_t>(std::count_if(buffers_.begin(), buffers_.end(),
                                                  [](const ModelBuffer& b) { return b.live; }));
  }

  // A failure lands on a buffer (fail(): a for-good failure stays what it was).
  void fail(int b, Errc code) {
    ModelBuffer& buffer = buf(b);
    if (!buffer.live || buffer.for_good) return;
    buffer.failure = code;
  }
  void clear_failure(int b) {
    if (!buf(b).for_good) buf(b).failure.reset();
  }

  // ---- injected faults -------------------------------------------------------------------------
  // Before a call: now and then (in a sequence that injects) arm a fault on one of the entry points
  // the call makes. Nested calls (a GraphCache run's steps) arm nothing of their own.
  void arm(std::initializer_list<const char*> entries) {
    arm(std::span<const char* const>(entries.begin(), entries.size()));
  }
  void arm(std::span<const char* const> entries) {
    if (fault_depth_++ != 0 || !faults_enabled_ || entries.empty() ||
        !chance(kFaultCallPercent)) {
      return;
    }
    const char* entry = entries[pick(entries.size())];
    const std::optional<CUresult> code = injected_code(entry);
    if (!code) {
      diverge(std::string("no injected code for ") + entry + " (tests/support/injected_codes.h)");
      return;
    }
    faults_.clear_faults();
    faults_.fail_call(entry, *code, 1);
    armed_ = entry;
    armed_before_ = faults_.call_count(entry);
    log_ << " [armed: " << entry << "]";
  }
  // Whether the armed fault fired: from then on the sequence is checked for safety only.
  void note_fault() {
    if (armed_.empty() || fired_) return;
    if (faults_.call_count(armed_) > armed_before_) {
      fired_ = true;
      degraded_ = true;
      ++faults_fired_;
      ++outcomes()["fault injected: " + armed_];
      if (armed_ == "cuEventDestroy") ++leaked_.events;
      if (armed_ == "cuGraphDestroy") ++leaked_.graphs;
      if (armed_ == "cuGraphExecDestroy") ++leaked_.execs;
      if (armed_ == "cuMemFree") ++leaked_.device_allocations;
      if (armed_ == "cuMemFreeHost") ++leaked_.host_allocations;
      log_ << " [fault fired: " << armed_ << "]";
    }
  }
  void settle() {
    if (--fault_depth_ != 0) return;
    note_fault();
    if (!armed_.empty()) faults_.clear_faults();
    armed_.clear();
    fired_ = false;
  }

  // ---- the order rule (tests/support/order_model.h) -------------------------------------------
  // Device::check_buffer: may stream `s` use buffer `b` now (writing it when `writes`)?
  bool may_use(int s, int b, bool writes) const {
    const ModelBuffer& buffer = buffers_[static_cast<std::size_t>(b)];
    if (!ordered_for_use(streams_[s], s, buffer, writes, in_recording(s) ? recording_.id : 0,
                         completed_)) {
      return false;
    }
    // An eager use of a buffer whose owner is in the recording could not be handed back.
    return !(buffer.owner != s && in_recording(buffer.owner) && !in_recording(s));
  }
  // Device::check_buffer's refusal of `b` for stream `s`: a buffer failed for good (a lent pool
  // buffer of a graphless window) is graph_state for every use; else an unordered use is
  // invalid_argument.
  std::optional<Errc> refused_use(int s, int b, bool writes) const {
    if (buffers_[static_cast<std::size_t>(b)].for_good) return Errc::graph_state;
    if (!may_use(s, b, writes)) return Errc::invalid_argument;
    return std::nullopt;
  }
  void stamp(int s, int b, bool writes, std::uint64_t seq) {
    if (in_recording(s)) {
      recording_.before.try_emplace(b, static_cast<const BufferUsage&>(buf(b)));
    } else if (auto before = recording_.before.find(b); before != recording_.before.end()) {
      graphcap::testing::stamp(before->second, s, writes, seq);  // not the recording's use
    }
    graphcap::testing::stamp(buf(b), s, writes, seq);
  }
  // A host sync of stream `s` completed.
  void completed(int s) { complete(completed_, streams_[s], s); }
  void merge(int s, int other, std::uint64_t seq, bool recorded = false) {
    graphcap::testing::merge(streams_[s], s, other, seq, recorded ? recording_.id : 0);
  }

  // ---- effects ---------------------------------------------------------------------------------
  void apply(const Op& op) {
    ModelBuffer& dst = buf(op.dst);
    if (reads_src(op.kind)) {
      const ModelBuffer& src = buf(op.src);
      const std::uint32_t plus = op.kind == Op::add_one ? 1 : 0;
      std::array<std::uint32_t, kN> in = src.bytes;
      for (std::uint32_t& v : in) v += plus;
      dst.bytes = in;
      dst.known = src.known;
      return;
    }
    dst.bytes.fill(op.value);
    dst.known = kAllKnown;
  }

  Result<void> issue(int s, const Op& op) {
    Stream& on = stream(s);
    switch (op.kind) {
      case Op::add_one:
        return device_->launch(on, add_one_, dims_for(kN),
                               {Arg::in(buf(op.src).handle), Arg::out(buf(op.dst).handle),
                                Arg::value(kN)});
      case Op::copy_kernel:
        return device_->launch(on, copy_, dims_for(kN),
                               {Arg::in(buf(op.src).handle), Arg::out(buf(op.dst).handle),
                                Arg::value(kN)});
      case Op::fill_kernel:
        return device_->launch(
            on, fill_, dims_for(kN),
            {Arg::out(buf(op.dst).handle), Arg::value(op.value), Arg::value(kN)});
      case Op::fill_param:
        return device_->launch(on, fill_, dims_for(kN),
                               {Arg::out(buf(op.dst).handle), Arg::param(params_[op.param]),
                                Arg::value(kN)});
      case Op::device_copy:
        return device_->copy(buf(op.dst).handle, buf(op.src).handle, on);
      case Op::device_fill:
        return device_->fill(buf(op.dst).handle, op.value, on);
    }
    return {};
  }

  // A whole-buffer operation on stream `s`: eager, or recorded when `s` is in the recording.
  Result<void> do_op(int s, Op op) {
    const bool reads = reads_src(op.kind);
    const bool recorded = in_recording(s);
    if (op.kind == Op::fill_param) op.value = params_[op.param].value();
    log_ << kind_name(op.kind) << "(";
    if (reads) log_ << "buffer " << op.src << " -> ";
    log_ << "buffer " << op.dst;
    if (op.kind == Op::fill_param) log_ << " = param " << op.param << " (" << op.value << ")";
    if (op.kind == Op::fill_kernel || op.kind == Op::device_fill) log_ << " = " << op.value;
    log_ << ", stream " << s << ")";
    const char* launch_entry = op.kind == Op::device_copy   ? "cuMemcpyDtoDAsync"
                               : op.kind == Op::device_fill ? "cuMemsetD32Async"
                                                            : "cuLaunchKernel";
    arm({launch_entry, "cuEventCreate", "cuEventRecord", "cuStreamWaitEvent", "cuEventDestroy",
         "cuStreamGetCaptureInfo"});
    Result<void> done = issue(s, op);
    settle();
    const std::string what = std::string(kind_name(op.kind)) +
                             (recorded ? " (recorded" : " (eager") +
                             (streams_[s].side ? ", side stream)" : ")");
    std::optional<Errc> refusal = reads ? refused_use(s, op.src, false) : std::nullopt;
    if (!refusal) refusal = refused_use(s, op.dst, true);
    const bool unordered = refusal == Errc::invalid_argument;
    const bool input_failed = reads && buf(op.src).failure.has_value();
    std::optional<Errc> expected = refusal;
    if (!expected && input_failed) expected = Errc::failed_buffer;
    expect(done, expected,
           what + (unordered ? " not ordered" : refusal ? " of a buffer failed for good" : ""));
    if (!done) {
      const Errc code = done.error().code();
      // Refused before anything was issued (an argument, the order, a buffer failed for good,
      // the hand-back's event).
      if (code == Errc::invalid_argument || refusal ||
          done.error().message().find("ordering a buffer of another stream") != std::string::npos) {
        check_all();
        return done;
      }
      // Failed or skipped: what it writes carries that (unless the recording does not claim), a
      // recording is doomed by it. A driver failure came after the uses were stamped.
      if (code != Errc::failed_buffer) {
        const std::uint64_t seq = ++streams_[s].seq;
        if (reads) stamp(s, op.src, false, seq);
        stamp(s, op.dst, true, seq);
      }
      if (!recorded || recording_.claims) fail(op.dst, code);
      if (recorded) {
        if (!recording_.doomed) recording_.doomed = code;
        if (reads) recording_.reads.insert(op.src);
        recording_.writes.insert(op.dst);
      }
      check_all();
      return done;
    }
    const std::uint64_t seq = ++streams_[s].seq;
    if (reads) stamp(s, op.src, false, seq);
    stamp(s, op.dst, true, seq);
    if (recorded) {
      if (reads) recording_.reads.insert(op.src);
      recording_.writes.insert(op.dst);
      if (op.kind == Op::fill_param) recording_.params.insert(op.param);
      Node node;
      node.stream = s;
      node.deps = std::move(recording_.frontier[s]);
      node.type = node_type(op.kind);
      if (op.kind == Op::device_copy) node.a = buf(op.src).ptr;
      node.b = buf(op.dst).ptr;
      node.value = op.value;
      node.fill_signature = op.kind == Op::fill_kernel || op.kind == Op::fill_param;
      recording_.frontier[s].assign(1, recording_.nodes.size());
      recording_.last_node[s] = recording_.nodes.size();
      recording_.nodes.push_back(std::move(node));
      recording_.ops.push_back(op);
      check_all();
      return done;
    }
    apply(op);
    clear_failure(op.dst);  // a whole eager operation produces it
    std::set<int> owners{buf(op.dst).owner};
    if (reads) owners.insert(buf(op.src).owner);
    hand_back(s, seq, owners);
    check_all();
    return done;
  }

  // An eager use on `s` (its operation `seq`) of buffers of other streams is handed back: each
  // owner waits for it (StreamCore::return_borrowed, which stamps the wait as the owner's next
  // operation) and is ordered after it.
  void hand_back(int s, std::uint64_t seq, const std::set<int>& owners) {
    for (int owner : owners) {
      if (owner == s) continue;
      ++streams_[owner].seq;
      merge(owner, s, seq);
    }
  }

  Op random_op_kind(Op::Kind kind) {
    Op op;
    op.kind = kind;
    op.value = random_value();
    if (kind == Op::fill_param) op.param = static_cast<int>(pick(kParams));
    return op;
  }
  Op::Kind random_kind() { return static_cast<Op::Kind>(pick(6)); }

  // Random eager (or, on a stream of the recording, recorded) work on stream `s`.
  void random_op(int s) {
    Op op = random_op_kind(random_kind());
    op.dst = buffer_for(s);
    if (op.dst < 0) return;
    if (reads_src(op.kind)) {
      op.src = buffer_for(s);
      if (op.kind == Op::device_copy && op.src == op.dst) return;  // overlapping: not modelled
    }
    (void)do_op(s, op);
  }

  // ---- memory ----------------------------------------------------------------------------------
  // Device::alloc on stream `s`: the model buffer's id, or the error.
  Result<int> do_alloc(int s) {
    const ModelStream& st = streams_[s];
    const bool own_window = st.state != CaptureState::no_capture && !st.side;
    const int pool = own_window ? st.pool : -1;
    // In a pool's recording the pool lends first, when it has memory to lend at all.
    const bool may_lend = pool >= 0 && st.state == CaptureState::capture &&
                          pool_bytes_held(pool) > 0;
    log_ << "alloc(" << kBytes << " bytes, stream " << s << ") as buffer " << buffers_.size();
    arm({"cuMemAlloc", "cuEventQuery", "cuMemFree"});
    Result<Buffer> made = device_->alloc(kBytes, stream(s));
    settle();
    if (recording_open()) {
      // The pools serve it from cache or refuse: a pool that may not grow now.
      expect_either(made, std::nullopt, Errc::out_of_memory, "alloc (a recording is open)");
    } else {
      expect(made, std::nullopt, "alloc");
    }
    if (!made) {
      if (in_recording(s) && !recording_.doomed) recording_.doomed = made.error().code();
      check_all();
      return made.error();
    }
    ModelBuffer model;
    model.owner = s;
    model.handle = *made;
    model.ptr = made->native_handle();
    model.window = pool >= 0 ? st.window : 0;
    model.maybe_lent = may_lend;
    model.writer = s;  // the allocation counts as a write on its owner, lent or not
    model.write_seq = model.use_seq = ++streams_[s].seq;
    // No two live buffers share an address range (a pool never lends live memory).
    for (std::size_t b = 0; b < buffers_.size(); ++b) {
      const ModelBuffer& other = buffers_[b];
      if (other.live && other.ptr < model.ptr + kBytes && model.ptr < other.ptr + kBytes) {
        diverge("alloc: buffer " + std::to_string(buffers_.size()) + " overlaps live buffer " +
                std::to_string(b));
      }
    }
    const int id = static_cast<int>(buffers_.size());
    buffers_.push_back(std::move(model));
    if (may_lend) recording_.maybe_lent.push_back(id);
    check_all();
    return id;
  }

  // A host write of the whole buffer (only while no recording is open: a recording's staging
  // is the pools' cache or a refusal, which random_lifecycle_test.cc covers).
  Result<void> do_write(int b, int s) {
    Values data(kN);
    for (std::uint32_t& v : data) v = random_value();
    log_ << "write(buffer " << b << ", stream " << s << ")";
    arm({"cuMemAllocHost", "cuMemcpyHtoDAsync", "cuEventCreate", "cuEventRecord",
         "cuStreamWaitEvent", "cuEventDestroy"});
    Result<void> written = device_->write(buf(b).handle, to_bytes(data), stream(s));
    settle();
    const std::optional<Errc> refusal = refused_use(s, b, true);
    expect(written, refusal,
           std::string("write") + (refusal == Errc::invalid_argument ? " not ordered"
                                   : refusal                         ? " of a buffer failed for good"
                                                                     : ""));
    if (!written) {
      const Error& error = written.error();
      if (!refusal && error.code() != Errc::invalid_argument &&
          error.message().find("ordering a buffer of another stream") == std::string::npos) {
        fail(b, error.code());
      }
      check_all();
      return written;
    }
    const std::uint64_t seq = ++streams_[s].seq;
    stamp(s, b, true, seq);
    std::copy(data.begin(), data.end(), buf(b).bytes.begin());
    buf(b).known = kAllKnown;
    clear_failure(b);
    hand_back(s, seq, {buf(b).owner});
    check_all();
    return written;
  }

  void do_upload(int s) {
    Result<int> made = do_alloc(s);
    if (made) (void)do_write(*made, s);
  }

  void do_drop(int b) {
    log_ << "drop(buffer " << b << ")\n";
    arm({"cuEventRecord"});
    buf(b).live = false;
    buf(b).handle = Buffer{};
    settle();
    check_all();
  }

  void do_read(int b, int s) {
    log_ << "read(buffer " << b << ", stream " << s << ")";
    ModelBuffer& buffer = buf(b);
    arm({"cuMemAllocHost", "cuMemcpyDtoHAsync", "cuStreamSynchronize"});
    Result<std::vector<std::byte>> read = device_->read(buffer.handle, stream(s));
    settle();
    std::optional<Errc> expected;
    std::string what = "read";
    bool stamps = false;
    if (const std::optional<Errc> refusal = refused_use(s, b, false)) {
      expected = refusal;
      what = *refusal == Errc::invalid_argument ? "read not ordered"
                                                : "read of a buffer failed for good";
    } else if (recording_open()) {
      expected = Errc::graph_state;
      what = "read while recording";
    } else if (buffer.failure) {
      expected = buffer.failure;
      what = "read of a failed buffer";
    } else {
      stamps = true;
      expected = std::exchange(streams_[s].queued, std::nullopt);  // surfaces once
    }
    expect(read, expected, what);
    if (degraded_) {
      streams_[s].queued.reset();
      stamps = read || (read.error().code() != Errc::invalid_argument &&
                        read.error().code() != Errc::graph_state);
    }
    // Past the failure check a read is an operation of its stream (its staging's use); a read
    // of the stream's own buffer is stamped on it.
    if (stamps) {
      const std::uint64_t seq = ++streams_[s].seq;
      if (buffer.owner == s) stamp(s, b, false, seq);
      // Then it waited for its stream (a queued error is reported after the wait).
      if (read || (!degraded_ && expected && read.error().code() == *expected)) completed(s);
    }
    if (read) compare(b, *read, "read");
    if (read && !recording_open()) deferred_ = false;
    check_all();
  }

  // Bytes read back must be exactly the known ones.
  void compare(int b, const std::vector<std::byte>& bytes, const char* how) {
    const ModelBuffer& buffer = buf(b);
    if (buffer.failure && !degraded_) {
      diverge(std::string(how) + ": buffer " + std::to_string(b) +
              " read back bytes where it must carry " + to_string(*buffer.failure));
      return;
    }
    if (bytes.size() != kBytes) {
      diverge(std::string(how) + ": buffer " + std::to_string(b) + " read back " +
              std::to_string(bytes.size()) + " bytes");
      return;
    }
    std::array<std::uint32_t, kN> got;
    std::memcpy(got.data(), bytes.data(), kBytes);
    if (buffer.known == kAllKnown && got == buffer.bytes) {
      compared_ += kN;
      return;
    }
    for (std::uint32_t i = 0; i < kN; ++i) {
      if ((buffer.known >> i & 1) == 0) continue;
      ++compared_;
      if (got[i] != buffer.bytes[i]) {
        diverge(std::string(how) + ": buffer " + std::to_string(b) + " element " +
                std::to_string(i) + " is " + std::to_string(got[i]) + ", the model says " +
                std::to_string(buffer.bytes[i]));
        return;
      }
    }
  }

  Result<void> do_sync(int s) {
    log_ << "sync(stream " << s << ")";
    arm({"cuStreamSynchronize", "cuGraphExecDestroy", "cuGraphDestroy"});
    Result<void> synced = device_->sync(stream(s));
    settle();
    std::optional<Errc> expected;
    if (recording_open()) {
      expected = Errc::graph_state;
    } else {
      expected = std::exchange(streams_[s].queued, std::nullopt);
    }
    expect(synced, expected, recording_open() ? "sync while recording" : "sync");
    if (degraded_ && !recording_open()) streams_[s].queued.reset();
    if (!recording_open() && (synced || synced.error().code() != Errc::graph_state)) {
      deferred_ = false;
    }
    if (!recording_open() && (synced || (!degraded_ && expected && synced.error().code() == *expected))) {
      completed(s);
    }
    check_all();
    return synced;
  }

  // ---- events ----------------------------------------------------------------------------------
  Result<void> do_record(int e, int s) {
    log_ << "record(event " << e << ", stream " << s << ")";
    ModelEvent& event = events_[static_cast<std::size_t>(e)];
    arm({"cuEventRecord"});
    Result<void> recorded = device_->record_event(event.handle, stream(s));
    settle();
    expect(recorded, std::nullopt, in_recording(s) ? "record (recorded)" : "record");
    if (!recorded) {
      if (in_recording(s) && !recording_.doomed) recording_.doomed = recorded.error().code();
      check_all();
      return recorded;
    }
    event.recorded = true;
    event.stream = s;
    event.seq = streams_[s].seq;
    event.clock = current_clock(streams_[s], in_recording(s) ? recording_.id : 0);
    event.recording = in_recording(s) ? recording_.id : 0;
    event.nodes = in_recording(s) ? recording_.frontier[s] : std::vector<std::size_t>{};
    check_all();
    return recorded;
  }

  Result<void> do_wait(int s, int e) {
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
    arm({"cuStreamWaitEvent"});
    Result<void> waited = device_->wait(stream(s), event.handle);
    settle();
    expect(waited, expected, what);
    if (!waited) {
      if (mine != 0 && waited.error().code() == Errc::driver && !recording_.doomed) {
        recording_.doomed = Errc::driver;
      }
      check_all();
      return waited;
    }
    if (!event.recorded) {
      check_all();
      return waited;
    }
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
    check_all();
    return waited;
  }

  // `to` ordered after `from` through event `e`.
  void do_order(int from, int to, int e) {
    if (do_record(e, from)) (void)do_wait(to, e);
  }

  // ---- the lifecycle ---------------------------------------------------------------------------
  // prepare_capture(s, {pool}) with `pool`: -1 none, s its own, another stream's (misuse), or -2
  // an empty GraphPool (misuse).
  Result<void> do_prepare(int s, int pool) {
    log_ << "prepare_capture(stream " << s << ", pool " << pool << ")";
    CaptureOptions options;
    GraphPool empty;
    if (pool == -2) options.pool = &empty;
    if (pool >= 0) options.pool = &pools_[pool];
    arm({});
    Result<void> prepared = device_->prepare_capture(stream(s), options);
    settle();
    std::optional<Errc> expected;
    if (pool == -2 || (pool >= 0 && pool != s)) {
      expected = Errc::invalid_argument;
    } else if (streams_[s].state != CaptureState::no_capture) {
      expected = Errc::graph_state;
    }
    expect(prepared, expected,
           pool == -2                 ? "prepare_capture with an empty pool"
           : pool >= 0 && pool != s   ? "prepare_capture with a pool of another stream"
           : streams_[s].state != CaptureState::no_capture ? "prepare_capture out of order"
           : pool >= 0                ? "prepare_capture (pool)"
                                      : "prepare_capture");
    if (prepared) open_window(s, pool, true);
    check_all();
    return prepared;
  }
  void open_window(int s, int pool, bool claims) {
    ModelStream& st = streams_[s];
    st.state = CaptureState::prepare;
    st.window = next_window_++;
    st.pool = pool;
    st.claims = claims;
  }
  void close_window(int s) {
    ModelStream& st = streams_[s];
    st.state = CaptureState::no_capture;
    st.window = 0;
    st.pool = -1;
    st.claims = true;
  }
  // The recording opened on `s` (its window's options hold).
  void open_recording(int s) {
    streams_[s].state = CaptureState::capture;
    recording_ = ModelRecording{};
    recording_.id = next_recording_++;
    recording_.origin = s;
    recording_.claims = streams_[s].claims;
    recording_.pool = streams_[s].pool;
    recording_.window = streams_[s].window;
  }

  std::optional<Errc> begin_expectation(int s, std::string& what) const {
    if (streams_[s].state != CaptureState::prepare) {
      what = "begin_capture out of order";
      return Errc::graph_state;
    }
    if (recording_open()) {
      what = "begin_capture while another recording is open";
      return Errc::graph_state;
    }
    what = "begin_capture";
    return std::nullopt;
  }

  Result<void> do_begin(int s) {
    log_ << "begin_capture(stream " << s << ")";
    std::string what;
    const std::optional<Errc> expected = begin_expectation(s, what);
    arm({"cuStreamBeginCapture", "cuEventQuery", "cuEventSynchronize", "cuStreamSynchronize"});
    Result<void> begun = device_->begin_capture(stream(s));
    settle();
    expect(begun, expected, what);
    if (begun) open_recording(s);
    check_all();
    return begun;
  }

  void do_scope_begin(int s) {
    log_ << "CaptureScope(stream " << s << ")";
    std::string what;
    const std::optional<Errc> expected = begin_expectation(s, what);
    arm({"cuStreamBeginCapture", "cuEventQuery", "cuEventSynchronize", "cuStreamSynchronize"});
    scope_.emplace(*device_, stream(s));
    settle();
    expect(scope_->began(), expected, "CaptureScope: " + what);
    scope_stream_ = s;
    if (scope_->began()) {
      open_recording(s);
    } else if (streams_[s].state == CaptureState::prepare) {
      close_window(s);  // a refused begin aborts the window the scope took over
    }
    check_all();
  }

  std::optional<int> unjoined() const {
    std::vector<bool> joined(recording_.nodes.size(), false);
    std::vector<std::size_t> stack;
    if (auto found = recording_.frontier.find(recording_.origin);
        found != recording_.frontier.end()) {
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

  // Whether a kept buffer the pool may have lent is alive: end_capture may refuse (outlived).
  bool may_outlive() const {
    return std::any_of(recording_.maybe_lent.begin(), recording_.maybe_lent.end(),
                       [&](int b) { return buffers_[static_cast<std::size_t>(b)].live; });
  }

  // What closing the open recording (end_capture on its origin) must give: the refusal's code
  // (a second one when the model can't know which), or nothing for a graph.
  struct CloseExpectation {
    std::optional<Errc> code;
    bool or_outlived = false;  // or graph_state: a lent buffer outlived the recording
    int unjoined = -1;         // the side stream the refusal names
    std::string what;
  };
  CloseExpectation close_expectation() const {
    CloseExpectation out;
    if (recording_.doomed) {
      out.code = Errc::doomed;
      out.what = "end_capture of a doomed recording";
    } else if (std::optional<int> side = unjoined()) {
      out.code = Errc::graph_state;
      out.unjoined = *side;
      out.what = "end_capture with side work not joined back";
    } else if (may_outlive()) {
      out.or_outlived = true;
      out.what = "end_capture keeping a buffer the pool may have lent";
    } else {
      out.what = recording_.pool >= 0 ? "end_capture (pool)" : "end_capture";
    }
    return out;
  }

  // The outcome of a close that went ahead: a graph or the expected refusal, worded as it must be.
  template <class T>
  void expect_close(const Result<T>& result, const CloseExpectation& close,
                    const std::string& what) {
    if (close.or_outlived) {
      expect_either(result, std::nullopt, Errc::graph_state, what);
    } else {
      expect(result, close.code, what);
    }
    expect_wording(result, close);
  }
  // The refusals name what they refuse: the side stream left unjoined, the lent buffer.
  template <class T>
  void expect_wording(const Result<T>& result, const CloseExpectation& close) {
    if (degraded_ || result) return;
    const std::string& message = result.error().message();
    if (close.unjoined >= 0 &&
        message.find("stream " + std::to_string(close.unjoined) +
                     " was forked into the recording") == std::string::npos) {
      diverge("the refusal of unjoined side work does not name stream " +
              std::to_string(close.unjoined) + ": " + message);
    }
    if (close.or_outlived && message.find("outlived the recording") == std::string::npos) {
      diverge("the refusal of a recording keeping a lent buffer does not say so: " + message);
    }
  }

  // Refused up front with the recording left open (graph_state): the stream is not the origin of
  // a recording, or it is a side stream. The expectation for the rest.
  std::optional<Errc> end_up_front(int s, std::string& what) const {
    if (!in_recording(s)) {
      what = "end_capture out of order";
      return Errc::graph_state;
    }
    if (streams_[s].side) {
      what = "end_capture on a side stream";
      return Errc::graph_state;
    }
    return std::nullopt;
  }

  // The recording closed: a graph (refusal empty) or a refusal whose code its claims carry (when
  // the window claims). The side streams leave it; their uses become the origin's.
  void close_recording(std::optional<Errc> refusal, bool outlived_refusal = false) {
    ModelRecording& rec = recording_;
    const int origin = rec.origin;
    std::vector<int> sides;
    for (int s = 0; s < kStreams; ++s) {
      if (s == origin || !streams_[s].side) continue;
      sides.push_back(s);
      streams_[s].side = false;
      streams_[s].state = CaptureState::no_capture;
    }
    close_window(origin);
    std::set<int> used = rec.reads;
    used.insert(rec.writes.begin(), rec.writes.end());
    if (refusal && rec.claims) {
      for (int b : rec.writes) fail(b, *refusal);
    }
    for (int b : used) {
      ModelBuffer& buffer = buf(b);
      if (!buffer.live) continue;
      if (refusal) {
        // Its uses never ran: the buffer has the users it had without them.
        if (auto before = rec.before.find(b); before != rec.before.end()) {
          static_cast<BufferUsage&>(buffer) = before->second;
        }
        continue;
      }
      for (int side : sides) buffer.readers.erase(side);
      if (std::find(sides.begin(), sides.end(), buffer.writer) != sides.end()) {
        buffer.writer = origin;
        buffer.write_seq = buffer.use_seq = streams_[origin].seq;
      }
    }
    // A pool's window: follow what happened to the buffers it may have lent.
    bool lent_seen = false;
    for (int b : rec.maybe_lent) {
      ModelBuffer& buffer = buf(b);
      buffer.maybe_lent = false;
      if (!buffer.live || !refusal) continue;  // a graph: none was lent
      const std::optional<Error> failure = buffer.handle.failure();
      const bool lent = failure && failure->code() == Errc::graph_state &&
                        failure->message().find(kPoisoned) != std::string::npos;
      ++outcomes()[lent ? "pool: a kept buffer turned out lent (an error for good)"
                        : "pool: a kept buffer turned out not lent"];
      if (lent) {
        lent_seen = true;
        buffer.failure = Errc::graph_state;
        buffer.for_good = true;
        buffer.lent_by = rec.pool;
        buffer.known = 0;  // its memory is the pool's graphs' scratch
      }
    }
    if (outlived_refusal && !lent_seen && !degraded_) {
      diverge("end_capture refused a lent buffer that outlived the recording, but no kept buffer "
              "carries the pool's error");
    }
    if (!refusal && rec.pool >= 0) {
      // The pool's intermediates: memory the window allocated and the graph uses, no longer held.
      for (int b : used) {
        ModelBuffer& buffer = buf(b);
        if (!buffer.live && buffer.window == rec.window) buffer.scratch = true;
      }
    }
    recording_ = ModelRecording{};
    if (!recording_open()) deferred_ = false;
  }

  // GraphReport::pool_shared_bytes of the graph the open recording makes: what it uses of the
  // pool's memory, each slice once (a window's allocations are exact-fit: kBytes): its
  // intermediates (memory its window allocated, or the pool lent it, that no handle holds any
  // more), and buffers the pool lent to earlier windows closed without a graph (their memory is
  // the pool's already); nothing from before the window. On virtual memory, what the recording
  // uses of the pool's range: the pool lends there what the warm-up planned and what is mapped,
  // and the stream's own pools serve the rest (memory the graph holds alone).
  std::size_t shared_bytes() const {
    if (recording_.pool < 0) return 0;
    const GraphPool* pool = pool_of(recording_.pool);
    const GraphPoolStats stats = pool != nullptr ? pool->stats() : GraphPoolStats{};
    std::set<CUdeviceptr> shared;
    for (const std::set<int>* used : {&recording_.reads, &recording_.writes}) {
      for (int b : *used) {
        const ModelBuffer& buffer = buffers_[static_cast<std::size_t>(b)];
        const bool in_range = buffer.ptr >= stats.base &&
                              buffer.ptr < stats.base + stats.reserved_bytes;
        if (stats.virtual_memory ? in_range
                                 : (!buffer.live && buffer.window == recording_.window) ||
                                       (buffer.for_good && buffer.lent_by == recording_.pool)) {
          shared.insert(buffer.ptr);
        }
      }
    }
    return shared.size() * kBytes;
  }
  void check_shared_bytes(const GraphReport& report, std::size_t expected, const char* what) {
    if (degraded_ || report.pool_shared_bytes == expected) return;
    diverge(std::string(what) + ": report().pool_shared_bytes is " +
            std::to_string(report.pool_shared_bytes) + ", the model says " +
            std::to_string(expected) + " (the pool's memory is what the window allocated)");
  }

  ModelGraph graph_of(const ModelRecording& rec, const Plan& plan) const {
    ModelGraph graph;
    graph.stream = rec.origin;
    graph.pool = rec.pool;
    graph.ops = rec.ops;
    graph.reads = rec.reads;
    graph.writes = rec.writes;
    graph.signature = rec.nodes;
    graph.params = rec.params;
    graph.source_count = rec.params.empty() ? 0 : rec.nodes.size();
    graph.plan = plan;
    return graph;
  }

  // end_capture(s): the graph's index in graphs_, or -1.
  int do_end(int s, const Plan& plan) {
    log_ << "end_capture(stream " << s << ")";
    std::string what;
    std::optional<Errc> up_front = end_up_front(s, what);
    CloseExpectation close;
    if (!up_front) close = close_expectation();
    arm(kCloseEntries);
    Result<Graph> graph = device_->end_capture(stream(s));
    settle();
    if (up_front) {
      expect(graph, up_front, what);
      check_all();
      return -1;
    }
    expect_close(graph, close, close.what);
    return closed(s, std::move(graph), plan, close.or_outlived);
  }

  int closed(int s, Result<Graph> graph, const Plan& plan, bool may_outlive_refusal) {
    // In degraded mode, whether it closed is what graphcap says.
    if (stream(s).capture_state() == CaptureState::capture) {
      check_all();
      return -1;
    }
    if (!graph) {
      close_recording(graph.error().code(),
                      may_outlive_refusal && graph.error().code() == Errc::graph_state);
      check_all();
      return -1;
    }
    ModelGraph model = graph_of(recording_, plan);
    model.handle = std::move(*graph);
    check_shared_bytes(model.handle.report(), shared_bytes(), "end_capture");
    log_ << "  graph " << graphs_.size() << " replays " << model.ops.size() << " op(s)\n";
    close_recording(std::nullopt);
    graphs_.push_back(std::move(model));
    check_all();
    return static_cast<int>(graphs_.size()) - 1;
  }

  // Whether re-recording into `into` updates its executable: true, false, or (nullopt) either (a
  // memcpy or memset node with other operands, a kernel of another signature: the H200 measured
  // kernel parameters, grids, functions of one signature and memset sizes).
  std::optional<bool> predict_update(const ModelGraph& into) const {
    const ModelRecording& rec = recording_;
    if (!rec.params.empty() && into.source_count != rec.nodes.size()) return false;
    if (into.signature.size() != rec.nodes.size()) return false;
    for (std::size_t i = 0; i < rec.nodes.size(); ++i) {
      std::vector<std::size_t> a = into.signature[i].deps, b = rec.nodes[i].deps;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a != b) return false;
    }
    for (std::size_t i = 0; i < rec.nodes.size(); ++i) {
      if (into.signature[i].type != rec.nodes[i].type) return false;
    }
    for (std::size_t i = 0; i < rec.nodes.size(); ++i) {
      const Node& was = into.signature[i];
      const Node& now = rec.nodes[i];
      if (now.type == CU_GRAPH_NODE_TYPE_MEMCPY && (was.a != now.a || was.b != now.b)) {
        return std::nullopt;
      }
      if (now.type == CU_GRAPH_NODE_TYPE_MEMSET && (was.b != now.b || was.value != now.value)) {
        return std::nullopt;
      }
      if (now.type == CU_GRAPH_NODE_TYPE_KERNEL && was.fill_signature != now.fill_signature) {
        return std::nullopt;
      }
    }
    return true;
  }

  // end_capture(s, into graph g).
  void do_end_into(int s, int g, const Plan& plan) {
    ModelGraph& into = graphs_[static_cast<std::size_t>(g)];
    log_ << "end_capture(stream " << s << ", into graph " << g << ")";
    std::string what;
    std::optional<Errc> up_front;
    if (!into.live) {
      up_front = Errc::graph_state;
      what = "end_capture into a destroyed graph";
    } else if (into.stream != s) {
      up_front = Errc::invalid_argument;
      what = "end_capture into a graph of another stream";
    } else {
      up_front = end_up_front(s, what);
    }
    CloseExpectation close;
    std::optional<bool> update;
    if (!up_front) {
      close = close_expectation();
      update = predict_update(into);
    }
    arm(kCloseEntries);
    const CUgraphExec exec_before = into.handle.native_handle();
    Result<void> done = device_->end_capture(stream(s), into.handle);
    settle();
    if (up_front) {
      expect(done, up_front, what);
      check_all();
      return;
    }
    const std::string label = "re-record: " + close.what;
    expect_close(done, close, label);
    if (stream(s).capture_state() == CaptureState::capture) {
      check_all();
      return;
    }
    if (!done) {
      // Refused: `into` is as it was (its replays, checked later, are the old recording's).
      if (!degraded_ && into.handle.native_handle() != exec_before) {
        diverge("a refused re-recording changed the graph's executable");
      }
      close_recording(done.error().code(),
                      close.or_outlived && done.error().code() == Errc::graph_state);
      check_all();
      return;
    }
    const GraphReport& report = into.handle.report();
    if (!degraded_ && (into.handle.native_handle() == exec_before) != report.updated) {
      diverge(std::string("end_capture(s, into): report().updated is ") +
              (report.updated ? "true" : "false") + " but the executable was " +
              (into.handle.native_handle() == exec_before ? "kept" : "replaced"));
    }
    const bool updated = report.updated;
    ++outcomes()[std::string("re-record into a graph: ") +
                 (updated ? "updated" : "re-instantiated") +
                 (update ? (*update ? " (model: update)" : " (model: re-instantiate)")
                         : " (model: either)") +
                 (degraded_ ? " (after a fault)" : "")];
    if (!degraded_) {
      if (!report.rerecorded) diverge("end_capture(s, into): report().rerecorded is false");
      if (update && *update != updated) {
        diverge(std::string("end_capture(s, into): the model says the executable ") +
                (*update ? "is updated" : "is re-instantiated") + ", report().updated is " +
                (updated ? "true" : "false") + " (" + report.update_refusal + ")");
      }
    }
    check_shared_bytes(report, shared_bytes(), "end_capture(s, into)");
    ModelGraph model = graph_of(recording_, plan);
    model.handle = std::move(into.handle);
    if (updated) model.source_count = into.source_count;
    log_ << "  graph " << g << " now replays " << model.ops.size() << " op(s)"
         << (updated ? " (updated)" : " (re-instantiated)") << "\n";
    close_recording(std::nullopt);
    // Updated: once closed, the old recording's pins are stamped as used by the queued replays
    // (the stream's next operation).
    if (updated) ++streams_[s].seq;
    into = std::move(model);
    check_all();
  }

  int do_scope_end(const Plan& plan) {
    const int s = scope_stream_;
    log_ << "CaptureScope::end(stream " << s << ")";
    CloseExpectation close;
    std::optional<Errc> up_front;
    std::string what = "CaptureScope::end";
    if (!scope_->began()) {
      up_front = scope_->began().error().code();
      what = "CaptureScope::end after a failed begin";
    } else if (!scope_->open()) {
      up_front = Errc::graph_state;
      what = "CaptureScope::end again";
    } else {
      up_front = end_up_front(s, what);
      if (!up_front) close = close_expectation();
    }
    arm(kCloseEntries);
    Result<Graph> graph = scope_->end();
    settle();
    if (up_front) {
      expect(graph, up_front, what);
      check_all();
      return -1;
    }
    expect_close(graph, close, "CaptureScope::end: " + close.what);
    if (!degraded_ && scope_->open()) {
      diverge("CaptureScope::end closed the recording, open() is true");
    }
    return closed(s, std::move(graph), plan, close.or_outlived);
  }

  // Leaving the scope without end(): it aborts a recording still open.
  void do_scope_leave() {
    log_ << "leave the CaptureScope (stream " << scope_stream_ << ")\n";
    const bool open = scope_->open();
    arm({"cuStreamEndCapture", "cuGraphDestroy"});
    scope_.reset();
    settle();
    ++outcomes()[open ? "CaptureScope left open: aborted" : "CaptureScope left closed"];
    if (open && recording_open() && recording_.origin == scope_stream_ &&
        stream(scope_stream_).capture_state() != CaptureState::capture) {
      close_recording(Errc::doomed);
    }
    check_all();
  }

  void do_abort(int s) {
    log_ << "abort_capture(stream " << s << ")";
    const CaptureState was = streams_[s].state;
    std::optional<Errc> expected;
    std::string what = "abort_capture";
    if (streams_[s].side) {
      expected = Errc::graph_state;
      what = "abort_capture on a side stream";
    } else if (was == CaptureState::no_capture) {
      expected = Errc::graph_state;
      what = "abort_capture out of order";
    } else if (was == CaptureState::capture) {
      what = "abort_capture mid-recording";
    }
    arm({"cuStreamEndCapture", "cuGraphDestroy", "cuEventRecord"});
    Result<void> aborted = device_->abort_capture(stream(s));
    settle();
    expect(aborted, expected, what);
    if (aborted && was == CaptureState::capture) {
      close_recording(Errc::doomed);  // the claims carry "abandoned" (doomed)
    } else if (aborted && was == CaptureState::prepare) {
      close_window(s);
    }
    check_all();
  }

  // ---- graphs ----------------------------------------------------------------------------------
  // A replay reading a live buffer that carries a failure is skipped, whichever stream owns it.
  std::optional<Errc> replay_expectation(const ModelGraph& graph, bool live) const {
    if (!live || in_recording(graph.stream)) return Errc::graph_state;
    for (int b : graph.reads) {
      const ModelBuffer& buffer = buffers_[static_cast<std::size_t>(b)];
      if (buffer.live && buffer.failure) return Errc::failed_buffer;
    }
    return std::nullopt;
  }
  // What a replay did to the model: ran (its ops, in recording order) or did not.
  void replay_effect(const ModelGraph& graph, const Result<void>& replayed) {
    if (!replayed) {
      const Errc code = replayed.error().code();
      if (code == Errc::graph_state) return;
      for (int b : graph.writes) fail(b, code);
      if (!streams_[graph.stream].queued) streams_[graph.stream].queued = code;
      return;
    }
    // Another graph of its pool may have used its intermediates' memory since the last replay.
    std::set<int> used = graph.reads;
    used.insert(graph.writes.begin(), graph.writes.end());
    for (int b : used) {
      if (!buf(b).live && buf(b).scratch) buf(b).known = 0;
    }
    outcomes()["replay: ops applied"] += graph.ops.size();
    for (const Op& op : graph.ops) apply(op);
    for (int b : graph.writes) clear_failure(b);  // produced whole by an enqueued replay
  }

  void do_replay(int g) {
    ModelGraph& graph = graphs_[static_cast<std::size_t>(g)];
    const bool refused = !graph.live || in_recording(graph.stream);
    if (!refused) {
      // Not modelled: a replay with a recording open (the sync after it is refused, and another
      // stream's work could race it on a GPU), or one its stream is not ordered for.
      if (recording_open()) return;
      for (int b : graph.writes) {
        if (buf(b).live && !may_use(graph.stream, b, true)) return;
      }
      for (int b : graph.reads) {
        if (buf(b).live && !may_use(graph.stream, b, false)) return;
      }
    }
    log_ << "replay(graph " << g << ")";
    arm({"cuGraphLaunch"});
    Result<void> replayed = graph.handle.replay();
    settle();
    const std::optional<Errc> expected = replay_expectation(graph, graph.live);
    expect(replayed, expected, expected == Errc::graph_state ? "replay refused" : "replay");
    replay_effect(graph, replayed);
    check_all();
    if (!refused) (void)do_sync(graph.stream);
  }

  void do_destroy(int g) {
    log_ << "destroy(graph " << g << ")";
    ModelGraph& graph = graphs_[static_cast<std::size_t>(g)];
    arm({"cuStreamSynchronize", "cuGraphExecDestroy", "cuGraphDestroy"});
    Result<void> destroyed = graph.handle.destroy();
    settle();
    expect(destroyed, std::nullopt, graph.live ? "destroy" : "destroy again");
    if (graph.live && recording_open()) deferred_ = true;  // released when the recording ends
    graph.live = false;
    check_all();
  }

  void do_graph_set(int g, int p) {
    ModelGraph& graph = graphs_[static_cast<std::size_t>(g)];
    const std::uint32_t value = random_value();
    log_ << "Graph::set(graph " << g << ", param " << p << ", " << value << ")";
    arm({"cuGraphExecKernelNodeSetParams"});
    Result<void> set = graph.handle.set(params_[p], value);
    settle();
    std::optional<Errc> expected;
    std::string what = "Graph::set";
    if (!graph.live) {
      expected = Errc::graph_state;
      what = "Graph::set on a destroyed graph";
    } else if (graph.params.count(p) == 0) {
      expected = Errc::invalid_argument;
      what = "Graph::set of a param the graph never took";
    }
    expect(set, expected, what);
    if (set) {
      for (Op& op : graph.ops) {
        if (op.kind == Op::fill_param && op.param == p) op.value = value;
      }
    }
    check_all();
  }

  void do_param_set(int p) {
    const std::uint32_t value = random_value();
    log_ << "Param::set(param " << p << ", " << value << ")\n";
    params_[p].set(value);
  }

  // ---- plans -----------------------------------------------------------------------------------
  Plan random_plan() {
    Plan plan;
    plan.temps = static_cast<int>(pick(3));
    const int ops = 1 + static_cast<int>(pick(5));
    const int fork_at = chance(35) ? static_cast<int>(pick(static_cast<std::size_t>(ops))) : -1;
    std::vector<int> alloc_at(static_cast<std::size_t>(plan.temps)),
        drop_at(static_cast<std::size_t>(plan.temps));
    for (int t = 0; t < plan.temps; ++t) {
      alloc_at[t] = static_cast<int>(pick(static_cast<std::size_t>(ops)));
      // Mostly dropped before the end (an intermediate); else kept (a result).
      drop_at[t] =
          chance(75) ? alloc_at[t] + 1 + static_cast<int>(pick(static_cast<std::size_t>(ops))) : -1;
    }
    for (int i = 0; i <= ops; ++i) {
      for (int t = 0; t < plan.temps; ++t) {
        if (drop_at[t] == i) plan.steps.push_back({PlanStep::drop, Op::add_one, 0, t});
        if (alloc_at[t] == i) plan.steps.push_back({PlanStep::alloc, Op::add_one, 0, t});
      }
      if (i == fork_at) {
        plan.steps.push_back({PlanStep::fork, Op::add_one, 1, -1});
        const int side_ops = 1 + static_cast<int>(pick(2));
        for (int k = 0; k < side_ops; ++k) {
          plan.steps.push_back({PlanStep::op, random_kind(), 1, -1});
        }
        if (chance(50)) plan.steps.push_back({PlanStep::op, random_kind(), 0, -1});
        if (chance(88)) plan.steps.push_back({PlanStep::join, Op::add_one, 1, -1});
      }
      if (i < ops) plan.steps.push_back({PlanStep::op, random_kind(), 0, -1});
    }
    return plan;
  }
  // The same plan with one operation more or less: another topology.
  Plan other_topology(Plan plan) {
    if (plan.steps.size() > 1 && chance(50)) {
      for (std::size_t i = 0; i < plan.steps.size(); ++i) {
        if (plan.steps[i].kind == PlanStep::op && plan.steps[i].lane == 0) {
          plan.steps.erase(plan.steps.begin() + static_cast<std::ptrdiff_t>(i));
          return plan;
        }
      }
    }
    plan.steps.push_back({PlanStep::op, random_kind(), 0, -1});
    return plan;
  }

  // Whether stream `x` of the execution may use buffer `b` without racing a concurrent lane: a
  // forked side stream and the recording stream use disjoint buffers until the join.
  bool race_free(const Execution& ex, int x, int b, bool writes) const {
    auto clash = [&](const std::set<int>& used, const std::set<int>& written) {
      return written.count(b) != 0 || (writes && used.count(b) != 0);
    };
    for (const Region& r : ex.regions) {
      if (!r.open) continue;
      const int side = ex.lane[static_cast<std::size_t>(r.lane)];
      if (x == side) {
        if (clash(r.origin_used, r.origin_written)) return false;
      } else if (x == ex.origin) {
        if (clash(r.side_used, r.side_written)) return false;
      } else if (clash(r.side_used, r.side_written)) {
        return false;  // another side stream
      }
    }
    return true;
  }
  void note_use(Execution& ex, int x, int b, bool writes) {
    for (Region& r : ex.regions) {
      if (!r.open) continue;
      const bool side = x == ex.lane[static_cast<std::size_t>(r.lane)];
      if (!side && x != ex.origin) continue;
      (side ? r.side_used : r.origin_used).insert(b);
      if (writes) (side ? r.side_written : r.origin_written).insert(b);
    }
  }
  // A buffer for a plan's operation on stream `x`: mostly one of the plan's temps.
  int plan_buffer(const Execution& ex, int x, bool writes, int other) {
    // Mostly an input that carries no failure (which would doom the recording).
    const bool healthy = !writes && chance(85);
    auto usable = [&](int b) {
      return !buf(b).cache_private && b != other && race_free(ex, x, b, writes) &&
             !(healthy && buf(b).failure) &&
             (chance(4) || may_use(x, b, writes));  // now and then misuse: refused, not recorded
    };
    if (chance(60)) {
      std::vector<int> temps;
      for (int b : ex.temps) {
        if (b >= 0 && buf(b).live && usable(b)) temps.push_back(b);
      }
      if (!temps.empty()) return temps[pick(temps.size())];
    }
    return live_buffer(usable);
  }

  void run_plan(const Plan& plan, Execution& ex, bool recorded) {
    ex.temps.assign(static_cast<std::size_t>(plan.temps), -1);
    ex.regions.clear();
    ex.lane = {ex.origin, -1, -1};
    ex.lane_ops = {0, 0, 0};
    auto origin_ok = [&] {
      return streams_[ex.origin].state ==
             (recorded ? CaptureState::capture : CaptureState::prepare);
    };
    for (const PlanStep& step : plan.steps) {
      if (!divergence_.empty() || !origin_ok()) return;
      if (chance(7)) chaos(ex);
      if (!divergence_.empty() || !origin_ok()) return;
      switch (step.kind) {
        case PlanStep::alloc: {
          if (live_count() >= kMaxLive) break;
          Result<int> made = do_alloc(ex.origin);
          if (made) ex.temps[static_cast<std::size_t>(step.temp)] = *made;
          break;
        }
        case PlanStep::drop: {
          const int b = ex.temps[static_cast<std::size_t>(step.temp)];
          if (b >= 0 && buf(b).live) do_drop(b);
          break;
        }
        case PlanStep::fork: {
          std::vector<int> free;
          for (int s = 0; s < kStreams; ++s) {
            const bool bound = std::find(ex.lane.begin(), ex.lane.end(), s) != ex.lane.end();
            if (!bound && streams_[s].state == CaptureState::no_capture) free.push_back(s);
          }
          if (free.empty()) break;
          const int side = free[pick(free.size())];
          const int e = static_cast<int>(pick(kEvents));
          if (!do_record(e, ex.origin)) break;
          if (!do_wait(side, e)) break;
          ex.lane[static_cast<std::size_t>(step.lane)] = side;
          Region region;
          region.lane = step.lane;
          ex.regions.push_back(std::move(region));
          break;
        }
        case PlanStep::join:
          join(ex, step.lane);
          break;
        case PlanStep::op: {
          const int x = ex.lane[static_cast<std::size_t>(step.lane)];
          if (x < 0) break;
          Op op = random_op_kind(step.op_kind);
          op.dst = plan_buffer(ex, x, true, -1);
          if (op.dst < 0) break;
          if (reads_src(op.kind)) {
            op.src = plan_buffer(ex, x, false, op.kind == Op::device_copy ? op.dst : -1);
            if (op.src < 0) break;
          }
          const bool issued = static_cast<bool>(do_op(x, op));
          if (issued) {
            if (reads_src(op.kind)) note_use(ex, x, op.src, false);
            note_use(ex, x, op.dst, true);
            ++ex.lane_ops[static_cast<std::size_t>(step.lane)];
          }
          break;
        }
      }
    }
    // A fork that recorded nothing is always joined (what CUDA answers to an empty unjoined fork
    // is not measured); one with work is left unjoined when the plan says so.
    for (const Region& r : ex.regions) {
      if (r.open && ex.lane_ops[static_cast<std::size_t>(r.lane)] == 0 && origin_ok()) {
        join(ex, r.lane);
      }
    }
  }

  void join(Execution& ex, int lane) {
    const int side = ex.lane[static_cast<std::size_t>(lane)];
    if (side < 0) return;
    const int e = static_cast<int>(pick(kEvents));
    if (!do_record(e, side)) return;
    if (!do_wait(ex.origin, e)) return;
    for (Region& r : ex.regions) {
      if (r.lane == lane) r.open = false;
    }
    ex.lane[static_cast<std::size_t>(lane)] = -1;  // a later op of that lane needs a new fork
  }

  // Misuse and unrelated work in the middle of a window.
  void chaos(Execution& ex) {
    const int s = static_cast<int>(pick(kStreams));
    switch (pick(16)) {
      case 0: {
        const int b = buffer_for(s);
        if (b >= 0) do_read(b, s);
        break;
      }
      case 1:
        (void)do_sync(s);
        break;
      case 2:
        if (!graphs_.empty()) do_replay(static_cast<int>(pick(graphs_.size())));
        break;
      case 3:
        if (in_recording(ex.origin)) (void)do_begin(ex.origin);  // out of order
        break;
      case 4:
        (void)do_prepare(ex.origin, chance(50) ? ex.origin : -1);
        break;
      case 5:
        // End or abort on a side stream (end into one of its own graphs too): refused, the
        // recording stays open.
        for (int side = 0; side < kStreams; ++side) {
          if (!streams_[side].side) continue;
          const std::size_t how = pick(3);
          int own = -1;
          for (std::size_t g = 0; g < graphs_.size(); ++g) {
            if (graphs_[g].live && graphs_[g].stream == side) own = static_cast<int>(g);
          }
          if (how == 0 && own >= 0) {
            do_end_into(side, own, Plan{});
          } else if (how == 1) {
            (void)do_end(side, Plan{});
          } else {
            do_abort(side);
          }
          break;
        }
        break;
      case 6: {
        // Into a destroyed graph or one of another stream: refused, the recording stays open.
        for (std::size_t g = 0; g < graphs_.size(); ++g) {
          if (!graphs_[g].live || graphs_[g].stream != ex.origin) {
            do_end_into(ex.origin, static_cast<int>(g), Plan{});
            break;
          }
        }
        break;
      }
      case 7:
        if (!graphs_.empty()) {
          do_graph_set(static_cast<int>(pick(graphs_.size())), static_cast<int>(pick(kParams)));
        }
        break;
      case 8:
        do_param_set(static_cast<int>(pick(kParams)));
        break;
      case 9:
        if (!graphs_.empty() && chance(30)) do_destroy(static_cast<int>(pick(graphs_.size())));
        break;
      case 10:
        if (streams_[s].state == CaptureState::no_capture ||
            streams_[s].state == CaptureState::prepare) {
          if (std::find(ex.lane.begin(), ex.lane.end(), s) == ex.lane.end()) random_op(s);
        }
        break;
      case 11:
        if (live_count() < kMaxLive) (void)do_alloc(s);
        break;
      case 12:
        do_cache_run(static_cast<int>(pick(kKeys)));
        break;
      case 14:
      case 15: {
        // A buffer dropped mid-window (perhaps one the recording uses: the graph keeps it, and
        // it joins the pool only if the window allocated it).
        const int b = live_buffer([&](int x) { return !buf(x).cache_private; });
        if (b >= 0) do_drop(b);
        break;
      }
      case 13: {
        // A wait inside the recording on an event recorded outside it.
        if (!in_recording(ex.origin)) break;
        for (int e = 0; e < kEvents; ++e) {
          if (events_[e].recorded && events_[e].recording == 0) {
            (void)do_wait(ex.origin, e);
            break;
          }
        }
        break;
      }
    }
  }

  // ---- windows ---------------------------------------------------------------------------------
  enum class Close { end, into, scope_end, scope_leave, abort };

  // One whole capture window on stream `s`: prepare, warm-up, begin, the plan recorded, a close.
  void do_window(int s, Plan plan, Close close, int into, int pool_percent = 45) {
    if (streams_[s].state != CaptureState::no_capture) return;
    int pool = chance(pool_percent) ? s : -1;
    if (chance(3)) pool = chance(50) ? -2 : (s + 1) % kStreams;  // misuse: refused
    if (!do_prepare(s, pool)) return;
    Execution ex;
    ex.origin = s;
    if (chance(85)) run_plan(plan, ex, false);  // the warm-up
    if (!divergence_.empty()) return;
    if (streams_[s].state != CaptureState::prepare) return;
    const bool scoped = close == Close::scope_end || close == Close::scope_leave;
    if (scoped) {
      do_scope_begin(s);
    } else {
      (void)do_begin(s);
    }
    if (in_recording(s) && !streams_[s].side) {
      run_plan(plan, ex, true);
      if (!divergence_.empty()) return;
    }
    if (scoped && scope_) {
      if (close == Close::scope_end) (void)do_scope_end(plan);
      if (scope_) do_scope_leave();
    } else if (in_recording(s) && !streams_[s].side) {
      switch (close) {
        case Close::end: (void)do_end(s, plan); break;
        case Close::into: do_end_into(s, into, plan); break;
        default: do_abort(s); break;
      }
    }
    // Whatever is still open is abandoned (a refusal that kept it open, a failed begin).
    if (divergence_.empty() && streams_[s].state != CaptureState::no_capture && !streams_[s].side) {
      do_abort(s);
    }
  }

  void random_window() {
    std::vector<int> idle;
    for (int s = 0; s < kStreams; ++s) {
      if (streams_[s].state == CaptureState::no_capture) idle.push_back(s);
    }
    if (idle.empty()) return;
    const int s = idle[pick(idle.size())];
    const std::size_t roll = pick(100);
    const Close close = roll < 55   ? Close::end
                        : roll < 70 ? Close::scope_end
                        : roll < 85 ? Close::scope_leave
                                    : Close::abort;
    do_window(s, random_plan(), close, -1);
  }

  // Re-record a live graph: the same plan (the same topology on other buffers), or another.
  void rerecord() {
    std::vector<int> live;
    for (std::size_t g = 0; g < graphs_.size(); ++g) {
      if (graphs_[g].live && !graphs_[g].plan.steps.empty() &&
          streams_[graphs_[g].stream].state == CaptureState::no_capture) {
        live.push_back(static_cast<int>(g));
      }
    }
    if (live.empty()) return;
    const int g = live[pick(live.size())];
    const ModelGraph& graph = graphs_[static_cast<std::size_t>(g)];
    Plan plan = chance(60) ? graph.plan : other_topology(graph.plan);
    if (chance(30)) {
      // Keep an intermediate this time (the same topology): a result the pool may have lent.
      auto drop = std::find_if(plan.steps.begin(), plan.steps.end(),
                               [](const PlanStep& step) { return step.kind == PlanStep::drop; });
      if (drop != plan.steps.end()) plan.steps.erase(drop);
    }
    // A pool graph mostly re-records into its pool: the pool lends it its own intermediates.
    do_window(graph.stream, std::move(plan), Close::into, g, graph.pool >= 0 ? 85 : 45);
  }

  // ---- GraphCache ------------------------------------------------------------------------------
  void set_up_cache() {
    cache_stream_ = static_cast<int>(pick(kStreams));
    cache_options_.max_graphs = 2;
    cache_options_.give_up_after = 2;
    cache_options_.share_pool = chance(80);
    cache_ = std::make_unique<GraphCache<int>>(*device_, stream(cache_stream_), cache_options_);
    for (int k = 0; k < kKeys; ++k) {
      keys_[k].refuses = k == 2;
      keys_[k].keeps = k == 1;
      if (k == 3) continue;  // its first execution allocates its output
      Result<int> out = do_alloc(cache_stream_);
      if (!out) continue;
      buf(*out).cache_private = true;
      keys_[k].out = *out;
      (void)do_write(*out, cache_stream_);
    }
  }

  // The key's step: output += 1 through an intermediate (+= 2 in its other topology); the
  // refusing key syncs its stream in the middle, which a recording refuses.
  Result<void> cache_step(int k) {
    ++cache_calls_;
    const int c = cache_stream_;
    const CaptureState actual = stream(c).capture_state();
    log_ << "  [GraphCache step of key " << k << ", call " << cache_calls_ << ", stream "
         << to_string(actual) << "]\n";
    // Follow the window the cache opened: prepare before the warm-up, begin before the recording.
    if (actual == CaptureState::prepare && streams_[c].state == CaptureState::no_capture) {
      open_window(c, cache_options_.share_pool ? kCachePool : -1, false);
      cache_prepared_ = true;
    } else if (actual == CaptureState::capture && streams_[c].state == CaptureState::prepare &&
               cache_prepared_) {
      if (!degraded_ && recording_open()) diverge("GraphCache: a recording began beside another");
      open_recording(c);
    } else if (actual == CaptureState::no_capture && streams_[c].state == CaptureState::capture &&
               recording_.origin == c && cache_prepared_ && !cache_rerun_) {
      // The close refused the recording for what it holds, and the cache runs the step once
      // more, eagerly, so what it produces last holds data: the refusal comes first.
      cache_rerun_ = true;
      close_cache_refusal();
    }
    CacheKey& key = keys_[k];
    if (key.out < 0) {
      Result<int> out = do_alloc(c);
      if (!out) return out.error();
      buf(*out).cache_private = true;
      key.out = *out;
      if (Result<void> zero = do_op(c, Op{Op::device_fill, -1, key.out, 0, -1}); !zero) return zero;
    }
    if (key.keeps) {
      // A result the step allocates each time: in the recording the cache's pool may lend it,
      // and a lent buffer that outlives the recording makes end_capture refuse it.
      Result<int> result = do_alloc(c);
      if (!result) return result.error();
      buf(*result).cache_private = true;
      if (key.kept >= 0 && buf(key.kept).live) do_drop(key.kept);
      key.kept = *result;
      const std::uint32_t value = 1000u + static_cast<std::uint32_t>(k);
      if (Result<void> r = do_op(c, Op{Op::fill_kernel, -1, key.kept, value, -1}); !r) return r;
    }
    Result<int> tmp = do_alloc(c);
    if (!tmp) return tmp.error();
    auto done = [&](Result<void> result) {
      if (buf(*tmp).live) do_drop(*tmp);
      return result;
    };
    if (Result<void> r = do_op(c, Op{Op::add_one, key.out, *tmp, 0, -1}); !r) return done(r);
    if (key.refuses) {
      if (Result<void> r = do_sync(c); !r) return done(r);
    }
    if (key.variant) {
      Result<int> tmp2 = do_alloc(c);
      if (!tmp2) return done(tmp2.error());
      Result<void> r = do_op(c, Op{Op::add_one, *tmp, *tmp2, 0, -1});
      if (r) r = do_op(c, Op{Op::copy_kernel, *tmp2, key.out, 0, -1});
      if (buf(*tmp2).live) do_drop(*tmp2);
      return done(r);
    }
    return done(do_op(c, Op{Op::copy_kernel, *tmp, key.out, 0, -1}));
  }

  std::size_t cache_graphs() const {
    return static_cast<std::size_t>(std::count_if(keys_.begin(), keys_.end(),
                                                  [](const CacheKey& k) { return k.has_graph; }));
  }

  void do_cache_run(int k) {
    const int c = cache_stream_;
    if (in_recording(c)) return;  // not modelled: the step would record into that recording
    CacheKey& key = keys_[k];
    log_ << "GraphCache::run(key " << k << ", stream " << c << ")\n";
    const bool was_present = key.present;
    key.present = true;
    key.last_use = ++cache_clock_;
    enum { hit, eager, record } path = record;
    if (was_present && key.has_graph && !key.stale) {
      path = hit;
    } else if (was_present && key.gave_up) {
      path = eager;
    }
    const GraphCacheStats before = cache_->stats();
    const CaptureState state_before = stream(c).capture_state();
    cache_calls_ = 0;
    cache_prepared_ = false;
    cache_rerun_ = false;
    std::optional<Errc> replay_expected;
    if (path == hit) replay_expected = replay_expectation(key.graph, true);
    ++in_cache_run_;
    arm({"cuStreamBeginCapture", "cuStreamEndCapture", "cuGraphInstantiateWithFlags",
         "cuGraphUpload", "cuGraphExecUpdate", "cuGraphLaunch", "cuGraphGetNodes", "cuLaunchKernel",
         "cuMemAlloc", "cuEventQuery", "cuStreamSynchronize", "cuGraphDestroy",
         "cuGraphExecDestroy", "cuMemcpyDtoDAsync", "cuMemsetD32Async"});
    std::optional<bool> update;
    Result<void> ran = cache_->run(k, [&]() -> Result<void> {
      Result<void> step = cache_step(k);
      step_result_ok_ = static_cast<bool>(step);
      return step;
    });
    settle();
    --in_cache_run_;
    const GraphCacheStats after = cache_->stats();
    log_ << "GraphCache::run(key " << k << ") -> "
         << (ran ? std::string("ok") : to_string(ran.error())) << " after " << cache_calls_
         << " call(s) of the step\n";
    // Whatever the run did, its stream is not capturing now: in the state it was in before.
    if (stream(c).capture_state() != state_before) {
      diverge("GraphCache::run left its stream in " +
              std::string(to_string(stream(c).capture_state())) + " state, it was in " +
              to_string(state_before));
      return;
    }
    std::string what = "GraphCache::run";
    std::optional<Errc> expected;
    GraphCacheStats want = before;
    if (path == hit) {
      what += ": hit";
      expected = replay_expected;
      if (ran) ++want.hits;
      replay_effect(key.graph, ran);
    } else if (path == eager) {
      what += ": given up, eager";
      ++want.fallbacks;
      if (cache_calls_ != 1) diverge("GraphCache::run of a key given up called the step " +
                                     std::to_string(cache_calls_) + " times");
      expected = code_of(ran);  // the step's own result, checked call by call
    } else if (streams_[c].state == CaptureState::capture && recording_.origin == c) {
      // The cache recorded: its end_capture gave a graph, or refused (a fallback).
      const bool into = key.has_graph && key.stale;
      CloseExpectation close = close_expectation();
      if (into) update = predict_update(key.graph);
      const bool step_ok = cache_calls_ == 2 && step_result_ok_;
      const bool recorded_ok = after.captures + after.updates > before.captures + before.updates;
      if (!degraded_) {
        const bool want_graph = step_ok && !close.code;
        if (want_graph != recorded_ok && !(close.or_outlived && !recorded_ok)) {
          diverge("GraphCache::run: the model says the recording " +
                  std::string(want_graph ? "gives a graph" : "is refused") + ", the cache " +
                  (recorded_ok ? "recorded it" : "fell back"));
        }
      }
      expected = std::nullopt;
      if (recorded_ok) {
        what += into ? ": re-recorded" : ": recorded";
        ModelGraph graph = graph_of(recording_, Plan{});
        const bool updated = after.updates > before.updates;
        if (into) {
          ++(updated ? want.updates : want.captures);
          if (!degraded_ && update && *update != updated) {
            diverge(std::string("GraphCache re-record: the model says ") +
                    (*update ? "update" : "re-instantiate") + ", the cache counted " +
                    (updated ? "an update" : "a capture"));
          }
          if (updated) graph.source_count = key.graph.source_count;
          what += updated ? " (updated)" : " (re-instantiated)";
        } else {
          ++want.captures;
        }
        if (const Graph* cached = cache_->graph(k); cached != nullptr) {
          check_shared_bytes(cached->report(), shared_bytes(), "GraphCache's graph");
        }
        close_recording(std::nullopt);
        if (into && updated) ++streams_[c].seq;  // the old pins, stamped once it closed
        key.graph = std::move(graph);
        key.has_graph = true;
        key.stale = false;
        key.refusals = 0;
        // Least recently used graphs go, over the count.
        while (cache_options_.max_graphs != 0 && cache_graphs() > cache_options_.max_graphs) {
          int victim = -1;
          for (int other = 0; other < kKeys; ++other) {
            if (other == k || !keys_[other].has_graph) continue;
            if (victim < 0 || keys_[other].last_use < keys_[victim].last_use) victim = other;
          }
          if (victim < 0) break;
          evicted(keys_[victim]);
          ++want.evictions;
          log_ << "  evicts key " << victim << "\n";
        }
      } else {
        what += ": recording refused, fell back";
        if (close_cache_refusal()) what += " (a kept buffer was lent)";
        ++want.fallbacks;
        refused_key(key);
      }
    } else if (cache_rerun_) {
      // Refused at its close, then the step ran again, eagerly: its result is the run's.
      what += ": recording refused at its close, the step ran again";
      if (cache_calls_ != 3) diverge("GraphCache::run re-ran a refused key's step, calling it " +
                                     std::to_string(cache_calls_) + " times in all");
      ++want.fallbacks;
      refused_key(key);
      expected = code_of(ran);
    } else if (streams_[c].state == CaptureState::prepare && cache_prepared_) {
      // The warm-up failed (its error returned), or begin was refused (a fallback).
      close_window(c);
      if (cache_calls_ == 1 && step_result_ok_) {
        what += ": begin refused, fell back";
        ++want.fallbacks;
        refused_key(key);
      } else {
        what += ": the warm-up failed";
        expected = code_of(ran);
      }
    } else {
      what += ": prepare refused";  // the cache's stream has a window of its own open
      expected = Errc::graph_state;
    }
    expect(ran, expected, what);
    if (degraded_) {
      // Follow the cache: which keys hold a graph now.
      for (int other = 0; other < kKeys; ++other) {
        if (!cache_->contains(other)) {
          evicted(keys_[other]);
        } else if (keys_[other].has_graph && !cache_->recorded(other)) {
          keys_[other].has_graph = false;
        }
      }
    } else {
      const GraphCacheStats got = after;
      if (got.hits != want.hits || got.captures != want.captures || got.updates != want.updates ||
          got.fallbacks != want.fallbacks || got.evictions != want.evictions) {
        diverge("GraphCache stats: hits/captures/updates/fallbacks/evictions are " +
                std::to_string(got.hits) + "/" + std::to_string(got.captures) + "/" +
                std::to_string(got.updates) + "/" + std::to_string(got.fallbacks) + "/" +
                std::to_string(got.evictions) + ", the model says " + std::to_string(want.hits) +
                "/" + std::to_string(want.captures) + "/" + std::to_string(want.updates) + "/" +
                std::to_string(want.fallbacks) + "/" + std::to_string(want.evictions));
      }
      for (int other = 0; other < kKeys; ++other) {
        if (keys_[other].has_graph != cache_->recorded(other)) {
          diverge("GraphCache: key " + std::to_string(other) +
                  (cache_->recorded(other) ? " holds" : " holds no") +
                  " graph, the model says otherwise");
        }
      }
    }
    check_all();
  }

  // An evicted key leaves the cache's table: its next run starts afresh.
  void evicted(CacheKey& key) {
    key.present = false;
    key.has_graph = false;
    key.stale = false;
    key.refusals = 0;
    key.gave_up = false;
  }

  // The cache's refusal (its windows claim nothing, so only a lent buffer's fate follows);
  // whether a kept buffer was lent.
  bool close_cache_refusal() {
    const Error* why = cache_->last_refusal();
    const bool outlived =
        why != nullptr && why->message().find("outlived the recording") != std::string::npos;
    close_recording(why != nullptr ? why->code() : Errc::doomed, outlived);
    return outlived;
  }

  void refused_key(CacheKey& key) {
    if (++key.refusals >= cache_options_.give_up_after && !key.gave_up) key.gave_up = true;
  }

  void do_cache_invalidate(int k) {
    log_ << "GraphCache::invalidate(key " << k << ")";
    Result<void> done = cache_->invalidate(k);
    CacheKey& key = keys_[k];
    expect(done, key.present ? std::nullopt : std::optional<Errc>(Errc::invalid_argument),
           key.present ? "GraphCache::invalidate" : "GraphCache::invalidate of a key never run");
    if (done) {
      key.stale = true;
      key.gave_up = false;
      key.refusals = 0;
      if (chance(35)) key.variant = !key.variant;  // the step changes: another topology
    }
    check_all();
  }

  // ---- checks ----------------------------------------------------------------------------------
  const GraphPool* pool_of(int pool) const {
    if (pool == kCachePool) return cache_ ? cache_->pool() : nullptr;
    return &pools_[static_cast<std::size_t>(pool)];
  }
  std::size_t pool_bytes_held(int pool) const {
    const GraphPool* held = pool_of(pool);
    return held != nullptr ? held->bytes_held() : 0;
  }

  // The model after every call: capture states, the driver's view of them, every live buffer's
  // failure and (no recording open) bytes, and what the pools hold.
  void check_all() {
    if (!divergence_.empty()) return;
    for (int s = 0; s < kStreams; ++s) {
      const CaptureState actual = stream(s).capture_state();
      if (actual != streams_[s].state) {
        if (!degraded_) {
          diverge("stream " + std::to_string(s) + " is in " + to_string(actual) +
                  " state, the model says " + to_string(streams_[s].state));
          return;
        }
        resync(s, actual);
        if (!divergence_.empty()) return;
      }
    }
    for (int s = 0; s <= kStreams; ++s) {
      Stream& on = s < kStreams ? stream(s) : *checker_;
      CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
      if (CUresult r = test_driver_->api().cuStreamIsCapturing(on.native_handle(), &status);
          r != CUDA_SUCCESS) {
        diverge("cuStreamIsCapturing failed with " + std::to_string(r));
        return;
      }
      const bool capturing = on.capture_state() == CaptureState::capture;
      if (!capturing && status != CU_STREAM_CAPTURE_STATUS_NONE) {
        diverge("stream " + std::to_string(s) + " is left capturing: graphcap says " +
                to_string(on.capture_state()) + ", the driver's status is " +
                std::to_string(status));
        return;
      }
      if (capturing && !degraded_ && status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        diverge("stream " + std::to_string(s) + " records, but the driver's status is " +
                std::to_string(status));
        return;
      }
    }
    if (!degraded_) {
      for (std::size_t b = 0; b < buffers_.size(); ++b) {
        const ModelBuffer& buffer = buffers_[b];
        if (!buffer.live) continue;
        const std::optional<Error> failure = buffer.handle.failure();
        const std::optional<Errc> got =
            failure ? std::optional<Errc>(failure->code()) : std::nullopt;
        if (got != buffer.failure) {
          diverge("buffer " + std::to_string(b) + " carries " +
                  (failure ? to_string(*failure) : std::string("no failure")) +
                  ", the model says " + errc_text(buffer.failure));
          return;
        }
      }
    }
    // Reads make driver calls: not inside a cache run (its step's calls may be armed with a
    // fault), nor while a recording is open (a read then is refused).
    if (in_cache_run_ != 0 || fault_depth_ != 0 || recording_open()) return;
    if (degraded_) {
      // After a fault the model's order may be wrong: finish everything before going on, so no
      // work the model issues can race another stream's on a GPU.
      for (int s = 0; s < kStreams; ++s) {
        if (device_->sync(stream(s))) completed(s);
        streams_[s].queued.reset();
      }
    }
    for (int s = 0; s < kStreams; ++s) {
      Result<void> recorded = device_->record_event(check_events_[s], stream(s));
      Result<void> waited = device_->wait(*checker_, check_events_[s]);
      if (!recorded || !waited) {
        diverge("ordering the checking stream failed: " +
                to_string(recorded ? waited.error() : recorded.error()));
        return;
      }
    }
    for (std::size_t b = 0; b < buffers_.size() && divergence_.empty(); ++b) {
      ModelBuffer& buffer = buffers_[b];
      if (!buffer.live) continue;
      Result<std::vector<std::byte>> read = device_->read(buffer.handle, *checker_);
      ++checks_;
      if (!read) {
        if (!degraded_ && buffer.failure != read.error().code()) {
          diverge("check: reading buffer " + std::to_string(b) + " gave " +
                  to_string(read.error()) + ", the model says " + errc_text(buffer.failure));
        }
        continue;
      }
      compare(static_cast<int>(b), *read, "check");
      // The checking stream, ordered after every stream's work so far, waited for it.
      for (int s = 0; s < kStreams; ++s) completed(s);
    }
    if (!deferred_ && !degraded_) check_pools();
  }

  // A pool holds no memory once none of its graphs lives, and no buffer it lent either (nor a
  // graph that uses one: a lent buffer kept past its window may be used in any recording).
  void check_pools() {
    auto lent_by = [&](const ModelGraph& graph, int p) {
      for (const std::set<int>* used : {&graph.reads, &graph.writes}) {
        for (int b : *used) {
          if (buf(b).for_good && buf(b).lent_by == p) return true;
        }
      }
      return false;
    };
    for (int p = 0; p <= kCachePool; ++p) {
      bool holds = false;
      for (const ModelGraph& graph : graphs_) {
        holds = holds || (graph.live && (graph.pool == p || lent_by(graph, p)));
      }
      for (const CacheKey& key : keys_) {
        holds = holds || (key.has_graph && (key.graph.pool == p || lent_by(key.graph, p)));
      }
      for (const ModelBuffer& buffer : buffers_) {
        holds = holds || (buffer.live && buffer.for_good && buffer.lent_by == p);
      }
      if (!holds && pool_bytes_held(p) != 0) {
        diverge("pool " + std::to_string(p) + " holds " + std::to_string(pool_bytes_held(p)) +
                " bytes with no graph of it and no buffer it lent alive");
        return;
      }
    }
  }

  // After a fault: follow what graphcap says a stream is doing.
  void resync(int s, CaptureState actual) {
    ModelStream& st = streams_[s];
    log_ << "  (after a fault: stream " << s << " is in " << to_string(actual)
         << " state, the model said " << to_string(st.state) << ")\n";
    if (st.state == CaptureState::capture && actual != CaptureState::capture) {
      if (!st.side && recording_.origin == s) {
        close_recording(Errc::driver);
      } else {
        st.side = false;
      }
      st.state = actual;
      if (actual == CaptureState::no_capture) close_window(s);
    } else if (st.state == CaptureState::prepare && actual == CaptureState::no_capture) {
      close_window(s);
    } else if (st.state == CaptureState::prepare && actual == CaptureState::capture &&
               !recording_open()) {
      open_recording(s);
    } else {
      diverge("stream " + std::to_string(s) + " is in " + to_string(actual) +
              " state after a fault, where the model has it in " + to_string(st.state));
    }
  }

  // ---- the sequence ----------------------------------------------------------------------------
  void random_step() {
    // Keep the number of live buffers bounded.
    while (live_count() > kMaxLive && divergence_.empty()) {
      const int b = live_buffer([&](int x) { return !buf(x).cache_private; });
      if (b < 0) break;
      do_drop(b);
    }
    const int s = static_cast<int>(pick(kStreams));
    const int e = static_cast<int>(pick(kEvents));
    const std::size_t roll = pick(100);
    if (roll < 22) {
      random_window();
    } else if (roll < 30) {
      rerecord();
    } else if (roll < 39) {
      random_op(s);
    } else if (roll < 42) {
      // A buffer a pool window allocated, used on any stream: a lent one is the pool's stream's
      // first (its allocation is a write there), and carries its error for good.
      const int b = live_buffer([&](int x) { return buf(x).window != 0 && !buf(x).cache_private; });
      if (b < 0) return;
      Op op = random_op_kind(random_kind());
      op.dst = chance(50) ? b : buffer_for(s);
      if (reads_src(op.kind)) op.src = op.dst == b ? buffer_for(s) : b;
      if (op.dst < 0 || op.src == op.dst || (reads_src(op.kind) && op.src < 0)) return;
      if (!reads_src(op.kind) && op.dst != b) op.dst = b;
      (void)do_op(s, op);
    } else if (roll < 46) {
      if (live_count() < kMaxLive) do_upload(s);
    } else if (roll < 49) {
      const int b = buffer_for(s);
      if (b >= 0) (void)do_write(b, s);
    } else if (roll < 53) {
      const int b = buffer_for(s);
      if (b >= 0) do_read(b, s);
    } else if (roll < 63) {
      if (!graphs_.empty()) do_replay(static_cast<int>(pick(graphs_.size())));
    } else if (roll < 68) {
      if (!graphs_.empty() && chance(70)) {
        do_graph_set(static_cast<int>(pick(graphs_.size())), static_cast<int>(pick(kParams)));
      } else {
        do_param_set(static_cast<int>(pick(kParams)));
      }
    } else if (roll < 80) {
      do_cache_run(static_cast<int>(pick(kKeys)));
    } else if (roll < 82) {
      do_cache_invalidate(static_cast<int>(pick(kKeys)));
    } else if (roll < 85) {
      const int b = live_buffer([&](int x) { return !buf(x).cache_private; });
      if (b >= 0) do_drop(b);
    } else if (roll < 87) {
      if (!graphs_.empty()) do_destroy(static_cast<int>(pick(graphs_.size())));
    } else if (roll < 89) {
      (void)do_sync(s);
    } else if (roll < 97) {
      const int to = static_cast<int>(pick(kStreams));
      if (to != s) do_order(s, to, e);
    } else {
      // Out-of-order lifecycle calls on an idle stream, and a window left in prepare.
      if (streams_[s].state != CaptureState::no_capture) return;
      if (chance(50)) {
        (void)do_end(s, Plan{});
      } else {
        do_abort(s);
      }
      if (do_prepare(s, chance(40) ? s : -1)) {
        if (chance(50)) random_op(s);
        do_abort(s);
      }
    }
  }

  // Close every window, order every stream after every other and read everything (the checks).
  void finish() {
    if (scope_) do_scope_leave();
    for (int s = 0; s < kStreams && divergence_.empty(); ++s) {
      if (streams_[s].state == CaptureState::capture && !streams_[s].side) (void)do_end(s, Plan{});
      if (streams_[s].state != CaptureState::no_capture && !streams_[s].side) do_abort(s);
    }
    for (int s = 0; s < kStreams && divergence_.empty(); ++s) (void)do_sync(s);
  }

  void teardown() {
    scope_.reset();
    cache_.reset();
    for (ModelGraph& graph : graphs_) graph.handle = Graph{};
    for (ModelBuffer& buffer : buffers_) buffer.handle = Buffer{};
    for (ModelEvent& event : events_) event.handle = Event{};
    for (Event& event : check_events_) event = Event{};
    for (GraphPool& pool : pools_) pool = GraphPool{};
    for (Param<std::uint32_t>& param : params_) param = Param<std::uint32_t>{};
    add_one_ = fill_ = copy_ = Kernel{};
    module_ = Module{};
    device_.reset();
    const fake::LiveHandles live = faults_.live_handles();
    if (live != leaked_) {
      diverge("the closed device left " + std::to_string(live.total()) +
              " handle(s) through the decorator, where failed releases leaked " +
              std::to_string(leaked_.total()));
    }
    if (context_ != nullptr) (void)test_driver_->api().cuCtxSetCurrent(context_);
    (void)faults_.release_leaked();
    if (fake_ != nullptr) {
      fake::LiveHandles harness;
      harness.contexts = 1;  // the harness's own reference, released below
      if (fake_->live_handles() != harness) {
        diverge("the fake counts " + std::to_string(fake_->live_handles().total()) +
                " live handle(s) after the close, the harness's context reference aside");
      }
      if (fake_->reclaimed_handles() != 0) diverge("handles were reclaimed with the context");
      if (!fake_->violations().empty()) diverge("fake violation: " + fake_->violations().front());
    }
  }

  // The harness's reference to the primary context (through the driver under test, not the
  // decorator): handles a failed release leaked stay valid until release_leaked().
  bool hold_context() {
    DriverApi& api = test_driver_->api();
    if (api.cuInit(0) != CUDA_SUCCESS || api.cuDeviceGet(&ordinal_, 0) != CUDA_SUCCESS) {
      return false;
    }
    if (api.cuDevicePrimaryCtxRetain(&context_, ordinal_) != CUDA_SUCCESS) {
      context_ = nullptr;
      return false;
    }
    if (fake_ == nullptr) {
      // One more for the whole process: the context is not rebuilt for every sequence.
      static const bool held = [&] {
        CUcontext context = nullptr;
        return api.cuDevicePrimaryCtxRetain(&context, ordinal_) == CUDA_SUCCESS;
      }();
      if (!held) return false;
    }
    return true;
  }
  void release_context() {
    if (context_ != nullptr) (void)test_driver_->api().cuDevicePrimaryCtxRelease(ordinal_);
    context_ = nullptr;
  }

  std::mt19937_64 rng_;
  std::unique_ptr<TestDriver> test_driver_;
  fake::FakeDriver* fake_;
  fake::FaultInjectingDriver faults_;
  CUdevice ordinal_{};
  CUcontext context_ = nullptr;
  std::unique_ptr<Device> device_;
  Module module_;
  Kernel add_one_, fill_, copy_;
  ModelStream streams_[kStreams];
  Stream* checker_ = nullptr;
  Clock completed_{};  // what completed host syncs saw finish (every stream is ordered after)
  std::array<ModelEvent, kEvents> events_;
  std::array<Event, kStreams> check_events_;
  std::array<GraphPool, kStreams> pools_;
  std::array<Param<std::uint32_t>, kParams> params_;
  std::vector<ModelBuffer> buffers_;
  std::vector<ModelGraph> graphs_;
  ModelRecording recording_;
  std::uint64_t next_recording_ = 1;
  std::uint64_t next_window_ = 1;
  std::optional<CaptureScope> scope_;
  int scope_stream_ = 0;
  // The cache.
  std::unique_ptr<GraphCache<int>> cache_;
  GraphCacheOptions cache_options_;
  int cache_stream_ = 0;
  std::array<CacheKey, kKeys> keys_;
  std::uint64_t cache_clock_ = 0;
  int cache_calls_ = 0;
  bool cache_prepared_ = false;
  bool cache_rerun_ = false;  // the run's recording was refused at its close: the step ran again
  bool step_result_ok_ = false;
  int in_cache_run_ = 0;
  // Faults.
  bool faults_enabled_ = false;
  const bool virtual_pools_;
  bool degraded_ = false;  // a fault fired: from then on only safety is checked
  int fault_depth_ = 0;
  std::string armed_;
  std::size_t armed_before_ = 0;
  bool fired_ = false;
  fake::LiveHandles leaked_;
  bool deferred_ = false;  // a graph destroyed while a recording was open is not released yet

 public:
  std::uint64_t faults_fired_ = 0;
  std::uint64_t checks_ = 0;
  std::uint64_t compared_ = 0;

 private:
  std::ostringstream log_;
  std::string divergence_;
};

TEST(RandomManyGraphs, EverySequenceFollowsTheModel) {
  std::optional<model::QuietLog> quiet(std::in_place);
  const bool on_fake = make_test_driver()->is_fake();
  const std::optional<std::uint64_t> only = model::env_number("GRAPHCAP_SEED");
  const std::uint64_t count = model::sequence_count(on_fake, kCounts);
  std::uint64_t ran = 0, faulted = 0, checks = 0, compared = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t seed = only ? *only : i + 1;
    Sequence sequence(seed, make_test_driver());
    const std::string divergence = sequence.run();
    ++ran;
    faulted += sequence.faults_fired_ != 0 ? 1 : 0;
    checks += sequence.checks_;
    compared += sequence.compared_;
    if (only) {
      std::printf("seed %llu:\n%s", static_cast<unsigned long long>(seed), sequence.log().c_str());
    }
    if (!divergence.empty()) {
      ADD_FAILURE() << "seed " << seed << " diverged from the model: " << divergence
                    << "\nrerun it with GRAPHCAP_SEED=" << seed << "; the sequence:\n"
                    << sequence.log();
      break;
    }
  }
  quiet.reset();
  std::printf("[ random   ] %llu many-graph sequences of %d steps on the %s (%llu with a fault "
              "fired); %llu buffer checks, %llu elements compared\n",
              static_cast<unsigned long long>(ran), kSteps, on_fake ? "fake" : "real driver",
              static_cast<unsigned long long>(faulted), static_cast<unsigned long long>(checks),
              static_cast<unsigned long long>(compared));
  for (const auto& [what, n] : outcomes()) {
    std::printf("[ random   ]   %-90s %8llu\n", what.c_str(), static_cast<unsigned long long>(n));
  }
  RecordProperty("sequences", static_cast<int>(ran));
  if (only || count < 100) return;  // too few to reach everything
  // The sequences must reach what they are for.
  auto seen = [](const std::string& prefix) {
    std::uint64_t n = 0;
    for (const auto& [what, times] : outcomes()) {
      if (what.rfind(prefix, 0) == 0) n += times;
    }
    return n;
  };
  EXPECT_GT(seen("end_capture (pool) -> ok"), 0u);
  EXPECT_GT(seen("pool: a kept buffer turned out lent"), 0u);
  EXPECT_GT(seen("re-record into a graph: updated"), 0u);
  EXPECT_GT(seen("re-record into a graph: re-instantiated"), 0u);
  EXPECT_GT(seen("Graph::set -> ok"), 0u);
  EXPECT_GT(seen("GraphCache::run: hit -> ok"), 0u);
  EXPECT_GT(seen("GraphCache::run: recorded -> ok"), 0u);
  EXPECT_GT(seen("GraphCache::run: re-recorded"), 0u);
  EXPECT_GT(seen("GraphCache::run: recording refused, fell back -> ok"), 0u);
  EXPECT_GT(seen("GraphCache::run: recording refused at its close, the step ran again -> ok"), 0u);
  EXPECT_GT(seen("GraphCache::run: given up, eager"), 0u);
  EXPECT_GT(seen("CaptureScope::end: end_capture"), 0u);
  EXPECT_GT(seen("CaptureScope left open: aborted"), 0u);
  EXPECT_GT(seen("abort_capture mid-recording -> ok"), 0u);
  EXPECT_GT(seen("wait: fork -> ok"), 0u);
  EXPECT_GT(
      seen("end_capture with side work not joined back -> graph_state") +
          seen("CaptureScope::end: end_capture with side work not joined back -> graph_state"),
      0u);
  EXPECT_GT(seen("fault injected: "), 0u);
}

}  // namespace
}  // namespace graphcap::testing
