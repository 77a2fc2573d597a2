// Growth/<path>/n: how each path's cost grows with the graph, at 10, 100, 1,000 and
// 10,000 nodes. One operation per iteration, timed alone (manual time); untimed set-up and
// clean-up around it. Counters: `nodes`, `us` (median per operation), `ns_per_node`. The paths:
//
//   capture          begin_capture + n launches of `empty` + end_capture (close, census,
//                    instantiate, pin, pre-upload); a prepare + warm-up + sync before it and the
//                    graph's destroy after it are untimed. Also `instantiate_us` and `upload_us`
//                    (GraphReport's instantiate_time, upload_time of the same captures): the
//                    growth of instantiate + upload.
//   raw_capture      cuStreamBeginCapture + n cuLaunchKernel + cuStreamEndCapture +
//                    cuGraphInstantiateWithFlags + cuGraphUpload + cuGraphDestroy (the executable
//                    destroyed untimed)
//   update_close     end_capture(s, into) of a re-recording of n launches (exec update of one
//                    graph kept for the run); begin + launches untimed
//   raw_update_close cuStreamEndCapture + cuGraphExecUpdate + cuGraphDestroy
//   set              Graph::set on a graph of n launches of `sink` that all take one Param
//   dot              Graph::dot() of the n-node graph
//   replay           Graph::replay() of the n-node graph (the sync after it untimed)
//   raw_replay       cuGraphLaunch of the same executable
//   cache_hit        GraphCache<int>::run hitting the one key whose graph has n nodes
//   eager            n Device::launch of `empty` (the sync after them untimed)
//   raw_eager        n raw cuLaunchKernel
//
// Each timed operation is one non-inlined function, graphcap::bench::growth_op_<path>, so that
// callgrind can count exactly its instructions (docs/performance.md):
//   valgrind --tool=callgrind --collect-atstart=no
//       --toggle-collect='graphcap::bench::growth_op_*'
//       graphcap-bench --benchmark_filter='^Growth/capture/1000$' --benchmark_repetitions=1
// (one command line)
// The program total is then the instructions of the timed operations alone.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <graphcap/graph_cache.h>

#include "bench_env.h"
#include "bench_timing.h"
#include "benchmarks.h"

