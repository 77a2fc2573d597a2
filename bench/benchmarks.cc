// The benchmarks. Every family is one side of a pair measured in the same iterations: each
// iteration runs both sides back to back, alternating which goes first, and each family reports
// its own side as its time and both sides (and their ratio) as counters. Drift of the machine
// (clocks, other tenants, the driver's internal state) therefore hits both sides of a ratio
// equally, and the ratio counters of e.g. ReplayHost and RawGraphLaunch agree.
//
// Timing is manual (UseManualTime): steady_clock around exactly the calls being compared; stream
// syncs, checks and clean-up between batches fall outside it. Iteration counts are fixed per node
// count (so a 1000-node pass on a GPU cannot make a run last minutes); --scale multiplies them.
//
// ReplayHost/n, RawGraphLaunch/n: the host time of one call. One side is Graph::replay(), the
// other DriverApi::cuGraphLaunch on the same CUgraphExec and stream (both through the same
// DriverApi object). A batch of K calls (K = 32, or 8 at 1000 nodes, small enough never to fill
// the launch queue) is timed as a whole, then the stream is synced untimed; time per call =
// batch time / K. Counters: graphcap_ns and raw_ns (medians of the per-batch means), ratio,
// over_raw_ns, us_per_node, and two probes run once outside the timing: drv_calls (driver calls
// one replay makes; 1 is ideal) and extra_allocs (heap allocations one replay makes beyond what
// the raw call makes; 0 is ideal).
//
// ReplayHostSingle/n, RawGraphLaunchSingle/n: the same with K = 1: one call timed alone right
// after a sync, the way docs/cuda-driver-facts.md ("Costs on the H200") took its figures. Each
// call starts with the caches the sync left (on the fake, the sync also ran n nodes: colder
// still), and the time includes one steady_clock::now() pair on both sides.
//
// EagerPass/n, ReplayPass/n: wall time of one pass including its device work: n Device::launch
// of `empty` then Device::sync, against Graph::replay() then Device::sync. Counters: eager_us,
// replay_us (medians), speedup, us_per_node, and launch_allocs (heap allocations one
// Device::launch makes beyond a raw cuLaunchKernel, probed once outside the timing).
//
// CaptureCost/n, RawCapture/n: graphcap: prepare_capture + warm-up (n Device::launch) + then,
// after an untimed sync that drains the warm-up's device work, begin_capture + n launches +
// end_capture (which instantiates and uploads). Raw: after the same untimed eager pass and sync
// (n raw launches; BenchEnv::raw_eager_pass), cuStreamBeginCapture + n cuLaunchKernel +
// cuStreamEndCapture + cuGraphInstantiateWithFlags + cuGraphUpload + cuGraphDestroy. Destroying
// the executables (graphcap: Graph::destroy; raw: sync + cuGraphExecDestroy) is untimed on both
// sides. Counters: incl_us (graphcap with warm-up), excl_us (begin..end only), warmup_us,
// raw_us, ratio_incl, ratio_excl.
//
// ArgsPass/n, RawArgsPass/n: n eager launches of `values` (three scalar arguments, 4/8/4 bytes)
// then a sync: Device::launch, which checks the arguments against the kernel's signature,
// against raw cuLaunchKernel with the same parameters. Counters: args_us,
// raw_args_us, args_vs_raw, us_per_node, launch_allocs.
// CaptureOwn/n: graphcap's own host work in begin..end (instantiate and upload included), in
// situ: each side less the time inside its driver calls, graphcap's less raw's, per launch.
// Counters: own_ns, driver_us, raw_driver_us.
// LaunchOwn/n: graphcap's own host work in one eager Device::launch, hot (the driver's launch
// swallowed, less the same swallowed calls made raw) and in situ (a real pass less the time
// inside the driver, less the same of raw launches). Counters per launch: hot_own_ns,
// hot_own_args_ns (`values`), situ_own_ns, driver_ns.
// ForkedReplay/n, SerialReplay/n: wall time of one replay + sync of a step made of a 16 MiB
// device-to-device copy (Device::copy) and n launches of `empty`. Forked: recorded with the copy
// on a side stream forked from the recording stream and joined back (copy beside compute, issue
// 12); serial: the same work recorded on one stream. Counters: forked_us, serial_us (medians),
// speedup (serial / forked). To be measured on the H200 (on the fake both sides run serially).
#include "benchmarks.h"

#include <graphcap/graph_cache.h>
#include <graphcap/try.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "alloc_counter.h"
#include "bench_env.h"
#include "bench_timing.h"

