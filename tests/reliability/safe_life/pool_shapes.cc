// Graph pools and the GraphCache: recordings into a plain or virtual-memory GraphPool whose
// intermediates a side stream reads while the origin allocates the next (each allocation of a
// recording is its own memory), graphs dropped in any order (the pool holds what the live graphs
// need, on virtual memory exactly that to the granule), GraphCache steps that allocate their
// results (a run that succeeds leaves a usable result), and evictions by count or byte budget in
// every recording order.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <graphcap/graph_cache.h>

#include <graphcap/try.h>

#include "safe_life/shapes.h"

namespace graphcap::testing::safe_life {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
// Intermediate sizes: within one granule, across granules, several granules.
constexpr std::size_t kSizes[] = {model::kBufferBytes, 64 * 1024, kMiB, 2 * kMiB, 5 * kMiB};

std::size_t size_draw(World& world) { return kSizes[world.pick(std::size(kSizes))]; }

struct Intermediate {
  CUdeviceptr begin = 0;
  std::size_t bytes = 0;
};

// What a graph needs of its pool: on virtual memory the farthest end of its intermediates from the
// base; on plain allocations their sum (each its own memory).
std::size_t need_of(const std::vector<Intermediate>& used, const GraphPoolStats& stats) {
  std::size_t need = 0;
  for (const Intermediate& i : used) {
    need = stats.virtual_memory ? std::max<std::size_t>(need, i.begin + i.bytes - stats.base) : need + i.bytes;
  }
  return need;
}

}  // namespace

void pool_fork(World& world) {
  const int reach = world.draw({pool_forks_vmm, pool_forks_plain});
  if (reach < 0) return;
  const bool virtual_memory = reach == pool_forks_vmm;
  Device& device = world.device();
  const int o = static_cast<int>(world.pick(World::kStreams));
  const auto [s1, s2] = others(world, o);
  (void)s2;
  Stream& s = world.stream(o);
  Result<GraphPool> made = device.create_graph_pool(s, GraphPoolOptions{.virtual_memory = virtual_memory});
  if (!ok(world, made, "create_graph_pool")) return;
  GraphPool pool = std::move(*made);
  struct Recorded {
    Graph graph;
    std::vector<Intermediate> used;
  };
  std::vector<Recorded> graphs;
  const int recordings = 1 + static_cast<int>(world.pick(3));
  world.log() << "pool (" << (pool.stats().virtual_memory ? "virtual memory" : "plain") << ") on stream " << o
              << ": " << recordings << " forked recordings, side stream " << s1 << "\n";
  auto check_pool = [&](const std::string& what) {
    std::size_t need = 0;
    for (const Recorded& r : graphs) need = std::max(need, need_of(r.used, pool.stats()));
    world.check_pool(pool, need, what);
  };
  for (int r = 0; r < recordings && !world.diverged(); ++r) {
    const int r0 = world.known_of(o), r1 = world.known_of(s1);
    if (world.diverged()) return;
    const std::size_t a = size_draw(world), b = size_draw(world);
    const std::uint32_t v = world.value(), u = world.value();
    world.log() << "  recording " << r << ": intermediates of " << a << " and " << b << " B\n";
    std::vector<Intermediate> used;
    bool refused = false;
    // The plan: the origin fills an intermediate, the side stream reads it; the origin drops it,
    // allocates a second and writes it while the side may still read the first; joined at the end.
    auto plan = [&](bool recorded) -> bool {
      const std::string when = recorded ? " (recorded)" : " (warm-up)";
      Result<Buffer> first = device.alloc(a, s);
      if (recorded && !first && first.error().code() == Errc::out_of_memory) {
        refused = true;  // the pool may not serve it (it dooms the recording): aborted below
        world.note(first, "pool: the recording's first allocation");
        return true;
      }
      if (!ok(world, first, "pool: first allocation" + when)) return false;
      if (recorded) {
        world.recorded_allocation(*first, -1);
        used.push_back({first->native_handle(), first->size()});
      }
      if (!ok(world, world.fill(s, *first, v), "pool: origin fills the first" + when)) return false;
      if (!ok(world, device.record_event(world.event(0), s), "pool: fork record" + when)) {
        return false;
      }
      if (!ok(world, device.wait(world.stream(s1), world.event(0)), "pool: fork wait" + when)) return false;
      if (recorded) world.expected_state(s1) = CaptureState::capture;
      if (!ok(world, world.add_one(world.stream(s1), *first, world.buf(r1).handle), "pool: side reads the first" + when)) return false;
      *first = Buffer{};  // dropped by the origin while the side's read is not joined back
      Result<Buffer> second = device.alloc(b, s);
      if (recorded && !second && second.error().code() == Errc::out_of_memory) {
        refused = true;  // the pool may not serve it (it dooms the recording): aborted below
        world.note(second, "pool: the recording's second allocation");
        return true;
      }
      if (!ok(world, second, "pool: second allocation" + when)) return false;
      if (recorded) {
        world.recorded_allocation(*second, -1);
        used.push_back({second->native_handle(), second->size()});
        world.check();  // the two intermediates must not overlap: the side may still read the first
      }
      if (!ok(world, world.fill(s, *second, u), "pool: origin fills the second" + when)) return false;
      if (!ok(world, world.copy(s, *second, world.buf(r0).handle), "pool: origin copies the second out" + when)) return false;
      if (!ok(world, device.record_event(world.event(1), world.stream(s1)),
              "pool: join record" + when)) {
        return false;
      }
      return ok(world, device.wait(s, world.event(1)), "pool: join wait" + when);
    };
    CaptureOptions into_pool;
    into_pool.pool = &pool;
    if (!ok(world, device.prepare_capture(s, into_pool), "prepare_capture (pool)")) return;
    world.expected_state(o) = CaptureState::prepare;
    if (!plan(false)) return;
    world.buf(r1).fill(v + 1);
    world.buf(r0).fill(u);
    if (!ok(world, device.begin_capture(s), "begin_capture (pool)")) return;
    world.expected_state(o) = CaptureState::capture;
    if (!plan(true)) return;
    Result<Graph> graph = refused ? Result<Graph>(Error(Errc::doomed, "")) : device.end_capture(s);
    if (refused) world.note(device.abort_capture(s), "pool: abort after a refused allocation");
    world.expect_all_idle();
    world.recording_closed();
    if (refused) {
      world.buf(r0).forget();
      world.buf(r1).forget();
      world.check();
      continue;
    }
    if (!ok(world, graph, "pool: end_capture of a forked recording")) return;
    graphs.push_back({std::move(*graph), std::move(used)});
    check_pool("pool after recording " + std::to_string(r));
    if (!ok(world, graphs.back().graph.replay(), "pool: replay")) return;
    world.check();
  }
  // The graphs go in any order; the pool gives back what the rest no longer need.
  while (!graphs.empty() && !world.diverged()) {
    const std::size_t g = world.pick(graphs.size());
    ok(world, graphs[g].graph.destroy(), "pool: destroy a graph");
    graphs.erase(graphs.begin() + static_cast<std::ptrdiff_t>(g));
    check_pool("pool after a graph went, " + std::to_string(graphs.size()) + " left");
  }
  world.check();
}

