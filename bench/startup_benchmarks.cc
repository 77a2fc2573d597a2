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
//   raw_eager       no graph: each key's launches run once, eagerly (what graphcap's warm-up of
//                   the key costs the driver), the keys dealt round robin to `threads` threads,
//                   each on its own stream, each stream synchronised at its end: whether the
//                   warm-ups of a set would overlap on several streams
//   raw_pipeline    graphcap's parallel plan without graphcap: one thread captures every key on
//                   one stream while threads - 1 others instantiate the graphs it hands over and
//                   upload each on a stream of their own, then sync it
//   graphcap_serial GraphCache<int>::record_all over the keys (each key's first run: prepare,
//                   the warm-up run of the step, begin, the recorded run, end with instantiate and
//                   upload), on the stream of a device of its own (Device 0 beneath the observer)
//   graphcap_parallel  the same with RecordAllOptions{.threads = threads}: the calling thread
//                   records every key while threads - 1 workers instantiate and upload
//   graphcap_phases graphcap_serial on the observed device, timing the driver's calls: where
//                   graphcap's serial time goes. Counters warm_up_ms, record_ms, close_ms (the
//                   wall time of the warm-up runs, the recorded runs, and the rest: prepare, begin,
//                   end with its instantiate and upload), each with its *_own_ms (less the time
//                   inside driver calls), and instantiate_ms, upload_ms (inside those calls)
//
// Counters: ms (the median bucket set), ms_per_graph, and held_mib: the device memory the set
// holds once up (cuMemGetInfo before and after, on a GPU; the fake reports what it models).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
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

// Keys handed from the capturing thread to the instantiating ones (raw_pipeline), in order.
class HandOff {
 public:
  void push(int key) {
    {
      std::lock_guard lock(mutex_);
      keys_.push_back(key);
    }
    ready_.notify_one();
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  // The next key; none once closed and empty.
  std::optional<int> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !keys_.empty(); });
    if (keys_.empty()) return std::nullopt;
    const int key = keys_.front();
    keys_.pop_front();
    return key;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<int> keys_;
  bool closed_ = false;
};

// The device memory in use now (0 where the driver can't say).
std::size_t used_bytes(DriverApi& driver) {
  std::size_t free = 0, total = 0;
  if (driver.cuMemGetInfo(&free, &total) != CUDA_SUCCESS) return 0;
  return total - free;
}

enum class Side {
  raw_serial,
  raw_eager,
  raw_whole,
  raw_phases,
  raw_pipeline,
  graphcap_serial,
  graphcap_parallel,
  graphcap_phases
};

bool is_raw(Side side) {
  return side == Side::raw_serial || side == Side::raw_eager || side == Side::raw_whole ||
         side == Side::raw_phases || side == Side::raw_pipeline;
}

// Where graphcap_phases' time went: wall time and time inside driver calls.
struct PhaseTimes {
  double wall_ns = 0;
  double driver_ns = 0;
};

