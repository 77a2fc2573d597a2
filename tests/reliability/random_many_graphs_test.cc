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
//     must agree after every call) and the ordering bookkeeping of random_multistream_test.cc
//     (model/streams.h);
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
// Injected faults (many_graphs/fault_arming.h): in some sequences, now and then one driver call of
// a step fails (fail_call of an entry point that step makes, with a code the entry point can
// return: tests/support/injected_codes.h, the sweep's table). From then on the sequence only requires what safety needs:
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
// The model is many_graphs/ on the shared model library (model/): model.h its state, one file per
// family of calls, checks.cc what is checked after each; this file the sequence and the test.
// The same source builds for the real driver (graphcap_many_graphs_cuda, gpu preset, label
// gpu_sweep). GRAPHCAP_SEED=<seed> reruns one sequence (printing it); GRAPHCAP_RANDOM_SEQUENCES=<n>
// sets how many run (default 10000 on the fake, 200 under AddressSanitizer or ThreadSanitizer, 300
// on a GPU). docs/reliability.md ("The many-graph life against a model") has the figures.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "many_graphs/model.h"
#include "test_driver.h"

namespace graphcap::testing::many_graphs {
namespace {

constexpr int kSteps = 30;  // top-level steps per sequence (a window is one, of many calls)
constexpr model::SequenceCounts kCounts{.fake = 10000, .sanitizer = 200, .gpu = 300};

void random_step(Model& m) {
  // Keep the number of live buffers bounded.
  while (m.live_count() > kMaxLive && m.ok()) {
    const int b = m.live_buffer([&](int x) { return !m.buf(x).cache_private; });
    if (b < 0) break;
    do_drop(m, b);
  }
  const int s = static_cast<int>(m.world.pick(kStreams));
  const int e = static_cast<int>(m.world.pick(kEvents));
  const std::size_t roll = m.world.pick(100);
  if (roll < 22) {
    random_window(m);
  } else if (roll < 30) {
    rerecord(m);
  } else if (roll < 39) {
    random_op(m, s);
  } else if (roll < 42) {
    // A buffer a pool window allocated, used on any stream: a lent one is the pool's stream's
    // first (its allocation is a write there), and carries its error for good.
    const int b = m.live_buffer([&](int x) { return m.buf(x).window != 0 && !m.buf(x).cache_private; });
    if (b < 0) return;
    Op op = random_op_kind(m, random_kind(m));
    op.dst = m.world.chance(50) ? b : m.buffer_for(s);
    if (reads_src(op.kind)) op.src = op.dst == b ? m.buffer_for(s) : b;
    if (op.dst < 0 || op.src == op.dst || (reads_src(op.kind) && op.src < 0)) return;
    if (!reads_src(op.kind) && op.dst != b) op.dst = b;
    (void)do_op(m, s, op);
  } else if (roll < 46) {
    if (m.live_count() < kMaxLive) do_upload(m, s);
  } else if (roll < 49) {
    const int b = m.buffer_for(s);
    if (b >= 0) (void)do_write(m, b, s);
  } else if (roll < 53) {
    const int b = m.buffer_for(s);
    if (b >= 0) do_read(m, b, s);
  } else if (roll < 63) {
    if (!m.graphs.empty()) do_replay(m, static_cast<int>(m.world.pick(m.graphs.size())));
  } else if (roll < 68) {
    if (!m.graphs.empty() && m.world.chance(70)) {
      do_graph_set(m, static_cast<int>(m.world.pick(m.graphs.size())), static_cast<int>(m.world.pick(kParams)));
    } else {
      do_param_set(m, static_cast<int>(m.world.pick(kParams)));
    }
  } else if (roll < 80) {
    do_cache_run(m, static_cast<int>(m.world.pick(kKeys)));
  } else if (roll < 82) {
    do_cache_invalidate(m, static_cast<int>(m.world.pick(kKeys)));
  } else if (roll < 85) {
    const int b = m.live_buffer([&](int x) { return !m.buf(x).cache_private; });
    if (b >= 0) do_drop(m, b);
  } else if (roll < 87) {
    if (!m.graphs.empty()) do_destroy(m, static_cast<int>(m.world.pick(m.graphs.size())));
  } else if (roll < 89) {
    (void)do_sync(m, s);
  } else if (roll < 97) {
    const int to = static_cast<int>(m.world.pick(kStreams));
    if (to != s) do_order(m, s, to, e);
  } else {
    // Out-of-order lifecycle calls on an idle stream, and a window left in prepare.
    if (m.state(s) != CaptureState::no_capture) return;
    if (m.world.chance(50)) {
      (void)do_end(m, s, Plan{});
    } else {
      do_abort(m, s);
    }
    if (do_prepare(m, s, m.world.chance(40) ? s : -1)) {
      if (m.world.chance(50)) random_op(m, s);
      do_abort(m, s);
    }
  }
}

// The pools, params and cache, and two buffers on every stream with known bytes.
bool set_up(Model& m) {
  for (int s = 0; s < kStreams; ++s) {
    Result<GraphPool> pool =
        m.device().create_graph_pool(m.stream(s), GraphPoolOptions{.virtual_memory = m.virtual_pools});
    if (!pool) {
      m.world.diverge("create_graph_pool failed: " + to_string(pool.error()));
      return false;
    }
    m.pools[static_cast<std::size_t>(s)] = std::move(*pool);
  }
  for (Param<std::uint32_t>& param : m.params) param = m.device().param<std::uint32_t>(m.world.value());
  set_up_cache(m);
  m.log() << "faults " << (m.faults.enabled() ? "on" : "off") << ", cache on stream " << m.cache.stream
          << (m.cache.options.share_pool ? " (shared pool)" : "") << "\n";
  for (int s = 0; s < kStreams && m.ok(); ++s) {
    do_upload(m, s);
    do_upload(m, s);
  }
  return true;
}

// Close every window, order every stream after every other and read everything (the checks).
void finish(Model& m) {
  if (m.scope) do_scope_leave(m);
  for (int s = 0; s < kStreams && m.ok(); ++s) {
    if (m.state(s) == CaptureState::capture && !m.side(s)) (void)do_end(m, s, Plan{});
    if (m.state(s) != CaptureState::no_capture && !m.side(s)) do_abort(m, s);
  }
  for (int s = 0; s < kStreams && m.ok(); ++s) (void)do_sync(m, s);
}

// Everything the model holds dropped, then the world closed: nothing may be left but what failed
// releases leaked.
void tear_down(Model& m) {
  m.scope.reset();
  m.cache.cache.reset();
  m.drop_handles();
  for (GraphPool& pool : m.pools) pool = GraphPool{};
  for (Param<std::uint32_t>& param : m.params) param = Param<std::uint32_t>{};
  m.world.close(m.faults.leaked());
}

struct Totals {
  std::uint64_t faulted = 0, checks = 0, compared = 0;
};

model::SequenceEnd run_sequence(std::uint64_t seed, Totals& totals) {
  Model m(seed);
  if (m.world.open() && set_up(m)) {
    for (int step = 0; step < kSteps && m.ok(); ++step) random_step(m);
    if (m.ok()) finish(m);
    tear_down(m);
  }
  totals.faulted += m.faults.fired() != 0 ? 1 : 0;
  totals.checks += m.checks;
  totals.compared += m.compared;
  return m.end();
}

}  // namespace

TEST(RandomManyGraphs, EverySequenceFollowsTheModel) {
  std::optional<model::QuietLog> quiet(std::in_place);
  const bool on_fake = make_test_driver()->is_fake();
  const std::uint64_t count = model::sequence_count(on_fake, kCounts);
  Totals totals;
  const std::uint64_t ran =
      model::run_sequences(count, [&](std::uint64_t seed) { return run_sequence(seed, totals); });
  quiet.reset();
  std::printf("[ random   ] %llu many-graph sequences of %d steps on the %s (%llu with a fault "
              "fired); %llu buffer checks, %llu elements compared\n",
              static_cast<unsigned long long>(ran), kSteps, on_fake ? "fake" : "real driver",
              static_cast<unsigned long long>(totals.faulted), static_cast<unsigned long long>(totals.checks),
              static_cast<unsigned long long>(totals.compared));
  outcomes().print("random");
  if (model::env_number("GRAPHCAP_SEED") || count < 100) return;  // too few to reach everything
  // The sequences must reach what they are for.
  const model::Outcomes& seen = outcomes();
  EXPECT_GT(seen.seen("end_capture (pool) -> ok"), 0u);
  EXPECT_GT(seen.seen("pool: a kept buffer turned out lent"), 0u);
  EXPECT_GT(seen.seen("re-record into a graph: updated"), 0u);
  EXPECT_GT(seen.seen("re-record into a graph: re-instantiated"), 0u);
  EXPECT_GT(seen.seen("Graph::set -> ok"), 0u);
  EXPECT_GT(seen.seen("GraphCache::run: hit -> ok"), 0u);
  EXPECT_GT(seen.seen("GraphCache::run: recorded -> ok"), 0u);
  EXPECT_GT(seen.seen("GraphCache::run: re-recorded"), 0u);
  EXPECT_GT(seen.seen("GraphCache::run: recording refused, fell back -> ok"), 0u);
  EXPECT_GT(seen.seen("GraphCache::run: recording refused at its close, the step ran again -> ok"), 0u);
  EXPECT_GT(seen.seen("GraphCache::run: given up, eager"), 0u);
  EXPECT_GT(seen.seen("CaptureScope::end: end_capture"), 0u);
  EXPECT_GT(seen.seen("CaptureScope left open: aborted"), 0u);
  EXPECT_GT(seen.seen("abort_capture mid-recording -> ok"), 0u);
  EXPECT_GT(seen.seen("wait: fork -> ok"), 0u);
  EXPECT_GT(seen.seen("end_capture with side work not joined back -> graph_state") +
                seen.seen("CaptureScope::end: end_capture with side work not joined back -> graph_state"),
            0u);
  EXPECT_GT(seen.seen("fault injected: "), 0u);
}

}  // namespace graphcap::testing::many_graphs