namespace graphcap::bench {
namespace {

constexpr int kNodeCounts[] = {1, 10, 100, 1000, 10000};

std::string driver_failure(const char* entry_point, CUresult result) {
  return Error::from_driver(entry_point, result).message();
}

// ---- ReplayHost / RawGraphLaunch ---------------------------------------------------------------

int replay_batch(int nodes) { return nodes >= 1000 ? 8 : 32; }
int single_call(int) { return 1; }

// At 10,000 nodes (the growth goal's size) each sync runs the whole graph: fewer calls.
std::int64_t replay_calls(int nodes) {
  return nodes <= 10 ? 8192 : nodes <= 100 ? 2048 : nodes <= 1000 ? 512 : 128;
}
std::int64_t single_calls(int nodes) { return nodes <= 100 ? 2048 : nodes <= 1000 ? 512 : 128; }

// graphcap's side is `replay` (Graph::replay, or a GraphCache hit), timed against raw
// cuGraphLaunch of the same n-node graph.
template <class Replay, class Raw>
void replay_vs_raw_with(benchmark::State& state, BenchEnv& env, bool graphcap_is_primary,
                        int batch, Replay&& replay, Raw&& raw);

void replay_vs_raw(benchmark::State& state, BenchEnv& env, bool graphcap_is_primary, int batch) {
  const int n = static_cast<int>(state.range(0));
  Result<CapturedGraph*> captured = env.graph(n);
  if (!captured) return skip(state, captured.error());
  Graph& graph = (*captured)->graph;
  const CUgraphExec exec = (*captured)->exec;
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  replay_vs_raw_with(
      state, env, graphcap_is_primary, batch, [&graph] { return graph.replay(); },
      [&] { return driver.cuGraphLaunch(exec, stream); });
}

// ---- CacheHit / RawGraphLaunchForCache: a GraphCache hit (lookup + LRU touch + replay) -------
// (CacheHitSingle / RawGraphLaunchForCacheSingle: the same, one call between syncs.)

void cache_hit_vs_raw(benchmark::State& state, BenchEnv& env, bool graphcap_is_primary,
                      int batch) {
  const int n = static_cast<int>(state.range(0));
  Result<CapturedGraph*> captured = env.graph(n);
  if (!captured) return skip(state, captured.error());
  GraphCache<int> cache(env.device(), env.stream());
  auto step = [&]() -> Result<void> {
    for (int i = 0; i < n; ++i) {
      if (Result<void> launched = env.launch_empty(); !launched) return launched;
    }
    return {};
  };
  for (int key = 0; key < 8; ++key) {  // a cache of 8 buckets, as a server would hold
    if (Result<void> recorded = cache.run(key, step); !recorded) {
      return skip(state, recorded.error());
    }
  }
  if (cache.stats().captures != 8) return skip(state, "the cache did not record its 8 keys");
  // The raw side launches the cache's own 8 executables in the same rotation: the difference is
  // the cache's lookup and bookkeeping alone.
  std::array<CUgraphExec, 8> execs{};
  for (int k = 0; k < 8; ++k) execs[k] = cache.graph(k)->native_handle();
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  int key = 0;
  int raw_key = 0;
  replay_vs_raw_with(
      state, env, graphcap_is_primary, batch,
      [&] {
        key = (key + 3) & 7;  // a different bucket each call: the lookup is not always the same
        return cache.run(key, step);
      },
      [&] {
        raw_key = (raw_key + 3) & 7;
        return driver.cuGraphLaunch(execs[raw_key], stream);
      });
  state.counters["cache_hits"] = static_cast<double>(cache.stats().hits);
}

template <class Replay, class Raw>
void replay_vs_raw_with(benchmark::State& state, BenchEnv& env, bool graphcap_is_primary,
                        int batch, Replay&& replay, Raw&& raw) {
  const int n = static_cast<int>(state.range(0));

  // Probes, untimed: what one call costs in driver calls and heap allocations.
  constexpr int kProbe = 16;
  std::uint64_t replay_allocs = 0;
  std::uint64_t raw_allocs = 0;
  std::size_t replay_driver_calls = 0;
  {
    if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());
    const std::size_t calls_before = env.observer().calls();
    const std::uint64_t allocs_before = allocations_on_this_thread();
    for (int i = 0; i < kProbe; ++i) {
      if (Result<void> replayed = replay(); !replayed) return skip(state, replayed.error());
    }
    replay_allocs = allocations_on_this_thread() - allocs_before;
    replay_driver_calls = env.observer().calls() - calls_before;
    if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());
    const std::uint64_t raw_before = allocations_on_this_thread();
    for (int i = 0; i < kProbe; ++i) {
      if (CUresult r = raw(); r != CUDA_SUCCESS) {
        return skip(state, driver_failure("cuGraphLaunch", r));
      }
    }
    raw_allocs = allocations_on_this_thread() - raw_before;
    if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());
  }

  std::vector<double> graphcap_ns;
  std::vector<double> raw_ns;
  const auto batches = static_cast<std::size_t>(state.max_iterations / batch + 1);
  graphcap_ns.reserve(batches);
  raw_ns.reserve(batches);
  bool graphcap_first = true;
  while (state.KeepRunningBatch(batch)) {
    double graphcap_batch = 0;
    double raw_batch = 0;
    bool failed = false;
    CUresult raw_result = CUDA_SUCCESS;
    for (int side = 0; side < 2; ++side) {
      if ((side == 0) == graphcap_first) {
        const Clock::time_point start = Clock::now();
        for (int i = 0; i < batch; ++i) {
          if (!replay()) failed = true;
        }
        graphcap_batch = ns_between(start, Clock::now());
      } else {
        const Clock::time_point start = Clock::now();
        for (int i = 0; i < batch; ++i) {
          if (CUresult r = raw(); r != CUDA_SUCCESS) raw_result = r;
        }
        raw_batch = ns_between(start, Clock::now());
      }
      if (Result<void> synced = env.sync(); !synced) {
        skip(state, synced.error());
        break;
      }
    }
    if (state.error_occurred()) break;
    graphcap_first = !graphcap_first;
    if (failed) {
      skip(state, "Graph::replay failed in the timed loop");
      break;
    }
    if (raw_result != CUDA_SUCCESS) {
      skip(state, driver_failure("cuGraphLaunch", raw_result));
      break;
    }
    state.SetIterationTime((graphcap_is_primary ? graphcap_batch : raw_batch) * 1e-9);
    graphcap_ns.push_back(graphcap_batch / batch);
    raw_ns.push_back(raw_batch / batch);
  }
  if (state.error_occurred()) return;

  const double graphcap_median = median(graphcap_ns);
  const double raw_median = median(raw_ns);
  const double primary = graphcap_is_primary ? graphcap_median : raw_median;
  state.SetItemsProcessed(state.iterations());
  state.counters["nodes"] = n;
  state.counters["graphcap_ns"] = graphcap_median;
  state.counters["raw_ns"] = raw_median;
  state.counters["ratio"] = raw_median > 0 ? graphcap_median / raw_median : 0.0;
  state.counters["over_raw_ns"] = graphcap_median - raw_median;
  state.counters["us_per_node"] = primary / 1000.0 / n;
  state.counters["batch"] = batch;
  state.counters["drv_calls"] = static_cast<double>(replay_driver_calls) / kProbe;
  state.counters["extra_allocs"] =
      (static_cast<double>(replay_allocs) - static_cast<double>(raw_allocs)) / kProbe;
}

