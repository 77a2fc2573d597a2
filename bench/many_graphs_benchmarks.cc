// The many-graphs benchmarks: closing a re-recording by exec update against
// re-instantiating and against the raw driver, and changing a per-replay parameter against the raw
// driver and against writing the value into device memory. Each family measures all three sides
// in the same iterations (rotating which goes first) and reports its own side as its time and all
// three as counters, like benchmarks.cc's pairs.
//
// ExecUpdate/n, ReInstantiate/n, RawExecUpdate/n: a re-recording of n launches of `empty`. The
// graphcap sides run prepare_capture + an eager warm-up + a sync untimed, then time
// begin_capture + n launches + the close: end_capture(s, into) (exec update of one graph kept
// for the whole run) or end_capture(s) (instantiate + upload of a new graph, destroyed untimed).
// The raw side runs the same untimed eager pass and sync (n raw launches), then times
// cuStreamBeginCapture + n cuLaunchKernel + cuStreamEndCapture +
// cuGraphExecUpdate of one raw executable kept for the run + cuGraphDestroy of the captured
// graph (end_capture destroys it too, as raw code must). Counters:
// close_update_us, close_reinst_us, close_raw_us (the close alone), whole_update_us,
// whole_reinst_us, whole_raw_us (begin..close), update_vs_raw and reinst_vs_update (ratios of the
// closes), whole_reinst_vs_update.
//
// ParamSet/n, RawKernelNodeSetParams/n, ParamWrite/n: a graph of n launches of `sink` that all
// take one Param. Graph::set(p, v) (n cuGraphExecKernelNodeSetParams inside) against n raw
// cuGraphExecKernelNodeSetParams on a raw executable of the same launches against one
// Device::write of the 4-byte value into a buffer (what a kernel reading the value from device
// memory would need). The stream is synced untimed after each iteration. Counters: set_us,
// raw_us, write_us, set_ns_per_node, raw_ns_per_node, set_vs_raw.
//
// (PoolMemory is in graph_memory_benchmarks.cc, with the recording orders.)
//
// ServingStartupLazy/t, ServingStartupUpFront/t: a serving run's start-up. 8 batch
// buckets (1, 2, 4, ..., 128); a bucket's step is an intermediate of bucket * 4 KiB from the
// stream's pool (zeroed by Device::fill) and 20 launches of `empty`. A stream of 64 requests touches only t of the 8
// buckets (request r uses bucket 2^(r % t)). Lazy: every request goes through a fresh GraphCache,
// which records a bucket on its first request. Up front: the same cache first runs every one of
// the 8 buckets once (recording them all, as a server capturing every size at start does), then
// serves the same requests (all hits). Both sides are measured in every iteration (the order
// alternates); each is timed from the cache's creation to the first request's result synced
// (first_response) and to the last one's (total); destroying the cache is untimed. Counters:
// lazy_buckets, upfront_buckets (graphs recorded), lazy_first_us, upfront_first_us,
// lazy_total_us, upfront_total_us, first_upfront_vs_lazy, total_upfront_vs_lazy, and the graph
// pool's bytes on each side (lazy_pool_bytes, upfront_pool_bytes).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <graphcap/driver/node_params.h>
#include <graphcap/graph_cache.h>
#include <graphcap/try.h>

#include "benchmarks.h"
#include "bench_env.h"
#include "bench_timing.h"

