// The GraphCache (max_graphs 2, give_up_after 2) on one stream: runs of its keys (a key whose
// step refuses when recorded, a key whose output the first run allocates, a key whose step keeps a
// result it allocates), and invalidations with the same or another topology. The model knows
// which path each run takes (replay, record, fall back, run eagerly after giving up), its stats
// after every run, which keys hold a graph (LRU eviction), and that a run has the effect of
// exactly one execution of the step (each execution adds 1 to the key's output); whatever a run
// does, its stream is not capturing when it returns.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "many_graphs/model.h"

namespace graphcap::testing::many_graphs {
namespace {

template <class T>
std::optional<Errc> code_of(const Result<T>& result) {
  return result ? std::nullopt : std::optional<Errc>(result.error().code());
}

std::size_t cache_graphs(Model& m) {
  return static_cast<std::size_t>(std::count_if(m.cache.keys.begin(), m.cache.keys.end(),
                                                [](const CacheKey& k) { return k.has_graph; }));
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
bool close_cache_refusal(Model& m) {
  const Error* why = m.cache.cache->last_refusal();
  const bool outlived =
      why != nullptr && why->message().find("outlived the recording") != std::string::npos;
  close_recording(m, why != nullptr ? why->code() : Errc::doomed, outlived);
  return outlived;
}

void refused_key(Model& m, CacheKey& key) {
  if (++key.refusals >= m.cache.options.give_up_after && !key.gave_up) key.gave_up = true;
}

// The key's step: output += 1 through an intermediate (+= 2 in its other topology); the
// refusing key syncs its stream in the middle, which a recording refuses.
Result<void> cache_step(Model& m, int k) {
  ++m.cache.calls;
  const int c = m.cache.stream;
  const CaptureState actual = m.stream(c).capture_state();
  m.log() << "  [GraphCache step of key " << k << ", call " << m.cache.calls << ", stream "
       << to_string(actual) << "]\n";
  // Follow the window the cache opened: prepare before the warm-up, begin before the recording.
  if (actual == CaptureState::prepare && m.state(c) == CaptureState::no_capture) {
    open_window(m, c, m.cache.options.share_pool ? kCachePool : -1, false);
    m.cache.prepared = true;
  } else if (actual == CaptureState::capture && m.state(c) == CaptureState::prepare &&
             m.cache.prepared) {
    if (!m.degraded() && m.recording_open()) m.world.diverge("GraphCache: a recording began beside another");
    open_recording(m, c);
  } else if (actual == CaptureState::no_capture && m.state(c) == CaptureState::capture &&
             m.streams.origin() == c && m.cache.prepared && !m.cache.rerun) {
    // The close refused the recording for what it holds, and the cache runs the step once
    // more, eagerly, so what it produces last holds data: the refusal comes first.
    m.cache.rerun = true;
    close_cache_refusal(m);
  }
  CacheKey& key = m.cache.keys[k];
  if (key.out < 0) {
    Result<int> out = do_alloc(m, c);
    if (!out) return out.error();
    m.buf(*out).cache_private = true;
    key.out = *out;
    if (Result<void> zero = do_op(m, c, Op{Op::device_fill, -1, key.out, 0, -1}); !zero) return zero;
  }
  if (key.keeps) {
    // A result the step allocates each time: in the recording the cache's pool may lend it,
    // and a lent buffer that outlives the recording makes end_capture refuse it.
    Result<int> result = do_alloc(m, c);
    if (!result) return result.error();
    m.buf(*result).cache_private = true;
    if (key.kept >= 0 && m.buf(key.kept).live) do_drop(m, key.kept);
    key.kept = *result;
    const std::uint32_t value = 1000u + static_cast<std::uint32_t>(k);
    if (Result<void> r = do_op(m, c, Op{Op::fill_kernel, -1, key.kept, value, -1}); !r) return r;
  }
  Result<int> tmp = do_alloc(m, c);
  if (!tmp) return tmp.error();
  auto done = [&](Result<void> result) {
    if (m.buf(*tmp).live) do_drop(m, *tmp);
    return result;
  };
  if (Result<void> r = do_op(m, c, Op{Op::add_one, key.out, *tmp, 0, -1}); !r) return done(r);
  if (key.refuses) {
    if (Result<void> r = do_sync(m, c); !r) return done(r);
  }
  if (key.variant) {
    Result<int> tmp2 = do_alloc(m, c);
    if (!tmp2) return done(tmp2.error());
    Result<void> r = do_op(m, c, Op{Op::add_one, *tmp, *tmp2, 0, -1});
    if (r) r = do_op(m, c, Op{Op::copy_kernel, *tmp2, key.out, 0, -1});
    if (m.buf(*tmp2).live) do_drop(m, *tmp2);
    return done(r);
  }
  return done(do_op(m, c, Op{Op::copy_kernel, *tmp, key.out, 0, -1}));
}

}  // namespace

void set_up_cache(Model& m) {
  m.cache.stream = static_cast<int>(m.world.pick(kStreams));
  m.cache.options.max_graphs = 2;
  m.cache.options.give_up_after = 2;
  m.cache.options.share_pool = m.world.chance(80);
  m.cache.cache = std::make_unique<GraphCache<int>>(m.device(), m.stream(m.cache.stream), m.cache.options);
  for (int k = 0; k < kKeys; ++k) {
    m.cache.keys[k].refuses = k == 2;
    m.cache.keys[k].keeps = k == 1;
    if (k == 3) continue;  // its first execution allocates its output
    Result<int> out = do_alloc(m, m.cache.stream);
    if (!out) continue;
    m.buf(*out).cache_private = true;
    m.cache.keys[k].out = *out;
    (void)do_write(m, *out, m.cache.stream);
  }
}

void do_cache_run(Model& m, int k) {
  const int c = m.cache.stream;
  if (m.in_recording(c)) return;  // not modelled: the step would record into that recording
  CacheKey& key = m.cache.keys[k];
  m.log() << "GraphCache::run(key " << k << ", stream " << c << ")\n";
  const bool was_present = key.present;
  key.present = true;
  key.last_use = ++m.cache.clock;
  enum { hit, eager, record } path = record;
  if (was_present && key.has_graph && !key.stale) {
    path = hit;
  } else if (was_present && key.gave_up) {
    path = eager;
  }
  const GraphCacheStats before = m.cache.cache->stats();
  const CaptureState state_before = m.stream(c).capture_state();
  m.cache.calls = 0;
  m.cache.prepared = false;
  m.cache.rerun = false;
  std::optional<Errc> replay_expected;
  if (path == hit) replay_expected = replay_expectation(m, key.graph, true);
  ++m.cache.in_run;
  m.faults.arm({"cuStreamBeginCapture", "cuStreamEndCapture", "cuGraphInstantiateWithFlags",
       "cuGraphUpload", "cuGraphExecUpdate", "cuGraphLaunch", "cuGraphGetNodes", "cuLaunchKernel",
       "cuMemAlloc", "cuEventQuery", "cuStreamSynchronize", "cuGraphDestroy",
       "cuGraphExecDestroy", "cuMemcpyDtoDAsync", "cuMemsetD32Async"});
  std::optional<bool> update;
  Result<void> ran = m.cache.cache->run(k, [&]() -> Result<void> {
    Result<void> step = cache_step(m, k);
    m.cache.step_ok = static_cast<bool>(step);
    return step;
  });
  m.faults.settle();
  --m.cache.in_run;
  const GraphCacheStats after = m.cache.cache->stats();
  m.log() << "GraphCache::run(key " << k << ") -> "
       << (ran ? std::string("ok") : to_string(ran.error())) << " after " << m.cache.calls
       << " call(s) of the step\n";
  // Whatever the run did, its stream is not capturing now: in the state it was in before.
  if (m.stream(c).capture_state() != state_before) {
    m.world.diverge("GraphCache::run left its stream in " +
            std::string(to_string(m.stream(c).capture_state())) + " state, it was in " +
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
    replay_effect(m, key.graph, ran);
  } else if (path == eager) {
    what += ": given up, eager";
    ++want.fallbacks;
    if (m.cache.calls != 1) m.world.diverge("GraphCache::run of a key given up called the step " +
                                   std::to_string(m.cache.calls) + " times");
    expected = code_of(ran);  // the step's own result, checked call by call
  } else if (m.state(c) == CaptureState::capture && m.streams.origin() == c) {
    // The cache recorded: its end_capture gave a graph, or refused (a fallback).
    const bool into = key.has_graph && key.stale;
    CloseExpectation close = close_expectation(m);
    if (into) update = predict_update(m, key.graph);
    const bool step_ok = m.cache.calls == 2 && m.cache.step_ok;
    const bool recorded_ok = after.captures + after.updates > before.captures + before.updates;
    if (!m.degraded()) {
      const bool want_graph = step_ok && !close.code;
      if (want_graph != recorded_ok && !(close.or_outlived && !recorded_ok)) {
        m.world.diverge("GraphCache::run: the model says the recording " +
                std::string(want_graph ? "gives a graph" : "is refused") + ", the cache " +
                (recorded_ok ? "recorded it" : "fell back"));
      }
    }
    expected = std::nullopt;
    if (recorded_ok) {
      what += into ? ": re-recorded" : ": recorded";
      ModelGraph graph = graph_of(m, Plan{});
      const bool updated = after.updates > before.updates;
      if (into) {
        ++(updated ? want.updates : want.captures);
        if (!m.degraded() && update && *update != updated) {
          m.world.diverge(std::string("GraphCache re-record: the model says ") +
                  (*update ? "update" : "re-instantiate") + ", the cache counted " +
                  (updated ? "an update" : "a capture"));
        }
        if (updated) graph.source_count = key.graph.source_count;
        what += updated ? " (updated)" : " (re-instantiated)";
      } else {
        ++want.captures;
      }
      if (const Graph* cached = m.cache.cache->graph(k); cached != nullptr) {
        check_shared_bytes(m, cached->report(), shared_bytes(m), "GraphCache's graph");
      }
      close_recording(m, std::nullopt);
      if (into && updated) ++m.streams[c].seq;  // the old pins, stamped once it closed
      key.graph = std::move(graph);
      key.has_graph = true;
      key.stale = false;
      key.refusals = 0;
      // Least recently used graphs go, over the count.
      while (m.cache.options.max_graphs != 0 && cache_graphs(m) > m.cache.options.max_graphs) {
        int victim = -1;
        for (int other = 0; other < kKeys; ++other) {
          if (other == k || !m.cache.keys[other].has_graph) continue;
          if (victim < 0 || m.cache.keys[other].last_use < m.cache.keys[victim].last_use) victim = other;
        }
        if (victim < 0) break;
        evicted(m.cache.keys[victim]);
        ++want.evictions;
        m.log() << "  evicts key " << victim << "\n";
      }
    } else {
      what += ": recording refused, fell back";
      if (close_cache_refusal(m)) what += " (a kept buffer was lent)";
      ++want.fallbacks;
      refused_key(m, key);
    }
  } else if (m.cache.rerun) {
    // Refused at its close, then the step ran again, eagerly: its result is the run's.
    what += ": recording refused at its close, the step ran again";
    if (m.cache.calls != 3) m.world.diverge("GraphCache::run re-ran a refused key's step, calling it " +
                                   std::to_string(m.cache.calls) + " times in all");
    ++want.fallbacks;
    refused_key(m, key);
    expected = code_of(ran);
  } else if (m.state(c) == CaptureState::prepare && m.cache.prepared) {
    // The warm-up failed (its error returned), or begin was refused (a fallback).
    close_window(m, c);
    if (m.cache.calls == 1 && m.cache.step_ok) {
      what += ": begin refused, fell back";
      ++want.fallbacks;
      refused_key(m, key);
    } else {
      what += ": the warm-up failed";
      expected = code_of(ran);
    }
  } else {
    what += ": prepare refused";  // the cache's stream has a window of its own open
    expected = Errc::graph_state;
  }
  m.expect(ran, expected, what);
  if (m.degraded()) {
    // Follow the cache: which keys hold a graph now.
    for (int other = 0; other < kKeys; ++other) {
      if (!m.cache.cache->contains(other)) {
        evicted(m.cache.keys[other]);
      } else if (m.cache.keys[other].has_graph && !m.cache.cache->recorded(other)) {
        m.cache.keys[other].has_graph = false;
      }
    }
  } else {
    const GraphCacheStats got = after;
    if (got.hits != want.hits || got.captures != want.captures || got.updates != want.updates ||
        got.fallbacks != want.fallbacks || got.evictions != want.evictions) {
      m.world.diverge("GraphCache stats: hits/captures/updates/fallbacks/evictions are " +
              std::to_string(got.hits) + "/" + std::to_string(got.captures) + "/" +
              std::to_string(got.updates) + "/" + std::to_string(got.fallbacks) + "/" +
              std::to_string(got.evictions) + ", the model says " + std::to_string(want.hits) +
              "/" + std::to_string(want.captures) + "/" + std::to_string(want.updates) + "/" +
              std::to_string(want.fallbacks) + "/" + std::to_string(want.evictions));
    }
    for (int other = 0; other < kKeys; ++other) {
      if (m.cache.keys[other].has_graph != m.cache.cache->recorded(other)) {
        m.world.diverge("GraphCache: key " + std::to_string(other) +
                (m.cache.cache->recorded(other) ? " holds" : " holds no") +
                " graph, the model says otherwise");
      }
    }
  }
  check_all(m);
}

void do_cache_invalidate(Model& m, int k) {
  m.log() << "GraphCache::invalidate(key " << k << ")\n";
  Result<void> done = m.cache.cache->invalidate(k);
  CacheKey& key = m.cache.keys[k];
  m.expect(done, key.present ? std::nullopt : std::optional<Errc>(Errc::invalid_argument),
         key.present ? "GraphCache::invalidate" : "GraphCache::invalidate of a key never run");
  if (done) {
    key.stale = true;
    key.gave_up = false;
    key.refusals = 0;
    if (m.world.chance(35)) key.variant = !key.variant;  // the step changes: another topology
  }
  check_all(m);
}

}  // namespace graphcap::testing::many_graphs
