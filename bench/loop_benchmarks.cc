// WhileLoop/K (benchmarks.h): a decode-style loop whose stop is decided on the device, three ways
// in one iteration, in rotating order, each timed on its own:
//   host loop  replay the step graph, read the stop flag (Device::read: a copy and a sync), until
//              the flag says stop: what a runtime without conditional nodes must do;
//   while      one replay of a graph that sets the counter and runs a WHILE loop over the step
//              (Device::begin_while), then one sync;
//   blind      K replays of the step graph, then one sync: the lower bound, for a step count
//              known in advance.
// Every way starts from counter = K and must end with counter 0 and the flag 0 after exactly K
// steps (the host loop counts its steps): the benchmark fails otherwise. Per-step figures divide
// by K; "host" is the time spent in graphcap calls before the final sync.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_env.h"
#include "benchmarks.h"

namespace graphcap::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kEmptyPerStep = 34;  // plus the countdown: a 35-kernel step

double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Loops {
  Buffer counter;
  Buffer go;
  Graph step;   // one step: 34 empties + countdown (no condition)
  Graph loop;   // counter = K; while (go) { step }
};

Result<void> record_step_body(BenchEnv& env, const Loops& l, Arg condition) {
  for (int i = 0; i < kEmptyPerStep; ++i) {
    if (Result<void> r = env.device().launch(env.stream(), env.empty_kernel(), BenchEnv::kEmptyDims,
                                             {});
        !r) {
      return r;
    }
  }
  return env.device().launch(env.stream(), env.countdown_kernel(),
                             LaunchDims{{1, 1, 1}, {1, 1, 1}, 0},
                             {condition, Arg::inout(l.counter), Arg::out(l.go)});
}

Result<Loops> make_loops(BenchEnv& env, std::uint32_t k) {
  Device& device = env.device();
  Stream& s = env.stream();
  Loops l;
  Result<Buffer> counter = device.alloc(4, s);
  if (!counter) return counter.error();
  Result<Buffer> go = device.alloc(4, s);
  if (!go) return go.error();
  l.counter = std::move(*counter);
  l.go = std::move(*go);
  if (Result<void> r = device.fill(l.counter, std::uint32_t{k}, s); !r) return r.error();
  if (Result<void> r = device.fill(l.go, std::uint32_t{0}, s); !r) return r.error();
  // The step graph (its warm-up is one eager step).
  if (Result<void> r = device.prepare_capture(s); !r) return r.error();
  if (Result<void> r = record_step_body(env, l, Arg::value(CUgraphConditionalHandle{0})); !r) {
    return r.error();
  }
  if (Result<void> r = device.begin_capture(s); !r) return r.error();
  if (Result<void> r = record_step_body(env, l, Arg::value(CUgraphConditionalHandle{0})); !r) {
    return r.error();
  }
  Result<Graph> step = device.end_capture(s);
  if (!step) return step.error();
  l.step = std::move(*step);
  // The loop graph: the counter set inside it, then the WHILE loop over the step.
  if (Result<void> r = device.prepare_capture(s); !r) return r.error();
  if (Result<void> r = device.begin_capture(s); !r) return r.error();
  if (Result<void> r = device.fill(l.counter, std::uint32_t{k}, s); !r) return r.error();
  Result<Loop> loop = device.begin_while(s);
  if (!loop) return loop.error();
  if (Result<void> r = record_step_body(env, l, Arg::condition(*loop)); !r) return r.error();
  if (Result<void> r = device.end_while(s, *loop); !r) return r.error();
  Result<Graph> graph = device.end_capture(s);
  if (!graph) return graph.error();
  l.loop = std::move(*graph);
  if (Result<void> r = env.sync(); !r) return r.error();
  return l;
}

struct Way {
  double wall_us = 0;
  double host_us = 0;
};

Result<std::uint32_t> read_word(BenchEnv& env, const Buffer& buffer) {
  Result<std::vector<std::byte>> bytes = env.device().read(buffer, env.stream());
  if (!bytes) return bytes.error();
  std::uint32_t value = 0;
  std::memcpy(&value, bytes->data(), sizeof value);
  return value;
}

// The end state every way must reach: K steps run, counter 0, flag 0.
Result<void> check_end(BenchEnv& env, const Loops& l, const char* way, std::uint32_t steps,
                       std::uint32_t k) {
  Result<std::uint32_t> counter = read_word(env, l.counter);
  if (!counter) return counter.error();
  Result<std::uint32_t> go = read_word(env, l.go);
  if (!go) return go.error();
  if (*counter != 0 || *go != 0 || steps != k) {
    return Error(Errc::invalid_argument,
                 std::string("WhileLoop: the ") + way + " way ended with counter " +
                     std::to_string(*counter) + ", flag " + std::to_string(*go) + " after " +
                     std::to_string(steps) + " steps (expected 0, 0 after " + std::to_string(k) +
                     ")");
  }
  return {};
}