void cache_result(World& world) {
  Device& device = world.device();
  const int o = static_cast<int>(world.pick(World::kStreams));
  Stream& s = world.stream(o);
  GraphCacheOptions options;
  options.give_up_after = 1 + static_cast<unsigned>(world.pick(3));
  options.share_pool = world.chance(50);
  GraphCache<int> cache(device, s, options);
  const int fixed = world.upload(o);  // written by the key whose step allocates nothing
  if (world.diverged()) return;
  world.log() << "cache results on stream " << o << (options.share_pool ? " (shared pool)" : "") << "\n";
  std::vector<std::uint32_t> values = {world.value(), world.value(), world.value()};
  const int runs = 3 + static_cast<int>(world.pick(5));
  for (int run = 0; run < runs && !world.diverged(); ++run) {
    const int reach = world.draw({cache_steps, cache_results});
    if (reach < 0) return;
    const int key = reach == cache_steps ? 0 : 1 + static_cast<int>(world.pick(values.size() - 1));
    const bool allocates = key != 0;
    Buffer result;
    auto step = [&]() -> Result<void> {
      if (!allocates) return world.fill(s, world.buf(fixed).handle, values[0]);
      GRAPHCAP_ASSIGN_OR_RETURN(Buffer fresh, device.alloc(model::kBufferBytes, s));
      GRAPHCAP_TRY(world.fill(s, fresh, values[static_cast<std::size_t>(key)]));
      result = std::move(fresh);  // the step's result: a fresh buffer, kept after the run
      return {};
    };
    const bool replays = cache.recorded(key);
    Result<void> ran = cache.run(key, step);
    world.expect_all_idle();
    if (!ok(world, ran, std::string("GraphCache::run: a step that ") + (allocates ? "allocates its result" : "writes a kept buffer"))) return;
    if (!allocates) {
      world.buf(fixed).fill(values[0]);
    } else if (!replays) {
      // A success leaves the result the step produced usable, with the bytes it wrote.
      const int b = world.adopt(std::move(result), o);
      world.buf(b).fill(values[static_cast<std::size_t>(key)]);
      world.check();
      world.drop(b);
    }
    world.check();
  }
}

