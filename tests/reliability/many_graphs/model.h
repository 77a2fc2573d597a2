// The many-graph model's state (random_many_graphs_test.cc says what a sequence does and what the
// model knows): what it keeps of every buffer, stream window, recording, graph and GraphCache key,
// on the shared model world (model/world.h) and streams (model/streams.h), and the calls each
// file of many_graphs/ models: one graphcap call each, its outcome checked against the model, the
// model kept, the invariants checked after it (checks.cc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <graphcap/graph_cache.h>
#include <graphcap/graphcap.h>

#include "many_graphs/fault_arming.h"
#include "model/host_buffer.h"
#include "model/runner.h"
#include "model/sequence.h"
#include "model/streams.h"
#include "model/world.h"

namespace graphcap::testing::many_graphs {

constexpr int kStreams = model::kOrderedStreams;  // the model's streams; the world's fourth checks
constexpr int kEvents = 3;   // the model's events (forks, joins, orders)
constexpr int kParams = 2;   // Param<std::uint32_t>s
constexpr int kKeys = 4;     // GraphCache keys
constexpr int kCachePool = kStreams;  // the pool id of the cache's GraphPool
constexpr std::size_t kMaxLive = 14;  // live buffers a sequence keeps at most (then it drops)
constexpr std::uint32_t kN = model::kWords;  // elements (u32) of every buffer
constexpr std::size_t kBytes = model::kBufferBytes;

// The wording graphcap gives a lent pool buffer of a window that closed without a graph
// (capture/pool_share.cc): how the model tells it from a claim when it follows what happened.
constexpr std::string_view kPoisoned = "the window closed without a graph";

model::Outcomes& outcomes();

// ---- what the model keeps -------------------------------------------------------------------------

// One whole-buffer operation, by model buffer id.
struct Op {
  enum Kind { add_one, copy_kernel, fill_kernel, fill_param, device_copy, device_fill };
  Kind kind = add_one;
  int src = -1;
  int dst = -1;
  std::uint32_t value = 0;  // fills; fill_param: the value the node holds (Graph::set changes it)
  int param = -1;           // fill_param
};
const char* kind_name(Op::Kind kind);
bool reads_src(Op::Kind kind);

// A buffer: its bytes and failure (HostBuffer), who used it (BufferUsage, for the order rule),
// and what a pool's window did with it.
struct ModelBuffer : model::HostBuffer, model::BufferUsage {
  bool for_good = false;     // a lent pool buffer of a window closed without a graph
  int lent_by = -1;          // for_good: the pool that lent it (it keeps that memory alive)
  CUdeviceptr ptr = 0;
  bool cache_private = false;  // a GraphCache key's output: used by the cache's steps only
  std::uint64_t window = 0;    // the pool window that allocated it (0: none)
  bool scratch = false;        // dead, and a pool's shared intermediate: unknown at each replay
  bool maybe_lent = false;     // the pool's recording may have lent it (resolved at the close)
};

// A stream's own window (prepare or capture, not as a side stream): the options it runs with.
struct OwnWindow {
  std::uint64_t id = 0;
  int pool = -1;
  bool claims = true;
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

// The open recording's contents (its order and nodes are model::Streams').
struct ModelRecording {
  std::optional<Errc> doomed;
  bool claims = true;
  int pool = -1;
  std::uint64_t window = 0;
  std::vector<Op> ops;
  std::set<int> reads, writes;  // buffer ids (every write is whole: it is also produced)
  std::set<int> params;
  std::vector<int> maybe_lent;
};

struct ModelGraph {
  int stream = 0;
  int pool = -1;
  std::vector<Op> ops;
  std::set<int> reads, writes;
  std::vector<model::Node> signature;  // the nodes of the recording its executable runs
  std::set<int> params;
  // The nodes of the recording it was instantiated from, if that one had params (0 otherwise).
  std::size_t source_count = 0;
  bool live = true;
  bool released = false;  // destroyed, and no open recording deferred its release
  // The buffers it holds until released (those alive at its close): their uses and failures
  // outlive their handles.
  std::set<int> held;
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

// The GraphCache and what a run of it went through (cache_runs.cc).
struct CacheState {
  std::unique_ptr<GraphCache<int>> cache;
  GraphCacheOptions options;
  int stream = 0;
  std::array<CacheKey, kKeys> keys;
  std::uint64_t clock = 0;
  int calls = 0;             // of the step, in the run
  bool prepared = false;
  bool rerun = false;        // the run's recording was refused at its close: the step ran again
  bool step_ok = false;
  int in_run = 0;
};

// What closing the open recording (end_capture on its origin) must give: the refusal's code (a
// second one when the model can't know which), or nothing for a graph.
struct CloseExpectation {
  std::optional<Errc> code;
  bool or_outlived = false;  // or graph_state: a lent buffer outlived the recording
  int unjoined = -1;         // the side stream the refusal names
  std::string what;
};

// ---- one sequence ---------------------------------------------------------------------------------

struct Model : model::Sequence<ModelBuffer, ModelGraph> {
  explicit Model(std::uint64_t seed);

  FaultArming faults;
  const bool virtual_pools;
  model::Streams streams;
  std::array<OwnWindow, kStreams> windows;
  std::array<std::optional<Errc>, kStreams> queued;  // a failed replay's error, reported once
  std::array<model::EventState, kEvents> events;
  std::array<GraphPool, kStreams> pools;
  std::array<Param<std::uint32_t>, kParams> params;
  ModelRecording recording;
  std::uint64_t next_window = 1;
  std::optional<CaptureScope> scope;
  int scope_stream = 0;
  CacheState cache;
  bool deferred = false;  // a graph destroyed while a recording was open is not released yet
  std::uint64_t checks = 0;
  std::uint64_t compared = 0;