Result<Way> host_loop(BenchEnv& env, Loops& l, std::uint32_t k) {
  if (Result<void> r = env.device().fill(l.counter, std::uint32_t{k}, env.stream()); !r) {
    return r.error();
  }
  if (Result<void> r = env.sync(); !r) return r.error();
  std::uint32_t steps = 0;
  const auto start = Clock::now();
  for (;;) {
    if (Result<void> r = l.step.replay(); !r) return r.error();
    ++steps;
    Result<std::uint32_t> go = read_word(env, l.go);  // the copy and the sync
    if (!go) return go.error();
    if (*go == 0 || steps > k) break;
  }
  const auto stop = Clock::now();
  if (Result<void> r = check_end(env, l, "host-loop", steps, k); !r) return r.error();
  return Way{us_between(start, stop), us_between(start, stop)};
}

Result<Way> while_loop(BenchEnv& env, Loops& l, std::uint32_t k) {
  if (Result<void> r = env.sync(); !r) return r.error();
  const auto start = Clock::now();
  if (Result<void> r = l.loop.replay(); !r) return r.error();
  const auto issued = Clock::now();
  if (Result<void> r = env.sync(); !r) return r.error();
  const auto stop = Clock::now();
  if (Result<void> r = check_end(env, l, "WHILE", k, k); !r) return r.error();
  return Way{us_between(start, stop), us_between(start, issued)};
}

Result<Way> blind(BenchEnv& env, Loops& l, std::uint32_t k) {
  if (Result<void> r = env.device().fill(l.counter, std::uint32_t{k}, env.stream()); !r) {
    return r.error();
  }
  if (Result<void> r = env.sync(); !r) return r.error();
  const auto start = Clock::now();
  for (std::uint32_t i = 0; i < k; ++i) {
    if (Result<void> r = l.step.replay(); !r) return r.error();
  }
  const auto issued = Clock::now();
  if (Result<void> r = env.sync(); !r) return r.error();
  const auto stop = Clock::now();
  if (Result<void> r = check_end(env, l, "blind", k, k); !r) return r.error();
  return Way{us_between(start, stop), us_between(start, issued)};
}

void while_loop_benchmark(benchmark::State& state, BenchEnv& env) {
  const auto k = static_cast<std::uint32_t>(state.range(0));
  Result<Loops> made = make_loops(env, k);
  if (!made) {
    state.SkipWithError(made.error().message().c_str());
    return;
  }
  std::vector<double> wall[3], host[3];  // 0 host loop, 1 while, 2 blind
  int rotation = 0;
  for (auto _ : state) {
    Way ways[3];
    for (int i = 0; i < 3; ++i) {
      const int way = (rotation + i) % 3;
      Result<Way> measured = way == 0   ? host_loop(env, *made, k)
                             : way == 1 ? while_loop(env, *made, k)
                                        : blind(env, *made, k);
      if (!measured) {
        state.SkipWithError(measured.error().message().c_str());
        return;
      }
      ways[way] = *measured;
    }
    rotation = (rotation + 1) % 3;
    state.SetIterationTime(ways[1].wall_us * 1e-6);
    for (int way = 0; way < 3; ++way) {
      wall[way].push_back(ways[way].wall_us / k);
      host[way].push_back(ways[way].host_us / k);
    }
  }
  const double hostloop_step = median(wall[0]);
  const double while_step = median(wall[1]);
  const double blind_step = median(wall[2]);
  state.counters["K"] = k;
  state.counters["hostloop_us_per_step"] = hostloop_step;
  state.counters["while_us_per_step"] = while_step;
  state.counters["blind_us_per_step"] = blind_step;
  state.counters["while_host_us_per_step"] = median(host[1]);
  state.counters["blind_host_us_per_step"] = median(host[2]);
  state.counters["hostloop_vs_while"] = while_step > 0 ? hostloop_step / while_step : 0.0;
  state.counters["while_vs_blind"] = blind_step > 0 ? while_step / blind_step : 0.0;
}

}  // namespace

void register_loop_benchmarks(BenchEnv& env, const BenchPlan& plan) {
  for (const int k : {1, 8, 32, 200}) {
    benchmark::RegisterBenchmark("WhileLoop", [&env](benchmark::State& state) {
      while_loop_benchmark(state, env);
    })
        ->Arg(k)
        ->Iterations(std::max<std::int64_t>(3, static_cast<std::int64_t>(31 * plan.scale)))
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace graphcap::bench