// ---- EagerPass / ReplayPass --------------------------------------------------------------------

std::int64_t pass_iterations(int nodes) { return std::max<std::int64_t>(50, 20000 / nodes); }

void eager_vs_replay(benchmark::State& state, BenchEnv& env, bool eager_is_primary, int) {
  const int n = static_cast<int>(state.range(0));
  Result<CapturedGraph*> captured = env.graph(n);
  if (!captured) return skip(state, captured.error());
  Graph& graph = (*captured)->graph;
  if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());

  // Probe, untimed: heap allocations of one Device::launch beyond a raw cuLaunchKernel's.
  constexpr int kProbe = 16;
  const std::uint64_t launch_before = allocations_on_this_thread();
  for (int i = 0; i < kProbe; ++i) {
    if (Result<void> launched = env.launch_empty(); !launched) {
      return skip(state, launched.error());
    }
  }
  const std::uint64_t launch_allocs = allocations_on_this_thread() - launch_before;
  const std::uint64_t raw_before = allocations_on_this_thread();
  for (int i = 0; i < kProbe; ++i) {
    if (CUresult r = env.raw_launch_empty(); r != CUDA_SUCCESS) {
      return skip(state, driver_failure("cuLaunchKernel", r));
    }
  }
  const std::uint64_t raw_allocs = allocations_on_this_thread() - raw_before;
  if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());

  // Three sides per iteration, in a rotating order so drift hits each equally: the pass through
  // Device::launch, the same n launches through raw cuLaunchKernel (the hardware's own eager cost,
  // which bounds any eager-vs-replay ratio), and one replay.
  std::vector<double> eager_ns;
  std::vector<double> raw_eager_ns;
  std::vector<double> replay_ns;
  eager_ns.reserve(static_cast<std::size_t>(state.max_iterations));
  raw_eager_ns.reserve(static_cast<std::size_t>(state.max_iterations));
  replay_ns.reserve(static_cast<std::size_t>(state.max_iterations));
  int rotation = 0;
  for (auto _ : state) {
    double eager = 0;
    double raw_eager = 0;
    double replayed = 0;
    for (int step = 0; step < 3; ++step) {
      const int side = (step + rotation) % 3;
      Result<void> outcome;
      const Clock::time_point start = Clock::now();
      if (side == 0) {
        for (int i = 0; i < n && outcome; ++i) outcome = env.launch_empty();
      } else if (side == 1) {
        for (int i = 0; i < n && outcome; ++i) {
          if (CUresult r = env.raw_launch_empty(); r != CUDA_SUCCESS) {
            outcome = Error::from_driver("cuLaunchKernel", r);
          }
        }
      } else {
        outcome = graph.replay();
      }
      if (outcome) outcome = env.sync();
      const double elapsed = ns_between(start, Clock::now());
      (side == 0 ? eager : side == 1 ? raw_eager : replayed) = elapsed;
      if (!outcome) {
        skip(state, outcome.error());
        break;
      }
    }
    if (state.error_occurred()) break;
    rotation = (rotation + 1) % 3;
    state.SetIterationTime((eager_is_primary ? eager : replayed) * 1e-9);
    eager_ns.push_back(eager);
    raw_eager_ns.push_back(raw_eager);
    replay_ns.push_back(replayed);
  }
  if (state.error_occurred()) return;

  const double eager_median = median(eager_ns);
  const double raw_eager_median = median(raw_eager_ns);
  const double replay_median = median(replay_ns);
  state.SetItemsProcessed(state.iterations());
  state.counters["nodes"] = n;
  state.counters["eager_us"] = eager_median / 1000.0;
  state.counters["raw_eager_us"] = raw_eager_median / 1000.0;
  state.counters["replay_us"] = replay_median / 1000.0;
  state.counters["speedup"] = replay_median > 0 ? eager_median / replay_median : 0.0;
  state.counters["raw_speedup"] = replay_median > 0 ? raw_eager_median / replay_median : 0.0;
  state.counters["eager_vs_raw"] = raw_eager_median > 0 ? eager_median / raw_eager_median : 0.0;
  state.counters["us_per_node"] = (eager_is_primary ? eager_median : replay_median) / 1000.0 / n;
  state.counters["launch_allocs"] =
      (static_cast<double>(launch_allocs) - static_cast<double>(raw_allocs)) / kProbe;
}

