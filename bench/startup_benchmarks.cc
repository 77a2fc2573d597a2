// Startup/<side>/<keys>/<launches>/<threads>: bringing a serving engine's bucket set up, `keys`
// graphs of `launches` one-block launches of `empty` each, recorded, instantiated and uploaded
// until the last is ready to replay. One bucket set per iteration (manual time); destroying it
// afterwards is untimed. The sides, each measured in the same run:
//
//   raw_serial      one thread, one stream: per key cuStreamBeginCapture (THREAD_LOCAL) +
//                   launches + cuStreamEndCapture + cuGraphInstantiateWithFlags + cuGraphDestroy
//                   + cuGraphUpload + cuStreamSynchronize
//   raw_whole       the same pipeline per key, the keys dealt round robin to `threads` threads,
//                   each on its own stream (what an engine gets by starting threads)
//   raw_phases      the pipeline split into phases, each over `threads` threads: every capture,
//                   then every instantiate, then every upload on one stream and one sync.
//                   Counters capture_ms, instantiate_ms, upload_ms: where the time goes, and
//                   which phase the threads speed up
//   graphcap_serial GraphCache<int>::record_all over the keys (each key's first run: prepare,
//                   the warm-up run of the step, begin, the recorded run, end with instantiate and
//                   upload), on the device's stream
//   graphcap_parallel  record_all with RecordAllOptions{.threads = threads}
//
// Counters: ms (the median bucket set), ms_per_graph, and held_mib: the device memory the set
// holds once up (cuMemGetInfo before and after, on a GPU; the fake reports what it models).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include <graphcap/graph_cache.h>

#include "bench_env.h"
#include "bench_timing.h"
#include "benchmarks.h"

namespace graphcap::bench {
namespace {

// The raw side's view of the benchmark device: the driver under the observer (its counters are
// single-threaded), the context graphcap made current, and the `empty` kernel.
struct RawEnv {
  DriverApi* driver = nullptr;
  CUcontext context = nullptr;
  CUfunction empty = nullptr;
};

Result<RawEnv> raw_env(BenchEnv& env) {
  RawEnv raw;
  raw.driver = &env.observer().inner();
  if (CUresult r = raw.driver->cuCtxGetCurrent(&raw.context); r != CUDA_SUCCESS) {
    return Error::from_driver("cuCtxGetCurrent", r);
  }
  raw.empty = env.empty_kernel().native_handle();
  return raw;
}

// The first failure any thread saw (CUDA_SUCCESS while none).
class FirstFailure {
 public:
  void note(const char* entry, CUresult r) noexcept {
    if (r == CUDA_SUCCESS) return;
    CUresult expected = CUDA_SUCCESS;
    if (result_.compare_exchange_strong(expected, r)) entry_ = entry;
  }
  bool failed() const noexcept { return result_.load() != CUDA_SUCCESS; }
  Error error() const { return Error::from_driver(entry_, result_.load()); }