struct SetTimes {
  double ns = 0;
  double capture_ns = 0, instantiate_ns = 0, upload_ns = 0;  // raw_phases, graphcap_phases
  PhaseTimes warm_up, record, close;                          // graphcap_phases
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
  } else if (side == Side::raw_pipeline) {
    std::vector<CUgraph> graphs(static_cast<std::size_t>(keys), nullptr);
    HandOff captured;
    on_threads(raw, threads, [&](int t) {
      if (t == 0) {
        for (int k = 0; k < keys; ++k) {
          graphs[static_cast<std::size_t>(k)] = raw_capture(raw, streams[0], launches, failure);
          captured.push(k);
        }
        captured.close();
        return;
      }
      CUstream s = streams[static_cast<std::size_t>(t)];
      while (const std::optional<int> k = captured.pop()) {
        CUgraphExec exec =
            raw_instantiate(raw, graphs[static_cast<std::size_t>(*k)], failure);
        if (exec != nullptr) failure.note("cuGraphUpload", d.cuGraphUpload(exec, s));
        execs[static_cast<std::size_t>(*k)] = exec;
      }
      failure.note("cuStreamSynchronize", d.cuStreamSynchronize(s));
    });
  } else if (side == Side::raw_eager) {
    on_threads(raw, threads, [&](int t) {
      CUstream s = streams[static_cast<std::size_t>(t)];
      for (int k = t; k < keys; k += threads) {
        for (int i = 0; i < launches; ++i) {
          failure.note("cuLaunchKernel",
                       d.cuLaunchKernel(raw.empty, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
        }
      }
      failure.note("cuStreamSynchronize", d.cuStreamSynchronize(s));
    });
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
  const bool phases = side == Side::graphcap_phases;
  Device* device = &env.device();
  const Kernel* empty = &env.empty_kernel();
  if (!phases) {
    // Its workers call the driver too: not through the observer, whose counters are one thread's.
    Result<Device*> unobserved = env.unobserved_device();
    if (!unobserved) return unobserved.error();
    device = *unobserved;
    empty = &env.unobserved_empty();
  }
  Stream& s = device->stream();
  std::vector<int> ids(static_cast<std::size_t>(keys));
  for (int k = 0; k < keys; ++k) ids[static_cast<std::size_t>(k)] = k;
  SetTimes times;
  DriverApi& d = env.observer().inner();
  const ObservingDriver& observer = env.observer();
  const std::size_t used_before = used_bytes(d);
  {
    GraphCache<int> cache(*device, s);
    auto step = [&](int) -> Result<void> {
      const Clock::time_point began = Clock::now();
      const double driver_before = observer.driver_ns();
      PhaseTimes& phase = s.capture_state() == CaptureState::capture ? times.record : times.warm_up;
      for (int i = 0; i < launches; ++i) {
        if (Result<void> r = device->launch(s, *empty, BenchEnv::kEmptyDims, {}); !r) return r;
      }
      phase.wall_ns += ns_between(began, Clock::now());
      phase.driver_ns += observer.driver_ns() - driver_before;
      return {};
    };
    using Entry = CountingDriver::Entry;
    const double driver_before = observer.driver_ns();
    const double instantiate_before = observer.entry_ns()[Entry::k_cuGraphInstantiateWithParams];
    const double upload_before = observer.entry_ns()[Entry::k_cuGraphUpload];
    if (phases) env.time_driver_calls(true);
    const Clock::time_point start = Clock::now();
    Result<GraphCacheFootprint> recorded =
        cache.record_all(ids, step, RecordAllOptions{.threads = static_cast<unsigned>(threads)});
    Result<void> synced = recorded ? device->sync(s) : Result<void>();
    times.ns = ns_between(start, Clock::now());
    env.time_driver_calls(false);
    if (!recorded) return recorded.error().context("GraphCache::record_all");
    if (!synced) return synced.error();
    times.held = used_bytes(d) - std::min(used_before, used_bytes(d));
    if (cache.stats().captures != static_cast<std::size_t>(keys)) {
      return Error(Errc::graph_state, "record_all recorded " +
                                          std::to_string(cache.stats().captures) + " of " +
                                          std::to_string(keys) + " keys");
    }
    times.close.wall_ns = times.ns - times.warm_up.wall_ns - times.record.wall_ns;
    times.close.driver_ns = observer.driver_ns() - driver_before - times.warm_up.driver_ns -
                            times.record.driver_ns;
    times.instantiate_ns =
        observer.entry_ns()[Entry::k_cuGraphInstantiateWithParams] - instantiate_before;
    times.upload_ns = observer.entry_ns()[Entry::k_cuGraphUpload] - upload_before;
  }
  return times;
}

void run_startup(benchmark::State& state, BenchEnv& env, Side side, int keys, int launches,
                 int threads) {
  std::vector<CUstream> streams;
  DriverApi& d = env.observer().inner();
  const bool raw = is_raw(side);
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
  std::vector<double> phase_wall[3], phase_own[3];  // graphcap_phases: warm-up, record, close
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
    const PhaseTimes* phases[3] = {&times->warm_up, &times->record, &times->close};
    for (int p = 0; p < 3; ++p) {
      phase_wall[p].push_back(phases[p]->wall_ns);
      phase_own[p].push_back(phases[p]->wall_ns - phases[p]->driver_ns);
    }
    held = std::max(held, times->held);
  }
  for (CUstream s : streams) (void)d.cuStreamDestroy(s);
  const double ms = median(ns) * 1e-6;
  state.counters["ms"] = ms;
  state.counters["ms_per_graph"] = ms / keys;
  state.counters["held_mib"] = static_cast<double>(held) / (1024.0 * 1024.0);
  if (side == Side::raw_phases) state.counters["capture_ms"] = median(capture) * 1e-6;
  if (side == Side::raw_phases || side == Side::graphcap_phases) {
    state.counters["instantiate_ms"] = median(instantiate) * 1e-6;
    state.counters["upload_ms"] = median(upload) * 1e-6;
  }
  if (side == Side::graphcap_phases) {
    const char* names[3] = {"warm_up", "record", "close"};
    for (int p = 0; p < 3; ++p) {
      state.counters[std::string(names[p]) + "_ms"] = median(phase_wall[p]) * 1e-6;
      state.counters[std::string(names[p]) + "_own_ms"] = median(phase_own[p]) * 1e-6;
    }
  }
}

const char* side_name(Side side) {
  switch (side) {
    case Side::raw_serial: return "raw_serial";
    case Side::raw_eager: return "raw_eager";
    case Side::raw_whole: return "raw_whole";
    case Side::raw_phases: return "raw_phases";
    case Side::graphcap_serial: return "graphcap_serial";
    case Side::raw_pipeline: return "raw_pipeline";
    case Side::graphcap_parallel: return "graphcap_parallel";
    case Side::graphcap_phases: return "graphcap_phases";
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
  struct Row {
    Side side;
    std::vector<int> threads;
  };
  const Row rows[] = {{Side::raw_serial, {1}},
                      {Side::graphcap_serial, {1}},
                      {Side::graphcap_phases, {1}},
                      {Side::raw_eager, {1, 2, 4, 8}},
                      {Side::raw_whole, {1, 2, 4, 8, 16}},
                      {Side::raw_phases, {1, 2, 4, 8, 16}},
                      {Side::raw_pipeline, {2, 3, 4, 8}},
                      {Side::graphcap_parallel, {2, 3, 4, 8}}};
  for (const Set& set : sets) {
    for (const Row& row : rows) {
      for (int threads : row.threads) {
        const std::string name = std::string("Startup/") + side_name(row.side) + "/" +
                                 std::to_string(set.keys) + "/" + std::to_string(set.launches) +
                                 "/" + std::to_string(threads);
        const Side side = row.side;
        benchmark::RegisterBenchmark(name.c_str(), [&env, side, set, threads](benchmark::State& state) {
          run_startup(state, env, side, set.keys, set.launches, threads);
        })->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMillisecond);
      }
    }
  }
}

}  // namespace graphcap::bench