  // ---- the streams ---------------------------------------------------------------------------------
  bool recording_open() const { return streams.recording_open(); }
  bool in_recording(int s) const { return streams.in_recording(s); }
  bool side(int s) const { return streams[s].side; }
  CaptureState state(int s) const { return streams[s].state; }
  bool degraded() const { return faults.degraded(); }

  // A buffer for random work on stream `s`: mostly one of its own, never a cache's.
  int buffer_for(int s);

  // ---- outcomes --------------------------------------------------------------------------------------
  // Counts the outcome and compares it with the model's; after a fault fired, only counts it.
  template <class T>
  void expect(const Result<T>& result, std::optional<Errc> expected, const std::string& what) {
    faults.note_fault();
    if (degraded()) {
      world.note_after_fault(result, what);
    } else {
      world.expect(result, expected, what);
    }
  }
  // The model can't know which of two outcomes it is (a pool's lending, a pool's cache).
  template <class T>
  void expect_either(const Result<T>& result, std::optional<Errc> a, std::optional<Errc> b,
                     const std::string& what) {
    const std::optional<Errc> got = result ? std::nullopt : std::optional<Errc>(result.error().code());
    expect(result, got == b ? b : a, what);
  }

  // ---- buffers and the order rule (model/order.h) ------------------------------------------------
  // A failure lands on a buffer (a for-good failure stays what it was).
  void fail(int b, Errc code);
  // Whether buffer b's state (its uses, its failure) is still kept: its handle or a graph not
  // yet released holds it.
  bool alive(int b) const;
  // The releases a recording deferred happened (Graph::destroy's, DeviceCore::collect_deferred).
  void release_deferred();
  void clear_failure(int b);
  bool may_use(int s, int b, bool writes) const;
  // Device::check_buffer's refusal of `b` for stream `s`: a buffer failed for good (a lent pool
  // buffer of a graphless window) is graph_state for every use; else an unordered use is
  // invalid_argument.
  std::optional<Errc> refused_use(int s, int b, bool writes) const;
  void stamp(int s, int b, bool writes, std::uint64_t seq) { streams.stamp(s, b, buf(b), writes, seq); }
  const GraphPool* pool_of(int pool) const;
  std::size_t pool_bytes_held(int pool) const;
};

// ---- the calls, by file ---------------------------------------------------------------------------
// operation_calls.cc: whole-buffer operations and events.
void apply(Model& m, const Op& op);
Result<void> do_op(Model& m, int s, Op op);
// An eager use on `s` (its operation `seq`) of buffers of other streams is handed back: each
// owner waits for it (StreamCore::return_borrowed, which stamps the wait as the owner's next
// operation) and is ordered after it.
void hand_back(Model& m, int s, std::uint64_t seq, const std::set<int>& owners);
Op random_op_kind(Model& m, Op::Kind kind);
Op::Kind random_kind(Model& m);
void random_op(Model& m, int s);
Result<void> do_record(Model& m, int e, int s);
Result<void> do_wait(Model& m, int s, int e);
void do_order(Model& m, int from, int to, int e);
// buffer_calls.cc: allocations, host writes, reads, syncs, drops.
Result<int> do_alloc(Model& m, int s);
Result<void> do_write(Model& m, int b, int s);
void do_upload(Model& m, int s);
void do_drop(Model& m, int b);
void do_read(Model& m, int b, int s);
void compare(Model& m, int b, const std::vector<std::byte>& bytes, const char* how);
Result<void> do_sync(Model& m, int s);
// window_calls.cc: opening windows and recordings, aborts.
Result<void> do_prepare(Model& m, int s, int pool);
void open_window(Model& m, int s, int pool, bool claims);
void close_window(Model& m, int s);
void open_recording(Model& m, int s);
Result<void> do_begin(Model& m, int s);
void do_scope_begin(Model& m, int s);
void do_scope_leave(Model& m);
void do_abort(Model& m, int s);
// recording_ends.cc: closing the recording into a graph, or refused.
CloseExpectation close_expectation(const Model& m);
void close_recording(Model& m, std::optional<Errc> refusal, bool outlived_refusal = false);
std::optional<bool> predict_update(const Model& m, const ModelGraph& into);
ModelGraph graph_of(const Model& m, const Plan& plan);
std::size_t shared_bytes(const Model& m);
void check_shared_bytes(Model& m, const GraphReport& report, std::size_t expected, const char* what);
int do_end(Model& m, int s, const Plan& plan);
void do_end_into(Model& m, int s, int g, const Plan& plan);
int do_scope_end(Model& m, const Plan& plan);
// graph_calls.cc: replays, destroys, per-replay params.
std::optional<Errc> replay_expectation(const Model& m, const ModelGraph& graph, bool live);
void replay_effect(Model& m, const ModelGraph& graph, const Result<void>& replayed);
void do_replay(Model& m, int g);
void do_destroy(Model& m, int g);
void do_graph_set(Model& m, int g, int p);
void do_param_set(Model& m, int p);
// windows.cc: whole capture windows (a plan warmed up, recorded and closed).
void random_window(Model& m);
void rerecord(Model& m);
// cache_runs.cc: the GraphCache.
void set_up_cache(Model& m);
void do_cache_run(Model& m, int k);
void do_cache_invalidate(Model& m, int k);
// checks.cc: the model after every call.
void check_all(Model& m);

}  // namespace graphcap::testing::many_graphs