void budget_eviction(World& world) {
  const int reach = world.draw({evictions_vmm, evictions_plain});
  if (reach < 0) return;
  const bool virtual_memory = reach == evictions_vmm;
  Device& device = world.device();
  const int o = static_cast<int>(world.pick(World::kStreams));
  Stream& s = world.stream(o);
  GraphCacheOptions options;
  options.pool.virtual_memory = virtual_memory;
  const bool by_count = world.chance(50);
  if (by_count) {
    options.max_graphs = 1 + world.pick(2);
  } else {
    options.byte_budget = (1 + world.pick(8)) * kMiB;
  }
  auto cache = std::make_unique<GraphCache<int>>(device, s, options);
  struct Key {
    std::size_t bytes = 0;
    std::uint32_t value = 0;
    int out = -1;
    std::optional<Intermediate> used;  // the recorded intermediate of its graph
  };
  std::vector<Key> keys(2 + world.pick(2));
  for (Key& key : keys) {
    key.bytes = size_draw(world);
    key.value = world.value();
    key.out = world.upload(o);
  }
  if (world.diverged()) return;
  world.log() << "cache evictions on stream " << o << ", "
              << (by_count ? "max_graphs " + std::to_string(options.max_graphs)
                           : "byte_budget " + std::to_string(options.byte_budget)) << "; keys of";
  for (const Key& key : keys) world.log() << " " << key.bytes;
  world.log() << " B\n";
  auto check_pool = [&](const std::string& what) {
    if (cache->pool() == nullptr) return;
    const GraphPoolStats stats = cache->pool()->stats();
    std::size_t need = 0;
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (cache->recorded(static_cast<int>(k)) && keys[k].used) {
        need = std::max(need, need_of({*keys[k].used}, stats));
      }
    }
    world.check_pool(*cache->pool(), need, what);
  };
  const int runs = 4 + static_cast<int>(world.pick(6));
  for (int run = 0; run < runs && !world.diverged(); ++run) {
    const int k = static_cast<int>(world.pick(keys.size()));
    Key& key = keys[static_cast<std::size_t>(k)];
    std::optional<Intermediate> recorded;
    auto step = [&]() -> Result<void> {
      GRAPHCAP_ASSIGN_OR_RETURN(Buffer scratch, device.alloc(key.bytes, s));
      if (s.capture_state() == CaptureState::capture) {
        recorded = Intermediate{scratch.native_handle(), scratch.size()};
      }
      GRAPHCAP_TRY(world.fill(s, scratch, key.value));
      return world.copy(s, scratch, world.buf(key.out).handle);
    };
    Result<void> ran = cache->run(k, step);
    world.expect_all_idle();
    if (!ok(world, ran, "GraphCache::run (" + std::string(by_count ? "max_graphs" : "byte_budget") + ")")) return;
    if (recorded) key.used = recorded;
    world.buf(key.out).fill(key.value);
    world.count(std::string("GraphCache evictions: ") + (cache->stats().evictions > 0 ? "some" : "none yet"));
    // Within the count and the budget (a graph alone over the budget is kept: nothing else to go).
    std::size_t graphs = 0;
    for (std::size_t other = 0; other < keys.size(); ++other) graphs += cache->recorded(static_cast<int>(other)) ? 1 : 0;
    if (by_count && graphs > options.max_graphs) {
      world.diverge("the cache keeps " + std::to_string(graphs) + " graphs over max_graphs " +
                    std::to_string(options.max_graphs));
    }
    if (!by_count && graphs > 1 && cache->stats().bytes > options.byte_budget) {
      world.diverge("the cache keeps " + std::to_string(graphs) + " graphs of " + std::to_string(cache->stats().bytes) +
                    " B over its byte budget of " + std::to_string(options.byte_budget) + " B");
    }
    check_pool("cache pool after run " + std::to_string(run) + " (key of " + std::to_string(key.bytes) + " B)");
    world.check();
  }
  if (world.diverged()) return;
  cache->clear();
  check_pool("cache pool after clear()");
  cache.reset();
  world.check();
}

}  // namespace graphcap::testing::safe_life