 private:
  std::atomic<CUresult> result_{CUDA_SUCCESS};
  const char* entry_ = "";
};

CUgraph raw_capture(const RawEnv& raw, CUstream s, int launches, FirstFailure& failure) {
  DriverApi& d = *raw.driver;
  if (CUresult r = d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      r != CUDA_SUCCESS) {
    failure.note("cuStreamBeginCapture", r);
    return nullptr;
  }
  for (int i = 0; i < launches; ++i) {
    failure.note("cuLaunchKernel",
                 d.cuLaunchKernel(raw.empty, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  }
  CUgraph graph = nullptr;
  failure.note("cuStreamEndCapture", d.cuStreamEndCapture(s, &graph));
  return graph;
}

CUgraphExec raw_instantiate(const RawEnv& raw, CUgraph graph, FirstFailure& failure) {
  if (graph == nullptr) return nullptr;
  CUgraphExec exec = nullptr;
  failure.note("cuGraphInstantiateWithFlags",
               raw.driver->cuGraphInstantiateWithFlags(&exec, graph, 0));
  (void)raw.driver->cuGraphDestroy(graph);
  return exec;
}

// Runs body(thread) on `threads` threads, each with the device's context current.
template <class Body>
void on_threads(const RawEnv& raw, int threads, Body&& body) {
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      (void)raw.driver->cuCtxSetCurrent(raw.context);
      body(t);
    });
  }
  for (std::thread& thread : pool) thread.join();
}

// The device memory in use now (0 where the driver can't say).
std::size_t used_bytes(DriverApi& driver) {
  std::size_t free = 0, total = 0;
  if (driver.cuMemGetInfo(&free, &total) != CUDA_SUCCESS) return 0;
  return total - free;
}

enum class Side { raw_serial, raw_whole, raw_phases, graphcap_serial, graphcap_parallel };

struct SetTimes {
  double ns = 0;
  double capture_ns = 0, instantiate_ns = 0, upload_ns = 0;  // raw_phases only
  std::size_t held = 0;
};

Result<SetTimes> raw_set(BenchEnv& env, Side side, int keys, int launches, int threads,
                         const std::vector<CUstream>& streams) {
  Result<RawEnv> found = raw_env(env);
  if (!found) return found.error();
  const RawEnv raw = *found;
  DriverApi& d = *raw.driver;
  FirstFailure failure;
  std::vector<CUgraphExec> execs(static_cast<std::size_t>(keys), nullptr);
  SetTimes times;
  const std::size_t used_before = used_bytes(d);
  const Clock::time_point start = Clock::now();
  if (side == Side::raw_phases) {
    std::vector<CUgraph> graphs(static_cast<std::size_t>(keys), nullptr);
    on_threads(raw, threads, [&](int t) {
      for (int k = t; k < keys; k += threads) {
        graphs[static_cast<std::size_t>(k)] =
            raw_capture(raw, streams[static_cast<std::size_t>(t)], launches, failure);
      }
    });
    const Clock::time_point captured = Clock::now();
    on_threads(raw, threads, [&](int t) {
      for (int k = t; k < keys; k += threads) {
        execs[static_cast<std::size_t>(k)] =
            raw_instantiate(raw, graphs[static_cast<std::size_t>(k)], failure);
      }
    });
    const Clock::time_point instantiated = Clock::now();
    for (CUgraphExec exec : execs) {
      if (exec != nullptr) failure.note("cuGraphUpload", d.cuGraphUpload(exec, streams[0]));
    }
    failure.note("cuStreamSynchronize", d.cuStreamSynchronize(streams[0]));
    const Clock::time_point uploaded = Clock::now();
    times.capture_ns = ns_between(start, captured);
    times.instantiate_ns = ns_between(captured, instantiated);
    times.upload_ns = ns_between(instantiated, uploaded);
  } else {
    const int workers = side == Side::raw_serial ? 1 : threads;
    on_threads(raw, workers, [&](int t) {
      CUstream s = streams[static_cast<std::size_t>(t)];
      for (int k = t; k < keys; k += workers) {
        CUgraphExec exec = raw_instantiate(raw, raw_capture(raw, s, launches, failure), failure);
        if (exec != nullptr) failure.note("cuGraphUpload", d.cuGraphUpload(exec, s));
        failure.note("cuStreamSynchronize", d.cuStreamSynchronize(s));
        execs[static_cast<std::size_t>(k)] = exec;
      }
    });
  }
  times.ns = ns_between(start, Clock::now());
  times.held = used_bytes(d) - std::min(used_before, used_bytes(d));
  for (CUgraphExec exec : execs) {
    if (exec != nullptr) (void)d.cuGraphExecDestroy(exec);
  }
  if (failure.failed()) return failure.error().context("the raw bucket set");
  return times;
}

Result<SetTimes> graphcap_set(BenchEnv& env, Side side, int keys, int launches, int threads) {
  Device& device = env.device();
  Stream& s = env.stream();
  std::vector<int> ids(static_cast<std::size_t>(keys));
  for (int k = 0; k < keys; ++k) ids[static_cast<std::size_t>(k)] = k;
  SetTimes times;
  DriverApi& d = env.observer().inner();
  const std::size_t used_before = used_bytes(d);
  {
    GraphCache<int> cache(device, s);
    auto step = [&](Stream& on, int) -> Result<void> {
      for (int i = 0; i < launches; ++i) {
        if (Result<void> r = device.launch(on, env.empty_kernel(), BenchEnv::kEmptyDims, {}); !r) {
          return r;
        }
      }
      return {};
    };
    const Clock::time_point start = Clock::now();
    (void)side;
    (void)threads;
    Result<GraphCacheFootprint> recorded = cache.record_all(ids, [&](int key) { return step(s, key); });
    if (!recorded) return recorded.error().context("GraphCache::record_all");
    if (Result<void> synced = device.sync(s); !synced) return synced.error();
    times.ns = ns_between(start, Clock::now());
    times.held = used_bytes(d) - std::min(used_before, used_bytes(d));
    if (cache.stats().captures != static_cast<std::size_t>(keys)) {
      return Error(Errc::graph_state, "record_all recorded " +
                                          std::to_string(cache.stats().captures) + " of " +
                                          std::to_string(keys) + " keys");
    }
  }
  return times;
}

void run_startup(benchmark::State& state, BenchEnv& env, Side side, int keys, int launches,
                 int threads) {
  std::vector<CUstream> streams;
  DriverApi& d = env.observer().inner();
  const bool raw = side == Side::raw_serial || side == Side::raw_whole || side == Side::raw_phases;
  if (raw) {
    for (int t = 0; t < threads; ++t) {
      CUstream s = nullptr;
      if (CUresult r = d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
        for (CUstream made : streams) (void)d.cuStreamDestroy(made);
        return skip(state, Error::from_driver("cuStreamCreate", r));
      }
      streams.push_back(s);
    }
  }
  std::vector<double> ns, capture, instantiate, upload;
  std::size_t held = 0;
  for (auto _ : state) {
    Result<SetTimes> times = raw ? raw_set(env, side, keys, launches, threads, streams)
                                 : graphcap_set(env, side, keys, launches, threads);
    if (!times) {
      skip(state, times.error());
      break;
    }
    state.SetIterationTime(times->ns * 1e-9);
    ns.push_back(times->ns);
    capture.push_back(times->capture_ns);
    instantiate.push_back(times->instantiate_ns);
    upload.push_back(times->upload_ns);
    held = std::max(held, times->held);
  }
  for (CUstream s : streams) (void)d.cuStreamDestroy(s);
  const double ms = median(ns) * 1e-6;
  state.counters["ms"] = ms;
  state.counters["ms_per_graph"] = ms / keys;
  state.counters["held_mib"] = static_cast<double>(held) / (1024.0 * 1024.0);
  if (side == Side::raw_phases) {
    state.counters["capture_ms"] = median(capture) * 1e-6;
    state.counters["instantiate_ms"] = median(instantiate) * 1e-6;
    state.counters["upload_ms"] = median(upload) * 1e-6;
  }
}

const char* side_name(Side side) {
  switch (side) {
    case Side::raw_serial: return "raw_serial";
    case Side::raw_whole: return "raw_whole";
    case Side::raw_phases: return "raw_phases";
    case Side::graphcap_serial: return "graphcap_serial";
    case Side::graphcap_parallel: return "graphcap_parallel";
  }
  return "?";
}

}  // namespace