// ---- LaunchOwn -------------------------------------------------------------------------------

// graphcap's own host work in one eager Device::launch, two ways (the growth table's eager row):
//   hot:     n launches with the driver's cuLaunchKernel swallowed (ObservingDriver answers
//            CUDA_SUCCESS at once), less the same n swallowed calls made raw: graphcap's checks,
//            stream lock and bookkeeping with everything in the CPU's caches. Also with the three
//            scalar arguments of `values` (each checked against the kernel's signature).
//   in situ: a real eager pass of n launches with the time inside the driver summed
//            (time_driver_calls), less the same for raw launches: graphcap's own work between
//            real driver launches, which evict its state from the caches.
// Counters per launch: hot_own_ns, hot_own_args_ns, situ_own_ns, driver_ns (the raw launch).
void launch_own(benchmark::State& state, BenchEnv& env, bool, int) {
  const int n = static_cast<int>(state.range(0));
  if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());
  auto graphcap_pass = [&](bool values) -> Result<void> {
    for (int i = 0; i < n; ++i) {
      if (Result<void> r = values ? env.launch_values() : env.launch_empty(); !r) return r;
    }
    return {};
  };
  auto raw_pass = [&](bool values) -> Result<void> {
    for (int i = 0; i < n; ++i) {
      if (CUresult r = values ? env.raw_launch_values() : env.raw_launch_empty();
          r != CUDA_SUCCESS) {
        return Error::from_driver("cuLaunchKernel", r);
      }
    }
    return {};
  };
  // A side's wall time, and the time inside the driver when `timed`.
  struct Side {
    double total = 0;
    double inside = 0;
  };
  auto run = [&](bool graphcap, bool values, bool swallowed, Side& side) -> Result<void> {
    env.swallow_launches(swallowed);
    env.time_driver_calls(!swallowed);
    const double inside_before = env.observer().driver_ns();
    const Clock::time_point start = Clock::now();
    Result<void> outcome = graphcap ? graphcap_pass(values) : raw_pass(values);
    side.total = ns_between(start, Clock::now());
    side.inside = env.observer().driver_ns() - inside_before;
    env.time_driver_calls(false);
    env.swallow_launches(false);
    if (outcome && !swallowed) outcome = env.sync();
    return outcome;
  };
  std::vector<double> hot, hot_args, situ, driver;
  int rotation = 0;
  for (auto _ : state) {
    Side sides[6];  // graphcap/raw x hot/hot-args/in-situ
    for (int step = 0; step < 6; ++step) {
      const int k = (step + rotation) % 6;
      const bool graphcap = k % 2 == 0;
      const int kind = k / 2;  // 0 hot, 1 hot with arguments, 2 in situ
      if (Result<void> r = run(graphcap, kind == 1, kind != 2, sides[k]); !r) {
        return skip(state, r.error());
      }
    }
    rotation = (rotation + 1) % 6;
    state.SetIterationTime((sides[4].total - sides[4].inside) * 1e-9);
    hot.push_back((sides[0].total - sides[1].total) / n);
    hot_args.push_back((sides[2].total - sides[3].total) / n);
    situ.push_back(((sides[4].total - sides[4].inside) - (sides[5].total - sides[5].inside)) / n);
    driver.push_back(sides[5].inside / n);
  }
  state.counters["nodes"] = n;
  state.counters["hot_own_ns"] = median(hot);
  state.counters["hot_own_args_ns"] = median(hot_args);
  state.counters["situ_own_ns"] = median(situ);
  state.counters["driver_ns"] = median(driver);
}

// ---- ArgsPass / RawArgsPass --------------------------------------------------------------------