namespace graphcap::bench {

namespace {

// n launches of `empty` on the bench stream.
Result<void> launches(BenchEnv& env, int n) {
  for (int i = 0; i < n; ++i) {
    if (Result<void> r = env.launch_empty(); !r) return r;
  }
  return {};
}

// The bodies of the timed operations, also used untimed for set-up (outside growth_op_*, so
// callgrind does not count the set-up).
Result<Graph> capture_window(BenchEnv& env, int n) {
  Device& device = env.device();
  Stream& s = env.stream();
  if (Result<void> r = device.begin_capture(s); !r) return r.error();
  if (Result<void> r = launches(env, n); !r) {
    (void)device.abort_capture(s);
    return r.error();
  }
  return device.end_capture(s);
}

CUresult raw_capture_window(BenchEnv& env, int n, CUgraphExec* exec) {
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  if (CUresult r = driver.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
      r != CUDA_SUCCESS) {
    return r;
  }
  CUresult launched = CUDA_SUCCESS;
  for (int i = 0; i < n; ++i) {
    if (CUresult r = env.raw_launch_empty(); r != CUDA_SUCCESS) launched = r;
  }
  CUgraph graph = nullptr;
  CUresult result = driver.cuStreamEndCapture(stream, &graph);
  if (result == CUDA_SUCCESS) result = launched;
  if (result == CUDA_SUCCESS) result = driver.cuGraphInstantiateWithFlags(exec, graph, 0);
  if (result == CUDA_SUCCESS) result = driver.cuGraphUpload(*exec, stream);
  if (graph != nullptr) (void)driver.cuGraphDestroy(graph);
  return result;
}

}  // namespace

// The timed operations (external linkage and noinline: stable names for callgrind).
[[gnu::noinline]] Result<Graph> growth_op_capture(BenchEnv& env, int n) {
  return capture_window(env, n);
}

[[gnu::noinline]] CUresult growth_op_raw_capture(BenchEnv& env, int n, CUgraphExec* exec) {
  return raw_capture_window(env, n, exec);
}

[[gnu::noinline]] Result<void> growth_op_update_close(Device& device, Stream& s, Graph& into) {
  return device.end_capture(s, into);
}

[[gnu::noinline]] CUresult growth_op_raw_update_close(DriverApi& driver, CUstream stream,
                                                      CUgraphExec exec) {
  CUgraph graph = nullptr;
  CUresult result = driver.cuStreamEndCapture(stream, &graph);
  CUgraphExecUpdateResultInfo info{};
  if (result == CUDA_SUCCESS) result = driver.cuGraphExecUpdate(exec, graph, &info);
  if (graph != nullptr) (void)driver.cuGraphDestroy(graph);
  return result;
}

[[gnu::noinline]] Result<void> growth_op_set(Graph& graph, const Param<std::uint32_t>& param,
                                             std::uint32_t value) {
  return graph.set(param, value);
}

[[gnu::noinline]] std::size_t growth_op_dot(const Graph& graph) { return graph.dot().size(); }

[[gnu::noinline]] Result<void> growth_op_replay(Graph& graph) { return graph.replay(); }

[[gnu::noinline]] CUresult growth_op_raw_replay(DriverApi& driver, CUgraphExec exec,
                                                CUstream stream) {
  return driver.cuGraphLaunch(exec, stream);
}

template <class Step>
[[gnu::noinline]] Result<void> growth_op_cache_hit(GraphCache<int>& cache, Step& step) {
  return cache.run(1, step);
}

[[gnu::noinline]] Result<void> growth_op_eager(BenchEnv& env, int n) { return launches(env, n); }

[[gnu::noinline]] CUresult growth_op_raw_eager(BenchEnv& env, int n) {
  for (int i = 0; i < n; ++i) {
    if (CUresult r = env.raw_launch_empty(); r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

namespace {

constexpr int kGrowthCounts[] = {10, 100, 1000, 10000};

void skip_driver(benchmark::State& state, const char* entry_point, CUresult result) {
  skip(state, Error::from_driver(entry_point, result));
}

void report(benchmark::State& state, int n, const std::vector<double>& ns) {
  const double us = median(ns) / 1000.0;
  state.counters["nodes"] = n;
  state.counters["us"] = us;
  state.counters["ns_per_node"] = us * 1000.0 / n;
}

// prepare_capture + an eager warm-up of n launches + a sync: what precedes a timed begin.
Result<void> warm_up(BenchEnv& env, int n) {
  Device& device = env.device();
  Stream& s = env.stream();
  if (Result<void> r = device.prepare_capture(s); !r) return r.error();
  if (Result<void> r = launches(env, n); !r) {
    (void)device.abort_capture(s);
    return r.error();
  }
  if (Result<void> r = env.sync(); !r) {
    (void)device.abort_capture(s);
    return r.error();
  }
  return {};
}

// Times `op` alone each iteration, then runs `settle` untimed (a sync, or nothing), and reports
// the median per node; a failure of either skips the benchmark with its error.
template <class Op, class Settle>
void time_each(benchmark::State& state, int n, Op&& op, Settle&& settle) {
  std::vector<double> ns;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    Result<void> r = op();
    const double took = ns_between(start, Clock::now());
    if (r) r = settle();
    if (!r) return skip(state, r.error());
    state.SetIterationTime(took * 1e-9);
    ns.push_back(took);
  }
  report(state, n, ns);
}

// A raw driver call's result as graphcap's.
Result<void> driver_result(const char* entry_point, CUresult code) {
  if (code != CUDA_SUCCESS) return Error::from_driver(entry_point, code);
  return {};
}

void capture(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  std::vector<double> ns;
  std::vector<double> instantiate_ns;
  std::vector<double> upload_ns;
  for (auto _ : state) {
    if (Result<void> r = warm_up(env, n); !r) return skip(state, r.error());
    const Clock::time_point start = Clock::now();
    Result<Graph> graph = growth_op_capture(env, n);
    const double took = ns_between(start, Clock::now());
    if (!graph) return skip(state, graph.error());
    state.SetIterationTime(took * 1e-9);
    ns.push_back(took);
    instantiate_ns.push_back(static_cast<double>(graph->report().instantiate_time.count()));
    upload_ns.push_back(static_cast<double>(graph->report().upload_time.count()));
    if (Result<void> r = graph->destroy(); !r) return skip(state, r.error());
  }
  report(state, n, ns);
  state.counters["instantiate_us"] = median(instantiate_ns) / 1000.0;
  state.counters["upload_us"] = median(upload_ns) / 1000.0;
  state.counters["instantiate_upload_ns_per_node"] =
      (median(instantiate_ns) + median(upload_ns)) / n;
}

void raw_capture(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  DriverApi& driver = env.driver();
  std::vector<double> ns;
  for (auto _ : state) {
    if (CUresult r = env.raw_eager_pass(n); r != CUDA_SUCCESS) {  // as capture's warm_up
      return skip_driver(state, "raw eager pass", r);
    }
    CUgraphExec exec = nullptr;
    const Clock::time_point start = Clock::now();
    const CUresult r = growth_op_raw_capture(env, n, &exec);
    const double took = ns_between(start, Clock::now());
    if (exec != nullptr) {
      (void)driver.cuStreamSynchronize(env.stream().native_handle());
      (void)driver.cuGraphExecDestroy(exec);
    }
    if (r != CUDA_SUCCESS) return skip_driver(state, "raw capture", r);
    state.SetIterationTime(took * 1e-9);
    ns.push_back(took);
  }
  report(state, n, ns);
}

void update_close(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  Device& device = env.device();
  Stream& s = env.stream();
  if (Result<void> r = warm_up(env, n); !r) return skip(state, r.error());
  Result<Graph> into = capture_window(env, n);
  if (!into) return skip(state, into.error());
  std::vector<double> ns;
  for (auto _ : state) {
    if (Result<void> r = warm_up(env, n); !r) return skip(state, r.error());
    if (Result<void> r = device.begin_capture(s); !r) return skip(state, r.error());
    for (int i = 0; i < n; ++i) {
      if (Result<void> r = env.launch_empty(); !r) {
        (void)device.abort_capture(s);
        return skip(state, r.error());
      }
    }
    const Clock::time_point start = Clock::now();
    Result<void> closed = growth_op_update_close(device, s, *into);
    const double took = ns_between(start, Clock::now());
    if (!closed) return skip(state, closed.error());
    if (!into->report().updated) {
      return skip(state, Error(Errc::graph_state, "not updated: " + into->report().update_refusal));
    }
    state.SetIterationTime(took * 1e-9);
    ns.push_back(took);
  }
  (void)env.sync();
  report(state, n, ns);
}

void raw_update_close(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  CUgraphExec exec = nullptr;
  if (CUresult r = raw_capture_window(env, n, &exec); r != CUDA_SUCCESS) {
    if (exec != nullptr) (void)driver.cuGraphExecDestroy(exec);
    return skip_driver(state, "raw capture", r);
  }
  std::vector<double> ns;
  for (auto _ : state) {
    if (CUresult r = env.raw_eager_pass(n); r != CUDA_SUCCESS) {  // as update_close's warm_up
      skip_driver(state, "raw eager pass", r);
      break;
    }
    if (CUresult r = driver.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
        r != CUDA_SUCCESS) {
      skip_driver(state, "cuStreamBeginCapture", r);
      break;
    }
    for (int i = 0; i < n; ++i) (void)env.raw_launch_empty();
    const Clock::time_point start = Clock::now();
    const CUresult r = growth_op_raw_update_close(driver, stream, exec);
    const double took = ns_between(start, Clock::now());
    if (r != CUDA_SUCCESS) {
      skip_driver(state, "cuGraphExecUpdate", r);
      break;
    }
    state.SetIterationTime(took * 1e-9);
    ns.push_back(took);
  }
  (void)driver.cuStreamSynchronize(stream);
  (void)driver.cuGraphExecDestroy(exec);
  if (!state.error_occurred()) report(state, n, ns);
}

void set(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  Device& device = env.device();
  Stream& s = env.stream();
  const Kernel& sink = env.sink_kernel();
  Param<std::uint32_t> param = device.param<std::uint32_t>(0);
  Result<Graph> graph = device.record(s, [&]() -> Result<void> {
    for (int i = 0; i < n; ++i) {
      if (Result<void> r = device.launch(s, sink, BenchEnv::kEmptyDims, {Arg::param(param)}); !r) {
        return r;
      }
    }
    return {};
  });
  if (!graph) return skip(state, graph.error());
  std::uint32_t value = 0;
  time_each(
      state, n, [&] { return growth_op_set(*graph, param, ++value); },
      []() -> Result<void> { return {}; });
}

void dot(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  Result<CapturedGraph*> captured = env.graph(n);
  if (!captured) return skip(state, captured.error());
  std::vector<double> ns;
  std::size_t bytes = 0;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    bytes = growth_op_dot((*captured)->graph);
    const double took = ns_between(start, Clock::now());
    state.SetIterationTime(took * 1e-9);
    ns.push_back(took);
  }
  report(state, n, ns);
  state.counters["dot_bytes"] = static_cast<double>(bytes);
}

void replay(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  Result<CapturedGraph*> captured = env.graph(n);
  if (!captured) return skip(state, captured.error());
  time_each(
      state, n, [&] { return growth_op_replay((*captured)->graph); }, [&] { return env.sync(); });
}

void raw_replay(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  Result<CapturedGraph*> captured = env.graph(n);
  if (!captured) return skip(state, captured.error());
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  time_each(
      state, n,
      [&] {
        return driver_result("cuGraphLaunch",
                             growth_op_raw_replay(driver, (*captured)->exec, stream));
      },
      [&] { return env.sync(); });
}

void cache_hit(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  GraphCache<int> cache(env.device(), env.stream());
  auto step = [&]() -> Result<void> { return launches(env, n); };
  if (Result<void> r = cache.run(1, step); !r) return skip(state, r.error());
  if (Result<void> r = env.sync(); !r) return skip(state, r.error());
  time_each(
      state, n, [&] { return growth_op_cache_hit(cache, step); }, [&] { return env.sync(); });
  state.counters["cache_hits"] = static_cast<double>(cache.stats().hits);
}

void eager(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  time_each(
      state, n, [&] { return growth_op_eager(env, n); }, [&] { return env.sync(); });
}

void raw_eager(benchmark::State& state, BenchEnv& env) {
  const int n = static_cast<int>(state.range(0));
  time_each(
      state, n, [&] { return driver_result("cuLaunchKernel", growth_op_raw_eager(env, n)); },
      [&] { return env.sync(); });
}

using Path = void (*)(benchmark::State&, BenchEnv&);

// Operations per benchmark: about 50,000 nodes' worth, at least 5 (a replay or a hit: 200, and
// 20 at 10,000 nodes, whose syncs run the nodes); seconds on the H200, a callgrind run of one
// size in about a minute on the fake.
std::int64_t growth_iterations(int n, double scale, bool per_node) {
  const std::int64_t base = per_node ? std::max<std::int64_t>(5, 50000 / n)
                                     : std::min<std::int64_t>(200, 200000 / n);
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(base) * scale));
}

}  // namespace

void register_growth_benchmarks(BenchEnv& env, const BenchPlan& plan) {
  struct Entry {
    const char* name;
    Path path;
    bool per_node;  // the operation's cost is in the nodes (else a constant-ish call)
  };
  static const Entry kPaths[] = {
      {"Growth/capture", capture, true},
      {"Growth/raw_capture", raw_capture, true},
      {"Growth/update_close", update_close, true},
      {"Growth/raw_update_close", raw_update_close, true},
      {"Growth/set", set, true},
      {"Growth/dot", dot, true},
      {"Growth/replay", replay, false},
      {"Growth/raw_replay", raw_replay, false},
      {"Growth/cache_hit", cache_hit, false},
      {"Growth/eager", eager, true},
      {"Growth/raw_eager", raw_eager, true},
  };
  for (const Entry& entry : kPaths) {
    for (const int n : kGrowthCounts) {
      const Path path = entry.path;
      benchmark::RegisterBenchmark(entry.name,
                                   [&env, path](benchmark::State& state) { path(state, env); })
          ->Arg(n)
          ->Iterations(growth_iterations(n, plan.scale, entry.per_node))
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace graphcap::bench