namespace graphcap::bench {
namespace {

constexpr int kCounts[] = {10, 100, 1000, 10000};

// ---- ExecUpdate / ReInstantiate / RawExecUpdate -------------------------------------------------

struct Times {
  double close_ns = 0;
  double whole_ns = 0;
  std::size_t close_calls = 0;  // driver calls the close made
  double close_driver_ns = 0;   // time inside those calls
};

// Warm-up untimed, then begin + n launches + close() timed.
template <class Close>
Result<Times> graphcap_rerecord(BenchEnv& env, int n, Close&& close) {
  Device& device = env.device();
  Stream& s = env.stream();
  auto fail = [&](const Error& error) -> Result<Times> {
    (void)device.abort_capture(s);
    return error;
  };
  if (Result<void> r = device.prepare_capture(s); !r) return r.error();
  for (int i = 0; i < n; ++i) {
    if (Result<void> r = env.launch_empty(); !r) return fail(r.error());
  }
  if (Result<void> r = env.sync(); !r) return fail(r.error());
  const Clock::time_point begin = Clock::now();
  if (Result<void> r = device.begin_capture(s); !r) return fail(r.error());
  for (int i = 0; i < n; ++i) {
    if (Result<void> r = env.launch_empty(); !r) return fail(r.error());
  }
  const std::size_t calls_before = env.observer().calls();
  const double driver_before = env.observer().driver_ns();
  env.time_driver_calls(true);
  const Clock::time_point closing = Clock::now();
  Result<void> closed = close();
  const Clock::time_point end = Clock::now();
  env.time_driver_calls(false);
  if (!closed) return closed.error();
  return Times{ns_between(closing, end), ns_between(begin, end),
               env.observer().calls() - calls_before, env.observer().driver_ns() - driver_before};
}

Result<CUgraph> raw_record(BenchEnv& env, int n) {
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  GRAPHCAP_ASSIGN_OR_RETURN(const CUresult launched, env.raw_begin_with_launches(n));
  CUgraph graph = nullptr;
  const CUresult ended = driver.cuStreamEndCapture(stream, &graph);
  if (launched != CUDA_SUCCESS || ended != CUDA_SUCCESS) {
    if (graph != nullptr) (void)driver.cuGraphDestroy(graph);
    return Error::from_driver(launched != CUDA_SUCCESS ? "cuLaunchKernel" : "cuStreamEndCapture",
                              launched != CUDA_SUCCESS ? launched : ended);
  }
  return graph;
}

Result<Times> raw_rerecord(BenchEnv& env, int n, CUgraphExec exec) {
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  if (CUresult r = env.raw_eager_pass(n); r != CUDA_SUCCESS) {  // as graphcap's side, untimed
    return Error::from_driver("raw eager pass", r);
  }
  const Clock::time_point begin = Clock::now();
  GRAPHCAP_ASSIGN_OR_RETURN(const CUresult launched, env.raw_begin_with_launches(n));
  const std::size_t calls_before = env.observer().calls();
  const double driver_before = env.observer().driver_ns();
  env.time_driver_calls(true);
  const Clock::time_point closing = Clock::now();
  CUgraph graph = nullptr;
  const CUresult ended = driver.cuStreamEndCapture(stream, &graph);
  CUgraphExecUpdateResultInfo info{};
  const CUresult updated = ended == CUDA_SUCCESS ? driver.cuGraphExecUpdate(exec, graph, &info)
                                                 : CUDA_ERROR_INVALID_VALUE;
  // The captured graph is destroyed inside the timing, as end_capture must do it too.
  const CUresult destroyed = graph != nullptr ? driver.cuGraphDestroy(graph) : CUDA_SUCCESS;
  const Clock::time_point end = Clock::now();
  env.time_driver_calls(false);
  if (destroyed != CUDA_SUCCESS) return Error::from_driver("cuGraphDestroy", destroyed);
  if (launched != CUDA_SUCCESS) return Error::from_driver("cuLaunchKernel", launched);
  if (ended != CUDA_SUCCESS) return Error::from_driver("cuStreamEndCapture", ended);
  if (updated != CUDA_SUCCESS) return Error::from_driver("cuGraphExecUpdate", updated);
  return Times{ns_between(closing, end), ns_between(begin, end),
               env.observer().calls() - calls_before, env.observer().driver_ns() - driver_before};
}

std::int64_t rerecord_iterations(int n) { return n <= 10 ? 200 : n <= 100 ? 100 : 20; }

void rerecord_sides(benchmark::State& state, BenchEnv& env, int primary) {
  const int n = static_cast<int>(state.range(0));
  Device& device = env.device();
  Stream& s = env.stream();
  DriverApi& driver = env.driver();
  Graph into;
  if (Result<Times> first = graphcap_rerecord(env, n, [&]() -> Result<void> {
        Result<Graph> graph = device.end_capture(s);
        if (!graph) return graph.error();
        into = std::move(*graph);
        return {};
      });
      !first) {
    return skip(state, first.error().context("capturing the graph to update"));
  }
  Result<CUgraph> raw_graph = raw_record(env, n);
  if (!raw_graph) return skip(state, raw_graph.error());
  CUgraphExec raw_exec = nullptr;
  const CUresult instantiated = driver.cuGraphInstantiateWithFlags(&raw_exec, *raw_graph, 0);
  (void)driver.cuGraphDestroy(*raw_graph);
  if (instantiated != CUDA_SUCCESS) {
    return skip(state, Error::from_driver("cuGraphInstantiateWithFlags", instantiated));
  }
  // Uploaded, as graphcap's executable is (end_capture uploads it): an update then patches what
  // the device holds on both sides. Measured 2026-12-04 on the H200 before this: the raw side's
  // executable was never uploaded, and the update of graphcap's cost 12.9 us more at 100 nodes
  // where graphcap's own work was a few us (performance.md).
  if (const CUresult uploaded = driver.cuGraphUpload(raw_exec, s.native_handle());
      uploaded != CUDA_SUCCESS || !env.sync()) {
    (void)driver.cuGraphExecDestroy(raw_exec);
    return skip(state, Error::from_driver("cuGraphUpload", uploaded));
  }

  std::vector<Times> sides[3];
  int rotation = 0;
  for (auto _ : state) {
    Times times[3];
    for (int k = 0; k < 3; ++k) {
      const int side = (rotation + k) % 3;
      Result<Times> measured = Error(Errc::graph_state, "not run");
      if (side == 0) {
        measured = graphcap_rerecord(env, n, [&] { return device.end_capture(s, into); });
        if (measured && !into.report().updated) {
          measured = Error(Errc::graph_state,
                           "ExecUpdate: the re-recording was not an update: " +
                               into.report().update_refusal);
        }
      } else if (side == 1) {
        Graph fresh;
        measured = graphcap_rerecord(env, n, [&]() -> Result<void> {
          Result<Graph> graph = device.end_capture(s);
          if (!graph) return graph.error();
          fresh = std::move(*graph);
          return {};
        });
        if (Result<void> r = fresh.destroy(); measured && !r) measured = r.error();
      } else {
        measured = raw_rerecord(env, n, raw_exec);
      }
      if (!measured) {
        skip(state, measured.error());
        break;
      }
      times[side] = *measured;
    }
    if (state.error_occurred()) break;
    rotation = (rotation + 1) % 3;
    state.SetIterationTime(times[primary].close_ns * 1e-9);
    for (int side = 0; side < 3; ++side) sides[side].push_back(times[side]);
  }
  (void)env.sync();
  (void)driver.cuGraphExecDestroy(raw_exec);
  if (state.error_occurred()) return;

  auto close_us = [&](int side) {
    std::vector<double> v;
    for (const Times& t : sides[side]) v.push_back(t.close_ns);
    return median(v) / 1000.0;
  };
  auto whole_us = [&](int side) {
    std::vector<double> v;
    for (const Times& t : sides[side]) v.push_back(t.whole_ns);
    return median(v) / 1000.0;
  };
  const double update = close_us(0), reinst = close_us(1), raw = close_us(2);
  state.SetItemsProcessed(state.iterations());
  state.counters["nodes"] = n;
  state.counters["close_update_us"] = update;
  state.counters["close_reinst_us"] = reinst;
  state.counters["close_raw_us"] = raw;
  state.counters["whole_update_us"] = whole_us(0);
  state.counters["whole_reinst_us"] = whole_us(1);
  state.counters["whole_raw_us"] = whole_us(2);
  state.counters["update_vs_raw"] = raw > 0 ? update / raw : 0.0;
  // The driver calls of one close on each side (the same sequence, when graphcap adds none).
  state.counters["close_calls_update"] = static_cast<double>(sides[0].back().close_calls);
  state.counters["close_calls_raw"] = static_cast<double>(sides[2].back().close_calls);
  // Where the close's time goes: inside the driver's calls, and graphcap's own work around them
  // (the close's time less its driver time, median per side).
  auto median_of = [&](int side, auto field) {
    std::vector<double> v;
    for (const Times& t : sides[side]) v.push_back(field(t));
    return median(v) / 1000.0;
  };
  const auto driver_part = [](const Times& t) { return t.close_driver_ns; };
  const auto own_part = [](const Times& t) { return t.close_ns - t.close_driver_ns; };
  state.counters["close_driver_update_us"] = median_of(0, driver_part);
  state.counters["close_driver_raw_us"] = median_of(2, driver_part);
  state.counters["close_own_update_us"] = median_of(0, own_part);
  state.counters["close_own_raw_us"] = median_of(2, own_part);
  state.counters["reinst_vs_update"] = update > 0 ? reinst / update : 0.0;
  state.counters["whole_reinst_vs_update"] = whole_us(0) > 0 ? whole_us(1) / whole_us(0) : 0.0;
}

// ---- ParamSet / RawKernelNodeSetParams / ParamWrite ---------------------------------------------

std::int64_t param_iterations(int n) { return n <= 10 ? 2000 : n <= 100 ? 500 : 100; }

void param_sides(benchmark::State& state, BenchEnv& env, int primary) {
  const int n = static_cast<int>(state.range(0));
  Device& device = env.device();
  Stream& s = env.stream();
  DriverApi& driver = env.driver();
  const Kernel& sink = env.sink_kernel();
  Param<std::uint32_t> param = device.param<std::uint32_t>(0);
  auto record = [&]() -> Result<void> {
    for (int i = 0; i < n; ++i) {
      if (Result<void> r = device.launch(s, sink, BenchEnv::kEmptyDims, {Arg::param(param)}); !r) {
        return r;
      }
    }
    return {};
  };
  if (Result<void> r = device.prepare_capture(s); !r) return skip(state, r.error());
  if (Result<void> r = record(); !r) {
    (void)device.abort_capture(s);
    return skip(state, r.error());
  }
  if (Result<void> r = env.sync(); !r) {
    (void)device.abort_capture(s);
    return skip(state, r.error());
  }
  if (Result<void> r = device.begin_capture(s); !r) return skip(state, r.error());
  if (Result<void> r = record(); !r) {
    (void)device.abort_capture(s);
    return skip(state, r.error());
  }
  Result<Graph> graph = device.end_capture(s);
  if (!graph) return skip(state, graph.error());

  // The raw executable of the same launches, with each launch's node.
  const CUstream stream = s.native_handle();
  std::vector<CUgraphNode> nodes;
  std::uint32_t raw_value = 0;
  void* raw_args[] = {&raw_value};
  const LaunchDims dims = BenchEnv::kEmptyDims;
  if (CUresult r = driver.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
      r != CUDA_SUCCESS) {
    return skip(state, Error::from_driver("cuStreamBeginCapture", r));
  }
  CUresult failed = CUDA_SUCCESS;
  for (int i = 0; i < n && failed == CUDA_SUCCESS; ++i) {
    failed = driver.cuLaunchKernel(sink.native_handle(), dims.grid.x, dims.grid.y, dims.grid.z,
                                   dims.block.x, dims.block.y, dims.block.z, 0, stream, raw_args,
                                   nullptr);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUgraphNode* deps = nullptr;
    std::size_t count = 0;
    if (failed == CUDA_SUCCESS) {
      failed = driver.cuStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, nullptr,
                                             &count);
    }
    if (failed == CUDA_SUCCESS && count == 1) nodes.push_back(deps[0]);
  }
  CUgraph raw_graph = nullptr;
  const CUresult ended = driver.cuStreamEndCapture(stream, &raw_graph);
  CUgraphExec raw_exec = nullptr;
  if (failed == CUDA_SUCCESS && ended == CUDA_SUCCESS) {
    failed = driver.cuGraphInstantiateWithFlags(&raw_exec, raw_graph, 0);
  }
  auto release_raw = [&] {
    if (raw_exec != nullptr) (void)driver.cuGraphExecDestroy(raw_exec);
    if (raw_graph != nullptr) (void)driver.cuGraphDestroy(raw_graph);
  };
  if (failed != CUDA_SUCCESS || ended != CUDA_SUCCESS || nodes.size() != std::size_t(n)) {
    release_raw();
    return skip(state, Error(Errc::driver, "RawKernelNodeSetParams: building the raw graph"));
  }
  CUDA_KERNEL_NODE_PARAMS params = kernel_node_params(sink.native_handle(), dims, raw_args);