// n eager launches of `values` (three scalar arguments) then a sync: through Device::launch, whose
// arguments are checked against the kernel's signature, against raw cuLaunchKernel,
// both sides in every iteration, alternating which goes first.
void args_vs_raw(benchmark::State& state, BenchEnv& env, bool graphcap_is_primary, int) {
  const int n = static_cast<int>(state.range(0));
  if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());

  constexpr int kProbe = 16;
  const std::uint64_t launch_before = allocations_on_this_thread();
  for (int i = 0; i < kProbe; ++i) {
    if (Result<void> launched = env.launch_values(); !launched) {
      return skip(state, launched.error());
    }
  }
  const std::uint64_t launch_allocs = allocations_on_this_thread() - launch_before;
  const std::uint64_t raw_before = allocations_on_this_thread();
  for (int i = 0; i < kProbe; ++i) {
    if (CUresult r = env.raw_launch_values(); r != CUDA_SUCCESS) {
      return skip(state, driver_failure("cuLaunchKernel", r));
    }
  }
  const std::uint64_t raw_allocs = allocations_on_this_thread() - raw_before;
  if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());

  std::vector<double> ours_ns;
  std::vector<double> raw_ns;
  ours_ns.reserve(static_cast<std::size_t>(state.max_iterations));
  raw_ns.reserve(static_cast<std::size_t>(state.max_iterations));
  bool graphcap_first = true;
  for (auto _ : state) {
    double ours = 0;
    double raw = 0;
    for (int step = 0; step < 2; ++step) {
      const bool graphcap_side = (step == 0) == graphcap_first;
      Result<void> outcome;
      const Clock::time_point start = Clock::now();
      if (graphcap_side) {
        for (int i = 0; i < n && outcome; ++i) outcome = env.launch_values();
      } else {
        for (int i = 0; i < n && outcome; ++i) {
          if (CUresult r = env.raw_launch_values(); r != CUDA_SUCCESS) {
            outcome = Error::from_driver("cuLaunchKernel", r);
          }
        }
      }
      if (outcome) outcome = env.sync();
      (graphcap_side ? ours : raw) = ns_between(start, Clock::now());
      if (!outcome) {
        skip(state, outcome.error());
        break;
      }
    }
    if (state.error_occurred()) break;
    graphcap_first = !graphcap_first;
    state.SetIterationTime((graphcap_is_primary ? ours : raw) * 1e-9);
    ours_ns.push_back(ours);
    raw_ns.push_back(raw);
  }
  if (state.error_occurred()) return;

  const double ours_median = median(ours_ns);
  const double raw_median = median(raw_ns);
  state.SetItemsProcessed(state.iterations());
  state.counters["nodes"] = n;
  state.counters["args_us"] = ours_median / 1000.0;
  state.counters["raw_args_us"] = raw_median / 1000.0;
  state.counters["args_vs_raw"] = raw_median > 0 ? ours_median / raw_median : 0.0;
  state.counters["us_per_node"] = (graphcap_is_primary ? ours_median : raw_median) / 1000.0 / n;
  state.counters["launch_allocs"] =
      (static_cast<double>(launch_allocs) - static_cast<double>(raw_allocs)) / kProbe;
}

// ---- CaptureCost / RawCapture ------------------------------------------------------------------

// Enough iterations that the median of a ~10%-noisy capture settles (about 1 s per family on an H200).
std::int64_t capture_iterations(int nodes) { return std::max<std::int64_t>(100, 20000 / nodes); }

struct CaptureTimes {
  double warmup_ns = 0;  // prepare_capture + warm-up
  double window_ns = 0;  // begin_capture + recorded launches + end_capture
  double inside_ns = 0;  // of window_ns, inside the driver's calls (`split` only)
};

// `split`: the time inside the driver's calls of the window is summed too (CaptureOwn; two clock
// reads a call, so CaptureCost runs without it).
Result<CaptureTimes> graphcap_capture(BenchEnv& env, int n, bool split = false) {
  Device& device = env.device();
  Stream& s = env.stream();
  CaptureTimes times;
  const Clock::time_point start = Clock::now();
  if (Result<void> r = device.prepare_capture(s); !r) return r.error();
  for (int i = 0; i < n; ++i) {
    if (Result<void> r = env.launch_empty(); !r) {
      (void)device.abort_capture(s);
      return r.error();
    }
  }
  times.warmup_ns = ns_between(start, Clock::now());
  if (Result<void> r = env.sync(); !r) {  // untimed: the warm-up's device work drains here
    (void)device.abort_capture(s);
    return r.error();
  }
  env.time_driver_calls(split);
  const double inside_before = env.observer().driver_ns();
  const Clock::time_point begin = Clock::now();
  if (Result<void> r = device.begin_capture(s); !r) {
    env.time_driver_calls(false);
    (void)device.abort_capture(s);
    return r.error();
  }
  for (int i = 0; i < n; ++i) {
    if (Result<void> r = env.launch_empty(); !r) {
      env.time_driver_calls(false);
      (void)device.abort_capture(s);
      return r.error();
    }
  }
  Result<Graph> graph = device.end_capture(s);
  times.window_ns = ns_between(begin, Clock::now());
  times.inside_ns = env.observer().driver_ns() - inside_before;
  env.time_driver_calls(false);
  if (!graph) return graph.error();
  if (graph->report().node_count != static_cast<std::size_t>(n)) {
    return Error(Errc::graph_state, "CaptureCost: the graph holds " +
                                        std::to_string(graph->report().node_count) + " nodes");
  }
  if (Result<void> r = graph->destroy(); !r) return r.error();
  return times;
}