void register_startup_benchmarks(BenchEnv& env, const BenchPlan& plan) {
  struct Set {
    int keys, launches;
  };
  // A serving engine's bucket set (67 sizes of a 1,000-launch step) and a small one.
  const Set sets[] = {{67, 1000}, {8, 100}};
  const int iterations = std::max(1, static_cast<int>(5 * plan.scale));
  for (const Set& set : sets) {
    for (Side side : {Side::raw_serial, Side::graphcap_serial}) {
      const std::string name = std::string("Startup/") + side_name(side) + "/" +
                               std::to_string(set.keys) + "/" + std::to_string(set.launches) + "/1";
      benchmark::RegisterBenchmark(name.c_str(), [&env, side, set](benchmark::State& state) {
        run_startup(state, env, side, set.keys, set.launches, 1);
      })->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMillisecond);
    }
    for (Side side : {Side::raw_whole, Side::raw_phases}) {
      for (int threads : {1, 2, 4, 8, 16}) {
        const std::string name = std::string("Startup/") + side_name(side) + "/" +
                                 std::to_string(set.keys) + "/" + std::to_string(set.launches) +
                                 "/" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), [&env, side, set, threads](benchmark::State& state) {
          run_startup(state, env, side, set.keys, set.launches, threads);
        })->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMillisecond);
      }
    }
  }
}

}  // namespace graphcap::bench