  Result<Buffer> value_buffer = device.alloc(sizeof(std::uint32_t), s);
  if (!value_buffer) {
    release_raw();
    return skip(state, value_buffer.error());
  }

  std::vector<double> sides[3];
  int rotation = 0;
  std::uint32_t value = 0;
  for (auto _ : state) {
    ++value;
    double elapsed[3] = {};
    for (int k = 0; k < 3; ++k) {
      const int side = (rotation + k) % 3;
      const Clock::time_point start = Clock::now();
      if (side == 0) {
        if (Result<void> r = graph->set(param, value); !r) {
          skip(state, r.error());
          break;
        }
      } else if (side == 1) {
        raw_value = value;
        CUresult r = CUDA_SUCCESS;
        for (CUgraphNode node : nodes) {
          if (r == CUDA_SUCCESS) r = driver.cuGraphExecKernelNodeSetParams(raw_exec, node, &params);
        }
        if (r != CUDA_SUCCESS) {
          skip(state, Error::from_driver("cuGraphExecKernelNodeSetParams", r));
          break;
        }
      } else {
        std::byte bytes[sizeof(value)];
        std::memcpy(bytes, &value, sizeof(value));
        if (Result<void> r = device.write(*value_buffer, bytes, s); !r) {
          skip(state, r.error());
          break;
        }
      }
      elapsed[side] = ns_between(start, Clock::now());
    }
    if (state.error_occurred()) break;
    rotation = (rotation + 1) % 3;
    state.SetIterationTime(elapsed[primary] * 1e-9);
    for (int side = 0; side < 3; ++side) sides[side].push_back(elapsed[side]);
    state.PauseTiming();
    (void)env.sync();
    state.ResumeTiming();
  }
  (void)env.sync();
  release_raw();
  if (state.error_occurred()) return;
  const double set = median(sides[0]), raw = median(sides[1]), write = median(sides[2]);
  state.SetItemsProcessed(state.iterations());
  state.counters["nodes"] = n;
  state.counters["set_us"] = set / 1000.0;
  state.counters["raw_us"] = raw / 1000.0;
  state.counters["write_us"] = write / 1000.0;
  state.counters["set_ns_per_node"] = set / n;
  state.counters["raw_ns_per_node"] = raw / n;
  state.counters["set_vs_raw"] = raw > 0 ? set / raw : 0.0;
}

// ---- ServingStartupLazy / ServingStartupUpFront -------------------------------------------------

constexpr std::uint32_t kServingBuckets = 8;  // 1, 2, 4, ..., 128
constexpr int kServingRequests = 64;
constexpr int kServingLaunches = 20;

struct StartupTimes {
  double first_ns = 0;
  double total_ns = 0;
  double buckets = 0;
  double pool_bytes = 0;
};

// One serving run from a cold cache: `up_front` records every bucket before the first request.
Result<StartupTimes> serving_run(BenchEnv& env, int touched, bool up_front) {
  Device& device = env.device();
  Stream& s = env.stream();
  StartupTimes times;
  {
    GraphCache<std::uint32_t> cache(device, s);
    auto step = [&](std::uint32_t bucket) -> Result<void> {
      Result<Buffer> intermediate = device.alloc(std::size_t{bucket} * 4096, s);
      if (!intermediate) return intermediate.error();
      if (Result<void> r = device.fill(*intermediate, std::uint8_t{0}, s); !r) return r;
      for (int i = 0; i < kServingLaunches; ++i) {
        if (Result<void> r = env.launch_empty(); !r) return r;
      }
      return {};
    };
    auto serve = [&](std::uint32_t bucket) {
      return cache.run(bucket, [&, bucket] { return step(bucket); });
    };
    const Clock::time_point start = Clock::now();
    if (up_front) {
      for (std::uint32_t b = 0; b < kServingBuckets; ++b) {
        if (Result<void> r = serve(1u << b); !r) return r.error();
      }
    }
    for (int r = 0; r < kServingRequests; ++r) {
      if (Result<void> served = serve(1u << (r % touched)); !served) return served.error();
      if (r == 0) {
        if (Result<void> synced = env.sync(); !synced) return synced.error();
        times.first_ns = ns_between(start, Clock::now());
      }
    }
    if (Result<void> synced = env.sync(); !synced) return synced.error();
    times.total_ns = ns_between(start, Clock::now());
    const GraphCacheStats stats = cache.stats();
    if (stats.fallbacks != 0) {
      return Error(Errc::graph_state, "ServingStartup: a recording fell back: " +
                                          (cache.last_refusal() != nullptr
                                               ? cache.last_refusal()->message()
                                               : std::string("?")));
    }
    times.buckets = static_cast<double>(stats.captures);
    times.pool_bytes =
        cache.pool() != nullptr ? static_cast<double>(cache.pool()->bytes_held()) : 0.0;
  }  // the cache's graphs go here, untimed
  if (Result<void> synced = env.sync(); !synced) return synced.error();
  return times;
}

void serving_startup(benchmark::State& state, BenchEnv& env, bool up_front_is_primary) {
  const int touched = static_cast<int>(state.range(0));
  std::vector<StartupTimes> sides[2];  // 0: lazy, 1: up front
  int rotation = 0;
  for (auto _ : state) {
    StartupTimes times[2];
    for (int k = 0; k < 2; ++k) {
      const int side = (rotation + k) % 2;
      Result<StartupTimes> measured = serving_run(env, touched, side == 1);
      if (!measured) {
        skip(state, measured.error());
        break;
      }
      times[side] = *measured;
    }
    if (state.error_occurred()) break;
    rotation ^= 1;
    state.SetIterationTime(times[up_front_is_primary ? 1 : 0].total_ns * 1e-9);
    for (int side = 0; side < 2; ++side) sides[side].push_back(times[side]);
  }
  if (state.error_occurred()) return;
  auto med = [&](int side, double StartupTimes::*field) {
    std::vector<double> v;
    for (const StartupTimes& t : sides[side]) v.push_back(t.*field);
    return median(v);
  };
  const double lazy_first = med(0, &StartupTimes::first_ns) / 1000.0;
  const double upfront_first = med(1, &StartupTimes::first_ns) / 1000.0;
  const double lazy_total = med(0, &StartupTimes::total_ns) / 1000.0;
  const double upfront_total = med(1, &StartupTimes::total_ns) / 1000.0;
  state.counters["buckets_touched"] = touched;
  state.counters["requests"] = kServingRequests;
  state.counters["lazy_buckets"] = med(0, &StartupTimes::buckets);
  state.counters["upfront_buckets"] = med(1, &StartupTimes::buckets);
  state.counters["lazy_first_us"] = lazy_first;
  state.counters["upfront_first_us"] = upfront_first;
  state.counters["lazy_total_us"] = lazy_total;
  state.counters["upfront_total_us"] = upfront_total;
  state.counters["first_upfront_vs_lazy"] = lazy_first > 0 ? upfront_first / lazy_first : 0.0;
  state.counters["total_upfront_vs_lazy"] = lazy_total > 0 ? upfront_total / lazy_total : 0.0;
  state.counters["lazy_pool_bytes"] = med(0, &StartupTimes::pool_bytes);
  state.counters["upfront_pool_bytes"] = med(1, &StartupTimes::pool_bytes);
}

std::int64_t scaled(std::int64_t count, double scale) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(count * scale)));
}