Result<double> raw_capture(BenchEnv& env, int n, double* inside_ns = nullptr) {
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  // Untimed, as graphcap's side: begin..end follows an eager pass and a sync on both sides.
  if (CUresult r = env.raw_eager_pass(n); r != CUDA_SUCCESS) {
    return Error::from_driver("raw eager pass", r);
  }
  // The driver's calls are made through the observer (env.driver()), so they can be timed.
  env.time_driver_calls(inside_ns != nullptr);
  const double inside_before = env.observer().driver_ns();
  const Clock::time_point start = Clock::now();
  GRAPHCAP_ASSIGN_OR_RETURN(const CUresult launched, env.raw_begin_with_launches(n));
  CUgraph graph = nullptr;
  const CUresult ended = driver.cuStreamEndCapture(stream, &graph);
  CUgraphExec exec = nullptr;
  CUresult instantiated = CUDA_ERROR_INVALID_VALUE;
  CUresult uploaded = CUDA_ERROR_INVALID_VALUE;
  if (ended == CUDA_SUCCESS && graph != nullptr) {
    instantiated = driver.cuGraphInstantiateWithFlags(&exec, graph, 0);
    if (instantiated == CUDA_SUCCESS) uploaded = driver.cuGraphUpload(exec, stream);
  }
  const CUresult destroyed = graph != nullptr ? driver.cuGraphDestroy(graph) : CUDA_SUCCESS;
  const double elapsed = ns_between(start, Clock::now());
  if (inside_ns != nullptr) *inside_ns = env.observer().driver_ns() - inside_before;
  env.time_driver_calls(false);
  // Untimed clean-up: wait for the upload, free the executable.
  const CUresult synced = driver.cuStreamSynchronize(stream);
  const CUresult freed = exec != nullptr ? driver.cuGraphExecDestroy(exec) : CUDA_SUCCESS;
  if (launched != CUDA_SUCCESS) return Error::from_driver("cuLaunchKernel", launched);
  if (ended != CUDA_SUCCESS) return Error::from_driver("cuStreamEndCapture", ended);
  if (instantiated != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphInstantiateWithFlags", instantiated);
  }
  if (uploaded != CUDA_SUCCESS) return Error::from_driver("cuGraphUpload", uploaded);
  if (destroyed != CUDA_SUCCESS) return Error::from_driver("cuGraphDestroy", destroyed);
  if (synced != CUDA_SUCCESS) return Error::from_driver("cuStreamSynchronize", synced);
  if (freed != CUDA_SUCCESS) return Error::from_driver("cuGraphExecDestroy", freed);
  return elapsed;
}

void capture_vs_raw(benchmark::State& state, BenchEnv& env, bool graphcap_is_primary, int) {
  const int n = static_cast<int>(state.range(0));
  if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());
  std::vector<double> incl_ns;
  std::vector<double> excl_ns;
  std::vector<double> warmup_ns;
  std::vector<double> raw_ns;
  const auto reserve = static_cast<std::size_t>(state.max_iterations);
  incl_ns.reserve(reserve);
  excl_ns.reserve(reserve);
  warmup_ns.reserve(reserve);
  raw_ns.reserve(reserve);
  bool graphcap_first = true;
  for (auto _ : state) {
    CaptureTimes ours;
    double raw = 0;
    for (int side = 0; side < 2; ++side) {
      if ((side == 0) == graphcap_first) {
        Result<CaptureTimes> times = graphcap_capture(env, n);
        if (!times) {
          skip(state, times.error().context("CaptureCost"));
          break;
        }
        ours = *times;
      } else {
        Result<double> elapsed = raw_capture(env, n);
        if (!elapsed) {
          skip(state, elapsed.error().context("RawCapture"));
          break;
        }
        raw = *elapsed;
      }
    }
    if (state.error_occurred()) break;
    graphcap_first = !graphcap_first;
    const double incl = ours.warmup_ns + ours.window_ns;
    state.SetIterationTime((graphcap_is_primary ? incl : raw) * 1e-9);
    incl_ns.push_back(incl);
    excl_ns.push_back(ours.window_ns);
    warmup_ns.push_back(ours.warmup_ns);
    raw_ns.push_back(raw);
  }
  if (state.error_occurred()) return;

  const double incl = median(incl_ns);
  const double excl = median(excl_ns);
  const double raw = median(raw_ns);
  state.SetItemsProcessed(state.iterations());
  state.counters["nodes"] = n;
  state.counters["incl_us"] = incl / 1000.0;
  state.counters["excl_us"] = excl / 1000.0;
  state.counters["warmup_us"] = median(warmup_ns) / 1000.0;
  state.counters["raw_us"] = raw / 1000.0;
  state.counters["ratio_incl"] = raw > 0 ? incl / raw : 0.0;
  state.counters["ratio_excl"] = raw > 0 ? excl / raw : 0.0;
  state.counters["us_per_node"] = (graphcap_is_primary ? incl : raw) / 1000.0 / n;
}

// ---- registration ------------------------------------------------------------------------------

std::int64_t scaled(std::int64_t count, double scale, std::int64_t multiple_of) {
  auto value = static_cast<std::int64_t>(std::llround(static_cast<double>(count) * scale));
  value = std::max(value, multiple_of);
  return value / multiple_of * multiple_of;  // KeepRunningBatch never overshoots
}

// ---- CaptureOwn ------------------------------------------------------------------------------

// graphcap's own host work in a capture (begin..end with instantiate and upload), in situ: each
// side's window less the time inside its driver calls, graphcap's less raw's, per recorded launch
// (the growth table's capture row). Counters: own_ns (per launch), driver_us and raw_driver_us
// (inside the driver, graphcap's and raw's), and where the driver's time goes on each side:
// launch_us / raw_launch_us (the n cuLaunchKernel), inst_us (cuGraphInstantiateWithParams) /
// raw_inst_us (...WithFlags), upload_us / raw_upload_us, meminfo_us (cuMemGetInfo: graphcap's
// measure of the driver's memory for a large executable), other_us / raw_other_us.
void capture_own(benchmark::State& state, BenchEnv& env, bool, int) {
  using Entry = CountingDriver::Entry;
  const int n = static_cast<int>(state.range(0));
  if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());
  std::vector<double> own, inside, raw_inside;
  std::map<std::string, std::vector<double>> parts;
  // The time inside one entry point since `before`.
  auto part = [&](const CountingDriver::EntryTimes& before, Entry entry) {
    return env.observer().entry_ns()[entry] - before[entry];
  };
  bool graphcap_first = true;
  for (auto _ : state) {
    CaptureTimes ours;
    double raw = 0;
    double raw_in = 0;
    for (int side = 0; side < 2; ++side) {
      const CountingDriver::EntryTimes before = env.observer().entry_ns();
      const bool graphcap = (side == 0) == graphcap_first;
      if (graphcap) {
        Result<CaptureTimes> times = graphcap_capture(env, n, /*split=*/true);
        if (!times) return skip(state, times.error().context("CaptureOwn"));
        ours = *times;
      } else {
        Result<double> elapsed = raw_capture(env, n, &raw_in);
        if (!elapsed) return skip(state, elapsed.error().context("CaptureOwn raw"));
        raw = *elapsed;
      }
      const std::string p = graphcap ? "" : "raw_";
      const double launch = part(before, CountingDriver::k_cuLaunchKernel);
      const double inst = part(before, CountingDriver::k_cuGraphInstantiateWithParams) +
                          part(before, CountingDriver::k_cuGraphInstantiateWithFlags);
      const double upload = part(before, CountingDriver::k_cuGraphUpload);
      const double meminfo = part(before, CountingDriver::k_cuMemGetInfo);
      const double total = graphcap ? ours.inside_ns : raw_in;
      parts[p + "launch_us"].push_back(launch);
      parts[p + "inst_us"].push_back(inst);
      parts[p + "upload_us"].push_back(upload);
      if (graphcap) parts["meminfo_us"].push_back(meminfo);
      parts[p + "other_us"].push_back(total - launch - inst - upload - meminfo);
    }
    graphcap_first = !graphcap_first;
    state.SetIterationTime((ours.window_ns - ours.inside_ns) * 1e-9);
    own.push_back(((ours.window_ns - ours.inside_ns) - (raw - raw_in)) / n);
    inside.push_back(ours.inside_ns);
    raw_inside.push_back(raw_in);
  }
  state.counters["nodes"] = n;
  state.counters["own_ns"] = median(own);
  state.counters["driver_us"] = median(inside) / 1000.0;
  state.counters["raw_driver_us"] = median(raw_inside) / 1000.0;
  for (auto& [name, values] : parts) state.counters[name] = median(values) / 1000.0;
}

// ---- ForkedReplay / SerialReplay ---------------------------------------------------------------

constexpr std::size_t kForkCopyBytes = std::size_t{16} << 20;

// The step recorded on one stream, or with the copy forked onto `side` and joined back.
Result<Graph> record_copy_beside_compute(BenchEnv& env, Stream& side, const Buffer& src,
                                         const Buffer& dst, int n, bool forked) {
  Device& device = env.device();
  Stream& s = env.stream();
  Result<void> ok = device.prepare_capture(s);
  if (ok) ok = device.copy(dst, src, s);  // the warm-up, eagerly on the recording stream
  for (int i = 0; i < n && ok; ++i) ok = env.launch_empty();
  if (!ok) return ok.error();
  Result<Event> fork = device.create_event();
  if (!fork) return fork.error();
  Result<Event> join = device.create_event();
  if (!join) return join.error();
  CaptureScope scope(device, s);
  ok = scope.began();
  if (ok && forked) {
    ok = device.record_event(*fork, s);
    if (ok) ok = device.wait(side, *fork);
    if (ok) ok = device.copy(dst, src, side);
  } else if (ok) {
    ok = device.copy(dst, src, s);
  }
  for (int i = 0; i < n && ok; ++i) ok = env.launch_empty();
  if (ok && forked) {
    ok = device.record_event(*join, side);
    if (ok) ok = device.wait(s, *join);
  }
  if (!ok) return ok.error();  // the scope aborts the recording
  return scope.end();
}