using Sides = void (*)(benchmark::State&, BenchEnv&, int);

void register_triple(BenchEnv& env, const BenchPlan& plan, const char* const (&names)[3],
                     Sides sides, std::int64_t (*iterations)(int)) {
  for (int primary = 0; primary < 3; ++primary) {
    for (const int n : kCounts) {
      benchmark::RegisterBenchmark(names[primary],
                                   [&env, sides, primary](benchmark::State& state) {
                                     sides(state, env, primary);
                                   })
          ->Arg(n)
          ->Iterations(scaled(iterations(n), plan.scale))
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

void register_many_graphs_benchmarks(BenchEnv& env, const BenchPlan& plan) {
  static const char* const kRerecord[3] = {"ExecUpdate", "ReInstantiate", "RawExecUpdate"};
  static const char* const kParam[3] = {"ParamSet", "RawKernelNodeSetParams", "ParamWrite"};
  register_triple(env, plan, kRerecord, rerecord_sides, rerecord_iterations);
  register_triple(env, plan, kParam, param_sides, param_iterations);
  for (const bool up_front : {false, true}) {
    for (const int touched : {1, 3, 8}) {
      benchmark::RegisterBenchmark(up_front ? "ServingStartupUpFront" : "ServingStartupLazy",
                                   [&env, up_front](benchmark::State& state) {
                                     serving_startup(state, env, up_front);
                                   })
          ->Arg(touched)
          ->Iterations(scaled(10, plan.scale))
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace graphcap::bench