void forked_vs_serial(benchmark::State& state, BenchEnv& env, bool forked_is_primary, int) {
  const int n = static_cast<int>(state.range(0));
  static Stream* side = nullptr;  // one side stream for every run (the device owns it)
  if (side == nullptr) {
    Result<Stream*> created = env.device().create_stream();
    if (!created) return skip(state, created.error());
    side = *created;
  }
  Result<Buffer> src = env.device().alloc(kForkCopyBytes, env.stream());
  if (!src) return skip(state, src.error());
  Result<Buffer> dst = env.device().alloc(kForkCopyBytes, env.stream());
  if (!dst) return skip(state, dst.error());
  if (Result<void> filled = env.device().fill(*src, std::uint8_t{1}, env.stream()); !filled) {
    return skip(state, filled.error());
  }
  Result<Graph> forked = record_copy_beside_compute(env, *side, *src, *dst, n, true);
  if (!forked) return skip(state, forked.error());
  Result<Graph> serial = record_copy_beside_compute(env, *side, *src, *dst, n, false);
  if (!serial) return skip(state, serial.error());
  if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());

  std::vector<double> forked_ns;
  std::vector<double> serial_ns;
  int rotation = 0;
  for (auto _ : state) {
    double times[2] = {0, 0};
    for (int step = 0; step < 2; ++step) {
      const int side_index = (step + rotation) % 2;
      Graph& graph = side_index == 0 ? *forked : *serial;
      const Clock::time_point start = Clock::now();
      Result<void> outcome = graph.replay();
      if (outcome) outcome = env.sync();
      times[side_index] = ns_between(start, Clock::now());
      if (!outcome) {
        skip(state, outcome.error());
        break;
      }
    }
    if (state.error_occurred()) break;
    rotation ^= 1;
    state.SetIterationTime((forked_is_primary ? times[0] : times[1]) * 1e-9);
    forked_ns.push_back(times[0]);
    serial_ns.push_back(times[1]);
  }
  const double forked_us = median(forked_ns) / 1000.0;
  const double serial_us = median(serial_ns) / 1000.0;
  state.counters["forked_us"] = forked_us;
  state.counters["serial_us"] = serial_us;
  state.counters["speedup"] = forked_us > 0 ? serial_us / forked_us : 0.0;
}

std::int64_t fork_iterations(int nodes) { return nodes <= 100 ? 200 : 50; }

using PairFunction = void (*)(benchmark::State&, BenchEnv&, bool, int);

void register_pair(BenchEnv& env, const BenchPlan& plan, const char* first, const char* second,
                   PairFunction function, benchmark::TimeUnit unit, int (*batch)(int),
                   std::int64_t (*iterations)(int)) {
  for (const bool first_is_primary : {true, false}) {
    const char* name = first_is_primary ? first : second;
    for (const int n : kNodeCounts) {
      const int calls = batch != nullptr ? batch(n) : 1;
      benchmark::RegisterBenchmark(
          name,
          [&env, function, first_is_primary, calls](benchmark::State& state) {
            function(state, env, first_is_primary, calls);
          })
          ->Arg(n)
          ->Iterations(scaled(iterations(n), plan.scale, calls))
          ->UseManualTime()
          ->Unit(unit);
    }
  }
}

// A family with no raw twin (its function measures both sides), at 100 and 1,000 nodes.
void register_own(BenchEnv& env, const BenchPlan& plan, const char* name, PairFunction function,
                  std::int64_t (*iterations)(int)) {
  for (const int n : {100, 1000}) {
    benchmark::RegisterBenchmark(
        name, [&env, function](benchmark::State& state) { function(state, env, true, 1); })
        ->Arg(n)
        ->Iterations(scaled(iterations(n), plan.scale, 1))
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

void register_benchmarks(BenchEnv& env, const BenchPlan& plan) {
  // First: the driver keeps destroyed executables' memory and reuses it, which would hide what the
  // graph memory families measure after anything else ran.
  register_graph_memory_benchmarks(env, plan);
  register_pair(env, plan, "ReplayHost", "RawGraphLaunch", replay_vs_raw, benchmark::kNanosecond,
                replay_batch, replay_calls);
  register_pair(env, plan, "ReplayHostSingle", "RawGraphLaunchSingle", replay_vs_raw,
                benchmark::kNanosecond, single_call, single_calls);
  register_pair(env, plan, "CacheHit", "RawGraphLaunchForCache", cache_hit_vs_raw,
                benchmark::kNanosecond, replay_batch, replay_calls);
  // One hit between syncs: the hit's host cost with the launch queue empty (at 1,000 nodes the
  // batched launches wait on the GPU, which the batched pair measures as well).
  register_pair(env, plan, "CacheHitSingle", "RawGraphLaunchForCacheSingle", cache_hit_vs_raw,
                benchmark::kNanosecond, single_call, single_calls);
  register_pair(env, plan, "EagerPass", "ReplayPass", eager_vs_replay, benchmark::kMicrosecond,
                nullptr, pass_iterations);
  register_pair(env, plan, "CaptureCost", "RawCapture", capture_vs_raw, benchmark::kMicrosecond,
                nullptr, capture_iterations);
  register_pair(env, plan, "ArgsPass", "RawArgsPass", args_vs_raw, benchmark::kMicrosecond,
                nullptr, pass_iterations);
  register_own(env, plan, "CaptureOwn", capture_own, capture_iterations);
  register_own(env, plan, "LaunchOwn", launch_own, pass_iterations);
  register_many_graphs_benchmarks(env, plan);
  register_loop_benchmarks(env, plan);
  register_branch_benchmarks(env, plan);
  register_pair(env, plan, "ForkedReplay", "SerialReplay", forked_vs_serial,
                benchmark::kMicrosecond, nullptr, fork_iterations);
  register_peer_copy_benchmarks(env, plan);
  register_growth_benchmarks(env, plan);
  register_startup_benchmarks(env, plan);
  register_race_check_benchmarks(env, plan);
}

}  // namespace graphcap::bench
